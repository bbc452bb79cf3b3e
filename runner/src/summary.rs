//! Human-readable views of an evaluation: the `--summary` of `run`, and the
//! before/after lines of the demo.

use std::fmt::Write as _;

use serde_json::Value;

use crate::admission::ModuleAnswer;

/// Where the pod template of a workload is, as a JSON pointer
/// ("" for a Pod, which is its own template).
pub fn pod_template_pointer(object: &Value) -> Option<String> {
    if let Some(kind) = kube_model::workload::kind_of(object) {
        return Some(kube_model::workload::template_pointer(kind));
    }
    // The workloads the policy leaves alone keep theirs where a Job does.
    match object.get("kind").and_then(Value::as_str)? {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" => Some("/spec/template".into()),
        _ => None,
    }
}

/// One patch operation per line: `op  path  value` (or `<- from`).
pub fn patch_lines(evaluation: &ModuleAnswer) -> Vec<String> {
    let Some(patch) = &evaluation.patch else {
        return Vec::new();
    };
    patch
        .0
        .iter()
        .map(|op| {
            // Through serde so the line shows exactly what goes on the wire.
            let v = serde_json::to_value(op).unwrap_or(Value::Null);
            let name = v.get("op").and_then(Value::as_str).unwrap_or("?");
            let path = v.get("path").and_then(Value::as_str).unwrap_or("?");
            let tail = match (v.get("from"), v.get("value")) {
                (Some(from), _) => format!("<- {}", from.as_str().unwrap_or("?")),
                (None, Some(value)) => preview(value, 110),
                (None, None) => String::new(),
            };
            format!("{name:<8} {path}  {tail}").trim_end().to_owned()
        })
        .collect()
}

/// `--summary`: verdict, warnings, each patch operation, the mutated template.
pub fn summary(evaluation: &ModuleAnswer) -> String {
    let mut out = String::new();
    let verdict = if evaluation.allowed() {
        "accepted"
    } else {
        "REJECTED"
    };
    let _ = writeln!(out, "verdict: {verdict}");
    if let Some(message) = &evaluation.response.message {
        let _ = writeln!(out, "message: {message}");
    }
    let warnings = evaluation.warnings();
    if warnings.is_empty() {
        let _ = writeln!(out, "warnings: none");
    } else {
        let _ = writeln!(out, "warnings:");
        for w in warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    let lines = patch_lines(evaluation);
    if lines.is_empty() {
        let _ = writeln!(out, "patch: none (the object is admitted unchanged)");
        return out;
    }
    let _ = writeln!(out, "patch: {} operation(s)", lines.len());
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
    match evaluation.patched_object() {
        Ok(patched) => {
            let pointer = pod_template_pointer(&patched).unwrap_or_default();
            let template = patched.pointer(&pointer).unwrap_or(&patched);
            let shown = if pointer.is_empty() {
                "the object"
            } else {
                pointer.as_str()
            };
            let _ = writeln!(out, "mutated pod template ({shown}):");
            let yaml = serde_yaml::to_string(template).unwrap_or_else(|e| format!("({e})"));
            for line in yaml.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        Err(e) => {
            let _ = writeln!(out, "mutated pod template: unavailable: {e}");
        }
    }
    out
}

/// The fields of a pod template a reader of this policy cares about, as
/// (label, value) lines: annotations (only Istio's unless `all_annotations`),
/// init containers (with their restartPolicy), containers, and each
/// container's command.
pub fn template_facts(object: &Value, all_annotations: bool) -> Vec<(String, String)> {
    let mut facts = Vec::new();
    let pointer = pod_template_pointer(object).unwrap_or_default();
    let Some(template) = object.pointer(&pointer) else {
        return facts;
    };
    if let Some(annotations) = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        for (key, value) in annotations {
            let istio = key.starts_with("sidecar.istio.io/") || key.starts_with("proxy.istio.io/");
            if all_annotations || istio {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                facts.push((format!("annotation {key}"), compact_str(&text, 90)));
            }
        }
    }
    for list in ["initContainers", "containers"] {
        let containers = template
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let names: Vec<String> = containers
            .iter()
            .map(|c| {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
                match c.get("restartPolicy").and_then(Value::as_str) {
                    Some(policy) => format!("{name} (restartPolicy: {policy})"),
                    None => name.to_owned(),
                }
            })
            .collect();
        facts.push((list.to_owned(), format!("[{}]", names.join(", "))));
        for c in containers {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
            let mut command: Vec<String> = Vec::new();
            for key in ["command", "args"] {
                if let Some(parts) = c.get(key).and_then(Value::as_array) {
                    command.extend(parts.iter().map(|p| short_arg(p.as_str().unwrap_or("?"))));
                }
            }
            if !command.is_empty() {
                facts.push((
                    format!("{name} command"),
                    compact_str(&command.join(" "), 150),
                ));
            }
        }
    }
    facts
}

/// Lines "label: before -> after" for every fact that changed (or appeared).
pub fn changed_facts(before: &Value, after: &Value) -> Vec<String> {
    let old = template_facts(before, true);
    let new = template_facts(after, true);
    let lookup = |facts: &[(String, String)], label: &str| {
        facts
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, v)| v.clone())
    };
    let mut labels: Vec<&String> = old.iter().chain(new.iter()).map(|(l, _)| l).collect();
    labels.dedup();
    let mut seen = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    for label in labels {
        if !seen.insert(label.clone()) {
            continue;
        }
        let (b, a) = (lookup(&old, label), lookup(&new, label));
        if b != a {
            let show = |v: Option<String>| v.unwrap_or_else(|| "(absent)".to_owned());
            lines.push(format!(
                "{label}:\n      before: {}\n      after:  {}",
                show(b),
                show(a)
            ));
        }
    }
    lines
}

