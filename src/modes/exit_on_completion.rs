//! mode exitOnJobCompletion: merge `exitOnJobCompletion: true` into the pod
//! template's `proxy.istio.io/config`, keeping every key already there and
//! the user's form (YAML block, YAML flow or JSON).
//!
//! Upstream Istio's ProxyConfig has no such field and its lenient parser
//! drops it (docs/facts.md): this mode only acts on Istio builds that implement
//! it, and breaks nothing elsewhere. The README says so.
//!
//! The config is read as Istio reads it (`kube_yaml`: sigs.k8s.io/yaml's
//! `YAMLToJSON` over go-yaml v2, which `protomarshal.ApplyYAML` applies),
//! within a budget of work: an edit is kept only when Istio then reads the
//! user's mapping plus `exitOnJobCompletion: true` and nothing else
//! changed; otherwise the annotation stays as it came, with a warning.

use crate::json::{Node, ShapeError};
use crate::modes::target::{ModeOutcome, Target, Undone};
use crate::names::{ANNOTATION_PROXY_CONFIG, EXIT_ON_JOB_COMPLETION as KEY};
use crate::record::Applied;
use kube_yaml::resolve::{resolve_plain, Plain};
use kube_yaml::{Budget, ErrorKind};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// What reading one config may cost: one node per byte of it (no text
/// holds more), plus what aliases may replay on top, and nesting far past
/// any ProxyConfig's (its deepest fields are a few levels down). go-yaml
/// v2 guards against "excessive aliasing" with a ratio of replayed to
/// decoded nodes (decode.go `allowedAliasRatio`, v2.4.4: 99% below 400,000
/// decodes); this budget is the same guard at a size a request can afford.
fn budget(text: &str) -> Budget {
    Budget {
        nodes: text.len().saturating_add(ALIAS_NODES),
        depth: MAX_DEPTH as usize,
    }
}

/// Nodes aliases may add to a config beyond its own.
const ALIAS_NODES: usize = 10_000;

/// Why a config is left unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Past the reading budget: nothing was read, nothing is changed.
    TooLarge(String),
    /// Read, and not to be extended (or undone) safely: the reason.
    Refused(String),
}

impl From<String> for Unread {
    fn from(why: String) -> Self {
        Unread::Refused(why)
    }
}

impl From<&str> for Unread {
    fn from(why: &str) -> Self {
        Unread::Refused(why.to_owned())
    }
}

pub fn apply(t: &mut Target) -> Result<ModeOutcome, ShapeError> {
    let (merged, applied) = {
        let current = t
            .object
            .view()?
            .template_annotations()
            .and_then(|a| a.proxy_config.as_deref());
        let merged = match current {
            None => format!("{KEY}: true"),
            Some(text) => match merge(text) {
                Ok(Some(merged)) => merged,
                Ok(None) => return Ok(ModeOutcome::unchanged()),
                Err(Unread::TooLarge(what)) => {
                    return Ok(ModeOutcome::unchanged_because(format!(
                        "{ANNOTATION_PROXY_CONFIG}: too large to read ({what}); left unchanged"
                    )))
                }
                Err(Unread::Refused(why)) => {
                    return Ok(ModeOutcome::unchanged_because(format!(
                        "{ANNOTATION_PROXY_CONFIG} left unchanged: {why}"
                    )))
                }
            },
        };
        let applied = Applied::ExitOnJobCompletion {
            inserted: inserted(current.unwrap_or_default(), &merged).to_owned(),
            created: current.is_none(),
            annotation: t.record.and_then(Applied::annotation).cloned(),
        };
        (merged, applied)
    };
    t.object
        .set_annotation(ANNOTATION_PROXY_CONFIG, Node::from_string(merged))?;
    let mut outcome = ModeOutcome::applied(applied);
    outcome.warnings.push(UPSTREAM_IGNORES.to_owned());
    Ok(outcome)
}

/// Said whenever the key is written: the edit is made as asked, and the
/// user learns that upstream Istio drops the key, so that the sidecar of
/// this workload still runs unless their Istio build acts on it.
pub const UPSTREAM_IGNORES: &str =
    "exitOnJobCompletion: upstream Istio ignores it; only Istio builds that act on it end the sidecar";

