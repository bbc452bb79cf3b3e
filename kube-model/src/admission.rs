//! The AdmissionRequest the API server sends to a webhook
//! (`admission/v1`), and the `validate` payload policy-server makes of it.

use serde_json::{json, Map, Value};

/// The members of an AdmissionRequest in the API server's order (the
/// fields of `admission/v1.AdmissionRequest`, as Go writes them).
const API_SERVER_ORDER: [&str; 15] = [
    "uid",
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "object",
    "oldObject",
    "dryRun",
    "options",
];

/// The uid of every request made here: one value, so outputs are stable.
pub const REQUEST_UID: &str = "705ab4f5-6393-11e8-b7cc-42010a800002";

/// The AdmissionRequest the API server sends for `operation` on `object`
/// in `namespace`, its members in the API server's order:
///
/// - `kind`/`resource` from the object's `apiVersion` and `kind` (the
///   resource is the kind's plural, as for every kind the policy sees);
/// - `userInfo`: the controller that makes an owned Job or Pod (its
///   service account), else the cluster's admin;
/// - `object` and `oldObject` as the operation carries them: a DELETE has
///   no `object` (null) and the stored object as `oldObject`; a CONNECT
///   neither;
/// - `options` of the operation's own kind (`CreateOptions`,
///   `UpdateOptions`, `DeleteOptions`; none for CONNECT).
pub fn request(operation: &str, object: &Value, old: Option<&Value>, namespace: &str) -> Value {
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = group_version(object);
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": plural(kind)});
    let controller = match (kind, controller_kind(object)) {
        ("Pod", Some("Job")) => Some("job-controller"),
        ("Pod", Some("ReplicaSet")) => Some("replicaset-controller"),
        ("Pod", Some("StatefulSet")) => Some("statefulset-controller"),
        ("Pod", Some("DaemonSet")) => Some("daemon-set-controller"),
        ("Job", Some("CronJob")) => Some("cronjob-controller"),
        _ => None,
    };
    // A controller's service account in kube-system, or the admin kubeadm
    // writes into the admin kubeconfig (group system:masters).
    let user_info = match controller {
        Some(name) => json!({
            "username": format!("system:serviceaccount:kube-system:{name}"),
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
        }),
        None => json!({
            "username": "kubernetes-admin",
            "groups": ["system:masters", "system:authenticated"],
        }),
    };
    let (object, old, options) = match operation {
        "CREATE" => (Some(object), old, Some("CreateOptions")),
        "UPDATE" => (Some(object), old, Some("UpdateOptions")),
        "DELETE" => (None, Some(old.unwrap_or(object)), Some("DeleteOptions")),
        _ => (None, None, None),
    };
    let name = object
        .or(old)
        .and_then(|o| o["metadata"]["name"].as_str())
        .unwrap_or_default();
    let mut request = Map::new();
    request.insert("uid".into(), REQUEST_UID.into());
    request.insert("kind".into(), gvk.clone());
    request.insert("resource".into(), gvr.clone());
    request.insert("requestKind".into(), gvk);
    request.insert("requestResource".into(), gvr);
    request.insert("name".into(), name.into());
    request.insert("namespace".into(), namespace.into());
    request.insert("operation".into(), operation.into());
    request.insert("userInfo".into(), user_info);
    request.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    if let Some(old) = old {
        request.insert("oldObject".into(), old.clone());
    }
    request.insert("dryRun".into(), json!(false));
    if let Some(options) = options {
        request.insert(
            "options".into(),
            json!({"kind": options, "apiVersion": "meta.k8s.io/v1"}),
        );
    }
    Value::Object(request)
}

/// The kind of the object's controller (its owner reference marked
/// `controller`, else its only one): who creates it.
fn controller_kind(object: &Value) -> Option<&str> {
    let owners = object["metadata"]["ownerReferences"].as_array()?;
    let owner = owners
        .iter()
        .find(|o| o["controller"] == true)
        .or(owners.first().filter(|_| owners.len() == 1))?;
    owner["kind"].as_str()
}

