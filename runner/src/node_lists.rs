//! Node lists as policy-server hands them to a context-aware policy, at
//! cluster scale: what `tests/cost/` and `policy-runner node-list` (the
//! lists docs/performance.md replays through kwctl) share.
//!
//! Kubewarden's reflector (`modify_object`,
//! `crates/policy-evaluator/src/callback_handler/kubernetes/reflector.rs`,
//! kubewarden-controller v1.35.0; the same clearing since policy-evaluator
//! 0.16) clears each object's `managedFields` and its
//! `kubectl.kubernetes.io/last-applied-configuration` annotation before it
//! caches it, and from 1.33 prunes everything but `metadata` to the field
//! masks the policy asks for; 1.31-1.32 ignore the masks and send the rest
//! of each Node whole.

use serde_json::{json, Value};

/// How a Node reaches the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The whole Node with its managedFields, as a client's read of the
    /// API gives it (a replay recorded from `kubectl get nodes -o json`).
    WithManagedFields,
    /// As policy-server 1.31-1.32 hand it over: whole, without
    /// managedFields and the last-applied annotation.
    Whole,
    /// As policy-server 1.33 and later hand it over: `metadata` (without
    /// managedFields) and the masked `status.nodeInfo.kubeletVersion`.
    Pruned,
}

impl Shape {
    pub const ALL: [Shape; 3] = [Shape::WithManagedFields, Shape::Whole, Shape::Pruned];

    /// The name `policy-runner node-list --shape` takes.
    pub fn name(self) -> &'static str {
        match self {
            Shape::WithManagedFields => "managed-fields",
            Shape::Whole => "whole",
            Shape::Pruned => "pruned",
        }
    }

    /// What the shape is, for a table.
    pub fn describe(self) -> &'static str {
        match self {
            Shape::WithManagedFields => "whole, managedFields included",
            Shape::Whole => "whole, as policy-server 1.31-1.32 send it",
            Shape::Pruned => "metadata whole, the rest masked, as 1.33+ send it",
        }
    }

    pub fn parse(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Node `i` in `shape`, its kubelet at `version`.
pub fn node(i: usize, version: &str, shape: Shape) -> Value {
    match shape {
        Shape::WithManagedFields => whole_node(i, version, true),
        Shape::Whole => whole_node(i, version, false),
        Shape::Pruned => pruned_node(i, version),
    }
}

/// `count` Nodes named `pool-a-00000`... in `shape`, every kubelet at
/// v1.34.2 but the last one's, v1.32.9: the whole list must be read to
/// find it. The JSON of the `v1` List the host answers with.
pub fn list(count: usize, shape: Shape) -> Vec<u8> {
    let items: Vec<Value> = (0..count)
        .map(|i| node(i, if i + 1 == count { OLD } else { NEW }, shape))
        .collect();
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}))
        .unwrap_or_default()
}

/// The kubelet of every Node of `list` but the last.
pub const NEW: &str = "v1.34.2";
/// The last Node's kubelet: older than native sidecars.
pub const OLD: &str = "v1.32.9";

/// The name of Node `i`.
pub fn name(i: usize) -> String {
    format!("pool-a-{i:05}")
}

/// A session `kwctl run --replay-host-capabilities-interactions` reads:
/// the policy's list of the Nodes, answered with `list`.
pub fn replay_session(list: &[u8]) -> String {
    let request = "!KubernetesListResourceAll\napi_version: v1\nkind: Node\nlabel_selector: null\nfield_selector: null\nfield_masks:\n- metadata.name\n- status.nodeInfo.kubeletVersion\n";
    let session = json!([{
        "type": "Exchange",
        "request": request,
        "response": {"type": "Success", "payload": String::from_utf8_lossy(list)},
    }]);
    serde_yaml::to_string(&session).unwrap_or_default()
}

/// One Node as the API server stores it: labels, annotations, taints,
/// conditions, addresses, images; `managed_fields`: with the
/// managedFields a client's read of the API gives (the Kubewarden
/// reflector clears them, and `kubectl.kubernetes.io/last-applied-configuration`,
/// before a policy sees the Node).
fn whole_node(i: usize, version: &str, managed_fields: bool) -> Value {
    let name = name(i);
    let images: Vec<Value> = (0..12)
        .map(|k| {
            json!({"names": [format!("registry.example/team-{k}/image@sha256:{:064x}", k * 7919 + i), format!("registry.example/team-{k}/image:v{k}.{i}")],
                   "sizeBytes": 10_000_000 + k * 1_000})
        })
        .collect();
    let conditions: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "NetworkUnavailable"]
        .iter()
        .map(|t| json!({"type": t, "status": "False", "lastHeartbeatTime": "2026-12-04T20:00:00Z",
                        "lastTransitionTime": "2026-11-01T08:00:00Z", "reason": format!("Kubelet{t}"),
                        "message": format!("kubelet reports {t} is fine")}))
        .collect();
    let mut metadata = json!({
        "name": name,
        "uid": format!("{:08x}-0000-4000-8000-{:012x}", i, i),
        "resourceVersion": format!("{}", 1_000_000 + i),
        "creationTimestamp": "2026-11-01T08:00:00Z",
        "labels": {
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m6i.2xlarge", "topology.kubernetes.io/region": "eu-west-1",
            "topology.kubernetes.io/zone": "eu-west-1a", "cloud.example/nodepool": "pool-a",
            "cloud.example/nodepool-version": "2026.11.1", "node-role.example/worker": ""
        },
        "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-{i:017x}\"}}"),
            "cloud.example/instance-id": format!("i-{i:017x}")
        }
    });
    if managed_fields {
        metadata["managedFields"] = json!([
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-12-04T20:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:node.alpha.kubernetes.io/ttl": {}}, "f:labels": {".": {}, "f:kubernetes.io/hostname": {}}},
                          "f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:status": {}}}, "f:images": {}, "f:nodeInfo": {"f:kubeletVersion": {}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T08:00:10Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, "v:\"10.0.0.0/24\"": {}}}}},
            {"manager": "cloud-controller", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T08:00:20Z", "fieldsType": "FieldsV1", "subresource": "status",
             "fieldsV1": {"f:status": {"f:addresses": {"k:{\"type\":\"InternalIP\"}": {".": {}, "f:address": {}, "f:type": {}}}}}}
        ]);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"], "providerID": format!("aws:///eu-west-1a/i-{i:017x}"),
                 "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "8", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "32386148Ki", "pods": "110"},
            "allocatable": {"cpu": "7910m", "ephemeral-storage": "95551679124", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "31369316Ki", "pods": "110"},
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": format!("{i:032x}"), "systemUUID": format!("ec2{i:029x}"), "bootID": format!("{i:032x}"),
                         "kernelVersion": "6.1.112-124.190.amzn2023.x86_64", "osImage": "Amazon Linux 2023", "containerRuntimeVersion": "containerd://1.7.22",
                         "kubeletVersion": version, "kubeProxyVersion": version, "operatingSystem": "linux", "architecture": "amd64"},
            "images": images
        }
    })
}

/// A Node as policy-server 1.33 and later hand it over: the field masks
/// prune everything but `metadata` (kept whole but managedFields and the
/// last-applied annotation) and the kubelet version.
fn pruned_node(i: usize, version: &str) -> Value {
    let whole = whole_node(i, version, false);
    json!({"apiVersion": "v1", "kind": "Node", "metadata": whole["metadata"],
           "status": {"nodeInfo": {"kubeletVersion": version}}})
}
