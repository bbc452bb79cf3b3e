//! `render`: manifests in, the same manifests out with the policy's edit
//! applied, as a Helm post-renderer (all manifests on stdin, the result on
//! stdout, a non-zero exit fails the install) or a step of a kustomize or
//! GitOps pipeline.
//!
//! Each Job, CronJob and Pod is sent as the CREATE the API server would
//! send for it, and what comes out is that object with Kubewarden's patch
//! applied (`evaluate`), value for value. Every byte the edit does not
//! touch is written back as it was: a document the policy leaves alone,
//! every other document, and in an edited document everything but the
//! nodes whose value changed (`yaml::edit`: comments, quoting and layout
//! stay; a new string is quoted whenever some YAML reader could take it
//! for something else). A second run changes nothing: the policy's output
//! is its own fixed point.
//!
//! Several sources make one stream: a `---` between them (a file without a
//! trailing line break is never glued onto the next), a later file's
//! byte-order mark dropped. A request the cluster may never send the policy
//! (a `namespaceSelector` on labels the input does not carry, CEL
//! `matchConditions`) leaves the object as it is, and says why: rendering
//! it would apply the policy where it may not run.

use std::fmt;
use std::io::{self, Read, Write};

use istio_job_sidecar_policy::names::Kind;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::config::{Config, Sent};
use crate::evaluate::{evaluate, request, summary, At, Want};
use crate::input::{
    is_kubernetes, is_list, skip_bom, sniff, Format, Held, Location, RawDocument, Source,
    YamlDocuments,
};
use crate::yaml::{self, Place, Replacement};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub objects: usize,
    pub changed: usize,
    /// Documents that do not parse, or an edit that could not be written:
    /// written back as they were.
    pub invalid: usize,
}

/// One object's change, for `--diff` and `--check`.
#[derive(Debug, Clone)]
pub struct Change {
    /// `Job/name`.
    pub who: String,
    pub at: Location,
    pub summary: String,
    /// The object's text before and after, and the line (1-based, in its
    /// source) where that text starts.
    pub before: String,
    pub after: String,
    pub line: usize,
}

pub struct Renderer<'c> {
    pub config: &'c Config,
    pub default_namespace: String,
    /// Warnings and errors, kubectl style (`Warning: ...`), for stderr.
    pub messages: Vec<String>,
    pub rendered: Rendered,
    /// Every change, when kept (`--diff`, `--check`).
    pub changes: Vec<Change>,
    pub keep_changes: bool,
    /// What the input held, of any kind.
    pub held: Held,
    /// Namespace labels from the Namespace documents seen so far.
    namespaces: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
}

/// What `out` was last written, to join sources into one stream.
struct Tracked<'w> {
    inner: &'w mut dyn Write,
    last: Option<u8>,
}

impl Write for Tracked<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        if n > 0 {
            self.last = Some(buf[n - 1]);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// How a source joins the stream before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// The only source: written as it is.
    Alone,
    /// The first of several: JSON is put after a `---` (kubectl reads a
    /// stream that starts with `{` as JSON only, and would drop the rest).
    First,
    /// After another source: a `---` first.
    Next,
}

impl<'c> Renderer<'c> {
    pub fn new(config: &'c Config, default_namespace: &str) -> Self {
        Renderer {
            config,
            default_namespace: default_namespace.to_owned(),
            messages: Vec::new(),
            rendered: Rendered::default(),
            changes: Vec::new(),
            keep_changes: false,
            held: Held::default(),
            namespaces: Default::default(),
        }
    }

    fn source(&mut self, source: &Source, join: Join, out: &mut Tracked) -> io::Result<()> {
        let name = source.name();
        let reader = source
            .open()
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        self.stream_joined(&name, reader, join, out)
    }

    /// One stream (a file, stdin) on its own.
    pub fn stream(&mut self, name: &str, reader: impl Read, out: &mut dyn Write) -> io::Result<()> {
        let mut out = Tracked {
            inner: out,
            last: None,
        };
        self.stream_joined(name, reader, Join::Alone, &mut out)
    }