/// The text `merged` has that `original` has not. Every merge inserts text
/// in one place and changes nothing else, so `original` is `merged` without
/// it (tested for each form).
fn inserted<'m>(original: &str, merged: &'m str) -> &'m str {
    let prefix = original
        .bytes()
        .zip(merged.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = original[prefix..]
        .bytes()
        .rev()
        .zip(merged[prefix..].bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    // Both ends are on char boundaries: the inserted text is ASCII, so the
    // first differing byte of `merged` starts it.
    merged.get(prefix..merged.len() - suffix).unwrap_or(merged)
}

/// Take out of `proxy.istio.io/config` the key the policy inserted, giving
/// back the user's text byte for byte; an annotation the policy created
/// goes whole. A key the user took out leaves nothing to do; a config
/// edited where the key was (or no longer readable) is refused.
pub fn undo(inserted: &str, created: bool, t: &mut Target) -> Result<Undone, ShapeError> {
    let restored = {
        let Some(text) = t
            .object
            .view()?
            .template_annotations()
            .and_then(|a| a.proxy_config.as_deref())
        else {
            return Ok(Undone::Done { changed: false });
        };
        match take_out(text, inserted) {
            Ok(Some(restored)) => restored,
            Ok(None) => return Ok(Undone::Done { changed: false }),
            // The record's warning says the edit is kept (the config left
            // as it is); within a warning's 120 characters.
            Err(Unread::TooLarge(_)) => {
                return Ok(Undone::Refused(format!(
                    "{ANNOTATION_PROXY_CONFIG}: too large to read"
                )))
            }
            Err(Unread::Refused(why)) => {
                return Ok(Undone::Refused(format!("{ANNOTATION_PROXY_CONFIG} {why}")))
            }
        }
    };
    if created && restored.trim().is_empty() {
        t.object.remove_annotations(&[ANNOTATION_PROXY_CONFIG])?;
    } else {
        t.object
            .set_annotation(ANNOTATION_PROXY_CONFIG, Node::from_string(restored))?;
    }
    Ok(Undone::Done { changed: true })
}

/// How many places `take_out` tries with the parser: the key is inserted
/// once, and a hostile config repeating the inserted text must not cost a
/// parse each.
const MAX_TRIES: usize = 2;

/// `text` without the `inserted` text, when that leaves the same mapping
/// minus `exitOnJobCompletion: true`; `Ok(None)` when the key is gone or
/// holds a value of the user's.
fn take_out(text: &str, inserted: &str) -> Result<Option<String>, Unread> {
    // The config as the merge left it: the text without the inserted part
    // merges back into exactly this text, which proves it without a YAML
    // parse (a parse of a large config costs a good part of a request's
    // deadline in wasm).
    if let Some(at) = text.rfind(inserted) {
        let candidate = [&text[..at], &text[at + inserted.len()..]].concat();
        if matches!(merge_fast(&candidate), Some(Some(merged)) if merged == text) {
            return Ok(Some(candidate));
        }
    }
    let now = match read_mapping(text) {
        Ok(now) => now,
        Err(too_large @ Unread::TooLarge(_)) => return Err(too_large),
        Err(Unread::Refused(_)) => return Err("no longer a mapping".into()),
    };
    match now.get(KEY) {
        Some(Value::Bool(true)) => {}
        // Gone, or another value the user wrote in its place: nothing of
        // the policy's is left.
        _ => return Ok(None),
    }
    // The last place first: every merge inserts at the end of the mapping.
    let mut end = text.len();
    for _ in 0..MAX_TRIES {
        let Some(at) = text[..end].rfind(inserted) else {
            break;
        };
        let candidate = [&text[..at], &text[at + inserted.len()..]].concat();
        match read_mapping(&candidate) {
            Ok(mut mapping) => {
                if !mapping.contains_key(KEY) {
                    mapping.insert(KEY.to_owned(), Value::Bool(true));
                    if mapping == now {
                        return Ok(Some(candidate));
                    }
                }
            }
            Err(too_large @ Unread::TooLarge(_)) => return Err(too_large),
            Err(Unread::Refused(_)) => {}
        }
        // The next place may overlap this one: it ends before this one's end.
        end = at + inserted.len() - 1;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
    }
    Err("edited where the key was added".into())
}

/// The config with `exitOnJobCompletion: true` added, written in the form the
/// user chose; `Ok(None)` when the key is already there (the user's word
/// stands); `Err` when the text is not a mapping or cannot be extended in
/// place.
///
/// A YAML parser costs several times the rest of a request, so the forms
/// users write (JSON, and block mappings of plain `key: value` lines) are
/// recognised by `merge_fast`; anything else goes through `merge_verified`.
pub fn merge(text: &str) -> Result<Option<String>, Unread> {
    match merge_fast(text) {
        Some(answer) => Ok(answer),
        None => merge_verified(text),
    }
}

/// `merge` without a YAML parser, for texts in a strict subset of YAML in
/// which the edit is correct by construction: the answer is the one
/// `merge_verified` gives (fuzz target `merge_fast_path` checks it).
/// `None` when the text is outside that subset.
///
/// The subset starts with the characters: printable ASCII and `\n` only.
/// go-yaml v2, behind Istio, also ends lines, and so comments, at `\r`,
/// U+0085, U+2028 and U+2029 (yamlprivateh.go `is_break`), and refuses
/// control characters (readerc.go); a config with any of them, or with any
/// other non-ASCII character, is left to the reader.
pub fn merge_fast(text: &str) -> Option<Option<String>> {
    if !text
        .bytes()
        .all(|b| b == b'\n' || (b' '..=b'~').contains(&b))
    {
        return None;
    }
    if let Some(keys) = json_object_keys(text) {
        if keys.binary_search(&KEY).is_ok() {
            return Some(None);
        }
        // The text is one JSON object: its last `}` closes it.
        let close = text.rfind('}')?;
        let (head, tail) = text.split_at(close);
        let sep = if keys.is_empty() { "" } else { ", " };
        return Some(Some([head, sep, "\"", KEY, "\": true", tail].concat()));
    }
    let block = simple_block_mapping(text)?;
    if block.top_keys.binary_search(&KEY).is_ok() {
        return Some(None);
    }
    let indent = &text[block.first_line..block.first_line + block.indent];
    Some(Some(join_line(text, &[indent, KEY, ": true"].concat())))
}

/// `merge` through a YAML parser: every result is re-read and checked to be
/// the same mapping plus the key, so a text edit can never change what was
/// there.
pub fn merge_verified(text: &str) -> Result<Option<String>, Unread> {
    let original = read_mapping(text)?;
    if original.contains_key(KEY) {
        return Ok(None);
    }
    let candidate = if original.is_empty() && only_comments(text) {
        // Empty, or comments only: a new line keeps the comments.
        join_line(text, &format!("{KEY}: true"))
    } else if let Some(close) = flow_close(text) {
        let (head, tail) = text.split_at(close);
        let sep = if original.is_empty() || head.trim_end().ends_with(',') {
            ""
        } else {
            ", "
        };
        format!("{head}{sep}\"{KEY}\": true{tail}")
    } else {
        join_line(text, &format!("{}{KEY}: true", block_indent(text)))
    };
    let mut expected = original;
    expected.insert(KEY.to_owned(), Value::Bool(true));
    match read_mapping(&candidate) {
        Ok(reread) if reread == expected => Ok(Some(candidate)),
        Err(too_large @ Unread::TooLarge(_)) => Err(too_large),
        _ => Err("its form cannot be extended safely; add the key by hand".into()),
    }
}

/// The top-level keys of `text`, sorted, when it is one JSON object that
/// every YAML reader sees as the same mapping: no escapes (YAML refuses
/// some that JSON takes, such as lone surrogates), keys distinct at every
/// level, each key on the line of its `:` and short enough to be a YAML
/// simple key, nesting well inside both parsers' limits.
fn json_object_keys(text: &str) -> Option<Vec<&str>> {
    if !text.trim_start().starts_with('{') || text.contains('\\') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let keys = YamlSafeJson { text, depth: 0 }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(keys)
}

/// Every number of at most 18 characters fits in 64 bits, where go-yaml
/// v2 reads an integer as an integer (resolve.go: `ParseInt`, `ParseUint`,
/// then a float): longer ones are left to the reader.
const MAX_NUMBER_CHARS: usize = 18;
/// Below this magnitude, a number serde_json reads as a float is one that
/// go-yaml v2 reads as a number too.
const MAX_SAFE_NUMBER: f64 = 9.0e18;

/// YAML (libyaml, go-yaml) reads an implicit key only within 1024
/// characters of its start, on one line.
const MAX_KEY_SPAN: usize = 1000;
const MAX_DEPTH: u8 = 64;

/// Walks one JSON value, failing on what YAML would read otherwise; a
/// mapping yields its keys, sorted.
#[derive(Clone, Copy)]
struct YamlSafeJson<'t> {
    text: &'t str,
    depth: u8,
}

