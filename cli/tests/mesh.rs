//! `scan` says, from what it reads, which way out applies
//! (docs/alternatives.md): Istio's own native default (istiod's Deployment
//! against the Nodes' kubelets) and a MutatingAdmissionPolicy that already
//! asks for native sidecars; the report itself is the same with or without
//! them.

mod common;

use common::run_with_stdin;

fn node(name: &str, version: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}"}},
            "status": {{"nodeInfo": {{"kubeletVersion": "{version}"}}}}}}"#
    )
}

fn istiod(tag: &str, flag: Option<&str>) -> String {
    let env = flag.map_or(String::new(), |f| {
        format!(r#"{{"name": "ENABLE_NATIVE_SIDECARS", "value": "{f}"}}"#)
    });
    format!(
        r#"{{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {{"name": "istiod", "namespace": "istio-system"}},
            "spec": {{"template": {{"spec": {{"containers": [{{"name": "discovery", "image": "docker.io/istio/pilot:{tag}", "env": [{env}]}}]}}}}}}}}"#
    )
}

fn scan(items: &[String]) -> String {
    let list = format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [{}]}}"#,
        items.join(",")
    );
    let out = run_with_stdin(
        &["scan", "-", "--now", "2026-12-04T16:32:00Z"],
        list.as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

#[test]
fn istio_alone_is_enough_with_auto_and_every_kubelet_1_33() {
    let said = scan(&[
        istiod("1.31.1", None),
        node("a", "v1.33.6"),
        node("b", "v1.36.1"),
    ]);
    assert!(
        said.contains("note: mesh: istiod (1.31), ENABLE_NATIVE_SIDECARS auto: native, every kubelet is 1.33+: Istio alone is enough"),
        "{said}"
    );
}

#[test]
fn an_old_kubelet_holds_istio_back() {
    let said = scan(&[
        istiod("1.31.1", None),
        node("a", "v1.36.1"),
        node("old", "v1.32.4"),
    ]);
    assert!(
        said.contains("ENABLE_NATIVE_SIDECARS auto: classic: a kubelet is older than 1.33 (oldest 1.32): Istio alone is not enough"),
        "{said}"
    );
}

#[test]
fn a_mesh_that_turns_it_off() {
    let said = scan(&[istiod("1.30.3", Some("false")), node("a", "v1.36.1")]);
    assert!(
        said.contains("ENABLE_NATIVE_SIDECARS false: classic: Istio alone is not enough"),
        "{said}"
    );
}

#[test]
fn a_mutating_admission_policy_that_asks_for_native() {
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/mutating-admission-policy/native-sidecar-jobs.yaml"),
    )
    .unwrap();
    let policies: Vec<String> = example
        .split("\n---\n")
        .map(|doc| {
            let value: serde_json::Value = serde_yaml::from_str(doc).unwrap();
            value.to_string()
        })
        .collect();
    let said = scan(&policies);
    assert!(
        said.contains("note: MutatingAdmissionPolicy istio-native-sidecar-jobs, istio-native-sidecar-cronjobs writes sidecar.istio.io/nativeSidecar"),
        "{said}"
    );
    let other = r#"{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "labels"}, "spec": {"mutations": []}}"#;
    let said = scan(&[other.to_owned()]);
    assert!(
        said.contains("note: 1 MutatingAdmissionPolicies, none writes"),
        "{said}"
    );
}

#[test]
fn nothing_read_nothing_said() {
    let said = scan(&[node("a", "v1.36.1")]);
    assert!(!said.contains("note: mesh"), "{said}");
    assert!(!said.contains("MutatingAdmissionPolic"), "{said}");
}
