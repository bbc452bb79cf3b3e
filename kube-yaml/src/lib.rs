//! YAML read as Kubernetes' and Istio's Go code reads it: the JSON that
//! sigs.k8s.io/yaml's `YAMLToJSON` makes (v1.6.0, which Istio 1.29.0,
//! 1.30.0 and 1.31.0-rc.0 require, over go.yaml.in/yaml/v2 v2.4.x, the
//! go-yaml v2 line): `protomarshal.ApplyYAML` (istio pkg/util/protomarshal)
//! reads `proxy.istio.io/config` so, for the injector
//! (pkg/config/mesh/mesh.go `MergeProxyConfig`) and for pilot-agent at start
//! (pilot/cmd/pilot-agent/config/config.go `getMeshConfig`); kubectl reads
//! manifests so.
//!
//! - `to_json`: the lean path, events straight to a `serde_json::Value`
//!   (what the policy module calls).
//! - `tree`: a document's nodes with where and how each is written, for
//!   the CLI's in-place edits; its JSON is made by the same builder.
//! - `build`: the builder both use, with go-yaml v2's decoding rules
//!   (decode.go), sigs.k8s.io/yaml's key conversion (yaml.go) and the
//!   work budget, which it owns and counts itself.
//! - `resolve`: go-yaml v2's reading of a plain scalar (resolve.go).
//!
//! The events come from saphyr-parser: pure safe Rust, kept (0.3, 2025),
//! passes the yaml-test-suite, and pulls one event at a time, so that a
//! budget can stop the reading where it is hit, and nothing the text does
//! makes the parser itself recurse. It parses YAML 1.2 syntax where go-yaml
//! v2 parses YAML 1.1 (a libyaml port); where the two syntaxes read one
//! text differently (the YAML 1.1 line breaks U+0085, U+2028, U+2029), the
//! text is refused here rather than read otherwise.
//!
//! The same holds where saphyr-parser refuses what go-yaml v2 takes (a tab
//! right after `:`): the text is refused, never read otherwise. Tabs in a
//! line's indentation outside a block or quoted scalar, which go-yaml
//! refuses, are refused by the lean path too (`tab_indented_lines`).
//!
//! Where Go's answer depends on its map iteration order (two keys that make
//! one JSON key), or go-yaml would read a value that JSON then refuses only
//! if it is kept, the reader refuses: it never gives an answer Istio might
//! not give.

#![forbid(unsafe_code)]

pub mod build;
pub mod resolve;
pub mod tree;

use saphyr_parser::{Event as Parsed, Parser, ScalarStyle, Span, Tag};
use serde_json::Value;

pub use build::{Budget, Builder, Event, Scalar};

/// Why a text cannot be read, with the line (1-based) it was found on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub line: usize,
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not YAML that go-yaml v2 parses (or reads as this parser does).
    Syntax,
    /// YAML whose meaning sigs.k8s.io/yaml refuses (or leaves to chance).
    Meaning,
    /// Over the budget: more nodes, or deeper, than it allows.
    TooLarge,
}

impl Error {
    pub fn new(line: usize, kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            line,
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The characters go-yaml v2's reader takes (readerc.go: "control
/// characters are not allowed"), without the YAML 1.1 line breaks NEL, LS
/// and PS (yamlprivateh.go `is_break`), which a YAML 1.2 parser reads as
/// content: a text with one is refused, not read otherwise than go-yaml
/// reads it.
pub fn check_characters(text: &str) -> Result<(), Error> {
    let mut line = 1;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        let go_yaml = matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7E}' | '\u{85}'
            | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}');
        if !go_yaml {
            return Err(Error::new(
                line,
                ErrorKind::Syntax,
                format!("control character {c:?}"),
            ));
        }
        if matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}') {
            return Err(Error::new(
                line,
                ErrorKind::Syntax,
                format!("{c:?} is a line break to go-yaml v2 (YAML 1.1), not to this parser"),
            ));
        }
    }
    Ok(())
}

