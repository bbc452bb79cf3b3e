//! mode nativeSidecar: `istio-proxy` becomes a Kubernetes native sidecar (a
//! restartable init container), which the kubelet stops once the app
//! containers have exited.
//!
//! - Not injected yet: ask Istio (>= 1.24) for it with the per-pod annotation
//!   `sidecar.istio.io/nativeSidecar: "true"`, unless the user wrote one.
//! - Already injected in `containers` (`sidecar.istio.io/status` present):
//!   move the container into `initContainers` after Istio's own init
//!   container, with `restartPolicy: Always`, and update the status as Istio
//!   writes it for a native sidecar.

use super::{Outcome, Target};
use crate::json::{Node, ShapeError};
use crate::view::{Container, ANNOTATION_NATIVE_SIDECAR, ANNOTATION_STATUS};
use crate::workload::{annotations_mut, template_mut, StatusAt};
use serde_json::{json, Value};

/// Init containers Istio injects ahead of the proxy (`istio-validation` with
/// the CNI plugin); the native proxy goes right after them.
const ISTIO_INIT_CONTAINERS: [&str; 2] = ["istio-init", "istio-validation"];

pub fn apply(t: &mut Target) -> Result<Outcome, ShapeError> {
    match t.workload.injection_status() {
        None => request_native_injection(t),
        Some((at, status)) => move_injected_sidecar(t, at, status),
    }
}

fn request_native_injection(t: &mut Target) -> Result<Outcome, ShapeError> {
    let user_said = t
        .workload
        .template_annotations()
        .and_then(|a| a.native_sidecar.as_ref())
        .is_some();
    if user_said {
        return Ok(Outcome::unchanged());
    }
    let template = template_mut(t.kind, t.object)?;
    annotations_mut(template)?.set(ANNOTATION_NATIVE_SIDECAR, Node::from_string("true"))?;
    Ok(Outcome::changed())
}

fn move_injected_sidecar(
    t: &mut Target,
    at: StatusAt,
    status: &str,
) -> Result<Outcome, ShapeError> {
    let name = t.settings.sidecar_container_name.as_str();
    let is_sidecar = |c: &Container| c.name.as_deref() == Some(name);
    let containers = t.workload.containers();
    let Some(index) = containers.iter().position(is_sidecar) else {
        return Ok(
            match t.workload.init_containers().iter().find(|c| is_sidecar(c)) {
                Some(c) if c.restart_policy.as_deref() == Some("Always") => Outcome::unchanged(),
                Some(_) => Outcome::unchanged_because(format!(
                    "init container {name} lacks restartPolicy: Always; left unchanged"
                )),
                None => Outcome::unchanged_because(format!(
                    "injected pod template has no container {name}; left unchanged"
                )),
            },
        );
    };
    if containers.len() == 1 {
        return Ok(Outcome::unchanged_because(format!(
            "{name} is the only container; left unchanged"
        )));
    }
    // Kubernetes rejects the pod anyway; moving one of them would leave the
    // other to be moved by a second run (not idempotent; found by fuzzing).
    if containers.iter().filter(|c| is_sidecar(c)).count() > 1 {
        return Ok(Outcome::unchanged_because(format!(
            "more than one container is named {name}; left unchanged"
        )));
    }
    let init_names = t
        .workload
        .init_containers()
        .iter()
        .map(|c| c.name.as_deref());
    let insert_at = position_after_istio_init(init_names);
    let new_status = native_status(status, name);

    let template = template_mut(t.kind, t.object)?;
    let spec = template
        .get_mut("spec")?
        .ok_or_else(|| ShapeError("pod template has no spec".into()))?;
    let items = spec.array_entry("containers")?.items_mut()?;
    if index >= items.len() {
        return Err(ShapeError("containers changed under the view".into()));
    }
    let mut sidecar = items.remove(index);
    sidecar.set("restartPolicy", Node::from_string("Always"))?;
    if sidecar.get_mut("startupProbe")?.is_none() {
        sidecar.set("startupProbe", Node::Value(istio_native_startup_probe()))?;
    }
    let init = spec.array_entry("initContainers")?.items_mut()?;
    init.insert(insert_at.min(init.len()), sidecar);

    let mut outcome = Outcome::changed();
    match new_status {
        Ok(None) => {}
        Ok(Some(status)) => {
            let owner = match at {
                StatusAt::Template => template_mut(t.kind, t.object)?,
                StatusAt::JobTemplate => t
                    .object
                    .path_mut(&["spec", "jobTemplate"])?
                    .ok_or_else(|| ShapeError("CronJob has no jobTemplate".into()))?,
            };
            annotations_mut(owner)?.set(ANNOTATION_STATUS, Node::from_string(status))?;
        }
        Err(why) => outcome.warnings.push(format!(
            "moved {name}, but {ANNOTATION_STATUS} was not updated: {why}"
        )),
    }
    Ok(outcome)
}

/// Index right after the last of Istio's init containers, else 0, so every
/// other init container runs inside the mesh.
pub fn position_after_istio_init<'n>(names: impl Iterator<Item = Option<&'n str>>) -> usize {
    names
        .enumerate()
        .filter(|(_, n)| n.is_some_and(|n| ISTIO_INIT_CONTAINERS.contains(&n)))
        .map(|(i, _)| i + 1)
        .last()
        .unwrap_or(0)
}

