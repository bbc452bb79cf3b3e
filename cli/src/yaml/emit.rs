//! A document edited in place: only the smallest nodes whose value changed
//! are written anew, the rest of the text (comments, quoting, layout) stays
//! as it was.
//!
//! A node written anew keeps what it can of the old one: its keys in their
//! order (new keys after them), list items matched by `name`, and every
//! scalar whose value did not change in its original writing. A new string
//! is plain only when go-yaml v2, YAML 1.1 and YAML 1.2 readers all read it
//! as that string (`resolve::plain_is_safe`), else quoted. Block style
//! always: a node inside a flow collection is written by its outermost
//! flow ancestor, as a block. A node that is, contains or lies inside an
//! anchor is never written alone (an alias elsewhere would see the change,
//! or lose its anchor): the whole document is then written anew, aliases
//! expanded. Every result is read back and must give the new value.

use serde_json::{Map, Value};

use super::load::{self, MapNode, Node, NodeKind};
use super::resolve::{line_break, plain_is_safe, printable};

/// Bytes `start..end` of the document become `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// Where the edited node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The document's root: the result is checked by reading the document.
    Root,
    /// An item of a block sequence (a `List`'s items read one by one).
    Item,
}

/// The replacements that turn `node` (read as `old`) into `new` in `text`,
/// checked: applied, the text reads back as `new`.
pub fn edit(
    text: &str,
    node: &Node,
    place: Place,
    old: &Value,
    new: &Value,
) -> Result<Vec<Replacement>, String> {
    // The node's own line breaks (the document may be a 100 MB List).
    let nl = if text[node.start..node.end].contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut walk = Walk {
        text,
        nl,
        out: Vec::new(),
    };
    let ctx = match place {
        Place::Root => Ctx::Root,
        Place::Item => Ctx::Item,
    };
    let surgical = walk.walk(node, old, new, ctx, false, false).is_ok();
    if surgical && check(text, node, place, &walk.out, new) {
        return Ok(walk.out);
    }
    // The whole node written anew (for the root: every alias expanded).
    walk.out.clear();
    walk.replace(node, ctx, new)
        .map_err(|_| "the node cannot be written anew".to_owned())?;
    if check(text, node, place, &walk.out, new) {
        return Ok(walk.out);
    }
    Err("the edited document does not read back as the policy's object".into())
}

