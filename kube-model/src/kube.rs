//! What the API server does to an object around admission, as far as the
//! policy's journeys need it, and the one comparison "up to what
//! Kubernetes drops" every test uses.
//!
//! - `decode`: the defaults the API server writes when it decodes a
//!   request, before any admission webhook sees it, and again on the
//!   object each mutating webhook's patch gives, before the next webhook
//!   (the admission dispatcher calls the defaulter): so the next webhook,
//!   validation and storage see the defaults of what a webhook added
//!   (`pkg/apis/core/v1/defaults.go`, `pkg/apis/batch/v1/defaults.go`).
//! - `validate`: what the API server refuses after the mutating webhooks,
//!   of the rules the journeys rely on and no schema can express
//!   (`pkg/apis/core/validation` `validateInitContainers`,
//!   `validateContainers`; `pkg/apis/batch/validation` `ValidateJobSpec`).
//! - `store`: what is stored after the mutating webhooks: members that are
//!   `null` and the empty maps and lists Go's `omitempty` drops are gone,
//!   and a Job gets its generated selector labels
//!   (`pkg/registry/batch/job/strategy.go`, `generateSelector`), which every
//!   Pod of it then carries.
//! - `normalize`: two objects compared as Kubernetes reads them: `null`
//!   members, empty maps and empty lists mean "absent".

use crate::workload::{pod_template, template_spec_field, Kind};
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

/// `object` with the defaults the API server applies on decoding: only
/// those of the fields the journeys read or show.
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
    // A template's spec is a PodSpec like any other: without a
    // restartPolicy it gets `Always`, which Job validation then refuses.
    default_pod_spec(&mut spec["template"]["spec"], false);
}

/// `SetDefaults_PodSpec` and what it reaches; `pod` for a Pod's own spec
/// (`SetDefaults_Pod`: a container's limits are its requests when it
/// has none).
fn default_pod_spec(spec: &mut Value, pod: bool) {
    if !spec.is_object() {
        return;
    }
    default_member(spec, "restartPolicy", "Always".into());
    default_member(spec, "dnsPolicy", "ClusterFirst".into());
    default_member(spec, "schedulerName", "default-scheduler".into());
    default_member(spec, "securityContext", Value::Object(Map::new()));
    default_member(spec, "terminationGracePeriodSeconds", 30.into());
    for list in ["initContainers", "containers"] {
        if let Some(items) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in items.iter_mut().filter(|c| c.is_object()) {
                default_container(container, pod);
            }
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for volume in volumes.iter_mut() {
            // 0644, `SetDefaults_*VolumeSource`.
            for source in ["secret", "configMap", "projected", "downwardAPI"] {
                if volume[source].is_object() {
                    default_member(&mut volume[source], "defaultMode", 420.into());
                }
            }
        }
    }
}

fn default_container(container: &mut Value, pod: bool) {
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
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if !container[probe].is_object() {
            continue;
        }
        let probe = &mut container[probe];
        default_member(probe, "timeoutSeconds", 1.into());
        default_member(probe, "periodSeconds", 10.into());
        default_member(probe, "successThreshold", 1.into());
        default_member(probe, "failureThreshold", 3.into());
        if probe["httpGet"].is_object() {
            default_member(&mut probe["httpGet"], "path", "/".into());
            default_member(&mut probe["httpGet"], "scheme", "HTTP".into());
        }
    }
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut() {
            default_member(port, "protocol", "TCP".into());
        }
    }
    if let Some(env) = container.get_mut("env").and_then(Value::as_array_mut) {
        for var in env.iter_mut() {
            if var["valueFrom"]["fieldRef"].is_object() {
                default_member(&mut var["valueFrom"]["fieldRef"], "apiVersion", "v1".into());
            }
        }
    }
    if pod && container["resources"]["requests"].is_null() {
        let limits = container["resources"]["limits"].clone();
        if limits.is_object() {
            container["resources"]["requests"] = limits;
        }
    }
}

/// What the API server refuses of `object` after the mutating webhooks;
/// the error says why, as the API server would.
pub fn validate(object: &Value) -> Result<(), String> {
    let handled = crate::workload::kind_of(object);
    let (kind, at) = match handled {
        Some(Kind::Pod) => return validate_pod_spec(&object["spec"], "spec"),
        Some(kind) => (kind.as_str(), template_spec_field(kind)),
        None => return Ok(()),
    };
    let template = pod_template(object);
    match template["spec"]["restartPolicy"].as_str() {
        Some("OnFailure" | "Never") => {}
        other => {
            return Err(format!(
                "{kind} is invalid: {at}.restartPolicy: Unsupported value: {other:?}: supported values: \"OnFailure\", \"Never\""
            ))
        }
    }
    validate_pod_spec(&template["spec"], &at).map_err(|e| format!("{kind} is invalid: {e}"))
}

