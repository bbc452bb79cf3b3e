//! mode exitOnJobCompletion: merge `exitOnJobCompletion: true` into the pod
//! template's `proxy.istio.io/config`, keeping every key already there and
//! the user's form (YAML block, YAML flow or JSON).
//!
//! Upstream Istio's ProxyConfig has no such field and its lenient parser
//! drops it (facts.md): this mode only acts on Istio builds that implement
//! it, and breaks nothing elsewhere. The README says so.

use super::{Outcome, Target};
use crate::json::{Node, ShapeError};
use crate::view::ANNOTATION_PROXY_CONFIG;
use crate::workload::{annotations_mut, template_mut};
use serde_yaml::{Mapping, Value};

pub const KEY: &str = "exitOnJobCompletion";

pub fn apply(t: &mut Target) -> Result<Outcome, ShapeError> {
    let current = t
        .workload
        .template_annotations()
        .and_then(|a| a.proxy_config.as_deref());
    let merged = match current {
        None => format!("{KEY}: true"),
        Some(text) => match merge(text) {
            Ok(Some(merged)) => merged,
            Ok(None) => return Ok(Outcome::unchanged()),
            Err(why) => {
                return Ok(Outcome::unchanged_because(format!(
                    "{ANNOTATION_PROXY_CONFIG} left unchanged: {why}"
                )))
            }
        },
    };
    let template = template_mut(t.kind, t.object)?;
    annotations_mut(template)?.set(ANNOTATION_PROXY_CONFIG, Node::from_string(merged))?;
    Ok(Outcome::changed())
}

/// The config with `exitOnJobCompletion: true` added, written in the form the
/// user chose; `Ok(None)` when the key is already there (the user's word
/// stands); `Err` when the text is not a mapping or cannot be extended in
/// place.
///
/// A YAML parser costs several times the rest of a request, so the forms
/// users write (JSON, and block mappings of plain `key: value` lines) are
/// recognised by a strict grammar in which the edit is correct by
/// construction; anything else goes through `merge_verified`.
pub fn merge(text: &str) -> Result<Option<String>, String> {
    if let Some(keys) = json_object_keys(text) {
        if keys.binary_search(&KEY).is_ok() {
            return Ok(None);
        }
        // The text is one JSON object: its last `}` closes it.
        if let Some(close) = text.rfind('}') {
            let (head, tail) = text.split_at(close);
            let sep = if keys.is_empty() { "" } else { ", " };
            return Ok(Some([head, sep, "\"", KEY, "\": true", tail].concat()));
        }
    }
    if let Some(block) = simple_block_mapping(text) {
        if block.top_keys.binary_search(&KEY).is_ok() {
            return Ok(None);
        }
        let indent = &text[block.first_line..block.first_line + block.indent];
        return Ok(Some(join_line(text, &[indent, KEY, ": true"].concat())));
    }
    merge_verified(text)
}

/// `merge` through a YAML parser: every result is re-read and checked to be
/// the same mapping plus the key, so a text edit can never change what was
/// there.
pub fn merge_verified(text: &str) -> Result<Option<String>, String> {
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
    expected.insert(Value::String(KEY.into()), Value::Bool(true));
    match read_mapping(&candidate) {
        Ok(reread) if reread == expected => Ok(Some(candidate)),
        _ => Err("its form cannot be extended safely; add the key by hand".into()),
    }
}

/// The keys of `text` when it is exactly one JSON object with distinct keys
/// (JSON is YAML, so any YAML reader sees the same mapping).
fn json_object_keys(text: &str) -> Option<Vec<&str>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let raw: &serde_json::value::RawValue = serde_json::from_str(text).ok()?;
    let mut node = Node::raw(raw);
    let members = node.members_mut().ok()?;
    let mut keys = Vec::with_capacity(members.len());
    for (key, _) in members.iter() {
        // A key with escapes is not compared here: leave it to the parser.
        let std::borrow::Cow::Borrowed(key) = key else {
            return None;
        };
        keys.push(*key);
    }
    distinct(keys)
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

fn plain_key(key: &str) -> bool {
    let b = key.as_bytes();
    b.first()
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/'))
}

/// A scalar that ends on its line: quoted without escapes or inner quotes,
/// or plain without indicators that could open anything.
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
    starts_plain
        && last != b':'
        && b.iter().enumerate().all(|(i, c)| match c {
            b'[' | b']' | b'{' | b'}' | b'#' | b'"' | b'\'' => false,
            b':' => b.get(i + 1) != Some(&b' '),
            _ => true,
        })
}

fn read_mapping(text: &str) -> Result<Mapping, String> {
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Mapping(m)) => Ok(m),
        Ok(Value::Null) => Ok(Mapping::new()),
        Ok(_) => Err("it is not a mapping".into()),
        Err(e) => Err(format!("it does not parse: {}", first_line(&e.to_string()))),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
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
    if text.trim().is_empty() {
        return line.to_owned();
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
    fn fast_paths_agree_with_the_parser(#[case] text: &str, #[case] fast: bool) {
        let recognised = json_object_keys(text).is_some() || simple_block_mapping(text).is_some();
        assert_eq!(recognised, fast, "{text:?}");
        assert_eq!(merge(text), merge_verified(text), "{text:?}");
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
    #[case::duplicate_key("a: 1\na: 2", "it does not parse")]
    #[case::flow_then_comment_brace("{a: 1} # }", "its form cannot be extended safely")]
    fn unusable_configs_are_errors(#[case] text: &str, #[case] why: &str) {
        let err = merge(text).unwrap_err();
        assert!(err.starts_with(why), "{err:?}");
    }
    /// Regression (issue 4, runner/tests/hostile.rs): the duplicate-key
    /// checks of the two recognisers were list scans, so a 1 MiB config of
    /// 32,768 keys took 0.8 s natively and over policy-server's 2 s deadline
    /// in wasm. The bound is generous (debug build, loaded machine); the
    /// quadratic version needs about a minute here.
    #[test]
    fn many_keys_merge_in_linear_time() {
        let n = 65_536;
        let block: String = (0..n).map(|i| format!("key{i:08}: v{i}\n")).collect();
        let json = format!(
            "{{{}}}",
            (0..n)
                .map(|i| format!("\"key{i:08}\": {i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let start = std::time::Instant::now();
        let merged = merge(&block).unwrap().unwrap();
        assert!(merged.ends_with("key00065535: v65535\nexitOnJobCompletion: true\n"));
        let merged = merge(&json).unwrap().unwrap();
        assert!(merged.ends_with(", \"exitOnJobCompletion\": true}"));
        let elapsed = start.elapsed();
        assert!(elapsed.as_secs() < 20, "{n} keys took {elapsed:?}");
    }
}