    fn stream_joined(
        &mut self,
        name: &str,
        reader: impl Read,
        join: Join,
        out: &mut Tracked,
    ) -> io::Result<()> {
        let (format, mut reader) = sniff(reader)?;
        match format {
            Format::Yaml => {
                let mut first = true;
                for document in YamlDocuments::new(reader) {
                    let mut document = document?;
                    self.held.bytes += document.bytes.len() as u64;
                    if first && join == Join::Next {
                        separate(&mut document.bytes, out)?;
                    }
                    first = false;
                    self.yaml_document(name, &document, out)?;
                }
                Ok(())
            }
            Format::Json => {
                let bom = skip_bom(&mut reader)?;
                let mut text = String::new();
                reader.read_to_string(&mut text)?;
                self.held.bytes += text.len() as u64 + if bom { 3 } else { 0 };
                if join != Join::Alone {
                    if out.last.is_some_and(|b| b != b'\n') {
                        out.write_all(b"\n")?;
                    }
                    out.write_all(b"---\n")?;
                }
                if bom && join == Join::Alone {
                    out.write_all("\u{FEFF}".as_bytes())?;
                }
                self.json(name, &text, out)
            }
        }
    }

    fn yaml_document(
        &mut self,
        name: &str,
        document: &RawDocument,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if document.index == 0 {
            return out.write_all(&document.bytes);
        }
        self.held.documents += 1;
        let at = Location {
            source: name.into(),
            document: document.index,
            item: None,
            line: Some(document.line),
        };
        let text = match document.text() {
            Ok(text) => text,
            Err((line, why)) => {
                self.invalid(Location { line, ..at }, &why);
                return out.write_all(&document.bytes);
            }
        };
        if text.contains("items") {
            match yaml::shape(text) {
                Err(e) => {
                    let (line, why) = document.error(e);
                    self.invalid(Location { line, ..at }, &why);
                    return out.write_all(&document.bytes);
                }
                Ok(shape) if shape.list && !shape.anchors => {
                    self.held.objects += 1;
                    return self.yaml_list(document, text, &at, out);
                }
                Ok(_) => {}
            }
        }
        let (root, value) = match document.parse() {
            Ok(Some((_, Value::Null)) | None) => {
                // Only a `---` and comments: no document to count.
                self.held.documents -= 1;
                return out.write_all(&document.bytes);
            }
            Ok(Some(parsed)) => parsed,
            Err((line, why)) => {
                self.invalid(Location { line, ..at }, &why);
                return out.write_all(&document.bytes);
            }
        };
        let mark = (self.rendered.changed, self.changes.len());
        let Some(edited) = self.edit(&value, &at) else {
            return out.write_all(&document.bytes);
        };
        match yaml::edit(text, &root, Place::Root, &value, &edited) {
            Ok(replacements) => {
                let after = yaml::apply(text, &replacements);
                if self.keep_changes {
                    // One diff for the document, naming every object it changes.
                    let mut merged = self.changes.split_off(mark.1);
                    if let Some(mut change) = merged.pop() {
                        for earlier in merged.iter().rev() {
                            change.who = format!("{}, {}", earlier.who, change.who);
                            change.summary = format!("{}; {}", earlier.summary, change.summary);
                        }
                        change.at = at.clone();
                        change.before = text.to_owned();
                        change.after = after.clone();
                        change.line = document.line;
                        self.changes.push(change);
                    }
                }
                out.write_all(after.as_bytes())
            }
            Err(why) => {
                self.not_written(&at, &why, mark);
                out.write_all(&document.bytes)
            }
        }
    }

    /// A `List` document, its items read, edited and written one at a time.
    fn yaml_list(
        &mut self,
        document: &RawDocument,
        text: &str,
        at: &Location,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let mut written = 0;
        let read = yaml::for_each_item::<io::Error>(text, &mut |i, node, value| {
            let at = Location {
                item: Some(i),
                line: Some(document.line + node.line - 1),
                ..at.clone()
            };
            let Some(edited) = self.object(&value, &at) else {
                return Ok(());
            };
            let replacements = match yaml::edit(text, node, Place::Item, &value, &edited) {
                Ok(r) => r,
                Err(why) => {
                    let mark = (
                        self.rendered.changed - 1,
                        self.changes
                            .len()
                            .saturating_sub(usize::from(self.keep_changes)),
                    );
                    self.not_written(&at, &why, mark);
                    return Ok(());
                }
            };
            let line_start = text[..node.start].rfind('\n').map_or(0, |i| i + 1);
            let end = replacements
                .iter()
                .map(|r| r.end)
                .max()
                .unwrap_or(node.end)
                .max(node.end);
            if self.keep_changes {
                let shifted = shift(&replacements, line_start);
                let before = &text[line_start..end];
                self.keep(
                    before.to_owned(),
                    yaml::apply(before, &shifted),
                    document.line + node.line - 1,
                );
            }
            for r in &replacements {
                out.write_all(&text.as_bytes()[written..r.start])?;
                out.write_all(r.text.as_bytes())?;
                written = r.end;
            }
            Ok(())
        });
        match read {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(e) => {
                let (line, why) = document.error(e);
                self.invalid(Location { line, ..at.clone() }, &why);
            }
        }
        out.write_all(&text.as_bytes()[written..])
    }

