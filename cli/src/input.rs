//! What operators have, read as a stream of objects: `kubectl get -o json`
//! or `-o yaml` (a `List`), multi-document YAML (`helm template`, a GitOps
//! folder), files, directories (recursively) and `-` for stdin.
//!
//! Memory stays bounded by one document: YAML is split into documents line
//! by line (a `---` or `...` line at column 0 always ends a document, in any
//! YAML), a YAML `List` document hands its `items` over one at a time (its
//! text is held, never its tree), and a JSON `List` hands its `items` over
//! while it is still being read. YAML is read as kubectl reads it
//! (`crate::yaml`): a byte-order mark skipped, YAML 1.1 scalars, merge keys.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::yaml;

/// Where an object, or a document that could not be read, came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as given (or found in a directory), `-` for stdin; shared
    /// by every object of the source.
    pub source: Rc<str>,
    /// 1-based, among the documents of the source.
    pub document: usize,
    /// 0-based index in a `List`'s `items`.
    pub item: Option<usize>,
    /// 1-based line where the document (or, for an error, the problem) is.
    pub line: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.source, self.document)?;
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        Ok(())
    }
}

/// One thing read.
#[derive(Debug)]
pub enum Found {
    Object(Value, Location),
    /// A document (or a JSON source from there on) that does not parse.
    Invalid(Location, String),
}

/// An input as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "-".into(),
            Source::File(path) => path.display().to_string(),
        }
    }

    pub fn open(&self) -> io::Result<Box<dyn Read>> {
        Ok(match self {
            Source::Stdin => Box::new(io::stdin().lock()),
            Source::File(path) => Box::new(std::fs::File::open(path)?),
        })
    }
}

/// A file below a directory given as INPUT that is not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: &'static str,
}

/// What the arguments name: the sources to read, and what their
/// directories hold that is not read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub sources: Vec<Source>,
    pub skipped: Vec<Skipped>,
}

const NOT_MANIFEST: &str = "not .yaml, .yml or .json";
const HIDDEN: &str = "hidden";

/// The sources named by the arguments: `-`, files, and the `.yaml`, `.yml`
/// and `.json` files below directories (in name order); hidden entries and
/// other files of those directories are skipped, and listed.
pub fn sources(args: &[PathBuf]) -> io::Result<Inputs> {
    let mut inputs = Inputs::default();
    for arg in args {
        if arg.as_os_str() == "-" {
            inputs.sources.push(Source::Stdin);
        } else if arg.is_dir() {
            walk(arg, &mut inputs)?;
        } else if arg.exists() {
            inputs.sources.push(Source::File(arg.clone()));
        } else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: no such file or directory; give files, directories or - for stdin, \
                     e.g. `kubectl istio-job-sidecar scan deploy/` or \
                     `helm template ./chart | kubectl istio-job-sidecar render -`",
                    arg.display()
                ),
            ));
        }
    }
    Ok(inputs)
}

fn walk(dir: &Path, inputs: &mut Inputs) -> io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            inputs.skipped.push(Skipped { path, why: HIDDEN });
        } else if path.is_dir() {
            walk(&path, inputs)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            inputs.sources.push(Source::File(path));
        } else {
            inputs.skipped.push(Skipped {
                path,
                why: NOT_MANIFEST,
            });
        }
    }
    Ok(())
}

/// What the inputs held: enough to say what was read when none of it is
/// a Kubernetes object.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub bytes: u64,
    /// Documents with content (YAML) or top-level values (JSON), those
    /// that do not parse included.
    pub documents: usize,
    /// Kubernetes objects read: objects with `apiVersion` and `kind`, and
    /// every `List` (an empty one is still a cluster's answer).
    pub objects: usize,
}

impl std::ops::AddAssign for Held {
    fn add_assign(&mut self, other: Held) {
        self.bytes += other.bytes;
        self.documents += other.documents;
        self.objects += other.objects;
    }
}

/// An object with a non-empty `apiVersion` and `kind`, as kubectl needs.
pub fn is_kubernetes(value: &Value) -> bool {
    let named = |key: &str| value[key].as_str().is_some_and(|v| !v.is_empty());
    named("apiVersion") && named("kind")
}

