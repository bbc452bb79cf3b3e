//! `nodeVersionCheck` through `policy.wasm`, its Node list answered by the
//! runner's host as Kubewarden's answers a context-aware policy's
//! `list_resources_all`; and natively, by the host the policy crate takes
//! on this thread. Both must answer alike.

mod common;

use policy_runner::native::NativePolicy;
use policy_runner::ModuleAnswer;
use serde_json::{json, Value};

fn node_list(nodes: &[(&str, &str)]) -> Vec<u8> {
    istio_job_sidecar_policy::native_gate::node_list(nodes)
}

fn job(node_name: Option<&str>) -> Value {
    let mut spec = json!({"restartPolicy": "Never", "containers": [
        {"name": "report", "image": "registry.example/report:1", "command": ["/bin/report"]}
    ]});
    if let Some(node) = node_name {
        spec["nodeName"] = json!(node);
    }
    json!({
        "uid": "u1", "operation": "CREATE", "namespace": "default",
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
        "object": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "report", "namespace": "default"},
                   "spec": {"template": {"metadata": {}, "spec": spec}}}
    })
}

const SETTINGS: &str =
    r#"{"mode": "nativeSidecar", "nodeVersionCheck": true, "fallbackMode": "quitEndpoint"}"#;

/// What the answer did to the pod template: the native annotation asked
/// for, or the app's command wrapped; and the warnings.
fn outcome(answer: &ModuleAnswer) -> (bool, bool, Vec<String>) {
    let object = answer.patched_object().unwrap_or_default();
    let template = &object["spec"]["template"];
    let native = template["metadata"]["annotations"]["sidecar.istio.io/nativeSidecar"] == "true";
    let wrapped = template["spec"]["containers"][0]["command"][0] == "/bin/sh";
    (native, wrapped, answer.warnings().to_vec())
}

fn both(nodes: Option<Vec<u8>>, request: &Value) -> (bool, bool, Vec<String>) {
    let settings: Value = serde_json::from_str(SETTINGS).unwrap();
    let module = common::built_module();
    module.set_nodes(nodes.clone());
    let in_engine = outcome(&module.validate(request, &settings).expect("validate"));
    NativePolicy.set_nodes(nodes);
    let natively = outcome(&NativePolicy.validate(request, &settings).expect("validate"));
    NativePolicy.set_nodes(None);
    assert_eq!(
        in_engine, natively,
        "policy.wasm and the policy linked natively"
    );
    in_engine
}

#[test]
fn every_kubelet_1_33_or_later_keeps_native() {
    let nodes = node_list(&[("a", "v1.33.6"), ("b", "v1.34.2-eks-1")]);
    let (native, wrapped, warnings) = both(Some(nodes), &job(None));
    assert!(native && !wrapped, "{warnings:?}");
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn one_older_kubelet_takes_the_fallback_and_names_it() {
    let nodes = node_list(&[("a", "v1.33.6"), ("old-pool-1", "v1.32.9")]);
    let (native, wrapped, warnings) = both(Some(nodes), &job(None));
    assert!(!native && wrapped, "{warnings:?}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("node old-pool-1 runs kubelet v1.32.9"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("used quitEndpoint"), "{warnings:?}");
}

#[test]
fn the_pods_own_node_alone_decides_when_named() {
    let nodes = node_list(&[("new", "v1.35.4"), ("old", "v1.31.2")]);
    let (native, _, warnings) = both(Some(nodes.clone()), &job(Some("new")));
    assert!(native, "{warnings:?}");
    let (native, wrapped, _) = both(Some(nodes.clone()), &job(Some("old")));
    assert!(!native && wrapped);
    // A node name there is no such Node of: every Node, as Istio.
    let (native, wrapped, _) = both(Some(nodes), &job(Some("gone")));
    assert!(!native && wrapped);
}

#[test]
fn no_cluster_context_takes_the_fallback() {
    let (native, wrapped, warnings) = both(None, &job(None));
    assert!(!native && wrapped, "{warnings:?}");
    assert!(warnings[0].contains("could not be listed"), "{warnings:?}");
}

#[test]
fn a_node_list_not_of_nodes_is_no_proof() {
    let (native, wrapped, warnings) = both(Some(b"[1, 2".to_vec()), &job(None));
    assert!(!native && wrapped, "{warnings:?}");
    assert!(warnings[0].contains("could not be read"), "{warnings:?}");
}
