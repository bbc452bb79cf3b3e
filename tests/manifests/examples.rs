//! Every `examples/*.yaml` ClusterAdmissionPolicy: what kwctl reads, the
//! rules and module of metadata.yml, settings the policy accepts, the
//! selectors and matchConditions that keep the policy off what it must not
//! see, and an example of every mode.

use std::collections::BTreeSet;

use istio_job_sidecar_policy::settings::{Mode, Settings};
use serde_json::{json, Value};

use crate::common::{
    annotation, example_files, metadata, read, rel_name, yaml_docs, yaml_file, VERSION,
};

/// The fields of a ClusterAdmissionPolicy `spec` that kwctl reads a manifest
/// with (kubewarden-policy-sdk 0.17 `crd::policies::ClusterAdmissionPolicySpec`,
/// `#[serde(deny_unknown_fields)]`): `kwctl run examples/<file>.yaml` refuses
/// a manifest with any other.
const CAP_SPEC_FIELDS: [&str; 17] = [
    "backgroundAudit",
    "contextAwareResources",
    "failurePolicy",
    "matchConditions",
    "matchPolicy",
    "message",
    "mode",
    "module",
    "mutating",
    "namespaceSelector",
    "objectSelector",
    "policyServer",
    "rules",
    "settings",
    "sideEffects",
    "timeoutEvalSeconds",
    "timeoutSeconds",
];

