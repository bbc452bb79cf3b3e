//! Events to JSON as sigs.k8s.io/yaml's `YAMLToJSON` makes it of go-yaml
//! v2's decoding into an `interface{}`, within a budget of work.
//!
//! The builder takes its events from whoever reads the text (the parser in
//! `lib.rs`, or the CLI's tree replayed) and owns the budget: the parser
//! does not know it.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::resolve::{key_string, plain_json, resolve_plain, Plain};
use crate::{Error, ErrorKind};

/// How much a document may make the reader do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Nodes built: every scalar, sequence and mapping of the text, every
    /// node an alias replays (as many times as it replays it) and every
    /// node of the copy kept for an anchor.
    pub nodes: usize,
    /// Sequences and mappings open at once; one more is refused as its
    /// start arrives.
    pub depth: usize,
}

/// A scalar as the events give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scalar<'e> {
    pub value: &'e str,
    /// Plain and untagged: go-yaml's `implicit`, resolved by `resolve`.
    pub plain: bool,
    /// The tag as written, long form for the core schema
    /// (`tag:yaml.org,2002:int`), `!` or `!name` for local ones.
    pub tag: Option<&'e str>,
}

/// One event of a document's content. Anchor ids are the parser's (0: no
/// anchor); a redefined anchor gets a new id, and an alias the id of the
/// last definition before it, as go-yaml v2's parser keeps
/// `p.doc.anchors[name]` (decode.go).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'e> {
    Scalar(Scalar<'e>, usize),
    SeqStart(usize),
    SeqEnd,
    MapStart(usize),
    MapEnd,
    Alias(usize),
}

/// A JSON key with what go-yaml decoded it from: two keys that make the
/// same JSON key are one key to go-yaml only when they are the same Go
/// value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KeyKind {
    Str,
    Int,
    Bool,
    Float(f64),
}

/// A mapping as go-yaml v2 fills a `map[interface{}]interface{}`, keyed
/// by its JSON key (`sigs.k8s.io/yaml` sorts them, as `encoding/json`
/// writes a map).
type GoMap = BTreeMap<String, (KeyKind, Value)>;

/// A node once built: a mapping keeps its keys' Go kinds, as a merge key
/// may still bring it into another mapping.
#[derive(Debug, Clone)]
enum Built {
    Scalar(Plain, String),
    Seq(Vec<Value>),
    Map(GoMap),
}

#[derive(Debug)]
enum Key {
    /// `<<`: the value is merged.
    Merge,
    Go(String, KeyKind),
}

#[derive(Debug)]
enum Frame {
    Seq {
        anchor: usize,
        spent: usize,
        items: Vec<Value>,
        /// The value of a merge key: mappings, merged last to first.
        merge: Option<Vec<GoMap>>,
    },
    Map {
        anchor: usize,
        spent: usize,
        map: GoMap,
        key: Option<Key>,
    },
}

struct Anchored {
    built: Built,
    nodes: usize,
}

/// Builds one document's JSON from its events, counting its work.
pub struct Builder {
    budget: Budget,
    /// Nodes built, copies kept for anchors included.
    spent: usize,
    /// Nodes built, without those copies: what an alias replays.
    built: usize,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Option<Anchored>>,
    done: Option<Value>,
}

const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";

impl Builder {
    pub fn new(budget: Budget) -> Self {
        Builder {
            budget,
            spent: 0,
            built: 0,
            stack: Vec::new(),
            anchors: HashMap::new(),
            done: None,
        }
    }

    /// Nodes built so far (what the budget counts).
    pub fn spent(&self) -> usize {
        self.spent
    }

    /// The budget it was given.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The document's JSON once its last event is in.
    pub fn finish(self) -> Option<Value> {
        self.done
    }

    /// `nodes` more built; `copy`: kept for an anchor, not replayed.
    fn spend(&mut self, nodes: usize, copy: bool, line: usize) -> Result<(), Error> {
        match self.spent.checked_add(nodes) {
            Some(total) if total <= self.budget.nodes => {
                self.spent = total;
                if !copy {
                    self.built += nodes;
                }
                Ok(())
            }
            _ => Err(Error::new(
                line,
                ErrorKind::TooLarge,
                format!("over {} nodes", self.budget.nodes),
            )),
        }
    }

    fn open(&mut self, line: usize) -> Result<(), Error> {
        if self.stack.len() >= self.budget.depth {
            return Err(Error::new(
                line,
                ErrorKind::TooLarge,
                format!("nested deeper than {}", self.budget.depth),
            ));
        }
        Ok(())
    }

