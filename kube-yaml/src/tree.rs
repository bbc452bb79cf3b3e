//! A YAML document as a tree that remembers where each node is written
//! (byte range, line, column), how each scalar is written (its style, its
//! tag) and which nodes are anchors and aliases, for the CLI's in-place
//! edits; its JSON is the one `crate::to_json` gives, made by the same
//! builder from the tree's nodes replayed as events.
//!
//! The events come from saphyr-parser, which gives every event its span.

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, StrInput};
use serde_json::Value;

use crate::build::{self, Budget, Builder, Scalar as Input};
use crate::resolve::key_string;
pub use crate::Error;
use crate::ErrorKind;

fn at(line: usize, message: impl Into<String>) -> Error {
    Error::new(line, ErrorKind::Syntax, message)
}

pub type NodeRef = Rc<Node>;

#[derive(Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// Byte range in the document text: the node with its anchor and tag; a
    /// block scalar up to and with its last line break.
    pub start: usize,
    pub end: usize,
    /// 1-based line and 0-based column (in characters) of `start`.
    pub line: usize,
    pub col: usize,
    /// The node defines an anchor (`&name`).
    pub anchor: bool,
    /// The node, or a node written inside it, defines an anchor.
    pub anchored: bool,
    /// For an anchor: the first and last byte where an alias names it.
    pub uses: Cell<Option<(usize, usize)>>,
}

#[derive(Debug)]
pub enum NodeKind {
    Scalar(Scalar),
    Map(MapNode),
    Seq(SeqNode),
    /// `*name`: the node the anchor names, written elsewhere.
    Alias(NodeRef),
}

#[derive(Debug)]
pub struct Scalar {
    pub value: String,
    pub style: ScalarStyle,
    /// `tag:yaml.org,2002:int` (for `!!int`), `!custom`, `!`: the tag, its
    /// handle expanded.
    pub tag: Option<String>,
}

impl Scalar {
    fn input(&self) -> Input<'_> {
        Input {
            value: &self.value,
            plain: self.style == ScalarStyle::Plain && self.tag.is_none(),
            tag: self.tag.as_deref(),
        }
    }
}

#[derive(Debug)]
pub struct MapNode {
    /// In the order kubectl's JSON has them once read: each key once (a
    /// later duplicate, or a merge after it, wins), at its first place.
    pub entries: Vec<Entry>,
    /// Every key and value as written, in order (merge keys and repeated
    /// keys too): what the JSON is built from.
    pub written: Vec<(NodeRef, NodeRef)>,
    pub flow: bool,
    /// A merge key (`<<`) brought some entries.
    pub merged: bool,
}

#[derive(Debug)]
pub struct Entry {
    /// The key as kubectl's JSON has it.
    pub key: String,
    pub key_node: NodeRef,
    pub value: NodeRef,
    /// Brought by a merge key: written elsewhere.
    pub merged: bool,
}

#[derive(Debug)]
pub struct SeqNode {
    pub items: Vec<NodeRef>,
    pub flow: bool,
}

impl Node {
    /// The node an alias names, or the node itself.
    pub fn target(&self) -> &Node {
        match &self.kind {
            NodeKind::Alias(target) => target.target(),
            _ => self,
        }
    }
}

/// Character offsets (what the parser counts) to byte offsets, for a
/// parser that moves forward through the text.
struct Offsets<'t> {
    text: &'t str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'t> Offsets<'t> {
    fn new(text: &'t str) -> Self {
        Offsets {
            text,
            ascii: text.is_ascii(),
            chars: 0,
            bytes: 0,
        }
    }

    fn byte(&mut self, char_index: usize) -> usize {
        if self.ascii {
            return char_index.min(self.text.len());
        }
        while self.chars < char_index && self.bytes < self.text.len() {
            let c = self.text[self.bytes..].chars().next().unwrap_or(' ');
            self.bytes += c.len_utf8();
            self.chars += 1;
        }
        while self.chars > char_index && self.bytes > 0 {
            let mut b = self.bytes - 1;
            while !self.text.is_char_boundary(b) {
                b -= 1;
            }
            self.bytes = b;
            self.chars -= 1;
        }
        self.bytes
    }
}