/// Why inputs that hold no Kubernetes object are refused: what was read,
/// and what to give instead (`example`: a working command line).
pub fn nothing_to_read(names: &[String], skipped: usize, held: Held, example: &str) -> String {
    let what = if names.is_empty() && skipped == 0 {
        "nothing in the directories given".to_owned()
    } else if names.is_empty() {
        format!(
            "no .yaml, .yml or .json file in the directories given ({skipped} other {} skipped, listed above)",
            if skipped == 1 { "entry" } else { "entries" }
        )
    } else if held.bytes == 0 {
        format!("nothing read from {}: 0 bytes", names.join(", "))
    } else if held.documents == 0 {
        format!(
            "nothing but comments and blank lines in {} ({} bytes)",
            names.join(", "),
            held.bytes
        )
    } else {
        format!(
            "no Kubernetes object in {} ({} bytes, {} document{}, none with apiVersion and kind)",
            names.join(", "),
            held.bytes,
            held.documents,
            if held.documents == 1 { "" } else { "s" }
        )
    };
    format!(
        "{what}. Give manifests or what kubectl get prints, e.g. `{example}`; \
         --allow-empty accepts an input without any"
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// The format of a stream, from its first byte that is not whitespace (`{`
/// or `[`: JSON), and the stream whole again.
pub fn sniff(mut reader: impl Read) -> io::Result<(Format, impl BufRead)> {
    let mut prefix = Vec::new();
    let mut byte = [0u8; 1];
    let format = loop {
        if reader.read(&mut byte)? == 0 {
            break Format::Yaml;
        }
        prefix.push(byte[0]);
        match byte[0] {
            b' ' | b'\t' | b'\r' | b'\n' => continue,
            // A UTF-8 byte order mark.
            0xEF | 0xBB | 0xBF if prefix.len() <= 3 => continue,
            b'{' | b'[' => break Format::Json,
            _ => break Format::Yaml,
        }
    };
    let whole = io::Cursor::new(prefix).chain(reader);
    Ok((format, BufReader::with_capacity(1 << 16, whole)))
}

/// Past a UTF-8 byte-order mark at the start of `reader` (JSON has none:
/// serde_json stops at it, kubectl skips it).
pub fn skip_bom(reader: &mut impl BufRead) -> io::Result<bool> {
    let mut skipped = 0;
    while skipped < 3 {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let want = &b"\xEF\xBB\xBF"[skipped..];
        let n = want.len().min(buf.len());
        if buf[..n] != want[..n] {
            return Ok(false);
        }
        reader.consume(n);
        skipped += n;
    }
    Ok(skipped == 3)
}

/// Every object of `source`, in order, to `sink`; a `List` gives its items.
pub fn read_objects(source: &Source, sink: &mut dyn FnMut(Found)) -> io::Result<Held> {
    let name = source.name();
    let reader = source
        .open()
        .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
    read_stream(&name, reader, sink)
}

/// `read_objects` of an already open stream named `name`.
pub fn read_stream(name: &str, reader: impl Read, sink: &mut dyn FnMut(Found)) -> io::Result<Held> {
    let bytes = std::cell::Cell::new(0);
    let reader = Counted {
        inner: reader,
        bytes: &bytes,
    };
    let (format, reader) = sniff(reader)?;
    let source: Rc<str> = name.into();
    let mut held = Held::default();
    let mut sink = |found: Found| {
        if let Found::Object(object, _) = &found {
            held.objects += usize::from(is_kubernetes(object));
        }
        sink(found)
    };
    let (documents, lists) = match format {
        Format::Json => {
            let mut reader = reader;
            skip_bom(&mut reader)?;
            read_json(&source, reader, &mut sink)?
        }
        Format::Yaml => {
            let (mut documents, mut lists) = (0, 0);
            for document in YamlDocuments::new(reader) {
                let document = document?;
                if document.index == 0 {
                    continue;
                }
                let at = Location {
                    source: source.clone(),
                    document: document.index,
                    item: None,
                    line: Some(document.line),
                };
                let mut handed = false;
                let read = document.objects(&mut |object, item| {
                    handed = true;
                    let at = Location { item, ..at.clone() };
                    sink(Found::Object(object, at));
                });
                match read {
                    Ok(list) => {
                        documents += usize::from(list || handed);
                        lists += usize::from(list);
                    }
                    Err((line, why)) => {
                        documents += 1;
                        sink(Found::Invalid(Location { line, ..at }, why));
                    }
                }
            }
            (documents, lists)
        }
    };
    held.documents = documents;
    held.objects += lists;
    held.bytes = bytes.get();
    Ok(held)
}

/// Counts the bytes read through it.
struct Counted<'c, R> {
    inner: R,
    bytes: &'c std::cell::Cell<u64>,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.set(self.bytes.get() + n as u64);
        Ok(n)
    }
}

/// `kind: List` (or `FooList`) with an `items` array.
pub fn is_list(value: &Value) -> bool {
    value["kind"].as_str().is_some_and(|k| k.ends_with("List")) && value["items"].is_array()
}