    fn json(&mut self, name: &str, text: &str, out: &mut dyn Write) -> io::Result<()> {
        let values = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
        let mut written = 0;
        let mut lines = Lines::new(text);
        for (index, next) in values.enumerate() {
            self.held.documents += 1;
            let at = Location {
                source: name.into(),
                document: index + 1,
                item: None,
                line: None,
            };
            let raw = match next {
                Ok(raw) => raw,
                Err(e) => {
                    let line = Some(e.line()).filter(|l| *l > 0);
                    let why = e.to_string();
                    let why = why.split(" at line ").next().unwrap_or_default().to_owned();
                    self.invalid(Location { line, ..at }, &why);
                    break;
                }
            };
            // A List (or an array) gives its items, each read on its own.
            let items = match serde_json::from_str::<Top>(raw.get()) {
                Ok(Top::List(items)) => {
                    self.held.objects += 1;
                    items
                }
                Ok(Top::Array(items)) => items,
                Ok(Top::Object) => vec![raw],
                Err(_) => Vec::new(),
            };
            for (i, item) in items.iter().enumerate() {
                let Ok(object) = serde_json::from_str::<Value>(item.get()) else {
                    continue;
                };
                let listed = !std::ptr::eq(*item, raw);
                let at = Location {
                    item: listed.then_some(i),
                    line: Some(lines.of(offset(text, item.get()))),
                    ..at.clone()
                };
                let Some(edited) = self.object(&object, &at) else {
                    continue;
                };
                let start = offset(text, item.get());
                let end = start + item.get().len();
                let new = json_text(text, start, item.get(), &edited).map_err(io::Error::other)?;
                if self.keep_changes {
                    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                    let before = &text[line_start..end];
                    let after = format!("{}{new}", &text[line_start..start]);
                    // The line it starts on is the item's line.
                    self.keep(before.to_owned(), after, at.line.unwrap_or(1));
                }
                out.write_all(&text.as_bytes()[written..start])?;
                out.write_all(new.as_bytes())?;
                written = end;
            }
        }
        out.write_all(&text.as_bytes()[written..])
    }

    /// The text of the object's change just made (`object` keeps it).
    fn keep(&mut self, before: String, after: String, line: usize) {
        if let Some(change) = self.changes.last_mut().filter(|_| self.keep_changes) {
            change.before = before;
            change.after = after;
            change.line = line;
        }
    }

    fn invalid(&mut self, at: Location, why: &str) {
        self.rendered.invalid += 1;
        self.messages
            .push(format!("error: {at}: {why} (written back unchanged)"));
    }

    /// An edit that could not be written: the changes counted since `mark`
    /// (changed objects, kept changes) are taken back.
    fn not_written(&mut self, at: &Location, why: &str, mark: (usize, usize)) {
        self.rendered.invalid += 1;
        self.rendered.changed = mark.0;
        self.changes.truncate(mark.1);
        self.messages.push(format!(
            "error: {at}: the edit cannot be written: {why} (written back unchanged)"
        ));
    }

    /// The document with the policy's edit of each object (a `List`: of
    /// each item) applied, or `None` when nothing changes.
    fn edit(&mut self, document: &Value, at: &Location) -> Option<Value> {
        if is_list(document) {
            self.held.objects += 1;
            let mut edited = document.clone();
            let mut changed = false;
            for (i, item) in document["items"].as_array()?.iter().enumerate() {
                let at = Location {
                    item: Some(i),
                    ..at.clone()
                };
                if let Some(new) = self.object(item, &at) {
                    edited["items"][i] = new;
                    changed = true;
                }
            }
            return changed.then_some(edited);
        }
        self.object(document, at)
    }