/// Aliases may not make a document grow past this many nodes more than it
/// has events (a "billion laughs" document is refused, as go-yaml v2
/// refuses "excessive aliasing": decode.go `allowedAliasRatio`).
const ALIAS_BUDGET: usize = 1_000_000;

/// Nesting the tree reads: it recurses once a level, so it stops well
/// before a thread's stack does (a test thread's 2 MiB, debug build), and
/// well past what a manifest nests (a CRD's schema: a few dozen levels).
const DEPTH: usize = 200;

/// The events of one document, built into nodes.
pub struct Loader<'t> {
    text: &'t str,
    parser: Parser<'t, StrInput<'t>>,
    offsets: Offsets<'t>,
    anchors: HashMap<usize, NodeRef>,
    /// Where the last node read ends (a block scalar's header is after it).
    last_end: usize,
    /// Events read: JSON made of this document has at most this many
    /// nodes, plus what aliases repeat (`ALIAS_BUDGET`).
    pub events: usize,
    /// Collections open.
    depth: usize,
}

type Spanned<'t> = (Event<'t>, Span);

impl<'t> Loader<'t> {
    pub fn new(text: &'t str) -> Result<Self, Error> {
        crate::check_characters(text)?;
        Ok(Loader {
            text,
            parser: Parser::new_from_str(text),
            offsets: Offsets::new(text),
            anchors: HashMap::new(),
            last_end: 0,
            events: 0,
            depth: 0,
        })
    }