/// `text` with the replacements (sorted, disjoint) applied.
pub fn apply(text: &str, replacements: &[Replacement]) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for r in replacements {
        out.push_str(&text[at..r.start]);
        out.push_str(&r.text);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

fn check(text: &str, node: &Node, place: Place, replacements: &[Replacement], new: &Value) -> bool {
    let mut sorted = replacements.to_vec();
    sorted.sort_by_key(|r| r.start);
    if sorted.windows(2).any(|w| w[0].end > w[1].start) {
        return false;
    }
    match place {
        Place::Root => {
            let edited = apply(text, &sorted);
            matches!(load::parse(&edited), Ok(Some((_, value))) if &value == new)
        }
        Place::Item => {
            // The item alone, after its `- `: a one-item sequence.
            let line_start = text[..node.start].rfind('\n').map_or(0, |i| i + 1);
            let prefix = &text[line_start..node.start];
            if !prefix.trim_start().starts_with('-') || !prefix.trim().chars().all(|c| c == '-') {
                return false;
            }
            let end = sorted
                .iter()
                .map(|r| r.end)
                .max()
                .unwrap_or(node.end)
                .max(node.end);
            let shifted: Vec<Replacement> = sorted
                .iter()
                .map(|r| Replacement {
                    start: r.start - line_start,
                    end: r.end - line_start,
                    text: r.text.clone(),
                })
                .collect();
            let alone = apply(&text[line_start..end], &shifted);
            match load::parse(&alone) {
                Ok(Some((_, Value::Array(items)))) => items.len() == 1 && &items[0] == new,
                _ => false,
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Ctx<'n> {
    Root,
    Item,
    /// The value of `key` in the block mapping `parent`.
    Value {
        key: &'n Node,
        parent: &'n Node,
    },
}

#[derive(Debug)]
enum Fail {
    /// Inside a flow collection: its outermost flow ancestor is written anew.
    Parent,
    /// An anchor is in the way: the whole document is written anew.
    Anchored,
}

struct Walk<'t> {
    text: &'t str,
    nl: &'static str,
    out: Vec<Replacement>,
}

impl Walk<'_> {
    fn walk(
        &mut self,
        node: &Node,
        old: &Value,
        new: &Value,
        ctx: Ctx,
        in_flow: bool,
        under_anchor: bool,
    ) -> Result<(), Fail> {
        if old == new {
            return Ok(());
        }
        let mark = self.out.len();
        // An alias elsewhere reads this node: it must not change.
        let inside = under_anchor || (node.anchor && node.uses.get().is_some());
        let descended = match (&node.kind, old, new) {
            (NodeKind::Map(map), Value::Object(o), Value::Object(n))
                if !map.merged
                    && o.keys().all(|k| n.contains_key(k))
                    && (o.len() == n.len() || !map.flow) =>
            {
                let mut result = Ok(());
                for entry in &map.entries {
                    let (before, after) = (&o[&entry.key], &n[&entry.key]);
                    let ctx = Ctx::Value {
                        key: &entry.key_node,
                        parent: node,
                    };
                    result = self.walk(&entry.value, before, after, ctx, map.flow, inside);
                    if result.is_err() {
                        break;
                    }
                }
                let added: Vec<&String> = n.keys().filter(|k| !o.contains_key(*k)).collect();
                if result.is_ok() && !added.is_empty() {
                    result = if inside {
                        Err(Fail::Anchored)
                    } else {
                        self.append(map, n, &added)
                    };
                }
                Some(result)
            }
            (NodeKind::Seq(seq), Value::Array(o), Value::Array(n))
                if o.len() == n.len() && seq.items.len() == n.len() =>
            {
                let mut result = Ok(());
                for (i, item) in seq.items.iter().enumerate() {
                    result = self.walk(item, &o[i], &n[i], Ctx::Item, seq.flow, inside);
                    if result.is_err() {
                        break;
                    }
                }
                Some(result)
            }
            _ => None,
        };
        match descended {
            Some(Ok(())) => Ok(()),
            Some(Err(Fail::Anchored)) => Err(Fail::Anchored),
            Some(Err(Fail::Parent)) | None => {
                self.out.truncate(mark);
                if in_flow {
                    return Err(Fail::Parent);
                }
                if under_anchor || !self_contained(node, node) {
                    return Err(Fail::Anchored);
                }
                self.replace(node, ctx, new)
            }
        }
    }

    /// New entries after the last one of a block mapping, on lines of their
    /// own at the column of its keys.
    fn append(
        &mut self,
        map: &MapNode,
        new: &Map<String, Value>,
        added: &[&String],
    ) -> Result<(), Fail> {
        let (Some(first), Some(last)) = (
            map.entries.first(),
            map.entries
                .iter()
                .map(|e| e.value.end.max(e.key_node.end))
                .max(),
        ) else {
            return Err(Fail::Parent);
        };
        let col = first.key_node.col;
        // After the line the last entry ends on (only blanks or a comment follow it).
        let rest = &self.text[last..];
        let (at, fresh_line) = match rest.find('\n') {
            _ if self.text[..last].ends_with('\n') => (last, true),
            Some(i)
                if rest[..i].trim_start().is_empty() || rest[..i].trim_start().starts_with('#') =>
            {
                (last + i + 1, true)
            }
            Some(_) => return Err(Fail::Parent),
            None => (self.text.len(), false),
        };
        let mut e = Emitter {
            text: self.text,
            nl: self.nl,
            out: String::new(),
            block_scalar_last: false,
        };
        if !fresh_line {
            e.out.push_str(self.nl);
        }
        let subset: Map<String, Value> = added
            .iter()
            .map(|k| ((*k).clone(), new[k.as_str()].clone()))
            .collect();
        indent(&mut e.out, col);
        e.map(&subset, None, col);
        if fresh_line {
            e.out.push_str(self.nl);
        }
        self.out.push(Replacement {
            start: at,
            end: at,
            text: e.out,
        });
        Ok(())
    }

    /// `node` written anew as `new`, where it is.
    fn replace(&mut self, node: &Node, ctx: Ctx, new: &Value) -> Result<(), Fail> {
        let mut e = Emitter {
            text: self.text,
            nl: self.nl,
            out: String::new(),
            block_scalar_last: false,
        };
        let start = match ctx {
            Ctx::Value { key, parent } => {
                let colon = self.colon_after(key).ok_or(Fail::Parent)?;
                match new {
                    Value::Array(a) if !a.is_empty() => {
                        e.newline(key.col);
                        e.seq_in(a, Some(node), &named_items(Some(parent)), key.col);
                    }
                    _ => e.child(new, Some(node), key.col),
                }
                colon
            }
            Ctx::Item => {
                e.item_body(new, Some(node), node.col);
                node.start
            }
            Ctx::Root => {
                let line_start = self.text[..node.start].rfind('\n').map_or(0, |i| i + 1);
                let before = &self.text[line_start..node.start];
                let alone = before.chars().all(|c| c == ' ' || c == '\u{FEFF}');
                if alone {
                    e.top(new, Some(node), node.col);
                } else {
                    e.out.push_str(self.nl);
                    e.top(new, Some(node), 0);
                }
                node.start
            }
        };
        let mut end = node.end;
        let mut text = e.out;
        if e.block_scalar_last && !self.text[..end].ends_with('\n') {
            // What follows on the line would be read as the scalar's content.
            end = self.text[end..]
                .find('\n')
                .map_or(self.text.len(), |i| end + i + 1);
        }
        if self.text[..end].ends_with('\n') && !text.ends_with('\n') {
            text.push_str(self.nl);
        }
        self.out.push(Replacement { start, end, text });
        Ok(())
    }

    /// Just after the `:` that follows an implicit key.
    fn colon_after(&self, key: &Node) -> Option<usize> {
        let rest = &self.text[key.end..];
        let skipped = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        (rest[skipped..].starts_with(':')).then_some(key.end + skipped + 1)
    }
}

struct Emitter<'t> {
    text: &'t str,
    nl: &'static str,
    out: String,
    /// The text written ends with a block scalar's last line.
    block_scalar_last: bool,
}

/// The named items of every list of an old mapping: an item moved from
/// one list to another (`containers` to `initContainers`) keeps its writing.
fn named_items(old: Option<&Node>) -> Vec<&Node> {
    let Some(NodeKind::Map(map)) = old.map(|n| &n.target().kind) else {
        return Vec::new();
    };
    map.entries
        .iter()
        .filter_map(|e| match &e.value.target().kind {
            NodeKind::Seq(seq) => Some(seq.items.iter().map(|i| &**i)),
            _ => None,
        })
        .flatten()
        .collect()
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

impl Emitter<'_> {
    fn newline(&mut self, n: usize) {
        self.out.push_str(self.nl);
        indent(&mut self.out, n);
    }

    /// A whole document's root, its lines at column `col`.
    fn top(&mut self, v: &Value, old: Option<&Node>, col: usize) {
        match v {
            Value::Object(m) if !m.is_empty() => self.map(m, old, col),
            Value::Array(a) if !a.is_empty() => self.seq(a, old, col),
            _ => self.scalar(v, old, col + 2),
        }
    }

    /// After `key:` (the key at column `key_col`).
    fn child(&mut self, v: &Value, old: Option<&Node>, key_col: usize) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                self.newline(key_col + 2);
                self.map(m, old, key_col + 2);
            }
            Value::Array(a) if !a.is_empty() => {
                self.newline(key_col);
                self.seq(a, old, key_col);
            }
            _ => {
                self.out.push(' ');
                self.scalar(v, old, key_col + 2);
                if self.out.ends_with(' ') {
                    self.out.pop();
                }
            }
        }
    }

    /// A sequence item after its `- `, its lines at column `col`.
    fn item_body(&mut self, v: &Value, old: Option<&Node>, col: usize) {
        match v {
            Value::Object(m) if !m.is_empty() => self.map(m, old, col),
            Value::Array(a) if !a.is_empty() => self.seq(a, old, col),
            _ => self.scalar(v, old, col),
        }
    }

    fn map(&mut self, m: &Map<String, Value>, old: Option<&Node>, col: usize) {
        let old_map = old.map(Node::target).and_then(|n| match &n.kind {
            NodeKind::Map(map) => Some(map),
            _ => None,
        });
        let mut keys: Vec<&str> = Vec::with_capacity(m.len());
        if let Some(map) = old_map {
            keys.extend(
                map.entries
                    .iter()
                    .map(|e| e.key.as_str())
                    .filter(|k| m.contains_key(*k)),
            );
        }
        let rest: Vec<&str> = m
            .keys()
            .map(String::as_str)
            .filter(|k| !keys.contains(k))
            .collect();
        keys.extend(rest);
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 {
                self.newline(col);
            }
            let entry = old_map.and_then(|map| map.entries.iter().find(|e| e.key == key));
            let key_text = match entry {
                Some(e) => copied(self.text, &e.key_node, &Value::String(key.to_owned()), true),
                None => None,
            }
            .unwrap_or_else(|| fresh_key(key));
            self.block_scalar_last = false;
            if key_text.chars().count() > 1000 {
                // An implicit key is at most 1024 characters.
                self.out.push_str("? ");
                self.out.push_str(&key_text);
                self.newline(col);
                self.out.push(':');
            } else {
                self.out.push_str(&key_text);
                self.out.push(':');
            }
            let value = &m[key];
            match value {
                Value::Array(a) if !a.is_empty() => {
                    self.newline(col);
                    let pool = named_items(old);
                    self.seq_in(a, entry.map(|e| &*e.value), &pool, col);
                }
                _ => self.child(value, entry.map(|e| &*e.value), col),
            }
        }
    }

    fn seq(&mut self, items: &[Value], old: Option<&Node>, col: usize) {
        self.seq_in(items, old, &[], col);
    }

    /// A sequence; an item not found by name in `old` is looked for in `pool`.
    fn seq_in(&mut self, items: &[Value], old: Option<&Node>, pool: &[&Node], col: usize) {
        let old_items = old.map(Node::target).and_then(|n| match &n.kind {
            NodeKind::Seq(seq) => Some(&seq.items),
            _ => None,
        });
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.newline(col);
            }
            let counterpart: Option<&Node> = match item.get("name").and_then(Value::as_str) {
                Some(name) => old_items
                    .and_then(|olds| olds.iter().find(|o| named(o, name)).map(|n| &**n))
                    .or_else(|| pool.iter().copied().find(|o| named(o, name))),
                None => old_items.and_then(|olds| olds.get(i)).map(|n| &**n),
            };
            self.block_scalar_last = false;
            self.out.push('-');
            match item {
                Value::Object(m) if !m.is_empty() => {
                    self.out.push(' ');
                    self.map(m, counterpart, col + 2);
                }
                Value::Array(a) if !a.is_empty() => {
                    self.out.push(' ');
                    self.seq(a, counterpart, col + 2);
                }
                _ => {
                    self.out.push(' ');
                    self.scalar(item, counterpart, col + 2);
                    if self.out.ends_with(' ') {
                        self.out.pop();
                    }
                }
            }
        }
    }

    /// A scalar or an empty collection; a block scalar's lines at `content`.
    fn scalar(&mut self, v: &Value, old: Option<&Node>, content: usize) {
        self.block_scalar_last = false;
        if let Some(text) = old.and_then(|o| copied(self.text, o, v, false)) {
            self.out.push_str(&text);
            return;
        }
        match v {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => self.out.push_str(&number(n)),
            Value::String(s) => self.string(s, content),
            Value::Array(_) => self.out.push_str("[]"),
            Value::Object(_) => self.out.push_str("{}"),
        }
    }

    fn string(&mut self, s: &str, content: usize) {
        if plain_is_safe(s) {
            self.out.push_str(s);
        } else if literal_fits(s) {
            let body = s.strip_suffix('\n').unwrap_or(s);
            self.out
                .push_str(if s.ends_with('\n') { "|" } else { "|-" });
            for line in body.split('\n') {
                self.out.push_str(self.nl);
                if !line.is_empty() {
                    indent(&mut self.out, content);
                    self.out.push_str(line);
                }
            }
            self.block_scalar_last = true;
        } else {
            self.out.push_str(&quoted(s));
        }
    }
}