/// `validateInitContainers` and `validateContainers`, as far as the
/// journeys rely on them: names unique across both lists; a container's
/// `restartPolicy` only on init containers, and there only `Always` (a
/// native sidecar); lifecycle hooks and probes on init containers only
/// when native; a liveness or startup probe's `successThreshold` is 1.
pub fn validate_pod_spec(spec: &Value, at: &str) -> Result<(), String> {
    let containers = spec["containers"].as_array().map_or(&[][..], Vec::as_slice);
    let init = spec["initContainers"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if containers.is_empty() {
        return Err(format!("{at}.containers: Required value"));
    }
    let mut names = Vec::new();
    let lists = [("containers", containers), ("initContainers", init)];
    for (list, items) in lists {
        for (i, c) in items.iter().enumerate() {
            let here = format!("{at}.{list}[{i}]");
            let name = c["name"].as_str().unwrap_or_default();
            if names.contains(&name) {
                return Err(format!("{here}.name: Duplicate value: {name:?}"));
            }
            names.push(name);
            let native = match (list, c["restartPolicy"].as_str()) {
                (_, None) => false,
                ("initContainers", Some("Always")) => true,
                ("initContainers", Some(other)) => {
                    return Err(format!(
                        "{here}.restartPolicy: Unsupported value: {other:?}: supported values: \"Always\""
                    ))
                }
                (_, Some(_)) => {
                    return Err(format!(
                        "{here}.restartPolicy: Forbidden: may not be set for non-init containers"
                    ))
                }
            };
            let fields = [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ];
            if list == "initContainers" && !native {
                if let Some(field) = fields.iter().find(|f| !c[**f].is_null()) {
                    return Err(format!(
                        "{here}.{field}: Forbidden: may not be set for init containers without restartPolicy=Always"
                    ));
                }
            }
            for probe in ["livenessProbe", "startupProbe"] {
                let threshold = &c[probe]["successThreshold"];
                if !threshold.is_null() && threshold != 1 {
                    return Err(format!(
                        "{here}.{probe}.successThreshold: Invalid value: {threshold}: must be 1"
                    ));
                }
            }
        }
    }
    Ok(())
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

    /// Every PodSpec defaults to `Always`, a Job's template included,
    /// which Job validation then refuses.
    #[test]
    fn a_template_without_restart_policy_is_refused() {
        let pod = decode(
            &json!({"kind": "Pod", "spec": {"containers": [{"name": "a", "image": "x:1"}]}}),
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(
            pod["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(validate(&pod), Ok(()));
        let job = decode(
            &json!({"kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}),
        );
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(
            job["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
        let refused = validate(&job).unwrap_err();
        assert!(
            refused.contains("Unsupported value: Some(\"Always\")"),
            "{refused}"
        );
    }

    /// What a webhook adds is defaulted before the next one sees it.
    #[test]
    fn added_probes_and_env_get_their_defaults() {
        let pod = json!({"kind": "Pod", "spec": {"restartPolicy": "Never", "containers": [{
            "name": "a", "image": "x:1",
            "startupProbe": {"httpGet": {"port": 15021}},
            "ports": [{"containerPort": 80}],
            "env": [{"name": "I", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "1"}}
        }], "volumes": [{"name": "v", "configMap": {"name": "c"}}]}});
        let decoded = decode(&pod);
        let c = &decoded["spec"]["containers"][0];
        assert_eq!(
            c["startupProbe"],
            json!({"httpGet": {"port": 15021, "path": "/", "scheme": "HTTP"},
                   "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(c["resources"]["requests"], json!({"cpu": "1"}));
        assert_eq!(
            decoded["spec"]["volumes"][0]["configMap"]["defaultMode"],
            420
        );
        // Defaulting twice changes nothing more.
        assert_eq!(decode(&decoded), decoded);
    }

    #[test]
    fn pod_rules_the_schemas_cannot_express() {
        let spec = |init: Value, containers: Value| json!({"initContainers": init, "containers": containers});
        let app = json!({"name": "app"});
        let cases = [
            (spec(json!([]), json!([app.clone()])), None),
            (
                spec(json!([]), json!([])),
                Some("containers: Required value"),
            ),
            (
                spec(json!([{"name": "app"}]), json!([app.clone()])),
                Some("initContainers[0].name: Duplicate value: \"app\""),
            ),
            (
                spec(
                    json!([{"name": "p", "restartPolicy": "Always", "startupProbe": {}, "lifecycle": {}}]),
                    json!([app.clone()]),
                ),
                None,
            ),
            (
                spec(
                    json!([{"name": "p", "readinessProbe": {}}]),
                    json!([app.clone()]),
                ),
                Some("initContainers[0].readinessProbe: Forbidden"),
            ),
            (
                spec(
                    json!([{"name": "p", "restartPolicy": "Never"}]),
                    json!([app.clone()]),
                ),
                Some("initContainers[0].restartPolicy: Unsupported value"),
            ),
            (
                spec(
                    json!([]),
                    json!([{"name": "app", "restartPolicy": "Always"}]),
                ),
                Some("containers[0].restartPolicy: Forbidden"),
            ),
            (
                spec(
                    json!([]),
                    json!([{"name": "app", "startupProbe": {"successThreshold": 2}}]),
                ),
                Some("startupProbe.successThreshold: Invalid value: 2"),
            ),
        ];
        for (spec, refused) in cases {
            match (validate_pod_spec(&spec, "spec"), refused) {
                (Ok(()), None) => {}
                (Err(e), Some(why)) => assert!(e.contains(why), "{e} lacks {why}"),
                (got, want) => panic!("{spec}: {got:?}, expected {want:?}"),
            }
        }
    }
}