    fn next(&mut self) -> Result<Spanned<'t>, Error> {
        match self.parser.next_event() {
            Some(Ok(event)) => {
                self.events += 1;
                Ok(event)
            }
            Some(Err(e)) => Err(crate::parse_error(&e)),
            None => Err(at(0, "unexpected end of the document")),
        }
    }

    fn peek_is(&mut self, f: impl Fn(&Event) -> bool) -> Result<bool, Error> {
        match self.parser.peek() {
            Some(Ok((event, _))) => Ok(f(event)),
            Some(Err(e)) => Err(crate::parse_error(&e)),
            None => Ok(false),
        }
    }

    /// Up to the document's content: `Ok(false)` when the stream has no
    /// document (comments only).
    fn start_document(&mut self) -> Result<bool, Error> {
        loop {
            match self.next()?.0 {
                Event::StreamStart => {}
                Event::DocumentStart(_) => return Ok(true),
                Event::StreamEnd => return Ok(false),
                _ => return Err(at(1, "not a YAML document")),
            }
        }
    }

    /// The one document of the text (`None`: no content at all).
    pub fn document(mut self) -> Result<Option<NodeRef>, Error> {
        if !self.start_document()? {
            return Ok(None);
        }
        let event = self.next()?;
        let root = self.node(event)?;
        self.end_document()?;
        Ok(Some(root))
    }

    fn end_document(&mut self) -> Result<(), Error> {
        match self.next()? {
            (Event::DocumentEnd, _) => {}
            (_, span) => return Err(at(span.start.line(), "more than one YAML node")),
        }
        match self.next()? {
            (Event::StreamEnd, _) => Ok(()),
            (_, span) => Err(at(
                span.start.line(),
                "more than one document in a document",
            )),
        }
    }

    fn deeper(&mut self, line: usize) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > DEPTH {
            return Err(Error::new(
                line,
                ErrorKind::TooLarge,
                format!("nested deeper than {DEPTH}"),
            ));
        }
        Ok(())
    }

    fn position(&mut self, span: &Span) -> (usize, usize, usize, usize) {
        let start = self.offsets.byte(span.start.index());
        let end = self.offsets.byte(span.end.index()).max(start);
        (start, end, span.start.line(), span.start.col())
    }

    fn node(&mut self, (event, span): Spanned<'t>) -> Result<NodeRef, Error> {
        let (start, end, line, col) = self.position(&span);
        let (anchor, node) = match event {
            Event::Scalar(value, style, anchor, tag) => {
                let (mut start, mut end, mut line, mut col) = (start, end, line, col);
                match style {
                    ScalarStyle::Literal | ScalarStyle::Folded => {
                        if anchor == 0 && tag.is_none() && self.last_end <= start {
                            // The span starts at the content: the header is
                            // the first `|` or `>` after the previous token.
                            let header = self.text[self.last_end..start]
                                .find(['|', '>'])
                                .map(|i| self.last_end + i);
                            if let Some(h) = header {
                                line =
                                    line.saturating_sub(self.text[h..start].matches('\n').count());
                                let line_start = self.text[..h].rfind('\n').map_or(0, |i| i + 1);
                                col = self.text[line_start..h].chars().count();
                                start = h;
                            }
                        }
                        // The span runs on to the next token: keep the last line break.
                        if let Some(i) = self.text[start..end].rfind('\n') {
                            end = start + i + 1;
                        }
                    }
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => {
                        // The span runs on over spaces and a comment.
                        end = quoted_end(self.text, start, style == ScalarStyle::DoubleQuoted)
                            .unwrap_or(end);
                    }
                    ScalarStyle::Plain => {}
                }
                let tag = tag.map(|t| crate::tag_text(&t));
                let node = Node {
                    kind: NodeKind::Scalar(Scalar {
                        value: value.into_owned(),
                        style,
                        tag,
                    }),
                    start,
                    end,
                    line,
                    col,
                    anchor: anchor > 0,
                    anchored: anchor > 0,
                    uses: Cell::new(None),
                };
                (anchor, node)
            }
            Event::Alias(id) => {
                let target = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| at(line, "an alias to no anchor"))?;
                let uses = match target.uses.get() {
                    Some((first, _)) => (first, start),
                    None => (start, start),
                };
                target.uses.set(Some(uses));
                let node = Node {
                    kind: NodeKind::Alias(target),
                    start,
                    end,
                    line,
                    col,
                    anchor: false,
                    anchored: false,
                    uses: Cell::new(None),
                };
                (0, node)
            }
            Event::SequenceStart(anchor, _) => {
                self.deeper(line)?;
                let flow = self.text[start..end].trim_end().ends_with('[');
                let mut items = Vec::new();
                let mut last = end;
                let mut anchored = anchor > 0;
                loop {
                    let next = self.next()?;
                    if let (Event::SequenceEnd, span) = &next {
                        if flow {
                            // The span runs on over spaces and a comment.
                            last = self.position(span).0 + 1;
                        }
                        break;
                    }
                    let item = self.node(next)?;
                    last = last.max(item.end);
                    anchored |= item.anchored;
                    items.push(item);
                }
                self.depth -= 1;
                let node = Node {
                    kind: NodeKind::Seq(SeqNode { items, flow }),
                    start,
                    end: last,
                    line,
                    col,
                    anchor: anchor > 0,
                    anchored,
                    uses: Cell::new(None),
                };
                (anchor, node)
            }
            Event::MappingStart(anchor, _) => {
                self.deeper(line)?;
                let flow = self.text[start..end].trim_end().ends_with('{');
                let mut map = MapNode {
                    entries: Vec::new(),
                    written: Vec::new(),
                    flow,
                    merged: false,
                };
                let mut last = end;
                let mut anchored = anchor > 0;
                loop {
                    let next = self.next()?;
                    if let (Event::MappingEnd, span) = &next {
                        if flow {
                            last = self.position(span).0 + 1;
                        }
                        break;
                    }
                    let key = self.node(next)?;
                    let value_event = self.next()?;
                    let value = self.node(value_event)?;
                    last = last.max(value.end).max(key.end);
                    anchored |= key.anchored || value.anchored;
                    map.written.push((key.clone(), value.clone()));
                    insert(&mut map, key, value)?;
                }
                self.depth -= 1;
                let node = Node {
                    kind: NodeKind::Map(map),
                    start,
                    end: last,
                    line,
                    col,
                    anchor: anchor > 0,
                    anchored,
                    uses: Cell::new(None),
                };
                (anchor, node)
            }
            other => {
                return Err(at(line, format!("unexpected {other:?}")));
            }
        };
        self.last_end = self.last_end.max(node.end);
        let node = Rc::new(node);
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        Ok(node)
    }
}