/// A value on one line; a container (an object with a `name`) shows its
/// name and restartPolicy first, since those are what a reader looks for.
fn preview(value: &Value, max: usize) -> String {
    match value.as_object() {
        Some(map) if map.get("name").is_some_and(Value::is_string) => {
            let mut head = serde_json::Map::new();
            for key in ["name", "restartPolicy"] {
                if let Some(v) = map.get(key) {
                    head.insert(key.to_owned(), v.clone());
                }
            }
            let rest = map.len() - head.len();
            let head = Value::Object(head).to_string();
            if rest == 0 {
                head
            } else {
                format!("{}, +{rest} more fields}}", head.trim_end_matches('}'))
            }
        }
        Some(_) => compact_str(&value.to_string(), max),
        None => match value.as_str() {
            Some(text) if text.contains('\n') => short_arg(text),
            _ => compact_str(&value.to_string(), max),
        },
    }
}

/// An argument as a reader wants it on one line: a multi-line script is
/// shown as `<script: N lines>`.
fn short_arg(text: &str) -> String {
    let lines = text.lines().count();
    if lines > 1 {
        format!("<script: {lines} lines>")
    } else {
        text.to_owned()
    }
}

fn compact_str(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn facts_show_what_moved() {
        let before = json!({"kind": "Job", "spec": {"template": {"spec": {
            "containers": [{"name": "app"}, {"name": "istio-proxy", "args": ["proxy", "sidecar"]}]}}}});
        let after = json!({"kind": "Job", "spec": {"template": {"spec": {
            "initContainers": [{"name": "istio-proxy", "restartPolicy": "Always", "args": ["proxy", "sidecar"]}],
            "containers": [{"name": "app"}]}}}});
        let lines = changed_facts(&before, &after).join("\n");
        assert!(
            lines.contains("istio-proxy (restartPolicy: Always)"),
            "{lines}"
        );
        assert!(
            lines.contains("containers:\n      before: [app, istio-proxy]"),
            "{lines}"
        );
        assert!(!lines.contains("istio-proxy command"), "{lines}");
    }

    #[test]
    fn long_values_are_cut() {
        assert_eq!(compact_str("a  b\n c", 10), "a b c");
        assert_eq!(compact_str("abcdef", 3), "abc...");
        assert_eq!(short_arg("set -e\nrun"), "<script: 2 lines>");
        assert_eq!(preview(&json!("a\nb\nc"), 10), "<script: 3 lines>");
    }
}
