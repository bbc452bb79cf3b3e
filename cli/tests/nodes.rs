//! `scan` reads the Nodes of its input and warns, on stderr, of each whose
//! kubelet must not run Istio's native sidecar on a Job's Pod; the report
//! itself is the same with or without them.

mod common;

use common::run_with_stdin;

fn node(name: &str, version: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}"}},
            "status": {{"nodeInfo": {{"kubeletVersion": "{version}"}}}}}}"#
    )
}

#[test]
fn scan_warns_of_the_kubelets_to_avoid() {
    let list = format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [{}, {}, {}, {}, {}]}}"#,
        node("old-pool-1", "v1.28.15"),
        node("skew-1", "v1.32.4-eks-1"),
        node("race-1", "v1.33.2"),
        node("fixed-1", "v1.33.6"),
        node("restart-1", "v1.35.1+k3s1"),
    );
    let out = run_with_stdin(
        &["scan", "-", "--now", "2025-12-08T16:32:00Z"],
        list.as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (node, says) in [
        ("old-pool-1", "kubelet 1.28: no native sidecars"),
        (
            "skew-1",
            "kubelet 1.32: Istio counts native sidecars from 1.33",
        ),
        ("race-1", "kubelet 1.33.2: startup-probe race"),
        ("restart-1", "kubelet 1.35.1: after a kubelet restart"),
    ] {
        assert!(
            stderr.contains(&format!("warning: node {node}: {says}")),
            "{node}: {stderr}"
        );
    }
    assert!(!stderr.contains("fixed-1"), "{stderr}");
}