/// The end of the quoted scalar written from `start` (after its anchor
/// and tag): just after its closing quote.
fn quoted_end(text: &str, start: usize, double: bool) -> Option<usize> {
    let quote = if double { '"' } else { '\'' };
    let open = start + text[start..].find(quote)?;
    let mut chars = text[open + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        if double && c == '\\' {
            chars.next();
        } else if c == quote {
            if !double && text[open + 1 + i + 1..].starts_with('\'') {
                chars.next();
                continue;
            }
            return Some(open + 1 + i + 1);
        }
    }
    None
}

/// Where each key of a mapping is, for the CLI's edits: go-yaml v2's
/// mapping (decode.go `mapping`, `merge`, `setMapIndex` without strict):
/// entries in order, a later key over an earlier one, a merge key's
/// entries over those before it (a list of merged mappings: the earlier
/// one wins). The JSON itself is the builder's.
fn insert(map: &mut MapNode, key: NodeRef, value: NodeRef) -> Result<(), Error> {
    if is_merge_key(&key) {
        map.merged = true;
        let want_map = || {
            Error::new(
                key.line,
                ErrorKind::Meaning,
                "map merge requires map or sequence of maps as the value",
            )
        };
        let sources: Vec<&Node> = match &value.target().kind {
            NodeKind::Map(_) => vec![value.target()],
            NodeKind::Seq(seq) if !matches!(value.kind, NodeKind::Alias(_)) => {
                seq.items.iter().rev().map(|i| i.target()).collect()
            }
            _ => return Err(want_map()),
        };
        for source in sources {
            let NodeKind::Map(source) = &source.kind else {
                return Err(want_map());
            };
            for entry in &source.entries {
                put(
                    map,
                    entry.key.clone(),
                    entry.key_node.clone(),
                    entry.value.clone(),
                    true,
                );
            }
        }
        return Ok(());
    }
    let name = key_name(&key)?;
    put(map, name, key, value, false);
    Ok(())
}

fn put(map: &mut MapNode, key: String, key_node: NodeRef, value: NodeRef, merged: bool) {
    match map.entries.iter_mut().find(|e| e.key == key) {
        Some(entry) => {
            entry.key_node = key_node;
            entry.value = value;
            entry.merged = merged;
        }
        None => map.entries.push(Entry {
            key,
            key_node,
            value,
            merged,
        }),
    }
}

/// go-yaml v2's `isMerge` (decode.go): the scalar `<<` itself (an alias
/// to one is an ordinary key), plain or tagged `!!merge`.
fn is_merge_key(key: &Node) -> bool {
    match &key.kind {
        NodeKind::Scalar(s) => {
            s.value == "<<"
                && match s.tag.as_deref() {
                    Some(tag) => tag == "tag:yaml.org,2002:merge",
                    None => s.style == ScalarStyle::Plain,
                }
        }
        _ => false,
    }
}

/// A key as sigs.k8s.io/yaml's JSON names it.
pub fn key_name(key: &Node) -> Result<String, Error> {
    match &key.target().kind {
        NodeKind::Scalar(s) => {
            let meaning = |m| Error::new(key.line, ErrorKind::Meaning, m);
            let (plain, text) = build::scalar(s.input()).map_err(meaning)?;
            key_string(&plain, text.as_deref().unwrap_or(&s.value)).map_err(meaning)
        }
        _ => Err(Error::new(
            key.line,
            ErrorKind::Meaning,
            "a mapping key that is a mapping or a list (JSON keys are strings)",
        )),
    }
}

/// A node as JSON, as `crate::to_json` reads it: its events replayed into
/// the builder, an alias as the nodes it names (a merge key written
/// through an alias stays a key, as the builder is told).
pub fn to_json(node: &Node, nodes: usize) -> Result<Value, Error> {
    let mut builder = Builder::new(Budget {
        nodes,
        depth: DEPTH,
    });
    replay(node, &mut builder, false)?;
    builder
        .finish()
        .ok_or_else(|| at(node.line, "an incomplete node"))
}

