//! mode nativeSidecar: `istio-proxy` becomes a Kubernetes native sidecar (a
//! restartable init container), which the kubelet stops once the app
//! containers have exited.
//!
//! - The pod template asks Istio (>= 1.24) for it with the per-pod
//!   annotation `sidecar.istio.io/nativeSidecar: "true"`, unless the user
//!   wrote one: a user's `"false"` stands, and then nothing is changed.
//! - Already injected in `containers` (`sidecar.istio.io/status` present):
//!   the container moves into `initContainers` after Istio's own init
//!   container, with `restartPolicy: Always`, and the status is updated as
//!   Istio writes it for a native sidecar. The annotation is written too:
//!   Istio's injector re-injects a pod that carries a status (it strips
//!   the listed containers and renders them again), natively only when the
//!   pod asks for it or the mesh flag is on.

use crate::json::{Node, ShapeError};
use crate::modes::target::{Outcome, Target, Undone};
use crate::record::{Applied, Move};
use crate::view::{Container, ANNOTATION_NATIVE_SIDECAR, ANNOTATION_STATUS};
use crate::workload::{StatusAt, Workload};
use serde_json::{json, Value};

/// Init containers Istio injects ahead of the proxy (`istio-validation` with
/// the CNI plugin); the native proxy goes right after them.
const ISTIO_INIT_CONTAINERS: [&str; 2] = ["istio-init", "istio-validation"];

pub fn apply(t: &mut Target) -> Result<Outcome, ShapeError> {
    let view = t.template.view()?;
    // A user's "false" asks Istio for a classic proxy: their word stands.
    if native_annotation(view) == Some("false") {
        return Ok(Outcome::unchanged());
    }
    match view.injection_status() {
        None => request_native_injection(t),
        Some((at, status)) => {
            let status = status.to_owned();
            move_injected_sidecar(t, at, &status)
        }
    }
}

/// `sidecar.istio.io/nativeSidecar` of the pod template.
fn native_annotation<'v>(view: &'v Workload) -> Option<&'v str> {
    view.template_annotations()
        .and_then(|a| a.native_sidecar.as_deref())
}

/// The annotation says "true" because this mode wrote it, as its record says.
fn annotation_is_ours(view: &Workload, record: Option<&Applied>) -> bool {
    let recorded = match record {
        Some(Applied::NativeAnnotation) => true,
        Some(Applied::NativeMove(m)) => m.annotation,
        _ => false,
    };
    recorded && native_annotation(view) == Some("true")
}

fn request_native_injection(t: &mut Target) -> Result<Outcome, ShapeError> {
    if native_annotation(t.template.view()?).is_some() {
        return Ok(Outcome::unchanged());
    }
    t.template
        .set_annotation(ANNOTATION_NATIVE_SIDECAR, Node::from_string("true"))?;
    // A proxy this mode moved stays recorded as moved, so that a later mode
    // can move it back.
    let applied = match t.record {
        Some(Applied::NativeMove(m)) => Applied::NativeMove(Move {
            annotation: true,
            ..m.clone()
        }),
        _ => Applied::NativeAnnotation,
    };
    Ok(Outcome::applied(applied))
}

/// Take off the `sidecar.istio.io/nativeSidecar: "true"` the policy added;
/// a value the user changed since is theirs and stays.
pub fn undo_annotation(t: &mut Target) -> Result<Undone, ShapeError> {
    let changed = remove_our_annotation(t)?;
    Ok(Undone::Done { changed })
}

fn remove_our_annotation(t: &mut Target) -> Result<bool, ShapeError> {
    if native_annotation(t.template.view()?) != Some("true") {
        return Ok(false);
    }
    t.template.remove_annotations(&[ANNOTATION_NATIVE_SIDECAR])
}