    fn object(&mut self, object: &Value, at: &Location) -> Option<Value> {
        self.held.objects += usize::from(is_kubernetes(object));
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let kind_name = object["kind"].as_str()?;
        let metadata = &object["metadata"];
        if group.is_empty() && kind_name == "Namespace" {
            if let Some(name) = metadata["name"].as_str() {
                let labels = metadata["labels"].as_object().cloned().unwrap_or_default();
                self.namespaces.insert(name.to_owned(), labels);
            }
            return None;
        }
        let kind = Kind::from_group_kind(group, kind_name)?;
        self.rendered.objects += 1;
        let namespace = metadata["namespace"]
            .as_str()
            .unwrap_or(&self.default_namespace)
            .to_owned();
        let who = format!("{kind_name}/{}", metadata["name"].as_str().unwrap_or("?"));
        let create = request("CREATE", object, &namespace);
        let sent = self
            .config
            .sent_for_object(&create)
            .and(
                self.config
                    .sent_for_namespace(&namespace, self.namespaces.get(&namespace)),
            )
            .and(self.config.sent_for_conditions(&create));
        match sent {
            Sent::No(why) => {
                self.messages
                    .push(format!("{who}: not sent to the policy: {why}"));
                return None;
            }
            Sent::Unknown(why) => {
                self.messages.push(format!(
                    "Warning: {who}: written back unchanged: {why}; rendering it would apply the policy where the cluster may not send it"
                ));
                return None;
            }
            Sent::Yes => {}
        }
        let want = Want {
            patch: false,
            admitted: true,
        };
        let (evaluation, admitted) = evaluate(
            At::Create,
            kind,
            object,
            "CREATE",
            &namespace,
            &self.config.settings,
            want,
        );
        for warning in &evaluation.warnings {
            self.messages.push(format!("Warning: {who}: {warning}"));
        }
        if let Some(broken) = &evaluation.broken {
            self.messages.push(format!("error: {at}: {who}: {broken}"));
        }
        let admitted = admitted?;
        // A stored Job's template and a stored Pod's containers are
        // immutable: the API server would refuse the edit.
        let stored = ["uid", "resourceVersion", "creationTimestamp"]
            .iter()
            .any(|k| metadata[*k].is_string());
        if stored && kind != Kind::CronJob {
            let what = if kind == Kind::Job {
                "its pod template is immutable, the policy changes its next Pods"
            } else {
                "its containers are immutable"
            };
            self.messages.push(format!(
                "Warning: {who}: written back unchanged: read from a cluster (uid, resourceVersion): {what}"
            ));
            return None;
        }
        self.rendered.changed += 1;
        let summary = summary(&evaluation);
        if self.keep_changes {
            self.changes.push(Change {
                who,
                at: at.clone(),
                summary,
                before: String::new(),
                after: String::new(),
                line: 0,
            });
        } else {
            // `--check` and `--diff` name each change on stdout: once.
            self.messages.push(format!("{who}: {summary}"));
        }
        Some(admitted)
    }
}

/// Before a later source's first document: its byte-order mark dropped, a
/// line break if the stream does not end with one, and a `---` unless the
/// document starts with its own (`...` before directives).
fn separate(bytes: &mut Vec<u8>, out: &mut Tracked) -> io::Result<()> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    if out.last.is_none() {
        return Ok(());
    }
    if out.last != Some(b'\n') {
        out.write_all(b"\n")?;
    }
    let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let first_line = std::str::from_utf8(first_line)
        .unwrap_or_default()
        .trim_end();
    if first_line == "---" || first_line.starts_with("--- ") || first_line.starts_with("---\t") {
        return Ok(());
    }
    if first_line.starts_with('%') {
        return out.write_all(b"...\n");
    }
    out.write_all(b"---\n")
}

fn shift(replacements: &[Replacement], by: usize) -> Vec<Replacement> {
    replacements
        .iter()
        .map(|r| Replacement {
            start: r.start - by,
            end: r.end - by,
            text: r.text.clone(),
        })
        .collect()
}

fn offset(text: &str, part: &str) -> usize {
    part.as_ptr() as usize - text.as_ptr() as usize
}

/// Line numbers of positions met in order: counted on from the last one.
struct Lines<'t> {
    text: &'t str,
    at: usize,
    line: usize,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Self {
        Lines {
            text,
            at: 0,
            line: 1,
        }
    }

    fn of(&mut self, at: usize) -> usize {
        if at < self.at {
            self.at = 0;
            self.line = 1;
        }
        let bytes = &self.text.as_bytes()[self.at..at];
        self.line += bytes.iter().filter(|b| **b == b'\n').count();
        self.at = at;
        self.line
    }
}