impl<'t> YamlSafeJson<'t> {
    fn deeper<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom("too deep"));
        }
        Ok(YamlSafeJson {
            depth: self.depth + 1,
            ..self
        })
    }

    /// The key (borrowed from `text`, so it has a place in it) is followed
    /// on its own line by its `:`, within a simple key's span.
    fn key_fits<E: de::Error>(self, key: &str) -> Result<(), E> {
        let start = (key.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        let after = self
            .text
            .get(start + key.len() + 1..)
            .ok_or_else(|| E::custom("key outside the text"))?;
        let spaces = after.len() - after.trim_start_matches(' ').len();
        if after[spaces..].starts_with(':') && key.len() + 2 + spaces <= MAX_KEY_SPAN {
            Ok(())
        } else {
            Err(E::custom("key not a YAML simple key"))
        }
    }
}

impl<'t> DeserializeSeed<'t> for YamlSafeJson<'t> {
    type Value = Vec<&'t str>;
    fn deserialize<D: Deserializer<'t>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'t> Visitor<'t> for YamlSafeJson<'t> {
    type Value = Vec<&'t str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<M: MapAccess<'t>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let inner = self.deeper()?;
        let mut keys = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key::<&'t str>()? {
            self.key_fits(key)?;
            keys.push(key);
            map.next_value_seed(inner)?;
        }
        distinct(keys).ok_or_else(|| de::Error::custom("duplicate key"))
    }

    fn visit_seq<A: SeqAccess<'t>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let inner = self.deeper()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    /// serde_json reads an integer too long for 64 bits as a float, where
    /// go-yaml reads a float too, by its own rules: left to the reader.
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        if v.abs() < MAX_SAFE_NUMBER {
            Ok(Vec::new())
        } else {
            Err(E::custom("number out of 64 bits"))
        }
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
}