/// The AdmissionReview (`admission.k8s.io/v1`) that carries `request`.
pub fn review(request: &Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// The API group and version of `object`'s `apiVersion` (`v1`: the core
/// group, written `""`).
fn group_version(object: &Value) -> (&str, &str) {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1");
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The resource the API server serves a kind as, by the rule its REST
/// mapping guesses one with (k8s.io/apimachinery `pkg/api/meta/restmapper.go`,
/// `UnsafeGuessKindToResource`), which every built-in kind's storage name
/// follows: lower case; a kind ending in `endpoints` unchanged
/// (`unpluralizedSuffixes`); after a final `s`, `es`; a final `y` made
/// `ies`; else `s` (`Ingress`: `ingresses`, `NetworkPolicy`:
/// `networkpolicies`, `Endpoints`: `endpoints`).
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.is_empty() || lower.ends_with("endpoints") {
        return lower;
    }
    if lower.ends_with('s') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

/// The order of a request's members in a payload. The policy reads the
/// payload in one pass and may skip the object of a request whose kind and
/// operation it has already seen, so each order takes another path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// As policy-server and kwctl write it: policy-evaluator turns the
    /// request into a `serde_json::Value` (`json!`), whose maps are sorted
    /// (no `preserve_order` in their build), so every object's members come
    /// in alphabetical order: `kind`, then `object`, then `operation`
    /// (docs/facts.md, "policy-server and kwctl").
    PolicyServer,
    /// The API server's own order: `kind` and `operation` before `object`,
    /// so the policy may decide before it reads the object.
    ApiServer,
    /// `object` first: the policy reads the object before it knows what it is.
    ObjectFirst,
}

impl Order {
    pub const ALL: [Order; 3] = [Order::PolicyServer, Order::ApiServer, Order::ObjectFirst];
}

/// The `validate` payload `{"request": ..., "settings": ...}` with the
/// request's members in `order` (members the API server does not write come
/// after the ones it does). `settings` `None` leaves the key out.
pub fn payload(request: &Value, settings: Option<&Value>, order: Order) -> Vec<u8> {
    let mut out = br#"{"request":"#.to_vec();
    match (order, request.as_object()) {
        (Order::PolicyServer, _) | (_, None) => write_sorted(&mut out, request),
        (_, Some(members)) => write_ordered(&mut out, members, order),
    }
    if let Some(settings) = settings {
        out.extend_from_slice(br#","settings":"#);
        write_sorted(&mut out, settings);
    }
    out.push(b'}');
    out
}

/// `value` with the members of every object in alphabetical order, as a
/// `serde_json::Value` without `preserve_order` writes it (written by hand,
/// so a feature some other crate turns on cannot change it).
fn write_sorted(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(members) => {
            let mut keys: Vec<&String> = members.keys().collect();
            keys.sort();
            write_members(out, members, keys);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_sorted(out, item);
            }
            out.push(b']');
        }
        leaf => out.extend(to_vec(leaf)),
    }
}

fn write_ordered(out: &mut Vec<u8>, members: &Map<String, Value>, order: Order) {
    let rank = |key: &str| match (order, key) {
        (Order::ObjectFirst, "object") => 0,
        _ => API_SERVER_ORDER
            .iter()
            .position(|k| *k == key)
            .map_or(API_SERVER_ORDER.len() + 1, |i| i + 1),
    };
    let mut keys: Vec<&String> = members.keys().collect();
    keys.sort_by_key(|k| rank(k));
    write_members(out, members, keys);
}

/// An object with its members in the order of `keys`, their values sorted.
fn write_members(out: &mut Vec<u8>, members: &Map<String, Value>, keys: Vec<&String>) {
    out.push(b'{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(to_vec(&Value::String(key.clone())));
        out.push(b':');
        write_sorted(out, &members[key.as_str()]);
    }
    out.push(b'}');
}