/// A top-level JSON value: a `List` and its items, unparsed; an array's
/// items (none for a scalar); or one object.
enum Top<'a> {
    List(Vec<&'a RawValue>),
    Array(Vec<&'a RawValue>),
    Object,
}

impl<'de: 'a, 'a> Deserialize<'de> for Top<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Top<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'a>, A::Error> {
                let (mut kind, mut items) = (None::<String>, None::<Vec<&'a RawValue>>);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "kind" => kind = map.next_value::<Value>()?.as_str().map(str::to_owned),
                        "items" => {
                            items = map.next_value::<Option<Vec<&'a RawValue>>>().ok().flatten()
                        }
                        _ => {
                            map.next_value::<&RawValue>()?;
                        }
                    }
                }
                match (kind, items) {
                    (Some(k), Some(items)) if k.ends_with("List") => Ok(Top::List(items)),
                    _ => Ok(Top::Object),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Top<'a>, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<&'a RawValue>()? {
                    items.push(item);
                }
                Ok(Top::Array(items))
            }
            fn visit_str<E>(self, _: &str) -> Result<Top<'a>, E> {
                Ok(Top::Array(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Top<'a>, E> {
                Ok(Top::Array(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Top<'a>, E> {
                Ok(Top::Array(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Top<'a>, E> {
                Ok(Top::Array(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Top<'a>, E> {
                Ok(Top::Array(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Top<'a>, E> {
                Ok(Top::Array(Vec::new()))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The order of an object's keys as written, and of its items' keys.
enum Order {
    Map(Vec<(String, Order)>),
    Seq(Vec<Order>),
    Leaf,
}

impl<'de> Deserialize<'de> for Order {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Order;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Order, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    keys.push((key, map.next_value::<Order>()?));
                }
                Ok(Order::Map(keys))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Order, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Order>()? {
                    items.push(item);
                }
                Ok(Order::Seq(items))
            }
            fn visit_str<E>(self, _: &str) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
        }
        d.deserialize_any(V)
    }
}

/// `new` in the key order of `old`, new keys after (serde_json's order);
/// list items matched by `name`, else by position.
struct Laid<'a> {
    new: &'a Value,
    old: Option<&'a Order>,
    /// The old value, to match list items by `name`.
    old_value: Option<&'a Value>,
}

impl Serialize for Laid<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.new, self.old) {
            (Value::Object(members), Some(Order::Map(keys))) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (key, order) in keys {
                    if let Some(v) = members.get(key) {
                        let laid = Laid {
                            new: v,
                            old: Some(order),
                            old_value: self.old_value.and_then(|o| o.get(key)),
                        };
                        map.serialize_entry(key, &laid)?;
                    }
                }
                for (key, v) in members {
                    if !keys.iter().any(|(k, _)| k == key) {
                        map.serialize_entry(key, v)?;
                    }
                }
                map.end()
            }
            (Value::Array(items), Some(Order::Seq(orders))) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                let olds = self.old_value.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let index = match item.get("name").and_then(Value::as_str) {
                        Some(name) => olds.and_then(|o| o.iter().position(|x| x["name"] == name)),
                        None => Some(i),
                    };
                    let laid = Laid {
                        new: item,
                        old: index.and_then(|j| orders.get(j)),
                        old_value: index.and_then(|j| olds.and_then(|o| o.get(j))),
                    };
                    seq.serialize_element(&laid)?;
                }
                seq.end()
            }
            (v, _) => v.serialize(s),
        }
    }
}