fn replay(node: &Node, b: &mut Builder, aliased: bool) -> Result<(), Error> {
    use build::Event as E;
    match &node.kind {
        NodeKind::Alias(target) => replay(target, b, true),
        NodeKind::Scalar(s) => {
            let mut input = s.input();
            if aliased && input.plain && s.value == "<<" {
                // `*a` where `&a <<`: go-yaml reads the key `<<`, no merge.
                input.plain = false;
            }
            b.event(E::Scalar(input, 0), node.line)
        }
        NodeKind::Seq(seq) => {
            b.event(E::SeqStart(0), node.line)?;
            for item in &seq.items {
                replay(item, b, false)?;
            }
            b.event(E::SeqEnd, node.line)
        }
        NodeKind::Map(map) => {
            b.event(E::MapStart(0), node.line)?;
            for (key, value) in &map.written {
                replay(key, b, false)?;
                replay(value, b, false)?;
            }
            b.event(E::MapEnd, node.line)
        }
    }
}

/// The budget of `to_json` for a document of `events` events.
pub fn budget(events: usize) -> usize {
    events.saturating_add(ALIAS_BUDGET)
}

/// A document read whole: its tree and its JSON (`None`: no content).
pub fn parse(text: &str) -> Result<Option<(NodeRef, Value)>, Error> {
    let mut loader = Loader::new(text)?;
    if !loader.start_document()? {
        return Ok(None);
    }
    let event = loader.next()?;
    let root = loader.node(event)?;
    loader.end_document()?;
    let json = to_json(&root, budget(loader.events))?;
    Ok(Some((root, json)))
}

/// What the top of a document is, from one pass over its events without
/// building it: whether it is a `List` (a mapping whose `kind` ends in
/// `List` and whose `items` is a sequence) and whether it has anchors.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Shape {
    pub list: bool,
    pub anchors: bool,
}

pub fn shape(text: &str) -> Result<Shape, Error> {
    let mut loader = Loader::new(text)?;
    if !loader.start_document()? {
        return Ok(Shape::default());
    }
    let mut shape = Shape::default();
    let (mut kind, mut items) = (None, false);
    let mut depth = 0usize;
    // At depth 1 (the top mapping's entries), keys and values alternate.
    let mut key: Option<String> = None;
    let mut top_map = false;
    loop {
        let (event, _) = loader.next()?;
        let anchor = match &event {
            Event::Scalar(_, _, a, _) | Event::SequenceStart(a, _) | Event::MappingStart(a, _) => {
                *a
            }
            _ => 0,
        };
        shape.anchors |= anchor > 0;
        match event {
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if depth == 0 {
                    top_map = matches!(event, Event::MappingStart(..));
                } else if depth == 1 {
                    if let Some(k) = key.take() {
                        items |= k == "items" && matches!(event, Event::SequenceStart(..));
                    }
                }
                depth += 1;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            Event::Scalar(value, _, _, _) if depth == 1 && top_map => match key.take() {
                None => key = Some(value.into_owned()),
                Some(k) => {
                    if k == "kind" {
                        kind = Some(value.into_owned());
                    }
                }
            },
            Event::Alias(_) if depth == 1 => {
                key = match key.take() {
                    None => Some(String::new()),
                    Some(_) => None,
                };
            }
            Event::DocumentEnd | Event::StreamEnd => break,
            _ => {}
        }
        if depth == 0 && !top_map {
            break;
        }
    }
    shape.list = top_map && items && kind.is_some_and(|k| k.ends_with("List"));
    Ok(shape)
}