    /// Whether the next node is the value of a merge key.
    fn under_merge(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Map {
                key: Some(Key::Merge),
                ..
            })
        )
    }

    pub fn event(&mut self, event: Event, line: usize) -> Result<(), Error> {
        if self.done.is_some() {
            return Err(Error::new(line, ErrorKind::Syntax, "more than one node"));
        }
        match event {
            Event::Scalar(s, anchor) => {
                self.spend(1, false, line)?;
                // go-yaml v2's `isMerge` (decode.go): a scalar `<<`, plain
                // or tagged `!!merge`, in a key's place; an alias is not one.
                let merge = s.value == "<<"
                    && (s.plain || s.tag == Some("tag:yaml.org,2002:merge"))
                    && matches!(self.stack.last(), Some(Frame::Map { key: None, .. }));
                if merge {
                    if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
                        *key = Some(Key::Merge);
                    }
                    return self
                        .keep_anchor(anchor, 1, line, || Built::Scalar(Plain::Str, "<<".into()));
                }
                let (plain, text) =
                    scalar(s).map_err(|m| Error::new(line, ErrorKind::Meaning, m))?;
                let built = Built::Scalar(plain, text.unwrap_or_else(|| s.value.to_owned()));
                if anchor > 0 {
                    self.store(anchor, built.clone(), 1, line)?;
                }
                self.place(built, line)
            }
            Event::SeqStart(anchor) => {
                self.open(line)?;
                self.spend(1, false, line)?;
                let merge = self.under_merge().then(Vec::new);
                self.begin(anchor);
                self.stack.push(Frame::Seq {
                    anchor,
                    spent: self.built - 1,
                    items: Vec::new(),
                    merge,
                });
                Ok(())
            }
            Event::MapStart(anchor) => {
                self.open(line)?;
                self.spend(1, false, line)?;
                self.begin(anchor);
                self.stack.push(Frame::Map {
                    anchor,
                    spent: self.built - 1,
                    map: GoMap::new(),
                    key: None,
                });
                Ok(())
            }
            Event::SeqEnd | Event::MapEnd => {
                let frame = self
                    .stack
                    .pop()
                    .ok_or_else(|| Error::new(line, ErrorKind::Syntax, "an end with no start"))?;
                let (anchor, spent, built) = match frame {
                    Frame::Seq {
                        anchor,
                        spent,
                        merge: Some(maps),
                        ..
                    } => {
                        if anchor > 0 {
                            // The list itself, for an alias to it elsewhere.
                            let items = maps
                                .iter()
                                .map(|m| value(Built::Map(m.clone()), line))
                                .collect::<Result<_, _>>()?;
                            self.end_anchor(anchor, spent, Some(Built::Seq(items)), line)?;
                        }
                        // Merged from the last to the first: the first wins.
                        return self.merge_into_parent(maps.into_iter().rev(), line);
                    }
                    Frame::Seq {
                        anchor,
                        spent,
                        items,
                        ..
                    } => (anchor, spent, Built::Seq(items)),
                    Frame::Map {
                        anchor,
                        spent,
                        map,
                        key,
                    } => {
                        if key.is_some() {
                            return Err(Error::new(line, ErrorKind::Syntax, "a key with no value"));
                        }
                        (anchor, spent, Built::Map(map))
                    }
                };
                let built = self.end_anchor(anchor, spent, Some(built), line)?;
                match built {
                    Some(built) => self.place(built, line),
                    None => Ok(()),
                }
            }
            Event::Alias(id) => {
                let Some(slot) = self.anchors.get(&id) else {
                    return Err(Error::new(line, ErrorKind::Syntax, "an alias to no anchor"));
                };
                // decode.go `alias`: "anchor '%s' value contains itself".
                let Some(anchored) = slot else {
                    return Err(Error::new(
                        line,
                        ErrorKind::Meaning,
                        "an anchor's value contains an alias to itself",
                    ));
                };
                let nodes = anchored.nodes;
                self.spend(nodes, false, line)?;
                let built = match self.anchors.get(&id) {
                    Some(Some(anchored)) => anchored.built.clone(),
                    _ => return Err(Error::new(line, ErrorKind::Syntax, "an alias to no anchor")),
                };
                // An alias in a key's place is a key, never `<<`.
                self.place(built, line)
            }
        }
    }

    /// A collection with an anchor: aliases to it inside it are refused.
    fn begin(&mut self, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, None);
        }
    }

    /// Keeps a copy of an anchored collection (its nodes paid again).
    fn end_anchor(
        &mut self,
        anchor: usize,
        spent: usize,
        built: Option<Built>,
        line: usize,
    ) -> Result<Option<Built>, Error> {
        if anchor == 0 {
            return Ok(built);
        }
        let nodes = self.built - spent;
        if let Some(built) = &built {
            self.store(anchor, built.clone(), nodes, line)?;
        }
        Ok(built)
    }

    fn keep_anchor(
        &mut self,
        anchor: usize,
        nodes: usize,
        line: usize,
        built: impl FnOnce() -> Built,
    ) -> Result<(), Error> {
        if anchor > 0 {
            self.store(anchor, built(), nodes, line)?;
        }
        Ok(())
    }

    fn store(
        &mut self,
        anchor: usize,
        built: Built,
        nodes: usize,
        line: usize,
    ) -> Result<(), Error> {
        self.spend(nodes, true, line)?;
        self.anchors.insert(anchor, Some(Anchored { built, nodes }));
        Ok(())
    }

    /// A built node in its place: an item, a key, a value, the document.
    fn place(&mut self, built: Built, line: usize) -> Result<(), Error> {
        let Some(top) = self.stack.last_mut() else {
            self.done = Some(value(built, line)?);
            return Ok(());
        };
        match top {
            Frame::Seq {
                merge: Some(maps), ..
            } => match built {
                Built::Map(map) => {
                    maps.push(map);
                    Ok(())
                }
                _ => Err(Error::new(line, ErrorKind::Meaning, WANT_MAP)),
            },
            Frame::Seq { items, .. } => {
                items.push(value(built, line)?);
                Ok(())
            }
            Frame::Map { key: None, .. } => {
                let key = go_key(built, line)?;
                if let Some(Frame::Map { key: slot, .. }) = self.stack.last_mut() {
                    *slot = Some(key);
                }
                Ok(())
            }
            Frame::Map {
                key: Some(Key::Merge),
                ..
            } => match built {
                Built::Map(map) => self.merge_into_parent(std::iter::once(map), line),
                _ => Err(Error::new(line, ErrorKind::Meaning, WANT_MAP)),
            },
            Frame::Map { map, key, .. } => {
                let Some(Key::Go(name, kind)) = key.take() else {
                    return Err(Error::new(line, ErrorKind::Syntax, "a value with no key"));
                };
                let v = value(built, line)?;
                set(map, name, kind, v, line)
            }
        }
    }

    /// go-yaml v2's `merge` (decode.go): each mapping's entries set into
    /// the mapping under construction, as if written where `<<` is.
    fn merge_into_parent(
        &mut self,
        maps: impl Iterator<Item = GoMap>,
        line: usize,
    ) -> Result<(), Error> {
        let Some(Frame::Map { map, key, .. }) = self.stack.last_mut() else {
            return Err(Error::new(line, ErrorKind::Meaning, WANT_MAP));
        };
        *key = None;
        for source in maps {
            for (name, (kind, v)) in source {
                set(map, name, kind, v, line)?;
            }
        }
        Ok(())
    }
}

