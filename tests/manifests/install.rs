//! One install route, and a safe one: the README's Install section and
//! Artifact Hub's install text apply the ClusterAdmissionPolicy of
//! examples/ in monitor mode, then switch it to protect.

use serde_json::{json, Value};

use crate::common::{read, yaml_docs, yaml_file};
use crate::markdown::{self, CodeBlock};

/// The manifest the install texts give: the default mode, cluster-wide.
const INSTALLED_EXAMPLE: &str = "examples/native-sidecar.yaml";

/// The README's Install section, from its heading to the next heading of
/// its level.
fn readme_install_section(readme: &str) -> String {
    markdown::read(readme)
        .section(readme, "Install")
        .expect("README.md has no `## Install` section")
        .to_owned()
}

/// A console block's commands, a line ending in `\` joined with the next.
fn commands(console: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in console.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

/// RFC 7386 JSON merge patch, what `kubectl patch --type merge` applies.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let object = target.as_object_mut().unwrap();
    for (key, value) in fields {
        if value.is_null() {
            object.remove(key);
        } else {
            merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// What an install text has an operator apply: its one
/// ClusterAdmissionPolicy (a YAML block) and the merge patch of the
/// `kubectl patch clusteradmissionpolicy` that follows it.
fn install_steps(at: &str, text: &str) -> (Value, Value) {
    let blocks: Vec<(String, String)> = markdown::read(text)
        .code_blocks
        .into_iter()
        .map(|b| (b.info, b.body))
        .collect();
    let mut policies: Vec<Value> = blocks
        .iter()
        .filter(|(info, _)| info == "yaml")
        .flat_map(|(_, body)| yaml_docs(at, body))
        .filter(|doc| doc["kind"] == json!("ClusterAdmissionPolicy"))
        .collect();
    assert_eq!(
        policies.len(),
        1,
        "{at}: one ClusterAdmissionPolicy to apply"
    );
    let policy = policies.remove(0);
    let name = policy["metadata"]["name"].as_str().unwrap_or_default();
    let patches: Vec<Value> = blocks
        .iter()
        .filter(|(info, _)| info == "console")
        .flat_map(|(_, body)| commands(body))
        .filter_map(|command| {
            let words: Vec<&str> = command.split_whitespace().collect();
            let at_patch = words.windows(3).position(|w| {
                w[0] == "kubectl" && w[1] == "patch" && w[2] == "clusteradmissionpolicy"
            })?;
            assert_eq!(
                words.get(at_patch + 3).copied(),
                Some(name),
                "{at}: `{command}` patches another policy than {name}"
            );
            assert!(
                command.contains("--type merge"),
                "{at}: `{command}` is not a merge patch"
            );
            let quoted = command.split_once("-p '")?.1.split_once('\'')?.0;
            Some(serde_json::from_str(quoted).unwrap_or_else(|e| panic!("{at}: `{command}`: {e}")))
        })
        .collect();
    assert_eq!(
        patches.len(),
        1,
        "{at}: one `kubectl patch clusteradmissionpolicy {name} --type merge -p '...'`"
    );
    (policy, patches[0].clone())
}

/// The README and Artifact Hub's install text give one route, and a safe
/// one: the ClusterAdmissionPolicy of examples/ (failurePolicy Ignore,
/// matchConditions, selectors), first in monitor mode, then switched to
/// protect, which makes it the example exactly. Not `kwctl scaffold
/// manifest`: kwctl writes none of those fields.
#[test]
fn one_install_route_monitor_then_protect() {
    let example = yaml_file(INSTALLED_EXAMPLE);
    assert_eq!(
        example["spec"]["mode"],
        json!("protect"),
        "{INSTALLED_EXAMPLE}"
    );
    let readme = readme_install_section(&read("README.md"));
    let pkg = yaml_file("artifacthub-pkg.yml");
    let hub = pkg["install"]
        .as_str()
        .expect("artifacthub-pkg.yml has no install text")
        .to_owned();
    for (at, text) in [
        ("README.md, Install", &readme),
        ("artifacthub-pkg.yml, install", &hub),
    ] {
        assert!(
            !text.contains("kwctl scaffold manifest"),
            "{at}: offers kwctl scaffold manifest, whose manifest has no failurePolicy, matchConditions or objectSelector"
        );
        let (mut policy, patch) = install_steps(at, text);
        assert_eq!(
            policy["spec"]["mode"],
            json!("monitor"),
            "{at}: the policy is applied in monitor mode first"
        );
        assert_eq!(
            patch,
            json!({"spec": {"mode": "protect"}}),
            "{at}: then switched to protect, and nothing else"
        );
        merge_patch(&mut policy, &patch);
        assert_eq!(
            policy, example,
            "{at}: the manifest, in protect mode, is not {INSTALLED_EXAMPLE}"
        );
    }
    // Artifact Hub's text is the README's section (`make artifacthub`):
    // the same blocks, YAML compared as parsed.
    let parsed = |at: &str, text: &str| -> Vec<(String, Value)> {
        markdown::read(text)
            .code_blocks
            .into_iter()
            .map(|CodeBlock { info, body, .. }| {
                let value = if info == "yaml" {
                    Value::Array(yaml_docs(at, &body))
                } else {
                    Value::String(body)
                };
                (info, value)
            })
            .collect()
    };
    assert_eq!(
        parsed("artifacthub-pkg.yml, install", &hub),
        parsed("README.md, Install", &readme),
        "artifacthub-pkg.yml's install text is not the README's Install section (make artifacthub)"
    );
}