/// `new` written in place of the JSON `old` (at byte `start` of `text`):
/// its keys in their order, indented as the original (kubectl: 4 spaces),
/// its lines after the first at the indentation of the line it starts on.
fn json_text(text: &str, start: usize, old: &str, new: &Value) -> Result<String, String> {
    let order: Order = serde_json::from_str(old).map_err(|e| e.to_string())?;
    let old_value: Value = serde_json::from_str(old).map_err(|e| e.to_string())?;
    let laid = Laid {
        new,
        old: Some(&order),
        old_value: Some(&old_value),
    };
    if !old.contains('\n') {
        return serde_json::to_string(&laid).map_err(|e| e.to_string());
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let margin: String = text[line_start..start]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let unit = old
        .lines()
        .nth(1)
        .map(|l| l.len() - l.trim_start().len())
        .and_then(|n| n.checked_sub(margin.len()))
        .filter(|n| *n > 0)
        .unwrap_or(4);
    let indent = " ".repeat(unit);
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    laid.serialize(&mut ser).map_err(|e| e.to_string())?;
    let pretty = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    Ok(pretty.replace('\n', &format!("\n{margin}")))
}

/// Reads every source and writes the result to `out`; the messages for
/// stderr are in the renderer.
pub fn render_all(
    renderer: &mut Renderer,
    sources: &[Source],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut tracked = Tracked {
        inner: out,
        last: None,
    };
    for (i, source) in sources.iter().enumerate() {
        let join = match (i, sources.len()) {
            (_, 1) => Join::Alone,
            (0, _) => Join::First,
            _ => Join::Next,
        };
        renderer.source(source, join, &mut tracked)?;
    }
    tracked.flush()
}

/// For tests: render `text` (one stream) and return the output.
pub fn render_text<'c>(config: &'c Config, text: &str) -> (String, Renderer<'c>) {
    let mut renderer = Renderer::new(config, "default");
    let mut out = Vec::new();
    let _ = renderer.stream("-", text.as_bytes(), &mut out);
    (String::from_utf8_lossy(&out).into_owned(), renderer)
}

/// The unified diff of the changes: one `---`/`+++` header per source,
/// then each object's hunks, labelled with the object and what changed,
/// their line numbers those of the source (`patch -p0` applies it).
pub fn unified_diff(changes: &[Change]) -> String {
    let mut out = String::new();
    let mut source: Option<&str> = None;
    for change in changes {
        if source != Some(&*change.at.source) {
            source = Some(&change.at.source);
            out.push_str(&format!("--- {0}\n+++ {0}\n", change.at.source));
        }
        let diff = similar::TextDiff::from_lines(&change.before, &change.after);
        let base = change.line.saturating_sub(1);
        for group in diff.grouped_ops(3) {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let range = |r: std::ops::Range<usize>| {
                let start = if r.is_empty() {
                    r.start + base
                } else {
                    r.start + base + 1
                };
                format!("{start},{}", r.len())
            };
            let old = range(first.old_range().start..last.old_range().end);
            let new = range(first.new_range().start..last.new_range().end);
            out.push_str(&format!(
                "@@ -{old} +{new} @@ {}: {}\n",
                change.who, change.summary
            ));
            for op in &group {
                for line in diff.iter_changes(op) {
                    out.push(match line.tag() {
                        similar::ChangeTag::Equal => ' ',
                        similar::ChangeTag::Delete => '-',
                        similar::ChangeTag::Insert => '+',
                    });
                    out.push_str(line.value());
                    if line.missing_newline() {
                        out.push_str("\n\\ No newline at end of file\n");
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_edit_keeps_key_order_and_indentation() {
        let text = "{\n    \"items\": [\n        {\n            \"kind\": \"Job\",\n            \"b\": 1,\n            \"a\": [{\"name\": \"x\", \"z\": 1, \"y\": 2}]\n        }\n    ]\n}\n";
        let start = text.find("{\n            \"kind").unwrap();
        let end = text.find("        }\n    ]").unwrap() + 9;
        let new = json!({"a": [{"name": "x", "y": 3, "z": 1}], "b": 1, "kind": "Job", "c": true});
        let written = json_text(text, start, &text[start..end], &new).unwrap();
        assert_eq!(
            written,
            "{\n            \"kind\": \"Job\",\n            \"b\": 1,\n            \"a\": [\n                {\n                    \"name\": \"x\",\n                    \"z\": 1,\n                    \"y\": 3\n                }\n            ],\n            \"c\": true\n        }"
        );
    }

    #[test]
    fn a_later_source_is_separated() {
        let mut buffer = Vec::new();
        let mut out = Tracked {
            inner: &mut buffer,
            last: Some(b'x'),
        };
        let mut bytes = b"\xEF\xBB\xBFkind: Pod\n".to_vec();
        separate(&mut bytes, &mut out).unwrap();
        assert_eq!(
            (buffer.as_slice(), bytes.as_slice()),
            (&b"\n---\n"[..], &b"kind: Pod\n"[..])
        );
    }
}