/// The keys of one mapping, sorted, or `None` when one repeats. Sorting
/// once, not a scan per key: 30,000 keys must not cost seconds.
fn distinct(mut keys: Vec<&str>) -> Option<Vec<&str>> {
    keys.sort_unstable();
    keys.windows(2).all(|w| w[0] != w[1]).then_some(keys)
}

/// A block mapping in the plain subset of YAML the recogniser accepts.
#[derive(Debug, PartialEq, Eq)]
struct Block<'t> {
    /// Byte offset of the first content line, and its indentation.
    first_line: usize,
    indent: usize,
    /// Sorted.
    top_keys: Vec<&'t str>,
}

/// Recognise a block mapping made only of lines `key:` (opening a nested
/// mapping or holding null) and `key: scalar`, with plain keys, one-line
/// scalars (plain, or quoted without escapes) and comments. In such a text
/// every line is complete, so a line `key: true` appended at the top-level
/// indentation adds exactly that key. `None` for anything else (sequences,
/// flow collections, block or multi-line scalars, anchors, tags, documents
/// markers, tabs, duplicate keys...): the YAML parser then decides.
fn simple_block_mapping(text: &str) -> Option<Block<'_>> {
    // Indentation of each open mapping, and the keys seen at that level.
    let mut levels: Vec<(usize, Vec<&str>)> = Vec::new();
    let mut may_open = false;
    let mut first_line = None;
    let mut offset = 0;
    if text.bytes().any(|b| b == b'\t' || b == b'\r') {
        return None;
    }
    for line in text.split('\n') {
        let start = offset;
        offset += line.len() + 1;
        let content = line.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = line.len() - content.len();
        match levels.last() {
            None => first_line = Some(start),
            Some(&(last, _)) if may_open && indent > last => {}
            Some(&(last, _)) if indent > last => return None,
            Some(_) => {
                while levels.last().is_some_and(|(i, _)| *i > indent) {
                    if levels.len() == 1 {
                        // Less indented than the mapping itself.
                        return None;
                    }
                    distinct(levels.pop()?.1)?;
                }
                if levels.last().is_some_and(|(i, _)| *i != indent) {
                    return None;
                }
            }
        }
        if levels.last().is_none_or(|(i, _)| *i < indent) {
            levels.push((indent, Vec::new()));
        }
        let (key, value) = content.split_once(':')?;
        if !plain_key(key) || !(value.is_empty() || value.starts_with(' ')) {
            return None;
        }
        levels.last_mut()?.1.push(key);
        let comment = value.as_bytes().windows(2).position(|w| w == b" #");
        let value = value[..comment.unwrap_or(value.len())].trim();
        may_open = value.is_empty();
        if !may_open && !one_line_scalar(value) {
            return None;
        }
    }
    let mut levels = levels.into_iter();
    let (indent, top_keys) = levels.next()?;
    for (_, keys) in levels {
        distinct(keys)?;
    }
    Some(Block {
        first_line: first_line?,
        indent,
        top_keys: distinct(top_keys)?,
    })
}