/// go-yaml v2's `setMapIndex` without `strict` (decode.go): a key already
/// there takes the later value. Two keys that are different Go values but
/// the same JSON key (`1` and `"1"`, `1.0` and `1`) are both in Go's map,
/// and sigs.k8s.io/yaml then writes one of them, whichever its map
/// iteration gives: refused here, as no one reading can be told.
fn set(map: &mut GoMap, name: String, kind: KeyKind, v: Value, line: usize) -> Result<(), Error> {
    match map.entry(name) {
        Entry::Vacant(slot) => {
            slot.insert((kind, v));
            Ok(())
        }
        Entry::Occupied(mut slot) => {
            let same = match (slot.get().0, kind) {
                (KeyKind::Float(a), KeyKind::Float(b)) => a == b,
                (a, b) => a == b,
            };
            if !same {
                return Err(Error::new(
                    line,
                    ErrorKind::Meaning,
                    format!(
                        "two different keys make the JSON key {:?}; sigs.k8s.io/yaml keeps either",
                        slot.key()
                    ),
                ));
            }
            slot.insert((kind, v));
            Ok(())
        }
    }
}

fn value(built: Built, line: usize) -> Result<Value, Error> {
    Ok(match built {
        Built::Scalar(plain, text) => {
            plain_json(&plain, &text).map_err(|m| Error::new(line, ErrorKind::Meaning, m))?
        }
        Built::Seq(items) => Value::Array(items),
        Built::Map(map) => Value::Object(
            map.into_iter()
                .map(|(k, (_, v))| (k, v))
                .collect::<Map<_, _>>(),
        ),
    })
}

