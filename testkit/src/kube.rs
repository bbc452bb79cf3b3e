//! What the API server does to an object around admission, as far as the
//! policy's journeys need it, and the one comparison "up to what
//! Kubernetes drops" every test uses.
//!
//! - `decode`: the defaults the API server writes when it decodes a
//!   request, before any admission webhook sees it (`pkg/apis/core/v1/defaults.go`,
//!   `pkg/apis/batch/v1/defaults.go`): the policy is always called with
//!   them.
//! - `store`: what is stored after the mutating webhooks: members that are
//!   `null` and the empty maps and lists Go's `omitempty` drops are gone,
//!   and a Job gets its generated selector labels
//!   (`pkg/registry/batch/job/strategy.go`, `generateSelector`), which every
//!   Pod of it then carries.
//! - `normalize`: two objects compared as Kubernetes reads them: `null`
//!   members, empty maps and empty lists mean "absent".

use serde_json::{Map, Value};

/// Members whose empty value Go's `omitempty` drops (maps and lists of
/// `ObjectMeta` and `PodSpec` the policy and Istio's injector write).
const DROPPED_WHEN_EMPTY: [&str; 5] = [
    "annotations",
    "labels",
    "initContainers",
    "volumes",
    "imagePullSecrets",
];

/// `object` with the defaults the API server applies on decoding, before
/// admission: only those of the fields the journeys read or show.
pub fn decode(object: &Value) -> Value {
    let mut object = object.clone();
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    match kind.as_str() {
        "Pod" => default_pod_spec(&mut object["spec"], true),
        "Job" => default_job_spec(&mut object["spec"]),
        "CronJob" => {
            let spec = &mut object["spec"];
            default_member(spec, "concurrencyPolicy", "Allow".into());
            default_member(spec, "suspend", false.into());
            default_member(spec, "successfulJobsHistoryLimit", 3.into());
            default_member(spec, "failedJobsHistoryLimit", 1.into());
            default_job_spec(&mut spec["jobTemplate"]["spec"]);
        }
        _ => {}
    }
    object
}

fn default_job_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_member(spec, "parallelism", 1.into());
    default_member(spec, "completions", 1.into());
    default_member(spec, "backoffLimit", 6.into());
    default_member(spec, "completionMode", "NonIndexed".into());
    default_member(spec, "suspend", false.into());
    default_member(spec, "podReplacementPolicy", "TerminatingOrFailed".into());
    // A Job's template has no default restartPolicy (validation requires
    // Never or OnFailure); a bare Pod's defaults to Always.
    default_pod_spec(&mut spec["template"]["spec"], false);
}

fn default_pod_spec(spec: &mut Value, bare_pod: bool) {
    if !spec.is_object() {
        return;
    }
    if bare_pod {
        default_member(spec, "restartPolicy", "Always".into());
    }
    default_member(spec, "dnsPolicy", "ClusterFirst".into());
    default_member(spec, "schedulerName", "default-scheduler".into());
    default_member(spec, "securityContext", Value::Object(Map::new()));
    default_member(spec, "terminationGracePeriodSeconds", 30.into());
    for list in ["initContainers", "containers"] {
        if let Some(items) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in items.iter_mut().filter(|c| c.is_object()) {
                let latest = container["image"]
                    .as_str()
                    .is_some_and(|image| !image.contains(':') || image.ends_with(":latest"));
                let pull = if latest { "Always" } else { "IfNotPresent" };
                default_member(container, "imagePullPolicy", pull.into());
                default_member(
                    container,
                    "terminationMessagePath",
                    "/dev/termination-log".into(),
                );
                default_member(container, "terminationMessagePolicy", "File".into());
            }
        }
    }
}

fn default_member(object: &mut Value, key: &str, value: Value) {
    if let Some(members) = object.as_object_mut() {
        if members.get(key).is_none_or(Value::is_null) {
            members.insert(key.to_owned(), value);
        }
    }
}

