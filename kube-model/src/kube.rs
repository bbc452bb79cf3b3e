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
//!   `null`, and the empty maps and lists of the members Go's `omitempty`
//!   drops (`EMPTY_IS_ABSENT`), are gone, and a Job gets its generated
//!   selector labels (`pkg/registry/batch/job/strategy.go`,
//!   `generateSelector`), which every Pod of it then carries.
//! - `normalize`: two objects compared as Kubernetes reads them: `null`
//!   members are absent, and so are the empty values of `EMPTY_IS_ABSENT`,
//!   and nothing else: an empty object elsewhere is a value (a volume's
//!   `emptyDir: {}` is its source; a pointer to an empty struct is no nil
//!   pointer).

use crate::workload::{pod_template, template_spec_field, Kind};
use serde_json::{Map, Value};

/// How the API server reads an empty value of a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Empty {
    /// A map or a slice with `omitempty`: empty or absent, it is not
    /// written (`encoding/json`), so it is not stored.
    Omitted,
    /// A struct held by value (no pointer): absent reads as its zero
    /// value, which `encoding/json` writes `{}` whatever `omitempty` says.
    ZeroStruct,
}

/// The members whose empty value Kubernetes reads as absent, by their
/// JSON name, from the API types of the objects the policy and Istio's
/// injector write (k8s.io/api v0.36.3, Kubernetes 1.36: `core/v1/types.go`,
/// `batch/v1/types.go`; k8s.io/apimachinery `meta/v1/types.go` for
/// `ObjectMeta`). A member not listed keeps its empty value: `emptyDir`,
/// `securityContext`, `lifecycle`, the probes and every other pointer to
/// a struct mean something when `{}`.
const EMPTY_IS_ABSENT: [(&str, Empty); 39] = [
    // ObjectMeta: maps and slices.
    ("annotations", Empty::Omitted),
    ("labels", Empty::Omitted),
    ("ownerReferences", Empty::Omitted),
    ("finalizers", Empty::Omitted),
    ("managedFields", Empty::Omitted),
    // PodSpec: slices and maps.
    ("volumes", Empty::Omitted),
    ("initContainers", Empty::Omitted),
    ("ephemeralContainers", Empty::Omitted),
    ("imagePullSecrets", Empty::Omitted),
    ("nodeSelector", Empty::Omitted),
    ("tolerations", Empty::Omitted),
    ("hostAliases", Empty::Omitted),
    ("readinessGates", Empty::Omitted),
    ("topologySpreadConstraints", Empty::Omitted),
    ("resourceClaims", Empty::Omitted),
    ("schedulingGates", Empty::Omitted),
    ("overhead", Empty::Omitted),
    // Container (and ExecAction's `command`): slices.
    ("command", Empty::Omitted),
    ("args", Empty::Omitted),
    ("ports", Empty::Omitted),
    ("envFrom", Empty::Omitted),
    ("env", Empty::Omitted),
    ("volumeMounts", Empty::Omitted),
    ("volumeDevices", Empty::Omitted),
    ("resizePolicy", Empty::Omitted),
    ("restartPolicyRules", Empty::Omitted),
    // ResourceRequirements: `ResourceList` maps and a slice.
    ("limits", Empty::Omitted),
    ("requests", Empty::Omitted),
    ("claims", Empty::Omitted),
    // Capabilities, HTTPGetAction, the volume sources' `items`.
    ("add", Empty::Omitted),
    ("drop", Empty::Omitted),
    ("httpHeaders", Empty::Omitted),
    ("items", Empty::Omitted),
    // Structs held by value: every object's `metadata`, `spec` and
    // `status`; `JobSpec.template`, `CronJobSpec.jobTemplate`;
    // `Container.resources`.
    ("metadata", Empty::ZeroStruct),
    ("spec", Empty::ZeroStruct),
    ("status", Empty::ZeroStruct),
    ("template", Empty::ZeroStruct),
    ("jobTemplate", Empty::ZeroStruct),
    ("resources", Empty::ZeroStruct),
];

fn empty_is_absent(key: &str, reading: Empty) -> bool {
    EMPTY_IS_ABSENT.contains(&(key, reading))
}

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
            // `SetDefaults_Volume`: a volume that names no source is an
            // `emptyDir` (every member but `name` is a source).
            if let Some(members) = volume.as_object_mut() {
                if members.iter().all(|(k, v)| k == "name" || v.is_null()) {
                    members.insert("emptyDir".into(), Value::Object(Map::new()));
                }
            }
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
/// journeys rely on them, in their order (the regular containers first),
/// the first error only (the API server gives them all): an image on every
/// container; names unique across both lists; a container's
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
            // `validateContainerCommon`, before the list's check of names:
            // every container, init or not, names an image (a partial
            // container a webhook left has none).
            if c["image"].as_str().is_none_or(str::is_empty) {
                return Err(format!("{here}.image: Required value"));
            }
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
    drop_empty(&mut stored, &[Empty::Omitted]);
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

/// Removes `null` members everywhere, and the empty maps and lists of the
/// members `EMPTY_IS_ABSENT` reads as absent the ways in `readings`.
fn drop_empty(value: &mut Value, readings: &[Empty]) {
    match value {
        Value::Object(members) => {
            for child in members.values_mut() {
                drop_empty(child, readings);
            }
            members.retain(|key, child| {
                let empty = match child {
                    Value::Null => true,
                    Value::Object(m) => m.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    _ => false,
                };
                let absent = matches!(child, Value::Null)
                    || (empty && readings.iter().any(|r| empty_is_absent(key, *r)));
                !absent
            });
        }
        Value::Array(items) => items.iter_mut().for_each(|i| drop_empty(i, readings)),
        _ => {}
    }
}