/// A YAML document as written, bytes and all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDocument {
    /// 1-based; 0 for comments and blank lines that are no document (after
    /// the last one, or before a first `---` they do not belong to).
    pub index: usize,
    /// 1-based line of its first line.
    pub line: usize,
    pub bytes: Vec<u8>,
}

impl RawDocument {
    /// The document as text, or why it is none.
    pub fn text(&self) -> Result<&str, (Option<usize>, String)> {
        std::str::from_utf8(&self.bytes).map_err(|e| (Some(self.line), format!("not UTF-8: {e}")))
    }

    /// The document's tree and its JSON as kubectl reads it (`None`: no
    /// content); an error gives the line it is on (in the stream's lines).
    #[allow(clippy::type_complexity)]
    pub fn parse(&self) -> Result<Option<(yaml::NodeRef, Value)>, (Option<usize>, String)> {
        yaml::parse(self.text()?).map_err(|e| self.error(e))
    }

    /// A document's error, its line counted in the stream.
    pub fn error(&self, e: yaml::Error) -> (Option<usize>, String) {
        (Some(self.line + e.line.saturating_sub(1)), e.message)
    }

    /// Every object of the document, in order: a `List` gives its items,
    /// read one at a time (the document is never built whole). Whether
    /// the document was a `List`.
    pub fn objects(
        &self,
        each: &mut dyn FnMut(Value, Option<usize>),
    ) -> Result<bool, (Option<usize>, String)> {
        let text = self.text()?;
        if text.contains("items") && yaml::shape(text).map_err(|e| self.error(e))?.list {
            yaml::for_each_item::<()>(text, &mut |i, _, item| {
                each(item, Some(i));
                Ok(())
            })
            .map_err(|e| self.error(e))?
            .map_err(|()| (None, String::new()))?;
            return Ok(true);
        }
        match self.parse()? {
            None | Some((_, Value::Null)) => {}
            Some((_, value)) => each(value, None),
        }
        Ok(false)
    }
}

/// A YAML stream cut into its documents, line by line.
pub struct YamlDocuments<R> {
    reader: R,
    next_line: usize,
    /// A `---` line read ahead: it starts the next document.
    pending: Option<(Vec<u8>, usize)>,
    documents: usize,
}

impl<R: BufRead> YamlDocuments<R> {
    pub fn new(reader: R) -> Self {
        YamlDocuments {
            reader,
            next_line: 1,
            pending: None,
            documents: 0,
        }
    }
}

impl<R: BufRead> Iterator for YamlDocuments<R> {
    type Item = io::Result<RawDocument>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut bytes = Vec::new();
        let (mut marker, mut content) = (false, false);
        let mut first_line = self.next_line;
        if let Some((line, number)) = self.pending.take() {
            bytes = line;
            marker = true;
            first_line = number;
        }
        loop {
            let mut line = Vec::new();
            match self.reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
            let number = self.next_line;
            self.next_line += 1;
            let bare = strip_bom(&line);
            if is_marker(bare, b"---") {
                if marker || content {
                    self.pending = Some((line, number));
                    break;
                }
                marker = true;
            } else if is_marker(bare, b"...") {
                bytes.extend_from_slice(&line);
                break;
            } else {
                // A directive (`%YAML`) before the content is not content.
                let directive = bare.starts_with(b"%") && !content;
                content |= !(is_blank_or_comment(bare) || directive);
            }
            if bytes.is_empty() {
                first_line = number;
            }
            bytes.extend_from_slice(&line);
        }
        if bytes.is_empty() {
            return None;
        }
        let index = if marker || content {
            self.documents += 1;
            self.documents
        } else {
            0
        };
        Some(Ok(RawDocument {
            index,
            line: first_line,
            bytes,
        }))
    }
}

fn strip_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// `---` or `...` at column 0, alone or followed by a blank.
fn is_marker(line: &[u8], marker: &[u8]) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || matches!(rest[0], b' ' | b'\t' | b'\r' | b'\n'))
}

fn is_blank_or_comment(line: &[u8]) -> bool {
    let trimmed: &[u8] = match line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        Some(i) => &line[i..],
        None => return true,
    };
    trimmed.starts_with(b"#")
}