fn to_vec(value: &Value) -> Vec<u8> {
    // A Value always serializes.
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload_request() -> Value {
        json!({"object": {"a": 1}, "userInfo": {}, "operation": "CREATE", "kind": {"kind": "Job"}, "uid": "u", "x": 1})
    }

    #[test]
    fn policy_server_order_is_alphabetical_at_every_level() {
        let text = String::from_utf8(payload(
            &payload_request(),
            Some(&json!({"z": 1, "a": 2})),
            Order::PolicyServer,
        ))
        .unwrap();
        assert_eq!(
            text,
            r#"{"request":{"kind":{"kind":"Job"},"object":{"a":1},"operation":"CREATE","uid":"u","userInfo":{},"x":1},"settings":{"a":2,"z":1}}"#
        );
    }

    #[test]
    fn api_server_order_puts_kind_and_operation_before_the_object() {
        let text = String::from_utf8(payload(
            &payload_request(),
            Some(&json!({})),
            Order::ApiServer,
        ))
        .unwrap();
        assert_eq!(
            text,
            r#"{"request":{"uid":"u","kind":{"kind":"Job"},"operation":"CREATE","userInfo":{},"object":{"a":1},"x":1},"settings":{}}"#
        );
    }

    #[test]
    fn object_first_puts_the_object_first() {
        let text =
            String::from_utf8(payload(&payload_request(), None, Order::ObjectFirst)).unwrap();
        assert_eq!(
            text,
            r#"{"request":{"object":{"a":1},"uid":"u","kind":{"kind":"Job"},"operation":"CREATE","userInfo":{},"x":1}}"#
        );
    }

    fn job() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}})
    }

    #[test]
    fn options_are_the_operations_own() {
        let job = job();
        let create = request("CREATE", &job, None, "batch");
        assert_eq!(create["options"]["kind"], "CreateOptions");
        assert!(create.get("oldObject").is_none());
        let update = request("UPDATE", &job, Some(&job), "batch");
        assert_eq!(update["options"]["kind"], "UpdateOptions");
        assert_eq!(update["oldObject"], job);
        let delete = request("DELETE", &job, None, "batch");
        assert_eq!(delete["options"]["kind"], "DeleteOptions");
        assert_eq!(delete["object"], Value::Null);
        assert_eq!(
            (&delete["oldObject"], &delete["name"]),
            (&job, &json!("pi"))
        );
        let connect = request("CONNECT", &job, None, "batch");
        assert!(connect.get("options").is_none() && connect.get("oldObject").is_none());
    }

    #[test]
    fn kind_and_resource_come_from_the_object() {
        let job = request("CREATE", &job(), None, "batch");
        assert_eq!(
            (&job["kind"], &job["resource"]),
            (
                &json!({"group": "batch", "version": "v1", "kind": "Job"}),
                &json!({"group": "batch", "version": "v1", "resource": "jobs"})
            )
        );
        let pod = request(
            "CREATE",
            &json!({"apiVersion": "v1", "kind": "Pod"}),
            None,
            "",
        );
        assert_eq!(
            pod["resource"],
            json!({"group": "", "version": "v1", "resource": "pods"})
        );
        let ingress = request("CREATE", &json!({"kind": "Ingress"}), None, "");
        assert_eq!(ingress["resource"]["resource"], "ingresses");
    }

    /// The resources the API server serves the built-in kinds as
    /// (`kubectl api-resources`).
    #[test]
    fn resources_as_the_api_server_names_them() {
        for (kind, resource) in [
            ("Pod", "pods"),
            ("CronJob", "cronjobs"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("PriorityClass", "priorityclasses"),
            ("Endpoints", "endpoints"),
            ("StorageClass", "storageclasses"),
            ("IngressClass", "ingressclasses"),
            ("ResourceQuota", "resourcequotas"),
            ("", ""),
        ] {
            assert_eq!(plural(kind), resource, "{kind}");
        }
    }

    #[test]
    fn owned_objects_come_from_their_controller() {
        let owned = |kind: &str, owner: &str| {
            json!({"apiVersion": "v1", "kind": kind, "metadata": {"ownerReferences": [
                {"kind": owner, "name": "o", "controller": true}]}})
        };
        let username = |o: &Value| request("CREATE", o, None, "")["userInfo"]["username"].clone();
        let controller = |name: &str| format!("system:serviceaccount:kube-system:{name}");
        assert_eq!(username(&owned("Pod", "Job")), controller("job-controller"));
        assert_eq!(
            username(&owned("Pod", "ReplicaSet")),
            controller("replicaset-controller")
        );
        assert_eq!(
            username(&owned("Job", "CronJob")),
            controller("cronjob-controller")
        );
        assert_eq!(
            username(&json!({"kind": "Pod", "metadata": {}})),
            "kubernetes-admin"
        );
    }
}