/// `value` as Kubernetes reads it, for comparisons: `null` members are
/// absent, and so are the empty values of the members `EMPTY_IS_ABSENT`
/// names (maps and slices `omitempty` drops, structs held by value),
/// at every level, innermost first; any other empty value stays, as the
/// API server keeps it. This is the one place that decides it.
pub fn normalize(value: &Value) -> Value {
    let mut value = value.clone();
    drop_empty(&mut value, &[Empty::Omitted, Empty::ZeroStruct]);
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalize_drops_only_what_kubernetes_reads_as_absent() {
        let a = json!({"metadata": {"annotations": {}, "labels": null}, "spec": {"initContainers": [], "x": [{}]}});
        assert_eq!(normalize(&a), json!({"spec": {"x": [{}]}}));
        // A struct held by value, empty once its empty members are gone.
        let b = json!({"metadata": {"annotations": {}}, "spec": {"containers": [{"name": "a", "resources": {"limits": {}}}]}});
        assert_eq!(
            normalize(&b),
            json!({"spec": {"containers": [{"name": "a"}]}})
        );
        // A volume's source, a pointer to an empty struct: a value.
        let volumes = json!({"volumes": [{"name": "d", "emptyDir": {}}], "securityContext": {}});
        assert_eq!(normalize(&volumes), volumes);
        assert_ne!(
            normalize(&json!({"volumes": [{"name": "d", "emptyDir": {}}]})),
            normalize(&json!({"volumes": [{"name": "d"}]}))
        );
    }

    /// `SetDefaults_Volume`: a volume without a source is an `emptyDir`.
    #[test]
    fn a_volume_without_a_source_is_an_empty_dir() {
        let pod = json!({"kind": "Pod", "spec": {"containers": [{"name": "a"}],
            "volumes": [{"name": "d"}, {"name": "m", "emptyDir": {"medium": "Memory"}}, {"name": "c", "configMap": {"name": "x"}}]}});
        let decoded = decode(&pod);
        let volumes = &decoded["spec"]["volumes"];
        assert_eq!(volumes[0], json!({"name": "d", "emptyDir": {}}));
        assert_eq!(
            volumes[1],
            json!({"name": "m", "emptyDir": {"medium": "Memory"}})
        );
        assert_eq!(volumes[2]["configMap"]["defaultMode"], 420);
    }

    #[test]
    fn store_drops_what_omitempty_drops_and_selects_a_jobs_pods() {
        let job = json!({"kind": "Job", "metadata": {"name": "j", "annotations": {}},
            "spec": {"template": {"metadata": {"annotations": {}}, "spec": {"initContainers": [], "containers": [{"name": "a", "args": [], "securityContext": {}}]}}}});
        let stored = store(&job, "u1");
        assert_eq!(stored["metadata"], json!({"name": "j"}));
        let template = &stored["spec"]["template"];
        assert_eq!(template["metadata"]["labels"]["job-name"], "j");
        assert_eq!(template["spec"]["initContainers"], Value::Null);
        // Every member omitempty drops, and no other.
        assert_eq!(template["spec"]["containers"][0]["args"], Value::Null);
        assert_eq!(
            template["spec"]["containers"][0]["securityContext"],
            json!({})
        );
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
        let app = json!({"name": "app", "image": "app:1"});
        let cases = [
            (spec(json!([]), json!([app.clone()])), None),
            (
                spec(json!([]), json!([])),
                Some("containers: Required value"),
            ),
            (
                spec(
                    json!([{"name": "app", "image": "app:1"}]),
                    json!([app.clone()]),
                ),
                Some("initContainers[0].name: Duplicate value: \"app\""),
            ),
            (
                spec(
                    json!([{"name": "p", "image": "p:1", "restartPolicy": "Always", "startupProbe": {}, "lifecycle": {}}]),
                    json!([app.clone()]),
                ),
                None,
            ),
            (
                spec(
                    json!([{"name": "p", "image": "p:1", "readinessProbe": {}}]),
                    json!([app.clone()]),
                ),
                Some("initContainers[0].readinessProbe: Forbidden"),
            ),
            (
                spec(
                    json!([{"name": "p", "image": "p:1", "restartPolicy": "Never"}]),
                    json!([app.clone()]),
                ),
                Some("initContainers[0].restartPolicy: Unsupported value"),
            ),
            (
                spec(
                    json!([]),
                    json!([{"name": "app", "image": "app:1", "restartPolicy": "Always"}]),
                ),
                Some("containers[0].restartPolicy: Forbidden"),
            ),
            (
                spec(
                    json!([]),
                    json!([{"name": "app", "image": "app:1", "startupProbe": {"successThreshold": 2}}]),
                ),
                Some("startupProbe.successThreshold: Invalid value: 2"),
            ),
            // A partial proxy a template left, beside the native one: the
            // missing image is found first.
            (
                spec(
                    json!([{"name": "istio-proxy", "image": "proxyv2:1", "restartPolicy": "Always"}]),
                    json!([app.clone(), {"name": "istio-proxy"}]),
                ),
                Some("containers[1].image: Required value"),
            ),
            (
                spec(json!([{"name": "init", "image": ""}]), json!([app.clone()])),
                Some("initContainers[0].image: Required value"),
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