/// JSON values one after another; a `List`'s (or a top-level array's)
/// items are handed over as they are read. A syntax error ends the source:
/// JSON has no document boundary to start again from.
/// Returns how many top-level values it read, and how many were `List`s.
fn read_json(
    name: &Rc<str>,
    reader: impl Read,
    sink: &mut dyn FnMut(Found),
) -> io::Result<(usize, usize)> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let (mut document, mut lists) = (0, 0);
    loop {
        if de.end().is_ok() {
            return Ok((document, lists));
        }
        document += 1;
        let at = Location {
            source: name.clone(),
            document,
            item: None,
            line: None,
        };
        let seed = Top {
            at: at.clone(),
            sink: &mut *sink,
        };
        match seed.deserialize(&mut de) {
            Ok(listed) => lists += usize::from(listed),
            Err(e) if e.is_io() => return Err(io::Error::other(format!("{name}: {e}"))),
            Err(e) => {
                let line = Some(e.line()).filter(|l| *l > 0);
                let text = e.to_string();
                let why = match text.find(" at line ") {
                    Some(i) => text[..i].to_owned(),
                    None => text,
                };
                sink(Found::Invalid(Location { line, ..at }, why));
                return Ok((document, lists));
            }
        }
    }
}

struct Top<'s> {
    at: Location,
    sink: &'s mut dyn FnMut(Found),
}

/// Whether the value was a `List` (its items handed over).
impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object or array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut members = Map::new();
        let mut listed = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                let items = Items {
                    at: self.at.clone(),
                    sink: &mut *self.sink,
                };
                listed = map.next_value_seed(items)?;
            } else {
                let value = map.next_value::<Value>()?;
                members.insert(key, value);
            }
        }
        if !listed {
            (self.sink)(Found::Object(Value::Object(members), self.at));
        }
        Ok(listed)
    }

    /// A bare array: its items are handed over, it is no `List` itself.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        stream_items(seq, &self.at, self.sink).map(|()| false)
    }
}

/// The `items` of a `List`: handed over one by one. `null` is no items;
/// anything else is read as an ordinary member would be... of an object
/// that is then no list: such an object is not a Kubernetes kind.
struct Items<'s> {
    at: Location,
    sink: &'s mut dyn FnMut(Found),
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    /// Whether the items were an array (handed over).
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        stream_items(seq, &self.at, self.sink).map(|()| true)
    }
}

fn stream_items<'de, A: SeqAccess<'de>>(
    mut seq: A,
    at: &Location,
    sink: &mut dyn FnMut(Found),
) -> Result<(), A::Error> {
    let mut i = 0;
    while let Some(item) = seq.next_element::<Value>()? {
        let at = Location {
            item: Some(i),
            ..at.clone()
        };
        sink(Found::Object(item, at));
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documents(text: &str) -> Vec<(usize, usize, String)> {
        YamlDocuments::new(text.as_bytes())
            .map(|d| {
                let d = d.unwrap();
                (d.index, d.line, String::from_utf8(d.bytes).unwrap())
            })
            .collect()
    }

    #[test]
    fn yaml_is_cut_at_markers_and_keeps_every_byte() {
        let text = "# preamble\n---\n# Source: a\nkind: A\n---\n---\nkind: B\n...\n# trailer\n";
        let docs = documents(text);
        assert_eq!(
            docs,
            vec![
                (1, 1, "# preamble\n---\n# Source: a\nkind: A\n".into()),
                (2, 5, "---\n".into()),
                (3, 6, "---\nkind: B\n...\n".into()),
                (0, 9, "# trailer\n".into()),
            ]
        );
        let joined: String = docs.into_iter().map(|d| d.2).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn a_marker_needs_column_zero_and_a_blank_after_it() {
        let docs = documents("a: |\n  ---\n---x: 1\nb: 2\n");
        assert_eq!(docs.len(), 1);
    }

    #[test]
    fn a_json_list_hands_over_its_items_and_an_error_says_where() {
        let text = r#"{"apiVersion":"v1","items":[{"kind":"Job"},{"kind":"Pod"}],"kind":"List"}
            {"kind":"CronJob"} {"kind": oops}"#;
        let mut found = Vec::new();
        read_stream("in", text.as_bytes(), &mut |f| found.push(f)).unwrap();
        let kinds: Vec<String> = found
            .iter()
            .map(|f| match f {
                Found::Object(v, at) => format!("{} {}", v["kind"], at),
                Found::Invalid(at, why) => format!("{at}: {why}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "\"Job\" in: document 1, item 0",
                "\"Pod\" in: document 1, item 1",
                "\"CronJob\" in: document 2",
                "in: document 3, line 2: expected value",
            ]
        );
    }

    #[test]
    fn a_bad_yaml_document_is_reported_with_its_line_and_the_rest_is_read() {
        let text = "kind: A\n---\nkind: [B\n---\nkind: C\n";
        let mut found = Vec::new();
        read_stream("in", text.as_bytes(), &mut |f| found.push(f)).unwrap();
        assert_eq!(found.len(), 3);
        match &found[1] {
            Found::Invalid(at, _) => {
                assert_eq!((at.document, at.line), (2, Some(4)), "{at}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&found[2], Found::Object(v, _) if v["kind"] == "C"));
    }
}