/// Whether every alias to an anchor written inside `node` is inside
/// `within` too (it is then written anew, expanded, with it).
fn self_contained(node: &Node, within: &Node) -> bool {
    if node.anchor {
        if let Some((first, last)) = node.uses.get() {
            if first < within.start || last >= within.end {
                return false;
            }
        }
    }
    if !node.anchored {
        return true;
    }
    match &node.kind {
        NodeKind::Map(map) => map
            .entries
            .iter()
            .filter(|e| !e.merged)
            .all(|e| self_contained(&e.key_node, within) && self_contained(&e.value, within)),
        NodeKind::Seq(seq) => seq.items.iter().all(|i| self_contained(i, within)),
        NodeKind::Scalar(_) | NodeKind::Alias(_) => true,
    }
}

/// The item of a list whose `name` is `name`.
fn named(node: &Node, name: &str) -> bool {
    match &node.target().kind {
        NodeKind::Map(map) => map.entries.iter().any(|e| {
            e.key == "name"
                && matches!(&e.value.target().kind, NodeKind::Scalar(s) if s.value == name)
        }),
        _ => false,
    }
}

/// The old scalar's own writing, when it still means `v`: a single-line
/// plain or quoted scalar with no tag nor anchor.
fn copied(text: &str, old: &Node, v: &Value, key: bool) -> Option<String> {
    let target = old.target();
    let NodeKind::Scalar(s) = &target.kind else {
        return None;
    };
    if s.tag.is_some() {
        return None;
    }
    let meant = if key {
        Value::String(load::key_name(target).ok()?)
    } else {
        load::to_json(target, 1).ok()?
    };
    if &meant != v {
        return None;
    }
    let written = text.get(target.start..target.end)?;
    if written.chars().any(line_break) || written.is_empty() {
        return None;
    }
    use saphyr_parser::ScalarStyle::*;
    let fits = match s.style {
        Plain => written == s.value,
        SingleQuoted => written.starts_with('\'') && written.ends_with('\'') && written.len() > 1,
        DoubleQuoted => written.starts_with('"') && written.ends_with('"') && written.len() > 1,
        Literal | Folded => false,
    };
    fits.then(|| written.to_owned())
}