/// The object as the API server stores it after the mutating webhooks.
/// `uid` names a new Job's generated selector.
pub fn store(object: &Value, uid: &str) -> Value {
    let mut stored = object.clone();
    drop_empty(&mut stored, &DROPPED_WHEN_EMPTY);
    if stored["kind"] == "Job" && stored["spec"]["selector"].is_null() {
        let name = stored["metadata"]["name"].clone();
        let selector = [
            ("batch.kubernetes.io/controller-uid", Value::from(uid)),
            ("batch.kubernetes.io/job-name", name.clone()),
            ("controller-uid", Value::from(uid)),
            ("job-name", name),
        ];
        if let Some(template) = stored["spec"]["template"].as_object_mut() {
            let labels = template
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .and_then(|m| {
                    m.entry("labels")
                        .or_insert_with(|| Value::Object(Map::new()))
                        .as_object_mut()
                });
            if let Some(labels) = labels {
                for (key, value) in &selector {
                    labels.insert((*key).to_owned(), value.clone());
                }
            }
            stored["spec"]["selector"] =
                serde_json::json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
        }
    }
    stored
}

/// Removes `null` members everywhere, and the members named in `keys`
/// when they are empty maps or lists.
fn drop_empty(value: &mut Value, keys: &[&str]) {
    match value {
        Value::Object(members) => {
            for child in members.values_mut() {
                drop_empty(child, keys);
            }
            members.retain(|key, child| {
                let empty = match child {
                    Value::Null => true,
                    Value::Object(m) => m.is_empty() && keys.contains(&key.as_str()),
                    Value::Array(a) => a.is_empty() && keys.contains(&key.as_str()),
                    _ => false,
                };
                !empty
            });
        }
        Value::Array(items) => items.iter_mut().for_each(|i| drop_empty(i, keys)),
        _ => {}
    }
}

/// `value` as Kubernetes reads it, for comparisons: `null` members, empty
/// maps and empty lists are absent (Go's types read all three as the zero
/// value, and `omitempty` drops them on storage). This is the one place
/// that decides it: null and empty alike, at every level, because no field
/// the policy or Istio writes means something else when empty.
pub fn normalize(value: &Value) -> Value {
    let mut value = value.clone();
    normalize_in_place(&mut value);
    value
}

fn normalize_in_place(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for child in members.values_mut() {
                normalize_in_place(child);
            }
            members.retain(|_, child| !is_empty(child));
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_in_place),
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalize_treats_null_and_empty_as_absent() {
        let a = json!({"metadata": {"annotations": {}, "labels": null}, "spec": {"initContainers": [], "x": [{}]}});
        assert_eq!(normalize(&a), json!({"spec": {"x": [{}]}}));
    }

    #[test]
    fn store_drops_what_omitempty_drops_and_selects_a_jobs_pods() {
        let job = json!({"kind": "Job", "metadata": {"name": "j", "annotations": {}},
            "spec": {"template": {"metadata": {"annotations": {}}, "spec": {"initContainers": [], "containers": [{"name": "a", "args": []}]}}}});
        let stored = store(&job, "u1");
        assert_eq!(stored["metadata"], json!({"name": "j"}));
        let template = &stored["spec"]["template"];
        assert_eq!(template["metadata"]["labels"]["job-name"], "j");
        assert_eq!(template["spec"]["initContainers"], Value::Null);
        // Only the members omitempty drops for the journeys' fields.
        assert_eq!(template["spec"]["containers"][0]["args"], json!([]));
    }

    #[test]
    fn a_bare_pod_defaults_to_run_forever_a_jobs_template_does_not() {
        let pod = decode(
            &json!({"kind": "Pod", "spec": {"containers": [{"name": "a", "image": "x:1"}]}}),
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(
            pod["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        let job = decode(
            &json!({"kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}),
        );
        assert_eq!(
            job["spec"]["template"]["spec"]["restartPolicy"],
            Value::Null
        );
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(
            job["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }
}