/// Move the proxy back where it was in `containers`, without the members
/// the move added, give the status annotation back its text and take the
/// annotation off if the move wrote it. Nothing is left to undo when the
/// proxy is no longer in `initContainers` and the status is not the one
/// the move wrote (an applier that owns the containers wrote them back).
/// Refused when the proxy or the status is not as the move left them: the
/// proxy was then re-injected or edited, and moving it would guess.
pub fn undo_move(moved: &Move, t: &mut Target) -> Result<Undone, ShapeError> {
    let name = moved.container.as_str();
    let refused = |why: &str| Ok(Undone::Refused(why.into()));
    let written = moved
        .status
        .as_deref()
        .and_then(|before| native_status(before, name).ok().flatten());
    let view = t.template.view()?;
    let init = view.init_containers();
    let named: Vec<usize> = (0..init.len())
        .filter(|&i| init[i].name.as_deref() == Some(name))
        .collect();
    let status_now = view.injection_status();
    let index = match named[..] {
        [index] => index,
        [] if written.is_none() || status_now.map(|(_, now)| now) != written.as_deref() => {
            let changed = moved.annotation && remove_our_annotation(t)?;
            return Ok(Undone::Done { changed });
        }
        _ => return refused("proxy not in initContainers once"),
    };
    if init[index].restart_policy.as_deref() != Some("Always") {
        return refused("proxy no longer a native sidecar");
    }
    if view
        .containers()
        .iter()
        .any(|c| c.name.as_deref() == Some(name))
    {
        return refused("a container has the proxy's name");
    }
    let status = match (&moved.status, status_now) {
        (None, _) => None,
        (Some(before), Some((at, now))) if written.as_deref() == Some(now) => Some((at, before)),
        (Some(_), Some(_)) => return refused("sidecar.istio.io/status changed since"),
        (Some(_), None) => return refused("sidecar.istio.io/status gone since"),
    };
    if moved.annotation {
        remove_our_annotation(t)?;
    }

    let mut proxy = t.template.take_item("initContainers", index)?;
    t.template.drop_empty_list("initContainers")?;
    proxy
        .members_mut()?
        .retain(|(k, _)| !moved.added.iter().any(|added| added == k));
    if let Some(policy) = &moved.restart_policy {
        proxy.set("restartPolicy", Node::from_string(policy.as_str()))?;
    }
    t.template.insert_item("containers", moved.from, proxy)?;
    if let Some((at, before)) = status {
        t.template
            .set_annotation_at(at, ANNOTATION_STATUS, Node::from_string(before.as_str()))?;
    }
    Ok(Undone::Done { changed: true })
}