/// A key every YAML reader takes as this very string: it starts with a
/// letter (no number, no `.inf`), is not a word some reader resolves to a
/// boolean or null, and fits in a simple key.
fn plain_key(key: &str) -> bool {
    const NOT_STRINGS: [&str; 10] = [
        "null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan",
    ];
    let b = key.as_bytes();
    b.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.len() < MAX_KEY_SPAN
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/'))
        && !NOT_STRINGS.iter().any(|w| key.eq_ignore_ascii_case(w))
}

/// A scalar that ends on its line: quoted without escapes or inner quotes,
/// or plain without indicators that could open anything, not a number too
/// long for 64 bits, and not one of go-yaml v2's infinities or NaN
/// (`.inf`, `+.Inf`, `.nan`: resolve.go), which sigs.k8s.io/yaml cannot
/// write as JSON.
fn one_line_scalar(value: &str) -> bool {
    let b = value.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    if first == b'"' || first == b'\'' {
        return b.len() >= 2
            && last == first
            && !b[1..b.len() - 1].iter().any(|c| *c == first || *c == b'\\');
    }
    let starts_plain = first.is_ascii_alphanumeric()
        || matches!(first, b'_' | b'.' | b'/' | b'+')
        || !first.is_ascii()
        || (first == b'-' && b.get(1).is_some_and(u8::is_ascii_digit));
    let may_be_a_number = first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.');
    starts_plain
        && !(may_be_a_number && b.len() > MAX_NUMBER_CHARS)
        && !matches!(resolve_plain(value), Plain::Float(f) if !f.is_finite())
        && last != b':'
        && b.iter().enumerate().all(|(i, c)| match c {
            b'[' | b']' | b'{' | b'}' | b'#' | b'"' | b'\'' => false,
            b':' => b.get(i + 1) != Some(&b' '),
            _ => true,
        })
}

/// The config as Istio reads it: the JSON object `YAMLToJSON` gives
/// (`null`, for no document, applies nothing: an empty mapping).
fn read_mapping(text: &str) -> Result<Map<String, Value>, Unread> {
    match kube_yaml::to_json(text, budget(text)) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err("it is not a mapping".into()),
        Err(e) if e.kind == ErrorKind::TooLarge => Err(Unread::TooLarge(e.message)),
        Err(e) => Err(Unread::Refused(format!("it does not parse: {e}"))),
    }
}

fn content_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#') && t != "---"
    })
}

fn only_comments(text: &str) -> bool {
    content_lines(text).next().is_none()
}

/// Byte index of the closing brace of a flow mapping (`{...}`, JSON too).
fn flow_close(text: &str) -> Option<usize> {
    let first = content_lines(text).next()?;
    if !first.trim_start().starts_with('{') {
        return None;
    }
    text.rfind('}')
}

/// Indentation of the mapping's keys (a block mapping may be indented).
fn block_indent(text: &str) -> &str {
    content_lines(text)
        .next()
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .unwrap_or_default()
}