fn fresh_key(key: &str) -> String {
    if plain_is_safe(key) {
        key.to_owned()
    } else {
        quoted(key)
    }
}

/// Whether a literal block (`|`, `|-`) writes `s` exactly: several lines,
/// printable, the first one not starting with a space, at most one
/// trailing line break.
fn literal_fits(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    (body.contains('\n') || s.ends_with('\n'))
        && !body.is_empty()
        && !body.ends_with('\n')
        && !body.starts_with([' ', '\t', '\n'])
        && s.chars()
            .all(|c| printable(c) && (c == '\n' || !line_break(c)) && c != '\u{FEFF}')
        && body.split('\n').all(|line| !line.ends_with([' ', '\t']))
}

/// `s` quoted: single quotes for printable single-line text that has a
/// double quote (JSON in an annotation), else double quotes with escapes.
pub fn quoted(s: &str) -> String {
    let simple = s
        .chars()
        .all(|c| printable(c) && !line_break(c) && c != '\t' && c != '\u{FEFF}');
    if simple && s.contains('"') {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if printable(c) && c != '\u{FEFF}' => out.push(c),
            c if (c as u32) <= 0xFF => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// A number every reader reads as that number: a float always with a
/// fraction (YAML 1.1 needs the dot).
fn number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or_default();
        let text = f.to_string();
        if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        }
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edited(text: &str, new: &Value) -> String {
        let (root, old) = load::parse(text).unwrap().unwrap();
        let replacements = edit(text, &root, Place::Root, &old, new).unwrap();
        apply(text, &replacements)
    }

    #[test]
    fn only_the_changed_nodes_are_written_and_quotes_stay() {
        let text = "# head\nkind: Job  # the kind\nmetadata:\n  name: j\n  annotations:\n    a: \"on\"   # kept\nspec:\n  x: 1_000\n  env:\n  - {name: A, value: 'yes'}\n";
        let (_, mut new) = load::parse(text).unwrap().unwrap();
        new["metadata"]["annotations"]["b"] = json!("true");
        new["spec"]["env"][0]["value"] = json!("no");
        let out = edited(text, &new);
        assert_eq!(
            out,
            "# head\nkind: Job  # the kind\nmetadata:\n  name: j\n  annotations:\n    a: \"on\"   # kept\n    b: \"true\"\nspec:\n  x: 1_000\n  env:\n  - name: A\n    value: \"no\"\n"
        );
    }

    #[test]
    fn a_new_map_under_an_inline_value_and_a_block_scalar() {
        let text = "a: {}\nb: x\nc: [1]\n";
        let new = json!({"a": {"k": "v"}, "b": "line one\nline two\n", "c": [1, {"name": "web", "on": "off"}]});
        let out = edited(text, &new);
        assert_eq!(
            out,
            "a:\n  k: v\nb: |\n  line one\n  line two\nc:\n- 1\n- name: web\n  \"on\": \"off\"\n"
        );
    }

    #[test]
    fn an_anchor_in_the_way_rewrites_the_document_with_aliases_expanded() {
        let text = "x: &t {a: 1}\nz: *t\n";
        let new = json!({"x": {"a": 2}, "z": {"a": 1}});
        assert_eq!(edited(text, &new), "x:\n  a: 2\nz:\n  a: 1\n");
    }

    #[test]
    fn a_merge_is_written_expanded() {
        let text = "base: &b {image: busybox}\nc:\n  <<: *b\n  name: app\n";
        let (_, mut new) = load::parse(text).unwrap().unwrap();
        new["c"]["command"] = json!(["sh"]);
        let out = edited(text, &new);
        assert!(out.starts_with("base: &b {image: busybox}\nc:\n"), "{out}");
        assert_eq!(load::parse(&out).unwrap().unwrap().1, new);
    }

    /// Hostile documents: every document of the test inputs cut and
    /// spliced at pseudo-random places, read, and edited where it reads;
    /// never a panic, and every edit written reads back as the new value
    /// (`edit` checks it) or is refused.
    #[test]
    fn mangled_documents_never_panic() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        let mut texts: Vec<String> = [
            "kustomize-quoted.yaml",
            "kustomized.yaml",
            "manifests/job-pi.yaml",
        ]
        .iter()
        .map(|f| std::fs::read_to_string(format!("{dir}/{f}")).unwrap())
        .collect();
        texts.push("a: &x {b: [1, \"on\", |\n  z\n]}\nc:\n  <<: *x\n  d: 'é'\n".into());
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        let pieces = [
            "", "\n", ":", " ", "- ", "{", "}", "[", "&a ", "*a", "<<: ", "|\n", "'", "\"", "#",
            "\t", "é", "\r\n",
        ];
        let (mut read, mut written) = (0, 0);
        for text in &texts {
            for _ in 0..1000 {
                let mut mangled = text.clone();
                for _ in 0..1 + next(3) {
                    let mut at = next(mangled.len());
                    while !mangled.is_char_boundary(at) {
                        at -= 1;
                    }
                    let mut cut = (at + next(8)).min(mangled.len());
                    while !mangled.is_char_boundary(cut) {
                        cut += 1;
                    }
                    mangled.replace_range(at..cut, pieces[next(pieces.len())]);
                }
                let Ok(Some((root, old))) = load::parse(&mangled) else {
                    continue;
                };
                read += 1;
                let mut new = old.clone();
                if let Value::Object(map) = &mut new {
                    map.insert("added".into(), json!({"k": "on", "n": [1, "x\ny"]}));
                    if let Some((_, v)) = map.iter_mut().next() {
                        *v = json!("changed");
                    }
                }
                if let Ok(replacements) = edit(&mangled, &root, Place::Root, &old, &new) {
                    let out = apply(&mangled, &replacements);
                    assert_eq!(load::parse(&out).unwrap().unwrap().1, new, "{mangled:?}");
                    written += usize::from(new != old);
                }
            }
        }
        // Most mangled documents still read, and their edits are written.
        assert!(
            read > 400 && written * 10 > read * 9,
            "{read} read, {written} written"
        );
    }

    #[test]
    fn strings_are_quoted_for_every_reader() {
        for (s, written) in [
            ("on", "\"on\""),
            ("1_000", "\"1_000\""),
            ("{\"mode\":\"x\"}", "'{\"mode\":\"x\"}'"),
            ("a\u{2028}b", "\"a\\Lb\""),
            ("tab\there", "\"tab\\there\""),
            ("\u{7}", "\"\\x07\""),
        ] {
            let mut e = Emitter {
                text: "",
                nl: "\n",
                out: String::new(),
                block_scalar_last: false,
            };
            e.string(s, 2);
            assert_eq!(e.out, written);
        }
        assert_eq!(
            number(&serde_json::Number::from_f64(1e20).unwrap()),
            "100000000000000000000.0"
        );
    }
}