fn move_injected_sidecar(
    t: &mut Target,
    at: StatusAt,
    status: &str,
) -> Result<Outcome, ShapeError> {
    let name = t.settings.sidecar_container_name.as_str();
    let is_sidecar = |c: &Container| c.name.as_deref() == Some(name);
    let view = t.template.view()?;
    let containers = view.containers();
    let Some(index) = containers.iter().position(is_sidecar) else {
        return match view.init_containers().iter().find(|c| is_sidecar(c)) {
            // Injected natively: only a re-injection must stay native.
            Some(c) if c.restart_policy.as_deref() == Some("Always") => request_native_injection(t),
            Some(_) => Ok(Outcome::unchanged_because(format!(
                "init container {name} lacks restartPolicy: Always; left unchanged"
            ))),
            None => Ok(Outcome::unchanged_because(format!(
                "injected pod template has no container {name}; left unchanged"
            ))),
        };
    };
    if containers.len() == 1 {
        return Ok(Outcome::unchanged_because(format!(
            "{name} is the only container; left unchanged"
        )));
    }
    // Kubernetes rejects the pod anyway; moving one of them would leave the
    // other to be moved by a second run, and a proxy moved beside an init
    // container of its name could not be told from it to be moved back.
    let init_named = view.init_containers().iter().any(is_sidecar);
    if init_named || containers.iter().filter(|c| is_sidecar(c)).count() > 1 {
        return Ok(Outcome::unchanged_because(format!(
            "more than one container is named {name}; left unchanged"
        )));
    }
    let insert_at =
        position_after_istio_init(view.init_containers().iter().map(|c| c.name.as_deref()));
    let status_port = view.status_port();
    // The annotation asks a re-injection for the native form; one the
    // user wrote stays theirs, one this mode wrote stays recorded.
    let (annotation, annotate) = match native_annotation(view) {
        None => (true, true),
        Some(_) => (annotation_is_ours(view, t.record), false),
    };
    let new_status = native_status(status, name);

    let mut sidecar = t.template.take_item("containers", index)?;
    let (added, restart_policy) = make_native(&mut sidecar, status_port)?;
    t.template
        .insert_item("initContainers", insert_at, sidecar)?;

    let mut moved = Move {
        container: name.to_owned(),
        from: index,
        added,
        restart_policy,
        status: None,
        annotation,
    };
    let mut warnings = Vec::new();
    match new_status {
        Ok(None) => {}
        Ok(Some(new)) => {
            t.template
                .set_annotation_at(at, ANNOTATION_STATUS, Node::from_string(new))?;
            moved.status = Some(status.to_owned());
        }
        Err(why) => warnings.push(format!(
            "moved {name}, but {ANNOTATION_STATUS} was not updated: {why}"
        )),
    }
    if annotate {
        t.template
            .set_annotation(ANNOTATION_NATIVE_SIDECAR, Node::from_string("true"))?;
    }
    Ok(Outcome {
        warnings,
        ..Outcome::applied(Applied::NativeMove(moved))
    })
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

/// What Istio's injector gives a proxy it injects in native form, added to
/// a proxy moved there: `restartPolicy: Always`; unless the proxy has them,
/// the `startupProbe` that holds the app containers back until the proxy is
/// ready, and the `preStop` hook that starts draining when the pod stops.
/// Returns the members it created and the `restartPolicy` it replaced.
fn make_native(
    sidecar: &mut Node,
    status_port: Option<u16>,
) -> Result<(Vec<String>, Option<String>), ShapeError> {
    let mut added = Vec::new();
    let replaced = match sidecar.get_mut("restartPolicy")? {
        Some(policy) => policy.read_string()?.map(|p| p.into_owned()),
        None => {
            added.push("restartPolicy".to_owned());
            None
        }
    };
    sidecar.set("restartPolicy", Node::from_string("Always"))?;
    if sidecar.get_mut("startupProbe")?.is_none() {
        if let Some(probe) = startup_probe(sidecar)? {
            sidecar.set("startupProbe", probe)?;
            added.push("startupProbe".to_owned());
        }
    }
    let port = status_port.unwrap_or(DEFAULT_STATUS_PORT);
    if sidecar.get_mut("lifecycle")?.is_none() && port != 0 {
        sidecar.set("lifecycle", Node::Value(drain_hook(port)))?;
        added.push("lifecycle".to_owned());
    }
    Ok((added, replaced))
}

/// pilot-agent's status port when the pod does not set one (Istio's
/// `global.proxy.statusPort`).
const DEFAULT_STATUS_PORT: u16 = 15020;

/// Probe handlers, in the order Kubernetes lists them.
const PROBE_HANDLERS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "grpc"];

/// Istio's native startup probe (pkg/kube/inject templates: period 1 s,
/// timeout 3 s, 600 tries) on what the proxy's readiness probe checks
/// (`/healthz/ready` on the status port, 15021 unless configured
/// otherwise). Istio writes both probes or neither: a proxy without a
/// readiness probe gets none (a probe on a guessed port would hold the pod
/// forever).
fn startup_probe<'a>(sidecar: &mut Node<'a>) -> Result<Option<Node<'a>>, ShapeError> {
    let Some(readiness) = sidecar.get_mut("readinessProbe")? else {
        return Ok(None);
    };
    for handler in PROBE_HANDLERS {
        if let Some(check) = readiness.get_mut(handler)? {
            let check = check.clone();
            return Ok(Some(Node::Object(vec![
                ("failureThreshold".into(), Node::Value(600.into())),
                (handler.into(), check),
                ("periodSeconds".into(), Node::Value(1.into())),
                ("timeoutSeconds".into(), Node::Value(3.into())),
            ])));
        }
    }
    Ok(None)
}