/// A `List` document read item by item: `item` gets each item's tree and
/// JSON, in order, and may stop the reading by returning an error of its
/// own. Anchors are kept across items; nothing else is.
pub fn for_each_item<E>(
    text: &str,
    item: &mut dyn FnMut(usize, &NodeRef, Value) -> Result<(), E>,
) -> Result<Result<(), E>, Error> {
    let mut loader = Loader::new(text)?;
    if !loader.start_document()? {
        return Ok(Ok(()));
    }
    let (event, span) = loader.next()?;
    if !matches!(event, Event::MappingStart(..)) {
        return Err(at(span.start.line(), "not a List"));
    }
    loop {
        let next = loader.next()?;
        if let (Event::MappingEnd, _) = next {
            break;
        }
        let key = loader.node(next)?;
        let is_items = matches!(&key.kind, NodeKind::Scalar(s) if s.value == "items")
            && loader.peek_is(|e| matches!(e, Event::SequenceStart(..)))?;
        if !is_items {
            let value = loader.next()?;
            loader.node(value)?;
            continue;
        }
        loader.next()?;
        let mut index = 0;
        loop {
            let next = loader.next()?;
            if let (Event::SequenceEnd, _) = next {
                break;
            }
            let events_before = loader.events;
            let node = loader.node(next)?;
            let json = to_json(&node, budget(loader.events - events_before))?;
            if let Err(e) = item(index, &node, json) {
                return Ok(Err(e));
            }
            index += 1;
        }
    }
    loader.end_document()?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Value {
        parse(text).unwrap().unwrap().1
    }

    #[test]
    fn merge_keys_expand_as_kubectl_expands_them() {
        // kubectl 1.37 `label --local -o json` of the same document.
        let text = "base: &a {x: \"1\", z: \"1\"}\nother: &b {x: b, w: b}\n\
                    data:\n  x: \"2\"\n  <<: *a\nafter:\n  <<: *a\n  x: \"3\"\nlist:\n  <<: [*a, *b]\n\
                    dup:\n  k: \"1\"\n  k: \"2\"\ny: key\n";
        let value = read(text);
        assert_eq!(value["data"], json!({"x": "1", "z": "1"}));
        assert_eq!(value["after"], json!({"x": "3", "z": "1"}));
        assert_eq!(value["list"], json!({"x": "1", "z": "1", "w": "b"}));
        assert_eq!(value["dup"], json!({"k": "2"}));
        assert_eq!(value["true"], "key");
    }

    #[test]
    fn tags_and_styles_decide_the_type() {
        let value = read("a: !!str 123\nb: !!int \"7\"\nc: !custom 12\nd: '12'\ne: |\n  x\nf:\ng: ! 12\nh: !!binary aGVsbG8=\n");
        assert_eq!(
            value,
            json!({"a": "123", "b": 7, "c": "12", "d": "12", "e": "x\n", "f": null, "g": "12", "h": "hello"})
        );
    }

    #[test]
    fn spans_are_bytes_and_a_block_scalar_ends_at_its_line_break() {
        let text = "é: 1\nk: |\n  ünï\n  two\nn: [a, {b: c}]\n";
        let (root, _) = parse(text).unwrap().unwrap();
        let NodeKind::Map(map) = &root.kind else {
            panic!()
        };
        let slice = |n: &Node| &text[n.start..n.end];
        assert_eq!(slice(&map.entries[1].value), "|\n  ünï\n  two\n");
        assert_eq!(slice(&map.entries[2].value), "[a, {b: c}]");
        assert_eq!(
            (map.entries[2].value.line, map.entries[2].value.col),
            (5, 3)
        );
    }

    #[test]
    fn a_bom_and_a_billion_laughs() {
        assert_eq!(read("\u{FEFF}kind: Job\n"), json!({"kind": "Job"}));
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (i, name) in ["b", "c", "d", "e", "f", "g", "h"].iter().enumerate() {
            let prev = ["a", "b", "c", "d", "e", "f", "g"][i];
            bomb.push_str(&format!("{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        let err = parse(&bomb).unwrap_err();
        assert_eq!(err.kind, ErrorKind::TooLarge, "{err:?}");
    }

    #[test]
    fn a_list_is_read_item_by_item() {
        let text = "apiVersion: v1\nitems:\n- kind: Pod\n  metadata: &m {name: a}\n- kind: Job\n  metadata: *m\nkind: List\n";
        assert_eq!(
            shape(text).unwrap(),
            Shape {
                list: true,
                anchors: true
            }
        );
        let mut seen = Vec::new();
        for_each_item::<()>(text, &mut |i, _, v| {
            seen.push((i, v));
            Ok(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(
            seen[1],
            (1, json!({"kind": "Job", "metadata": {"name": "a"}}))
        );
        assert!(!shape("kind: List\nitems: 3\n").unwrap().list);
        assert!(!shape("- a\n").unwrap().list);
    }
}