/// The lines (1-based) whose leading blanks hold a tab. go-yaml v2's
/// scanner skips a tab before a token only in the flow context or where no
/// simple key may start (scannerc.go `yaml_parser_scan_to_next_token`): a
/// token after a tab in a line's indentation is an error to it ("found
/// character that cannot start any token"), where a YAML 1.2 parser may
/// read past it. Inside a block or quoted scalar the scalar's own scanner
/// takes the tab as content.
fn tab_indented_lines(text: &str) -> Vec<usize> {
    text.split('\n')
        .enumerate()
        .filter(|(_, line)| {
            let blanks = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
            blanks.contains('\t')
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// A tag as the builder takes it: the long form for `!!` tags.
pub fn tag_text(tag: &Tag) -> String {
    format!("{}{}", tag.handle, tag.suffix)
}

/// One parser event as the builder's, or `None` for document and stream
/// events.
pub fn event_of<'a>(event: &'a Parsed<'_>, tag: &'a mut String) -> Option<Event<'a>> {
    Some(match event {
        Parsed::Scalar(value, style, anchor, t) => {
            let t = t.as_ref().map(|t| {
                *tag = tag_text(t);
                tag.as_str()
            });
            Event::Scalar(
                Scalar {
                    value,
                    plain: *style == ScalarStyle::Plain && t.is_none(),
                    tag: t,
                },
                *anchor,
            )
        }
        Parsed::SequenceStart(anchor, _) => Event::SeqStart(*anchor),
        Parsed::SequenceEnd => Event::SeqEnd,
        Parsed::MappingStart(anchor, _) => Event::MapStart(*anchor),
        Parsed::MappingEnd => Event::MapEnd,
        Parsed::Alias(id) => Event::Alias(*id),
        _ => return None,
    })
}

/// saphyr-parser's scanner counts flow nesting in a `u8` and stops at 255
/// (scanner.rs `increase_flow_level`): a limit on depth, like the budget's.
pub fn parse_error(e: &saphyr_parser::ScanError) -> Error {
    if e.info() == "recursion limit exceeded" {
        return Error::new(
            e.marker().line(),
            ErrorKind::TooLarge,
            "nested deeper than 255",
        );
    }
    Error::new(e.marker().line(), ErrorKind::Syntax, e.info())
}

/// The first document of `text` as JSON, as `YAMLToJSON` gives it (go-yaml
/// v2's `Unmarshal` decodes the first document and reads no further; no
/// document at all is `null`), built within `budget`.
pub fn to_json(text: &str, budget: Budget) -> Result<Value, Error> {
    let mut builder = Builder::new(budget);
    read_into(text, &mut builder)?;
    Ok(builder.finish().unwrap_or(Value::Null))
}

/// `to_json` into a builder the caller keeps, to see what it spent.
pub fn read_into(text: &str, builder: &mut Builder) -> Result<(), Error> {
    check_characters(text)?;
    // Tab-indented lines not yet found inside a block or quoted scalar.
    let mut tabbed = tab_indented_lines(text);
    let mut parser = Parser::new_from_str(text);
    let mut tag = String::new();
    let mut in_document = false;
    loop {
        let (event, span): (Parsed, Span) = match parser.next_event() {
            Some(Ok(next)) => next,
            Some(Err(e)) => return Err(parse_error(&e)),
            None => break,
        };
        let line = span.start.line();
        match &event {
            Parsed::StreamStart | Parsed::Nothing => {}
            Parsed::DocumentStart(_) => in_document = true,
            Parsed::DocumentEnd | Parsed::StreamEnd => break,
            _ if !in_document => {
                return Err(Error::new(
                    line,
                    ErrorKind::Syntax,
                    "content outside a document",
                ))
            }
            _ => {
                if let (false, Parsed::Scalar(_, style, ..)) = (tabbed.is_empty(), &event) {
                    // A block scalar's span runs on to the next token's
                    // line, which is not its own.
                    let (first, last) = (span.start.line(), span.end.line());
                    let inside = |l: &usize| match style {
                        ScalarStyle::Literal | ScalarStyle::Folded => first <= *l && *l < last,
                        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => {
                            first <= *l && *l <= last
                        }
                        ScalarStyle::Plain => false,
                    };
                    tabbed.retain(|l| !inside(l));
                }
                if let Some(e) = event_of(&event, &mut tag) {
                    builder.event(e, line)?;
                }
            }
        }
    }
    match tabbed.first() {
        Some(&line) => Err(Error::new(
            line,
            ErrorKind::Syntax,
            "a tab in a line's indentation (go-yaml v2 takes none)",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