/// Istio's native `preStop`: ask pilot-agent to drain the proxy once the pod
/// is stopping.
fn drain_hook(status_port: u16) -> Value {
    json!({"preStop": {"exec": {"command": [
        "pilot-agent", "request", format!("--debug-port={status_port}"), "POST", "drain"
    ]}}})
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

    fn native(sidecar: Value, status_port: Option<u16>) -> Value {
        let text = sidecar.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let mut node = Node::raw(raw);
        let (added, replaced) = make_native(&mut node, status_port).unwrap();
        assert_eq!(replaced, None);
        for key in &added {
            assert!(sidecar.get(key).is_none(), "{key} was there");
        }
        node.to_value().unwrap()
    }

    fn drain(port: u16) -> Value {
        let flag = format!("--debug-port={port}");
        json!({"preStop": {"exec": {"command": ["pilot-agent", "request", flag, "POST", "drain"]}}})
    }

    fn startup(handler: &str, check: Value) -> Value {
        json!({"failureThreshold": 600, handler: check, "periodSeconds": 1, "timeoutSeconds": 3})
    }

    /// Istio's native form, from what the proxy says about itself.
    #[rstest]
    #[case::istio_default(
        json!({"name": "istio-proxy", "readinessProbe": {"httpGet": {"path": "/healthz/ready", "port": 15021}}}),
        None,
        Some(startup("httpGet", json!({"path": "/healthz/ready", "port": 15021}))),
        Some(drain(15020))
    )]
    #[case::other_ports(
        json!({"name": "istio-proxy", "readinessProbe": {"periodSeconds": 15, "httpGet": {"path": "/ready", "port": 15121, "scheme": "HTTP"}}}),
        Some(15120),
        Some(startup("httpGet", json!({"path": "/ready", "port": 15121, "scheme": "HTTP"}))),
        Some(drain(15120))
    )]
    #[case::exec_readiness(
        json!({"name": "istio-proxy", "readinessProbe": {"exec": {"command": ["pilot-agent", "wait"]}}}),
        None,
        Some(startup("exec", json!({"command": ["pilot-agent", "wait"]}))),
        Some(drain(15020))
    )]
    #[case::no_readiness_no_probe(json!({"name": "istio-proxy"}), None, None, Some(drain(15020)))]
    #[case::status_port_off(json!({"name": "istio-proxy"}), Some(0), None, None)]
    #[case::own_probe_and_lifecycle_kept(
        json!({"name": "istio-proxy", "startupProbe": {"tcpSocket": {"port": 1}}, "lifecycle": {"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}},
               "readinessProbe": {"httpGet": {"path": "/healthz/ready", "port": 15021}}}),
        Some(15120),
        Some(json!({"tcpSocket": {"port": 1}})),
        Some(json!({"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}))
    )]
    fn made_native_like_istio(
        #[case] sidecar: Value,
        #[case] status_port: Option<u16>,
        #[case] startup_probe: Option<Value>,
        #[case] lifecycle: Option<Value>,
    ) {
        let out = native(sidecar.clone(), status_port);
        assert_eq!(out["restartPolicy"], "Always");
        assert_eq!(out["startupProbe"], startup_probe.unwrap_or(Value::Null));
        assert_eq!(out["lifecycle"], lifecycle.unwrap_or(Value::Null));
        // Nothing else changes.
        let mut rest = out.as_object().unwrap().clone();
        for key in ["restartPolicy", "startupProbe", "lifecycle"] {
            if sidecar.get(key).is_none() {
                rest.remove(key);
            }
        }
        assert_eq!(Value::Object(rest), sidecar);
    }

    /// Regression (fuzz/regressions/validate/duplicate-sidecar.json):
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
