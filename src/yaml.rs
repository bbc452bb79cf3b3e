//! `proxy.istio.io/config` read as YAML: the tree and the errors of
//! serde_yaml 0.9's `from_str::<Value>`, built here from libyaml's events.
//!
//! The parser is the one serde_yaml drives (`unsafe-libyaml`, the Rust port
//! of libyaml, itself the model of the go-yaml behind Istio). What is left
//! out is serde_yaml's loader around it: its serde visitors, and the float
//! formatting that serde's generic error messages link, were over 100 KB of
//! the module for this one call (docs/performance.md). This module applies
//! serde_yaml's rules to the events itself: one document, anchors and
//! aliases replayed with its repetition limit, nesting limited to 128, its
//! scalar resolution (YAML 1.2 core: `~`/`null`, `true`/`false`, decimal,
//! `0x`, `0o`, `0b` integers of 64 bits, floats with `.inf` and `.nan`),
//! `!!bool`/`!!int`/`!!float`/`!!null` checked, other `!` tags kept as
//! tagged values, duplicate keys refused, and each error in its words with
//! its position. `tests/yaml_reader.rs` holds serde_yaml as the oracle and
//! compares the two, tree and message, on generated and hostile texts.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::mem::MaybeUninit;

/// A YAML node as serde_yaml's `Value` holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Sequence(Vec<Value>),
    Mapping(Mapping),
    Tagged(Box<Tagged>),
}

/// Keys are unique (a repeated key is an error), so a sorted map compares
/// as serde_yaml's insertion-ordered one does: whatever the order.
pub type Mapping = BTreeMap<Value, Value>;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tagged {
    pub tag: Tag,
    pub value: Value,
}

/// A local tag; `!a` and `a` are the same tag, as in serde_yaml.
#[derive(Debug, Clone)]
pub struct Tag(pub String);

impl Tag {
    fn unbanged(&self) -> &str {
        match self.0.strip_prefix('!') {
            Some("") | None => &self.0,
            Some(rest) => rest,
        }
    }
}

impl PartialEq for Tag {
    fn eq(&self, other: &Self) -> bool {
        self.unbanged() == other.unbanged()
    }
}
impl Eq for Tag {}
impl PartialOrd for Tag {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tag {
    fn cmp(&self, other: &Self) -> Ordering {
        self.unbanged().cmp(other.unbanged())
    }
}

/// serde_yaml's number: integers of 64 bits and floats; YAML has one NaN,
/// and `0.0 == -0.0`, so both are one key.
#[derive(Debug, Clone, Copy)]
pub enum Number {
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

impl Number {
    fn rank(&self) -> u8 {
        match self {
            Number::PosInt(_) => 0,
            Number::NegInt(_) => 1,
            Number::Float(_) => 2,
        }
    }
}

/// A float as a key of the order: NaNs one value, zeros one value.
fn float_key(f: f64) -> f64 {
    if f.is_nan() {
        f64::NAN
    } else if f == 0.0 {
        0.0
    } else {
        f
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Number {}
impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Number {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Number::PosInt(a), Number::PosInt(b)) => a.cmp(b),
            (Number::NegInt(a), Number::NegInt(b)) => a.cmp(b),
            (Number::Float(a), Number::Float(b)) => float_key(*a).total_cmp(&float_key(*b)),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match *self {
            Number::PosInt(i) => write!(f, "{i}"),
            Number::NegInt(i) => write!(f, "{i}"),
            Number::Float(x) if x.is_nan() => f.write_str(".nan"),
            Number::Float(x) if x.is_infinite() => {
                f.write_str(if x < 0.0 { "-.inf" } else { ".inf" })
            }
            // serde_yaml writes floats with ryu ("1e16"); zmij, the writer
            // serde_json already links into the module, gives the same digits
            // with a signed exponent ("1e+16").
            Number::Float(x) => {
                let mut buffer = zmij::Buffer::new();
                let text = buffer.format_finite(x);
                match text.split_once("e+") {
                    Some((digits, exponent)) => write!(f, "{digits}e{exponent}"),
                    None => f.write_str(text),
                }
            }
        }
    }
}

impl Value {
    /// The string key `key`, as a `Mapping` is indexed by a `&str`.
    pub fn key(key: &str) -> Value {
        Value::String(key.to_owned())
    }
}

/// Why a text does not read: serde_yaml's message, position included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Copy)]
struct Mark {
    index: u64,
    line: u64,
    column: u64,
}

impl Mark {
    fn of(mark: unsafe_libyaml::yaml_mark_t) -> Self {
        Mark {
            index: mark.index,
            line: mark.line,
            column: mark.column,
        }
    }