/// The probe Istio gives a native sidecar: app containers start only once
/// the proxy is ready (pkg/kube/inject templates).
fn istio_native_startup_probe() -> Value {
    json!({
        "failureThreshold": 600,
        "httpGet": {"path": "/healthz/ready", "port": 15021},
        "periodSeconds": 1,
        "timeoutSeconds": 3
    })
}

/// `sidecar.istio.io/status` with `name` moved from `containers` to
/// `initContainers`, as Istio writes it for a native sidecar (an emptied
/// `containers` becomes `null`); key order and other members kept.
/// `Ok(None)` when the status does not list `name` under `containers`.
pub fn native_status(status: &str, name: &str) -> Result<Option<String>, String> {
    let raw: &serde_json::value::RawValue =
        serde_json::from_str(status).map_err(|e| format!("it is not JSON: {e}"))?;
    let mut node = Node::raw(raw);
    let names = |node: &mut Node, key: &str| -> Result<Vec<String>, String> {
        match node.get_mut(key).map_err(|e| e.to_string())? {
            None => Ok(Vec::new()),
            Some(list) => serde_json::from_value(list.to_value().map_err(|e| e.to_string())?)
                .map_err(|e| format!("{key}: {e}")),
        }
    };
    let mut containers = names(&mut node, "containers")?;
    let Some(index) = containers.iter().position(|c| c == name) else {
        return Ok(None);
    };
    containers.remove(index);
    let mut init = names(&mut node, "initContainers")?;
    if !init.iter().any(|c| c == name) {
        let at = position_after_istio_init(init.iter().map(|n| Some(n.as_str())));
        init.insert(at, name.to_owned());
    }
    let containers = if containers.is_empty() {
        Value::Null
    } else {
        json!(containers)
    };
    let set = |node: &mut Node, key: &str, v: Value| node.set(key, Node::Value(v));
    set(&mut node, "initContainers", json!(init)).map_err(|e| e.to_string())?;
    set(&mut node, "containers", containers).map_err(|e| e.to_string())?;
    serde_json::to_string(&node)
        .map(Some)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const CLASSIC: &str = r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["workload-socket"],"imagePullSecrets":null,"revision":"default"}"#;
    const NATIVE: &str = r#"{"initContainers":["istio-init","istio-proxy"],"containers":null,"volumes":["workload-socket"],"imagePullSecrets":null,"revision":"default"}"#;

    #[rstest]
    #[case::classic(CLASSIC, Some(NATIVE))]
    #[case::already_native(NATIVE, None)]
    #[case::cni(
        r#"{"initContainers":["istio-validation"],"containers":["istio-proxy","other"]}"#,
        Some(r#"{"initContainers":["istio-validation","istio-proxy"],"containers":["other"]}"#)
    )]
    #[case::no_init(
        r#"{"initContainers":null,"containers":["istio-proxy"]}"#,
        Some(r#"{"initContainers":["istio-proxy"],"containers":null}"#)
    )]
    #[case::keys_absent(
        r#"{"containers":["istio-proxy"],"revision":"x"}"#,
        Some(r#"{"containers":null,"revision":"x","initContainers":["istio-proxy"]}"#)
    )]
    fn status_as_istio_writes_it(#[case] status: &str, #[case] expected: Option<&str>) {
        assert_eq!(
            native_status(status, "istio-proxy"),
            Ok(expected.map(str::to_owned))
        );
    }

    #[rstest]
    #[case::not_json("{")]
    #[case::not_list(r#"{"containers":"istio-proxy"}"#)]
    #[case::not_object(r#"["istio-proxy"]"#)]
    fn broken_status_is_an_error(#[case] status: &str) {
        assert!(native_status(status, "istio-proxy").is_err());
    }

    #[rstest]
    #[case::istio_init(&[Some("istio-init"), Some("db-migrate")], 1)]
    #[case::cni(&[Some("istio-validation")], 1)]
    #[case::none(&[Some("db-migrate")], 0)]
    #[case::empty(&[], 0)]
    #[case::nameless(&[None, Some("istio-init")], 2)]
    fn proxy_goes_after_istio_init(#[case] names: &[Option<&str>], #[case] expected: usize) {
        assert_eq!(position_after_istio_init(names.iter().copied()), expected);
    }

    /// Regression (issue 4, fuzz/regressions/validate/duplicate-sidecar.json):
    /// two containers named like the sidecar used to be moved one per run.
    #[test]
    fn duplicate_sidecar_names_are_left_alone() {
        let status = serde_json::to_string(r#"{"containers":["istio-proxy"]}"#).unwrap();
        let payload = format!(
            r#"{{"request":{{"kind":{{"group":"batch","kind":"Job"}},"operation":"CREATE",
            "object":{{"spec":{{"template":{{"metadata":{{"annotations":{{"sidecar.istio.io/status":{status}}}}},
            "spec":{{"restartPolicy":"Never","containers":[{{"name":"istio-proxy"}},{{"name":"app"}},{{"name":"istio-proxy"}}]}}}}}}}}}}}}"#
        );
        let answer: Value =
            serde_json::from_slice(&crate::policy::evaluate(payload.as_bytes())).unwrap();
        assert_eq!(answer["mutated_object"], Value::Null);
        assert_eq!(
            answer["warnings"],
            json!([
                "istio-job-sidecar: more than one container is named istio-proxy; left unchanged"
            ])
        );
    }
}