/// `text` with `line` appended as a line of its own, keeping whether the
/// text ended with a newline.
fn join_line(text: &str, line: &str) -> String {
    // Blank text is kept too, so that the merge only ever inserts (undo
    // takes the inserted text out and must find the user's bytes).
    if text.trim().is_empty() {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        return [text, sep, line].concat();
    }
    match text.strip_suffix('\n') {
        Some(body) => [body, "\n", line, "\n"].concat(),
        None => [text, "\n", line].concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::yaml_block(
        "holdApplicationUntilProxyStarts: true",
        "holdApplicationUntilProxyStarts: true\nexitOnJobCompletion: true"
    )]
    #[case::yaml_block_newline(
        "concurrency: 2\ntracing:\n  sampling: 10\n",
        "concurrency: 2\ntracing:\n  sampling: 10\nexitOnJobCompletion: true\n"
    )]
    #[case::yaml_indented(
        "  concurrency: 2\n  drainDuration: 5s\n",
        "  concurrency: 2\n  drainDuration: 5s\n  exitOnJobCompletion: true\n"
    )]
    #[case::yaml_block_scalar_last(
        "concurrency: 2\nnote: |\n  two\n  lines\n",
        "concurrency: 2\nnote: |\n  two\n  lines\nexitOnJobCompletion: true\n"
    )]
    #[case::json(
        "{\"holdApplicationUntilProxyStarts\": true}",
        "{\"holdApplicationUntilProxyStarts\": true, \"exitOnJobCompletion\": true}"
    )]
    #[case::json_pretty(
        "{\n  \"concurrency\": 2,\n  \"proxyMetadata\": {\"A\": \"}\"}\n}\n",
        "{\n  \"concurrency\": 2,\n  \"proxyMetadata\": {\"A\": \"}\"}\n, \"exitOnJobCompletion\": true}\n"
    )]
    #[case::json_empty("{}", "{\"exitOnJobCompletion\": true}")]
    #[case::yaml_flow(
        "{ holdApplicationUntilProxyStarts: true }",
        "{ holdApplicationUntilProxyStarts: true , \"exitOnJobCompletion\": true}"
    )]
    #[case::empty("", "exitOnJobCompletion: true")]
    #[case::comment_only("# set by team-a\n", "# set by team-a\nexitOnJobCompletion: true\n")]
    #[case::document_start(
        "---\nconcurrency: 2\n",
        "---\nconcurrency: 2\nexitOnJobCompletion: true\n"
    )]
    fn merges_in_the_users_form(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(merge(text), Ok(Some(expected.to_owned())));
    }

    /// Texts the fast paths accept merge exactly as the YAML-verified path
    /// does; texts they refuse still merge correctly through it.
    #[rstest]
    #[case::block("holdApplicationUntilProxyStarts: true", true)]
    #[case::nested("a: 1\nb:\n  c: x\n  d:\n    e: 'q'\nf: \"s\" # note\n", true)]
    #[case::null_value("a:\nb: 2\n", true)]
    #[case::indented("  a: 1\n  b:\n    c: 2\n", true)]
    #[case::comments("# top\na: 1 # one\n  # odd comment\nb: -2\n", true)]
    #[case::json("{\"a\": {\"b\": [1, \"}\"]}, \"c\": null}", true)]
    #[case::json_empty(" {} ", true)]
    #[case::key_present("a: 1\nexitOnJobCompletion: false", true)]
    #[case::flow_yaml("{a: 1}", false)]
    #[case::sequence_value("a:\n- 1\n- 2\n", false)]
    #[case::block_scalar("a: |\n  text\nb: 1\n", false)]
    #[case::continuation("a: one\n  two\n", false)]
    #[case::dedent_below_top("  a: 1\nb: 2\n", false)]
    #[case::document_marker("---\na: 1\n", false)]
    #[case::quoted_key("\"a\": 1\n", false)]
    #[case::anchor("a: &x 1\nb: *x\n", false)]
    #[case::tab("a:\t1\n", false)]
    #[case::crlf("a: 1\r\nb: 2\r\n", false)]
    #[case::colon_value("a: b: c\n", false)]
    #[case::json_duplicate("{\"a\": 1, \"a\": 2}", false)]
    #[case::lone_quote("a: \"\n", false)]
    #[case::lone_single_quote("a: '\n", false)]
    #[case::json_escaped_key("{\"\\u0061\": 1}", false)]
    #[case::json_escaped_value("{\"a\": \"\\ud800\"}", false)]
    #[case::json_nested_duplicate("{\"a\": {\"b\": 1, \"b\": 2}}", false)]
    #[case::json_key_then_newline("{\"a\"\n: 1}", false)]
    #[case::json_long_key(&format!("{{\"{}\": 1}}", "k".repeat(1100)), false)]
    #[case::json_deep(&format!("{{\"a\": {}1{}}}", "[".repeat(100), "]".repeat(100)), false)]
    #[case::line_separator("a: 1 # x\u{2028}exitOnJobCompletion: false", false)]
    #[case::next_line("a: 1 # x\u{85}b: 2", false)]
    #[case::paragraph_separator("a: x\u{2029}b: 2", false)]
    #[case::control_character("a: x\u{1}y", false)]
    #[case::delete("a: x\u{7f}", false)]
    #[case::non_ascii_value("a: café", false)]
    #[case::bool_keys("true: 1\nyes: 2\n", false)]
    #[case::null_key("null: 1\n", false)]
    #[case::number_keys("1: a\n01: b\n", false)]
    #[case::big_integer("a: 44444444444444444444444\n", false)]
    #[case::big_json_integer("{\"a\": 44444444444444444444444}", false)]
    #[case::small_numbers("a: 123456789012345678\nb: -1.5\nc: +7\n", true)]
    #[case::long_block_key(&format!("{}: 1\n", "k".repeat(1100)), false)]
    fn fast_paths_agree_with_the_parser(#[case] text: &str, #[case] fast: bool) {
        let answer = merge_fast(text);
        assert_eq!(answer.is_some(), fast, "{text:?}");
        if let Some(answer) = answer {
            assert_eq!(Ok(answer), merge_verified(text), "{text:?}");
        }
    }

    /// go-yaml v2 ends a comment at every YAML 1.1 line break, so the
    /// user's `false` is a key of its own to Istio; whether the reader
    /// reads it so (`\r`) or refuses the text (U+0085, U+2028, U+2029,
    /// which its YAML 1.2 parser reads as content), the user's word stands.
    #[rstest]
    #[case::line_separator("\u{2028}", false)]
    #[case::next_line("\u{85}", false)]
    #[case::paragraph_separator("\u{2029}", false)]
    #[case::carriage_return("\r", true)]
    fn a_comment_ends_at_every_yaml_line_break(#[case] newline: &str, #[case] read: bool) {
        let text =
            format!("holdApplicationUntilProxyStarts: true # x{newline}exitOnJobCompletion: false");
        if read {
            assert_eq!(merge(&text), Ok(None), "{text:?}");
        } else {
            assert!(matches!(merge(&text), Err(Unread::Refused(_))), "{text:?}");
        }
    }

    /// Every merge only inserts: the user's text is the merged text without
    /// the inserted part, which undo takes out again.
    #[rstest]
    #[case::yaml_block("holdApplicationUntilProxyStarts: true")]
    #[case::yaml_block_newline("concurrency: 2\ntracing:\n  sampling: 10\n")]
    #[case::yaml_indented("  concurrency: 2\n  drainDuration: 5s\n")]
    #[case::json("{\"holdApplicationUntilProxyStarts\": true}")]
    #[case::json_pretty("{\n  \"concurrency\": 2,\n  \"proxyMetadata\": {\"A\": \"}\"}\n}\n")]
    #[case::json_empty("{}")]
    #[case::yaml_flow("{ holdApplicationUntilProxyStarts: true }")]
    #[case::yaml_flow_trailing_comma("{a: 1,}")]
    #[case::empty("")]
    #[case::spaces("  ")]
    #[case::newlines("\n\n")]
    #[case::comment_only("# set by team-a\n")]
    #[case::comment_no_newline("# set by team-a")]
    #[case::non_ascii("note: café\n")]
    #[case::document_marker("---\na: 1\n")]
    #[case::key_text_in_a_value("a: \"exitOnJobCompletion: true\"\n")]
    fn a_merge_only_inserts_and_undo_takes_it_out(#[case] text: &str) {
        let merged = merge(text).unwrap().unwrap();
        let added = inserted(text, &merged);
        assert!(added.contains(KEY), "{added:?}");
        assert_eq!(merged.replacen(added, "", 1).len(), text.len());
        assert_eq!(
            take_out(&merged, added),
            Ok(Some(text.to_owned())),
            "{merged:?}"
        );
    }

    #[rstest]
    // The user added a key after the merge: it stays, the policy's goes.
    #[case::key_added_after(
        "a: 1\nexitOnJobCompletion: true\nb: 2\n",
        "\nexitOnJobCompletion: true",
        Ok(Some("a: 1\nb: 2\n"))
    )]
    #[case::user_took_the_key_out("a: 1\n", "\nexitOnJobCompletion: true", Ok(None))]
    #[case::user_set_it_false(
        "a: 1\nexitOnJobCompletion: false",
        "\nexitOnJobCompletion: true",
        Ok(None)
    )]
    #[case::rewritten_as_json(
        "{\"a\": 1, \"exitOnJobCompletion\": true}",
        "\nexitOnJobCompletion: true",
        Err("edited where the key was added")
    )]
    #[case::no_longer_a_mapping("- a", "\nexitOnJobCompletion: true", Err("no longer a mapping"))]
    // The inserted text also inside a value: only the real key goes.
    #[case::inserted_text_in_a_value(
        "a: \"x\n  exitOnJobCompletion: true\"\nexitOnJobCompletion: true",
        "exitOnJobCompletion: true",
        Ok(Some("a: \"x\n  exitOnJobCompletion: true\"\n"))
    )]
    // A quoted value's next line not indented: libyaml (go-yaml v2) takes
    // it, this reader's YAML 1.2 parser does not: the edit is kept.
    #[case::unindented_quoted_line(
        "a: \"x\nexitOnJobCompletion: true\"\nexitOnJobCompletion: true",
        "\nexitOnJobCompletion: true",
        Err("no longer a mapping")
    )]
    // Regression (tests/properties): a hand-edited inserted text ending
    // in a multi-byte character; stepping back must stay on a character.
    #[case::inserted_text_ends_in_non_ascii(
        "k: \"exitOnJobCompletion: true # é\"\nexitOnJobCompletion: true",
        "exitOnJobCompletion: true # é",
        Err("edited where the key was added")
    )]
    fn undo_after_user_edits(
        #[case] text: &str,
        #[case] inserted: &str,
        #[case] expected: Result<Option<&str>, &str>,
    ) {
        let expected = expected.map(|o| o.map(str::to_owned)).map_err(Unread::from);
        assert_eq!(take_out(text, inserted), expected);
    }

    #[rstest]
    #[case::yaml_true("exitOnJobCompletion: true")]
    #[case::yaml_false("concurrency: 2\nexitOnJobCompletion: false\n")]
    #[case::json_false("{\"exitOnJobCompletion\": false}")]
    fn existing_key_stands(#[case] text: &str) {
        assert_eq!(merge(text), Ok(None));
    }

    #[rstest]
    #[case::scalar("true", "it is not a mapping")]
    #[case::list("- a\n- b", "it is not a mapping")]
    #[case::broken("{\"a\": ", "it does not parse")]
    #[case::bad_indent("a: 1\n b: 2", "it does not parse")]
    #[case::flow_then_comment_brace("{a: 1} # }", "its form cannot be extended safely")]
    #[case::infinity("a: .inf\n", "it does not parse")]
    #[case::same_json_key("1: a\n\"1\": b\n", "it does not parse")]
    #[case::null_key("~: a\n", "it does not parse")]
    #[case::line_separator("a: 1\u{2028}b: 2\n", "it does not parse")]
    fn unusable_configs_are_errors(#[case] text: &str, #[case] why: &str) {
        let Err(Unread::Refused(err)) = merge(text) else {
            panic!("{text:?} merged");
        };
        assert!(err.starts_with(why), "{err:?}");
    }

    /// Istio reads these as go-yaml v2 does: the merge is judged by that
    /// reading (a later duplicate wins; `<<` merges; `on` is a boolean).
    #[rstest]
    #[case::duplicate_key("a: 1\na: 2", "a: 1\na: 2\nexitOnJobCompletion: true")]
    #[case::merge_key(
        "base: &b {concurrency: 2}\n<<: *b\n",
        "base: &b {concurrency: 2}\n<<: *b\nexitOnJobCompletion: true\n"
    )]
    #[case::yaml_1_1_bool(
        "holdApplicationUntilProxyStarts: on\n",
        "holdApplicationUntilProxyStarts: on\nexitOnJobCompletion: true\n"
    )]
    fn configs_read_as_istio_reads_them(#[case] text: &str, #[case] merged: &str) {
        assert_eq!(merge(text), Ok(Some(merged.to_owned())));
    }

    /// A key the user wrote through a merge key stands: nothing is added.
    #[rstest]
    #[case::merged_false("d: &d {exitOnJobCompletion: false}\n<<: *d\n")]
    #[case::merged_list("d: &d {exitOnJobCompletion: false}\n<<: [*d]\n")]
    #[case::yaml_1_1_false("exitOnJobCompletion: off\n")]
    #[case::duplicate_false("exitOnJobCompletion: true\nexitOnJobCompletion: no\n")]
    fn a_key_istio_reads_stands(#[case] text: &str) {
        assert_eq!(merge(text), Ok(None));
    }

    /// As many keys as the annotations' limit holds merge, in both forms
    /// the fast path reads (that their duplicate-key checks are linear, a
    /// count of instructions holds: runner/tests/cost/config.rs
    /// `config_keys_grow_linearly`).
    #[test]
    fn as_many_keys_as_fit_merge() {
        let n = 12_000;
        let block: String = (0..n).map(|i| format!("key{i:08}: v{i}\n")).collect();
        let json = format!(
            "{{{}}}",
            (0..n)
                .map(|i| format!("\"key{i:08}\": {i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let merged = merge(&block).unwrap().unwrap();
        assert!(merged.ends_with("key00011999: v11999\nexitOnJobCompletion: true\n"));
        let merged = merge(&json).unwrap().unwrap();
        assert!(merged.ends_with(", \"exitOnJobCompletion\": true}"));
    }
}