    fn is_start(&self) -> bool {
        self.line == 0 && self.column == 0
    }

    fn write(&self, out: &mut String) {
        if self.is_start() {
            let _ = write!(out, "position {}", self.index);
        } else {
            let _ = write!(out, "line {} column {}", self.line + 1, self.column + 1);
        }
    }
}

/// An error of the reader's own (not libyaml's): the message, then where.
fn error_at(message: &str, mark: Option<Mark>) -> Error {
    let mut out = message.to_owned();
    if let Some(mark) = mark.filter(|m| !m.is_start()) {
        out.push_str(" at ");
        mark.write(&mut out);
    }
    Error(out)
}

/// Reads `text` as one YAML document.
pub fn from_str(text: &str) -> Result<Value, Error> {
    let mut parser = Parser::new(text)?;
    let document = parser.next_document(true).unwrap_or_else(|| Document {
        events: vec![(
            Event::Void,
            Mark {
                index: 0,
                line: 0,
                column: 0,
            },
        )],
        error: None,
        aliases: BTreeMap::new(),
    });
    let mut reader = Reader {
        document: &document,
        jumps: 0,
        path: Vec::new(),
    };
    let value = reader.any(&mut 0, DEPTH, false)?;
    if let Some(error) = document.error {
        return Err(error);
    }
    match parser.next_document(false) {
        None => Ok(value),
        Some(_) => Err(error_at(
            "deserializing from YAML containing more than one document is not supported",
            None,
        )),
    }
}

/// serde_yaml's nesting limit.
const DEPTH: usize = 128;

enum Event {
    /// The id of the anchor it names.
    Alias(usize),
    Scalar(Scalar),
    SequenceStart(Option<Box<[u8]>>),
    SequenceEnd,
    MappingStart(Option<Box<[u8]>>),
    MappingEnd,
    /// A stream without a document.
    Void,
}

struct Scalar {
    tag: Option<Box<[u8]>>,
    value: Box<[u8]>,
    plain: bool,
}

/// One document's events, as serde_yaml's loader records them.
struct Document {
    events: Vec<(Event, Mark)>,
    /// Where the parse stopped: met only when the reader gets there.
    error: Option<Error>,
    /// Anchor id to the index of the event it names.
    aliases: BTreeMap<usize, usize>,
}

/// libyaml's parser over the text; the text outlives it.
struct Parser<'t> {
    sys: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>>,
    done: bool,
    _text: std::marker::PhantomData<&'t str>,
}

/// An event as libyaml gives it, anchors included.
enum Raw {
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias(Box<[u8]>),
    Scalar(Option<Box<[u8]>>, Scalar),
    SequenceStart(Option<Box<[u8]>>, Option<Box<[u8]>>),
    SequenceEnd,
    MappingStart(Option<Box<[u8]>>, Option<Box<[u8]>>),
    MappingEnd,
    Skip,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Result<Self, Error> {
        let mut sys = Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit());
        // SAFETY: the parser is boxed so it does not move once initialised;
        // the input is borrowed for 't, which the parser does not outlive.
        unsafe {
            let parser = sys.as_mut_ptr();
            if unsafe_libyaml::yaml_parser_initialize(parser).fail {
                return Err(Error("libyaml could not start".into()));
            }
            unsafe_libyaml::yaml_parser_set_encoding(parser, unsafe_libyaml::YAML_UTF8_ENCODING);
            unsafe_libyaml::yaml_parser_set_input_string(parser, text.as_ptr(), text.len() as u64);
        }
        Ok(Parser {
            sys,
            done: false,
            _text: std::marker::PhantomData,
        })
    }

