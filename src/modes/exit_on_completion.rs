//! mode exitOnJobCompletion: merge `exitOnJobCompletion: true` into the pod
//! template's `proxy.istio.io/config`, keeping every key already there and
//! the user's form (YAML block, YAML flow or JSON).
//!
//! Upstream Istio's ProxyConfig has no such field and its lenient parser
//! drops it (facts.md): this mode only acts on Istio builds that implement
//! it, and breaks nothing elsewhere. The README says so.

use super::{Outcome, Target};
use crate::json::{Node, ShapeError};
use crate::request::ANNOTATION_PROXY_CONFIG;
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
                return Ok(Outcome::warn(format!(
                    "{ANNOTATION_PROXY_CONFIG} left unchanged: {why}"
                )))
            }
        },
    };
    let template = template_mut(t.kind, t.object)?;
    annotations_mut(template)?.set(ANNOTATION_PROXY_CONFIG, Node::string(merged))?;
    Ok(Outcome::changed())
}

/// The config with `exitOnJobCompletion: true` added, written in the form the
/// user chose; `Ok(None)` when the key is already there (the user's word
/// stands); `Err` when the text is not a mapping or cannot be extended in
/// place. Every result is re-read and checked to be the same mapping plus
/// the key, so a text edit can never change what was there.
pub fn merge(text: &str) -> Result<Option<String>, String> {
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
        Some(body) => format!("{body}\n{line}\n"),
        None => format!("{text}\n{line}"),
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
}