/// go-yaml v2's `mapping` (decode.go): a key decoded to a map or a slice
/// is "invalid map key"; sigs.k8s.io/yaml names the others.
fn go_key(built: Built, line: usize) -> Result<Key, Error> {
    let Built::Scalar(plain, text) = built else {
        return Err(Error::new(
            line,
            ErrorKind::Meaning,
            "a mapping key that is a mapping or a list (invalid map key)",
        ));
    };
    let kind = match plain {
        Plain::Bool(_) => KeyKind::Bool,
        Plain::Int(_) => KeyKind::Int,
        Plain::Float(f) => KeyKind::Float(f),
        Plain::Null | Plain::Uint(_) | Plain::Str => KeyKind::Str,
    };
    let name = key_string(&plain, &text).map_err(|m| Error::new(line, ErrorKind::Meaning, m))?;
    Ok(Key::Go(name, kind))
}

const CORE: &str = "tag:yaml.org,2002:";

/// A scalar as go-yaml v2's `scalar` (decode.go) and `resolve`
/// (resolve.go) decode it into an `interface{}`: quoted or block and
/// untagged, a string; a tag out of `resolvableTag` (`!`, `!local`,
/// `!!map`, `!!merge`...) leaves the text a string, `!!binary` decodes
/// it; `!!str` is the text; `!!bool`, `!!int`, `!!float`, `!!null`,
/// `!!timestamp` must resolve to their own kind, a `!!float` taking an
/// integer as a float, else "cannot decode".
pub fn scalar(s: Scalar) -> Result<(Plain, Option<String>), String> {
    let Some(tag) = s.tag else {
        let plain = if s.plain {
            resolve_plain(s.value)
        } else {
            Plain::Str
        };
        return Ok((plain, None));
    };
    let short = tag.strip_prefix(CORE);
    let resolved = match short {
        Some("bool" | "int" | "float" | "null") => resolve_plain(s.value),
        Some("timestamp") if looks_like_timestamp(s.value) => return Ok((Plain::Str, None)),
        Some("timestamp") => Plain::Str,
        Some("binary") => return binary(s.value),
        _ => return Ok((Plain::Str, None)),
    };
    let name = short.unwrap_or_default();
    let plain = match (name, resolved) {
        ("bool", b @ Plain::Bool(_)) => b,
        ("int", i @ (Plain::Int(_) | Plain::Uint(_))) => i,
        ("float", f @ Plain::Float(_)) => f,
        ("float", Plain::Int(i)) => Plain::Float(i as f64),
        ("null", Plain::Null) => Plain::Null,
        _ => return Err(format!("cannot decode {:?} as a !!{name}", s.value)),
    };
    Ok((plain, None))
}

/// go-yaml v2's `parseTimestamp` (resolve.go) takes four digits, `-`,
/// then one of `2006-1-2`, `2006-1-2 15:4:5.999999999`,
/// `2006-1-2T15:4:5.999999999Z07:00` (or `t`), through Go's `time.Parse`,
/// which checks the day against the month: the date is checked here so,
/// and that something of a time follows it, not every field of the time.
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut parts = s[5..].splitn(2, ['T', 't', ' ']);
    let date = parts.next().unwrap_or_default();
    let time = parts.next();
    let mut md = date.split('-');
    let (Some(m), Some(d), None) = (md.next(), md.next(), md.next()) else {
        return false;
    };
    let num = |t: &str| (1..=2).contains(&t.len()) && t.bytes().all(|c| c.is_ascii_digit());
    let (Ok(year), Ok(month), Ok(day)) =
        (s[..4].parse::<u32>(), m.parse::<u32>(), d.parse::<u32>())
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    num(m) && num(d) && (1..=days).contains(&day) && time.is_none_or(|t| t.contains(':'))
}

/// `base64.StdEncoding.DecodeString` (Go drops `\r` and `\n`, needs the
/// padding, lets the last bits be anything), the bytes made a JSON
/// string as `encoding/json` makes one: each byte that starts no UTF-8
/// character becomes U+FFFD.
fn binary(text: &str) -> Result<(Plain, Option<String>), String> {
    const GO_STD: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    let compact: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    let bytes = GO_STD
        .decode(compact)
        .map_err(|_| "!!binary value contains invalid base64 data".to_owned())?;
    let mut out = String::with_capacity(bytes.len());
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                rest = bad.get(1..).unwrap_or_default();
            }
        }
    }
    Ok((Plain::Str, Some(out)))
}