    fn next(&mut self) -> Result<(Raw, Mark), Error> {
        // SAFETY: the parser was initialised in `new`; the event is read
        // only after libyaml filled it and is deleted once copied.
        unsafe {
            let parser = self.sys.as_mut_ptr();
            if (&*parser).error != unsafe_libyaml::YAML_NO_ERROR {
                return Err(libyaml_error(parser));
            }
            let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
            let event = event.as_mut_ptr();
            if unsafe_libyaml::yaml_parser_parse(parser, event).fail {
                return Err(libyaml_error(parser));
            }
            let raw = convert(&*event);
            let mark = Mark::of((*event).start_mark);
            unsafe_libyaml::yaml_event_delete(event);
            Ok((raw, mark))
        }
    }

    /// serde_yaml's `Loader::next_document`: the first call always gives a
    /// document (a `Void` one for an empty stream); a later one gives
    /// `None` only at the end of the stream.
    fn next_document(&mut self, first: bool) -> Option<Document> {
        if self.done {
            return None;
        }
        let mut anchors: BTreeMap<Box<[u8]>, usize> = BTreeMap::new();
        let mut document = Document {
            events: Vec::new(),
            error: None,
            aliases: BTreeMap::new(),
        };
        let anchor = |anchors: &mut BTreeMap<Box<[u8]>, usize>,
                      document: &mut Document,
                      name: Option<Box<[u8]>>| {
            if let Some(name) = name {
                // Ids count the names known, as serde_yaml's do: a name
                // defined again takes a new id that a later name may share.
                let id = anchors.len();
                anchors.insert(name, id);
                document.aliases.insert(id, document.events.len());
            }
        };
        loop {
            let (raw, mark) = match self.next() {
                Ok(next) => next,
                Err(error) => {
                    document.error = Some(error);
                    return Some(document);
                }
            };
            let event = match raw {
                Raw::Skip | Raw::DocumentStart => continue,
                Raw::StreamEnd => {
                    self.done = true;
                    if !first {
                        return None;
                    }
                    if document.events.is_empty() {
                        document.events.push((Event::Void, mark));
                    }
                    return Some(document);
                }
                Raw::DocumentEnd => return Some(document),
                Raw::Alias(name) => match anchors.get(&name) {
                    Some(id) => Event::Alias(*id),
                    None => {
                        document.error = Some(error_at("unknown anchor", Some(mark)));
                        return Some(document);
                    }
                },
                Raw::Scalar(name, scalar) => {
                    anchor(&mut anchors, &mut document, name);
                    Event::Scalar(scalar)
                }
                Raw::SequenceStart(name, tag) => {
                    anchor(&mut anchors, &mut document, name);
                    Event::SequenceStart(tag)
                }
                Raw::SequenceEnd => Event::SequenceEnd,
                Raw::MappingStart(name, tag) => {
                    anchor(&mut anchors, &mut document, name);
                    Event::MappingStart(tag)
                }
                Raw::MappingEnd => Event::MappingEnd,
            };
            document.events.push((event, mark));
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` (a failed start returns before a
        // Parser exists).
        unsafe { unsafe_libyaml::yaml_parser_delete(self.sys.as_mut_ptr()) }
    }
}

/// SAFETY: `ptr` is null or a NUL-terminated string of libyaml's.
unsafe fn c_bytes(ptr: *const u8) -> Option<Box<[u8]>> {
    if ptr.is_null() {
        return None;
    }
    Some(Box::from(unsafe { CStr::from_ptr(ptr.cast()) }.to_bytes()))
}

/// SAFETY: `event` was filled by `yaml_parser_parse`.
unsafe fn convert(event: &unsafe_libyaml::yaml_event_t) -> Raw {
    unsafe {
        match event.type_ {
            unsafe_libyaml::YAML_STREAM_END_EVENT | unsafe_libyaml::YAML_NO_EVENT => Raw::StreamEnd,
            unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Raw::DocumentStart,
            unsafe_libyaml::YAML_DOCUMENT_END_EVENT => Raw::DocumentEnd,
            unsafe_libyaml::YAML_ALIAS_EVENT => {
                Raw::Alias(c_bytes(event.data.alias.anchor).unwrap_or_default())
            }
            unsafe_libyaml::YAML_SCALAR_EVENT => {
                let s = &event.data.scalar;
                let value = if s.value.is_null() {
                    Box::default()
                } else {
                    Box::from(std::slice::from_raw_parts(s.value, s.length as usize))
                };
                Raw::Scalar(
                    c_bytes(s.anchor),
                    Scalar {
                        tag: c_bytes(s.tag),
                        value,
                        plain: s.style == unsafe_libyaml::YAML_PLAIN_SCALAR_STYLE,
                    },
                )
            }
            unsafe_libyaml::YAML_SEQUENCE_START_EVENT => {
                let s = &event.data.sequence_start;
                Raw::SequenceStart(c_bytes(s.anchor), c_bytes(s.tag))
            }
            unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Raw::SequenceEnd,
            unsafe_libyaml::YAML_MAPPING_START_EVENT => {
                let m = &event.data.mapping_start;
                Raw::MappingStart(c_bytes(m.anchor), c_bytes(m.tag))
            }
            unsafe_libyaml::YAML_MAPPING_END_EVENT => Raw::MappingEnd,
            _ => Raw::Skip,
        }
    }
}

/// libyaml's error as serde_yaml words it.
///
/// SAFETY: `parser` is an initialised parser that reported an error.
unsafe fn libyaml_error(parser: *const unsafe_libyaml::yaml_parser_t) -> Error {
    let p = unsafe { &*parser };
    let text = |ptr: *const std::ffi::c_char| {
        (!ptr.is_null())
            .then(|| String::from_utf8_lossy(unsafe { CStr::from_ptr(ptr.cast()) }.to_bytes()))
    };
    let problem = Mark::of(p.problem_mark);
    let mut out = text(p.problem)
        .map(|s| s.into_owned())
        .unwrap_or_else(|| "libyaml parser failed but there is no error".to_owned());
    if !problem.is_start() {
        out.push_str(" at ");
        problem.write(&mut out);
    } else if p.problem_offset != 0 {
        let _ = write!(out, " at position {}", p.problem_offset);
    }
    if let Some(context) = text(p.context) {
        let _ = write!(out, ", {context}");
        let at = Mark::of(p.context_mark);
        if !at.is_start() && (at.line != problem.line || at.column != problem.column) {
            out.push_str(" at ");
            at.write(&mut out);
        }
    }
    Error(out)
}

/// A step of the path serde_yaml names in its messages
/// (`outer.inner[2]`).
enum Step {
    Seq(usize),
    Map(String),
    Unknown,
    Alias,
}

fn write_path(steps: &[Step], out: &mut String) {
    let Some((last, parent)) = steps.split_last() else {
        out.push('.');
        return;
    };
    let write_parent = |out: &mut String| {
        if !parent.is_empty() {
            write_path(parent, out);
            out.push('.');
        }
    };
    match last {
        Step::Seq(index) => {
            write_path(parent, out);
            let _ = write!(out, "[{index}]");
        }
        Step::Map(key) => {
            write_parent(out);
            out.push_str(key);
        }
        Step::Alias => write_path(parent, out),
        Step::Unknown => {
            write_parent(out);
            out.push('?');
        }
    }
}

/// serde_yaml's `DeserializerFromEvents` with `Value`'s visitor.
struct Reader<'d> {
    document: &'d Document,
    /// Alias replays so far, against serde_yaml's repetition limit.
    jumps: usize,
    path: Vec<Step>,
}

const TAG_BOOL: &[u8] = b"tag:yaml.org,2002:bool";
const TAG_INT: &[u8] = b"tag:yaml.org,2002:int";
const TAG_FLOAT: &[u8] = b"tag:yaml.org,2002:float";
const TAG_NULL: &[u8] = b"tag:yaml.org,2002:null";

/// A tag that makes a tagged value: a local one (`!name`, `!`).
fn local_tag(tag: &Option<Box<[u8]>>) -> Option<&str> {
    let bytes = tag.as_deref()?;
    let rest = bytes.strip_prefix(b"!")?;
    std::str::from_utf8(if rest.is_empty() { bytes } else { rest }).ok()
}

impl<'d> Reader<'d> {
    fn event(&self, pos: usize) -> Result<(&'d Event, Mark), Error> {
        match self.document.events.get(pos) {
            Some((event, mark)) => Ok((event, *mark)),
            None => Err(self
                .document
                .error
                .clone()
                .unwrap_or_else(|| error_at("EOF while parsing a value", None))),
        }
    }

    /// A message of the reader's own, at `mark` and the current path.
    fn message(&self, message: &str, mark: Mark) -> Error {
        let mut out = String::new();
        if !self.path.is_empty() {
            write_path(&self.path, &mut out);
            out.push_str(": ");
        }
        out.push_str(message);
        error_at(&out, Some(mark))
    }

    fn any(&mut self, pos: &mut usize, depth: usize, tagged_already: bool) -> Result<Value, Error> {
        let (event, mark) = self.event(*pos)?;
        *pos += 1;
        let local = |tag| if tagged_already { None } else { local_tag(tag) };
        match event {
            Event::Alias(id) => {
                self.jumps += 1;
                if self.jumps > self.document.events.len() * 100 {
                    return Err(error_at("repetition limit exceeded", None));
                }
                let Some(&found) = self.document.aliases.get(id) else {
                    return Err(error_at("unknown anchor", Some(mark)));
                };
                self.path.push(Step::Alias);
                let value = self.any(&mut { found }, depth, false);
                self.path.pop();
                value
            }
            Event::Scalar(scalar) => match local(&scalar.tag) {
                Some(tag) => self.tagged(tag, pos, depth),
                None => self.scalar(scalar, tagged_already, mark),
            },
            Event::SequenceStart(tag) => match local(tag) {
                Some(tag) => self.tagged(tag, pos, depth),
                None => self.sequence(pos, depth, mark),
            },
            Event::MappingStart(tag) => match local(tag) {
                Some(tag) => self.tagged(tag, pos, depth),
                None => self.mapping(pos, depth, mark),
            },
            Event::SequenceEnd | Event::MappingEnd => {
                Err(error_at("unexpected end of a collection", Some(mark)))
            }
            Event::Void => Ok(Value::Null),
        }
    }

    /// The node just read again, its tag now taken.
    fn tagged(&mut self, tag: &str, pos: &mut usize, depth: usize) -> Result<Value, Error> {
        *pos -= 1;
        let value = self.any(pos, depth, true)?;
        Ok(Value::Tagged(Box::new(Tagged {
            tag: Tag(tag.to_owned()),
            value,
        })))
    }

    fn scalar(&self, scalar: &Scalar, tagged_already: bool, mark: Mark) -> Result<Value, Error> {
        let Ok(v) = std::str::from_utf8(&scalar.value) else {
            return Err(self.message("invalid type: byte array, expected any YAML value", mark));
        };
        let invalid = |expected: &str| {
            self.message(
                &format!("invalid value: string {v:?}, expected {expected}"),
                mark,
            )
        };
        match (&scalar.tag, tagged_already) {
            (Some(tag), false) => match &**tag {
                TAG_BOOL => parse_bool(v)
                    .map(Value::Bool)
                    .ok_or_else(|| invalid("a boolean")),
                TAG_INT => match self.int(v, mark) {
                    Some(int) => int,
                    None => Err(invalid("an integer")),
                },
                TAG_FLOAT => parse_f64(v)
                    .map(|f| Value::Number(Number::Float(f)))
                    .ok_or_else(|| invalid("a float")),
                TAG_NULL => match parse_null(v) {
                    true => Ok(Value::Null),
                    false => Err(invalid("null")),
                },
                tag if tag.starts_with(b"!") && scalar.plain => self.untagged(v, mark),
                _ => Ok(Value::String(v.to_owned())),
            },
            _ if scalar.plain => self.untagged(v, mark),
            _ => Ok(Value::String(v.to_owned())),
        }
    }

    fn untagged(&self, v: &str, mark: Mark) -> Result<Value, Error> {
        if v.is_empty() || parse_null(v) {
            return Ok(Value::Null);
        }
        if let Some(b) = parse_bool(v) {
            return Ok(Value::Bool(b));
        }
        if let Some(int) = self.int(v, mark) {
            return int;
        }
        if !digits_but_not_number(v) {
            if let Some(f) = parse_f64(v) {
                return Ok(Value::Number(Number::Float(f)));
            }
        }
        Ok(Value::String(v.to_owned()))
    }

    /// An integer: a number of 64 bits, or the error `Value` gives one of
    /// 128 bits; `None` when `v` is no integer.
    fn int(&self, v: &str, mark: Mark) -> Option<Result<Value, Error>> {
        if let Some(u) = parse_unsigned_int(v, u64::from_str_radix) {
            return Some(Ok(Value::Number(Number::PosInt(u))));
        }
        if let Some(i) = parse_negative_int(v, i64::from_str_radix) {
            let n = u64::try_from(i).map_or(Number::NegInt(i), Number::PosInt);
            return Some(Ok(Value::Number(n)));
        }
        let too_wide = |wide: String, kind: &str| {
            Some(Err(self.message(
                &format!("invalid type: integer `{wide}` as {kind}, expected any YAML value"),
                mark,
            )))
        };
        if let Some(u) = parse_unsigned_int(v, u128::from_str_radix) {
            return too_wide(u.to_string(), "u128");
        }
        if let Some(i) = parse_negative_int(v, i128::from_str_radix) {
            return too_wide(i.to_string(), "i128");
        }
        None
    }

    fn sequence(&mut self, pos: &mut usize, depth: usize, mark: Mark) -> Result<Value, Error> {
        let Some(depth) = depth.checked_sub(1) else {
            return Err(error_at("recursion limit exceeded", Some(mark)));
        };
        let mut items = Vec::new();
        loop {
            match self.event(*pos)?.0 {
                Event::SequenceEnd | Event::Void => break,
                _ => {
                    self.path.push(Step::Seq(items.len()));
                    let item = self.any(pos, depth, false);
                    self.path.pop();
                    items.push(item?);
                }
            }
        }
        *pos += 1;
        Ok(Value::Sequence(items))
    }

    fn mapping(&mut self, pos: &mut usize, depth: usize, mark: Mark) -> Result<Value, Error> {
        let Some(depth) = depth.checked_sub(1) else {
            return Err(error_at("recursion limit exceeded", Some(mark)));
        };
        let mut mapping = Mapping::new();
        loop {
            let step = match self.event(*pos)?.0 {
                Event::MappingEnd | Event::Void => break,
                Event::Scalar(key) => match std::str::from_utf8(&key.value) {
                    Ok(key) => Step::Map(key.to_owned()),
                    Err(_) => Step::Unknown,
                },
                _ => Step::Unknown,
            };
            let key = self.any(pos, depth, false)?;
            if let Some((first, _)) = mapping.get_key_value(&key) {
                // Named as first written, as serde_yaml's map entry does.
                return Err(self.message(&duplicate(first), mark));
            }
            self.path.push(step);
            let value = self.any(pos, depth, false);
            self.path.pop();
            mapping.insert(key, value?);
        }
        *pos += 1;
        Ok(Value::Mapping(mapping))
    }
}

fn duplicate(key: &Value) -> String {
    match key {
        Value::Null => "duplicate entry with null key".to_owned(),
        Value::Bool(b) => format!("duplicate entry with key `{b}`"),
        Value::Number(n) => format!("duplicate entry with key {n}"),
        Value::String(s) => format!("duplicate entry with key {s:?}"),
        _ => "duplicate entry in YAML map".to_owned(),
    }
}

fn parse_null(v: &str) -> bool {
    matches!(v, "null" | "Null" | "NULL" | "~")
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

type Radix<T> = fn(&str, u32) -> Result<T, std::num::ParseIntError>;

/// `0x`, `0o`, `0b` after an optional `+`, or decimal without a leading
/// zero.
fn parse_unsigned_int<T>(v: &str, from: Radix<T>) -> Option<T> {
    let unsigned = v.strip_prefix('+').unwrap_or(v);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = unsigned.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(int) = from(rest, radix) {
                return Some(int);
            }
        }
    }
    if unsigned.starts_with(['+', '-']) || digits_but_not_number(v) {
        return None;
    }
    from(unsigned, 10).ok()
}

/// `-0x`, `-0o`, `-0b`, or decimal without a leading zero.
fn parse_negative_int<T>(v: &str, from: Radix<T>) -> Option<T> {
    for (prefix, radix) in [("-0x", 16), ("-0o", 8), ("-0b", 2)] {
        if let Some(rest) = v.strip_prefix(prefix) {
            if let Ok(int) = from(&format!("-{rest}"), radix) {
                return Some(int);
            }
        }
    }
    if digits_but_not_number(v) {
        return None;
    }
    from(v, 10).ok()
}

fn parse_f64(v: &str) -> Option<f64> {
    let unsigned = match v.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => v,
    };
    match unsigned {
        ".inf" | ".Inf" | ".INF" => return Some(f64::INFINITY),
        _ => {}
    }
    match v {
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// A leading zero followed by digits is a string in YAML 1.2.
fn digits_but_not_number(v: &str) -> bool {
    let v = v.strip_prefix(['-', '+']).unwrap_or(v);
    v.len() > 1 && v.starts_with('0') && v[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Mapping(
            entries
                .iter()
                .map(|(k, v)| (Value::key(k), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn reads_a_proxy_config() {
        let text = "concurrency: 2\ntracing:\n  sampling: 10.5\nproxyMetadata: {A: 'x'}\nflags: [~, true, 0x1f]\n";
        assert_eq!(
            from_str(text),
            Ok(map(&[
                ("concurrency", Value::Number(Number::PosInt(2))),
                (
                    "tracing",
                    map(&[("sampling", Value::Number(Number::Float(10.5)))])
                ),
                ("proxyMetadata", map(&[("A", Value::String("x".into()))])),
                (
                    "flags",
                    Value::Sequence(vec![
                        Value::Null,
                        Value::Bool(true),
                        Value::Number(Number::PosInt(31))
                    ])
                ),
            ]))
        );
    }

    #[rstest]
    #[case::empty("", Value::Null)]
    #[case::comment("# only\n", Value::Null)]
    #[case::leading_zero("012", Value::String("012".into()))]
    #[case::negative("-5", Value::Number(Number::NegInt(-5)))]
    #[case::minus_zero("-0", Value::Number(Number::PosInt(0)))]
    #[case::nan(".NaN", Value::Number(Number::Float(f64::NAN)))]
    #[case::quoted_number("'5'", Value::String("5".into()))]
    #[case::str_tag("!!str 5", Value::String("5".into()))]
    #[case::local_tag("!x 5", Value::Tagged(Box::new(Tagged { tag: Tag("x".into()), value: Value::Number(Number::PosInt(5)) })))]
    fn resolves_scalars_as_serde_yaml(#[case] text: &str, #[case] expected: Value) {
        assert_eq!(from_str(text), Ok(expected));
    }

    #[rstest]
    #[case::duplicate("a: 1\na: 2\n", "duplicate entry with key \"a\"")]
    #[case::nested_duplicate(
        "b:\n  a: 1\n  a: 2\n",
        "b: duplicate entry with key \"a\" at line 2 column 3"
    )]
    #[case::float_keys("{0.0: a, -0.0: b}", "duplicate entry with key 0.0")]
    #[case::bad_bool(
        "a: !!bool yes\n",
        "a: invalid value: string \"yes\", expected a boolean at line 1 column 4"
    )]
    #[case::wide("a: 444444444444444444444\n", "a: invalid type: integer `444444444444444444444` as u128, expected any YAML value at line 1 column 4")]
    #[case::two_documents(
        "a: 1\n---\nb: 2\n",
        "deserializing from YAML containing more than one document is not supported"
    )]
    #[case::unknown_anchor("a: *x\n", "unknown anchor at line 1 column 4")]
    #[case::libyaml("a: [1\n", "did not find expected ',' or ']' at line 2 column 1, while parsing a flow sequence at line 1 column 4")]
    fn errors_in_serde_yamls_words(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(
            from_str(text).map_err(|e| e.to_string()),
            Err(expected.to_owned())
        );
    }

    #[test]
    fn nesting_is_limited() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            from_str(&deep).map_err(|e| e.to_string()),
            Err("recursion limit exceeded at line 1 column 129".to_owned())
        );
    }

    #[test]
    fn alias_bombs_stop_at_the_repetition_limit() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert_eq!(
            from_str(&text).map_err(|e| e.to_string()),
            Err("repetition limit exceeded".to_owned())
        );
    }
}