#[test]
fn examples_match_metadata_and_settings() {
    let meta = metadata();
    let module = format!(
        "registry://{}:v{VERSION}",
        annotation(&meta, "io.kubewarden.policy.ociUrl")
    );
    let mut modes_seen = BTreeSet::new();
    let mut namespace_selector_seen = false;
    let mut names_seen = BTreeSet::new();
    let mut node_check_seen = false;

    for path in example_files() {
        let rel = rel_name(&path);
        let docs = yaml_docs(&rel, &read(&rel));
        assert!(!docs.is_empty(), "{rel} is empty");
        for doc in docs {
            let name = doc["metadata"]["name"].as_str().unwrap_or("?");
            let at = format!("{rel} ({name})");
            assert_eq!(
                doc["apiVersion"],
                json!("policies.kubewarden.io/v1"),
                "{at}"
            );
            assert_eq!(doc["kind"], json!("ClusterAdmissionPolicy"), "{at}");
            let spec = &doc["spec"];
            let fields = spec
                .as_object()
                .unwrap_or_else(|| panic!("{at}: spec is not a mapping"));
            for key in fields.keys() {
                assert!(
                    CAP_SPEC_FIELDS.contains(&key.as_str()),
                    "{at}: spec.{key} is not a ClusterAdmissionPolicy field kwctl knows"
                );
            }

            assert_eq!(spec["rules"], meta["rules"], "{at}: rules vs metadata.yml");
            assert_eq!(spec["mutating"], json!(true), "{at}: mutating");
            assert_eq!(
                spec["backgroundAudit"], meta["backgroundAudit"],
                "{at}: backgroundAudit vs metadata.yml"
            );
            assert_eq!(spec["module"], json!(module), "{at}: module");
            assert!(
                matches!(spec["mode"].as_str(), Some("protect" | "monitor")),
                "{at}: spec.mode must be protect or monitor"
            );
            if let Some(fp) = spec.get("failurePolicy") {
                assert!(
                    matches!(fp.as_str(), Some("Ignore" | "Fail")),
                    "{at}: failurePolicy"
                );
            }
            for key in [
                "io.kubewarden.policy.severity",
                "io.kubewarden.policy.category",
            ] {
                assert_eq!(
                    doc["metadata"]["annotations"][key].as_str(),
                    Some(annotation(&meta, key)),
                    "{at}: {key} vs metadata.yml (kwctl scaffold manifest copies it)"
                );
            }

            let settings = spec.get("settings").cloned().unwrap_or(Value::Null);
            let parsed = Settings::from_value(&settings)
                .unwrap_or_else(|e| panic!("{at}: settings rejected: {e}"));
            modes_seen.insert(parsed.mode.as_str());
            // nodeVersionCheck lists the Nodes: the policy must be granted
            // them (kwctl and policy-server refuse a call for a resource the
            // policy's contextAwareResources do not name).
            if parsed.node_version_check {
                node_check_seen = true;
                assert_eq!(
                    spec["contextAwareResources"], meta["contextAwareResources"],
                    "{at}: nodeVersionCheck without the Nodes in contextAwareResources"
                );
            }

            // Engine-side filtering: long-running Pods never reach the
            // policy-server; injection opt-outs are skipped.
            let conditions = spec["matchConditions"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: no matchConditions"));
            assert!(
                conditions.iter().any(|c| {
                    let e = c["expression"].as_str().unwrap_or("");
                    e.contains("restartPolicy") && e.contains("'Always'") && e.contains("pods")
                }),
                "{at}: no matchCondition skipping Pods with restartPolicy Always"
            );
            for c in conditions {
                assert!(
                    c["name"].as_str().is_some_and(|n| !n.is_empty()),
                    "{at}: every matchCondition needs a name"
                );
            }
            assert!(
                spec["objectSelector"]["matchExpressions"]
                    .as_array()
                    .is_some_and(|exprs| exprs.iter().any(|e| e
                        == &json!({"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}))),
                "{at}: no objectSelector skipping sidecar.istio.io/inject=false"
            );
            if let Some(selector) = spec.get("namespaceSelector") {
                namespace_selector_seen = true;
                // Kubewarden's controller installs only the matchExpressions
                // of a ClusterAdmissionPolicy's namespaceSelector: matchLabels
                // would be dropped, and the policy act in every namespace.
                assert!(
                    selector.get("matchLabels").is_none(),
                    "{at}: namespaceSelector.matchLabels is dropped by Kubewarden's controller; write matchExpressions"
                );
                assert!(
                    selector["matchExpressions"]
                        .as_array()
                        .is_some_and(|e| !e.is_empty()),
                    "{at}: a namespaceSelector without matchExpressions selects every namespace"
                );
            }
            // When the API server calls the webhook beside Istio's injector
            // depends on Kubewarden's release, not on this name: webhooks.bats.
            names_seen.insert(name.to_owned());
        }
    }

    let all: BTreeSet<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(modes_seen, all, "every mode needs an example in examples/");
    // The example of nodeVersionCheck, and the RBAC its policy-server needs.
    assert!(
        node_check_seen,
        "examples/ needs a nodeVersionCheck example"
    );
    let rbac = yaml_docs(
        "examples/rbac/policy-server-lists-nodes.yaml",
        &read("examples/rbac/policy-server-lists-nodes.yaml"),
    );
    assert!(
        rbac.iter().any(|doc| doc["kind"] == "ClusterRole"
            && doc["rules"]
                .as_array()
                .is_some_and(|rules| rules.iter().any(|r| {
                    // policy-server's list_resources_all: a LIST, then a
                    // WATCH that keeps its copy (docs/server-tests.md); no
                    // more than that.
                    r["resources"] == json!(["nodes"]) && r["verbs"] == json!(["list", "watch"])
                }))),
        "examples/rbac/: a ClusterRole that lists and watches nodes, and no more"
    );
    assert!(
        rbac.iter().any(|doc| doc["kind"] == "ClusterRoleBinding"),
        "examples/rbac/: the binding to the policy-server's service account"
    );
    assert!(
        namespace_selector_seen,
        "examples/ needs a namespaceSelector example for namespace-by-namespace roll-out"
    );
    // Every example is the policy `istio-job-sidecar` (the title), but the
    // second quitEndpoint policy, for Pods labelled for injection in
    // namespaces without the istio-injection label.
    let title = annotation(&meta, "io.kubewarden.policy.title");
    assert_eq!(
        names_seen,
        BTreeSet::from([title.to_owned(), format!("{title}-labelled-pods")]),
        "policy names in examples/"
    );
    // The companion of quit-endpoint.yaml differs from it only in where it acts.
    let quit = yaml_file("examples/quit-endpoint.yaml");
    let labelled = yaml_file("examples/quit-endpoint-labelled-pods.yaml");
    for key in [
        "module",
        "settings",
        "rules",
        "mode",
        "mutating",
        "failurePolicy",
        "objectSelector",
    ] {
        assert_eq!(
            labelled["spec"][key], quit["spec"][key],
            "examples/quit-endpoint-labelled-pods.yaml: spec.{key} vs examples/quit-endpoint.yaml"
        );
    }
}
