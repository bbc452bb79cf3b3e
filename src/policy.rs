//! One request, one way: payload -> request view -> workload -> decide ->
//! mode -> response. Every failure on the way is an accept, unchanged, with a
//! warning that says why: a mutating helper must never deny a pod.

use crate::decide::{self, decide, Facts, Plan, Skip};
use crate::json::{Node, ShapeError};
use crate::modes::change::undo_then_apply;
use crate::modes::native_sidecar::natively_injected;
use crate::modes::{one_proxy, owner_mode};
use crate::names::{Kind, NEVER_INJECTED_NAMESPACES};
use crate::native_gate;
use crate::object::Object;
use crate::request::Request;
use crate::response;
use crate::settings::{Mode, Settings};
use crate::workload;

/// The `validate` answer for a raw payload (JSON `ValidationResponse` bytes).
pub fn evaluate(payload: &[u8]) -> Vec<u8> {
    explain(payload).response
}

/// The `validate` answer, and what the policy decided on the way: for
/// tools that report what the policy does (the operator's scan), so that
/// they never decide anything themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    pub verdict: Verdict,
    /// JSON `ValidationResponse` bytes, as `validate` returns them.
    pub response: Vec<u8>,
}

/// What the policy made of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not a kind this policy handles, or no object.
    NotHandled,
    /// The payload, its settings or its object could not be read; the
    /// warning says why.
    NotUnderstood,
    /// A decision row that applies no mode (an earlier edit of the policy
    /// may still have been taken back).
    Skip(Skip),
    /// This mode is wanted (the object may already be as it needs to be).
    Apply(Mode),
}

pub fn explain(payload: &[u8]) -> Explained {
    let (answer, verdict) = answer(payload);
    let response = match answer {
        Reply::Accept(warnings) => response::accept(&warnings),
        Reply::Mutate(object, warnings) => response::mutate(&object, &warnings, payload.len()),
    };
    Explained { verdict, response }
}

/// The policy's reply, before it is written out: accepted as it came, or
/// with the object it was edited into.
#[derive(Debug)]
pub enum Reply<'a> {
    Accept(Vec<String>),
    Mutate(Node<'a>, Vec<String>),
}

pub fn answer(payload: &[u8]) -> (Reply<'_>, Verdict) {
    let not_understood = |why: String| (Reply::Accept(vec![why]), Verdict::NotUnderstood);
    // One reader type (str) for every parse keeps one copy of serde_json's
    // parser in the module; UTF-8 is checked once, here.
    let Ok(text) = std::str::from_utf8(payload) else {
        return not_understood("request not understood: it is not UTF-8".into());
    };
    // When kind and operation come before the object (the API server's
    // order), the object of a request they already decide is never built.
    // policy-server sorts the members (kind, object, operation): there the
    // kind alone comes first, enough to skip the objects of other kinds.
    let may_skip = |kind, operation: &str| decide::by_operation(kind, operation).is_some();
    let request = match Request::parse(text, &may_skip) {
        Ok(r) => r,
        Err(e) => {
            let why = without_position(&e);
            return not_understood(format!("request not understood: {why}"));
        }
    };
    let operation = request.operation.as_deref().unwrap_or_default();
    let (kind, mut object) = match (request.kind, request.object) {
        (Some(kind), Some(object)) => (kind, object),
        // The object of a request decided by its kind and operation alone
        // was not read.
        (Some(kind), None) => {
            let verdict =
                decide::by_operation(kind, operation).map_or(Verdict::NotHandled, Verdict::Skip);
            return (Reply::Accept(Vec::new()), verdict);
        }
        (None, _) => return (Reply::Accept(Vec::new()), Verdict::NotHandled),
    };
    let unexpected = |why: &str| {
        not_understood(format!(
            "{} left unchanged, unexpected shape: {why}",
            kind.as_str()
        ))
    };
    // Most Pods of a cluster run forever: answered before the rest is read.
    let restart_policy = match kind {
        Kind::Pod => match workload::restart_policy(&mut object) {
            Ok(policy) => policy,
            Err(why) => return unexpected(&why),
        },
        _ => None,
    };
    if let Some(skip) = decide::by_request(kind, operation, restart_policy.as_deref()) {
        return (Reply::Accept(Vec::new()), Verdict::Skip(skip));
    }
    let settings = match Settings::from_payload(request.settings) {
        Ok(s) => s,
        Err(why) => return not_understood(format!("invalid settings, nothing done: {why}")),
    };
    let outcome = {
        let mut edited = match Object::read(kind, &mut object) {
            Ok(Some(handle)) => handle,
            Ok(None) => return unexpected("no pod template"),
            Err(why) => return unexpected(&why),
        };
        let namespace = request.namespace.as_deref();
        match decide_and_edit(&mut edited, operation, namespace, &settings) {
            Ok(outcome) => outcome,
            Err(e) => return unexpected(&e.to_string()),
        }
    };
    let (changed, warnings, verdict) = outcome;
    if changed {
        (Reply::Mutate(object, warnings), verdict)
    } else {
        (Reply::Accept(warnings), verdict)
    }
}

/// Decide on the object the handle holds and make the edits: whether it
/// changed, the warnings, the verdict.
fn decide_and_edit(
    object: &mut Object,
    operation: &str,
    namespace: Option<&str>,
    settings: &Settings,
) -> Result<(bool, Vec<String>, Verdict), ShapeError> {
    let kind = object.kind();
    let view = object.view()?;
    let never_injected = namespace.is_some_and(|ns| NEVER_INJECTED_NAMESPACES.contains(&ns));
    let facts = Facts {
        kind,
        operation,
        restart_policy: view.spec.restart_policy.as_deref(),
        mode_annotation: view.mode_annotation(),
        injection_off: view.injection_off() || never_injected,
        injected: view.injection_status().is_some()
            || view.has_container(&settings.sidecar_container_name),
        oversized: view.oversized(),
    };
    let (mut plan, mut warnings) = decide(&facts, settings);
    // An object the API server will refuse: nothing of it is read further,
    // nor changed (no undo, no owner's mode carried down).
    if plan == Plan::Skip(Skip::Oversized) {
        return Ok((false, warnings, Verdict::Skip(Skip::Oversized)));
    }
    // nativeSidecar where the Pod could not run it: the fallback mode, or
    // nothing, instead; nothing for a Pod Istio already injected natively,
    // which no mode can help (`native_gate::native_already_warnings`).
    if plan == Plan::Apply(Mode::NativeSidecar) {
        if let Some(why) = native_gate::unsafe_here(object, settings)? {
            let view = object.view()?;
            let fallback = match settings.fallback_mode {
                _ if kind == Kind::Pod
                    && natively_injected(view, &settings.sidecar_container_name) =>
                {
                    warnings.extend(native_gate::native_already_warnings(&why));
                    None
                }
                fallback => {
                    warnings.push(native_gate::warning(&why, settings));
                    fallback
                }
            };
            plan = match fallback {
                Some(mode) => Plan::Apply(mode),
                None => Plan::Skip(Skip::NativeUnsafe),
            };
        }
    }
    let view = object.view()?;
    let (wanted, verdict) = match plan {
        Plan::Apply(mode) => (Some(mode), Verdict::Apply(mode)),
        Plan::Skip(skip) => (None, Verdict::Skip(skip)),
    };
    let owner_mode = owner_mode::wanted(view, &plan, settings);
    let name = settings.sidecar_container_name.as_str();
    let twice = one_proxy::twice(view, name).is_some();
    if wanted.is_none() && owner_mode.is_none() && !view.has_record() && !twice {
        return Ok((false, warnings, verdict));
    }
    let (mut changed, more) = undo_then_apply(object, settings, wanted)?;
    warnings.extend(more);
    if let Some(value) = owner_mode {
        owner_mode::carry(object, value)?;
        changed = true;
    }
    Ok((changed, warnings, verdict))
}

/// A serde error without its "at line L column C": positions in the
/// payload mean nothing to the user reading the warning.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mutated_annotations(settings: serde_json::Value) -> serde_json::Value {
        let payload = json!({
            "request": {
                "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "operation": "CREATE",
                "object": {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}
            },
            "settings": settings
        });
        let out: serde_json::Value =
            serde_json::from_slice(&evaluate(&serde_json::to_vec(&payload).unwrap())).unwrap();
        out["mutated_object"]["spec"]["template"]["metadata"]["annotations"].clone()
    }

    /// exitOnJobCompletion is applied as asked, and the answer that writes
    /// the key says that upstream Istio ignores it; a template that already
    /// has the key is left alone without a word.
    #[test]
    fn exit_on_job_completion_warns_when_it_writes_the_key() {
        let answer = |annotations: serde_json::Value| -> serde_json::Value {
            let payload = json!({
                "request": {
                    "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                    "operation": "CREATE",
                    "object": {"spec": {"template": {
                        "metadata": {"annotations": annotations},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "a"}]}}}}
                },
                "settings": {"mode": "exitOnJobCompletion"}
            });
            serde_json::from_slice(&evaluate(&serde_json::to_vec(&payload).unwrap())).unwrap()
        };
        let written = answer(json!({}));
        assert!(written["mutated_object"].is_object(), "{written}");
        let warning = crate::warning::format(crate::modes::exit_on_completion::UPSTREAM_IGNORES);
        assert_eq!(written["warnings"], json!([warning]));
        assert!(crate::warning::fits(
            crate::modes::exit_on_completion::UPSTREAM_IGNORES
        ));
        let there = answer(json!({"proxy.istio.io/config": "exitOnJobCompletion: true"}));
        assert_eq!(there["mutated_object"], serde_json::Value::Null, "{there}");
        assert_eq!(there["warnings"], serde_json::Value::Null, "{there}");
    }

    /// The answer to a CREATE of `object` of `kind` with `settings`, the
    /// host answering the Node list with `nodes`.
    fn answer_with_nodes(
        kind: &str,
        object: serde_json::Value,
        settings: serde_json::Value,
        nodes: &[(&str, &str)],
    ) -> serde_json::Value {
        let group = if kind == "Pod" { "" } else { "batch" };
        let payload = json!({
            "request": {
                "kind": {"group": group, "version": "v1", "kind": kind},
                "operation": "CREATE",
                "object": object
            },
            "settings": settings
        });
        let list = crate::native_gate::node_list(nodes);
        let host: crate::host::NativeHost =
            std::rc::Rc::new(move |_: &str, _: &str, _: &str, _: &[u8]| Ok(list.clone()));
        let before = crate::host::set_native(Some(host));
        let out = evaluate(&serde_json::to_vec(&payload).unwrap());
        crate::host::set_native(before);
        serde_json::from_slice(&out).unwrap()
    }

    /// A Pod Istio injected natively before the policy, where the Node
    /// check fails: no fallback is applied (it would change nothing of how
    /// the kubelet runs the proxy), and the operator is told; where every
    /// kubelet runs native sidecars, nativeSidecar as ever. A Job's
    /// template with the same proxy gets the fallback: Istio renders its
    /// Pods anew.
    #[test]
    fn a_pod_injected_natively_first_gets_no_fallback() {
        let spec = json!({
            "restartPolicy": "Never",
            "initContainers": [
                {"name": "istio-init", "image": "proxyv2"},
                {"name": "istio-proxy", "image": "proxyv2", "restartPolicy": "Always"}
            ],
            "containers": [{"name": "app", "image": "app", "command": ["run"]}]
        });
        let status = r#"{"initContainers":["istio-init","istio-proxy"],"containers":null}"#;
        let metadata = json!({"name": "p", "annotations": {"sidecar.istio.io/status": status}});
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
        let settings = json!({"mode": "nativeSidecar", "nodeVersionCheck": true, "fallbackMode": "quitEndpoint"});
        let old = [("new-1", "v1.34.1"), ("old-1", "v1.32.9")];
        let out = answer_with_nodes("Pod", pod.clone(), settings.clone(), &old);
        assert_eq!(out["mutated_object"], serde_json::Value::Null, "{out}");
        let warnings = out["warnings"].to_string();
        assert!(
            warnings.contains("node old-1 runs kubelet v1.32.9 (< 1.33); proxy is native"),
            "{warnings}"
        );
        assert!(
            warnings.contains("no fallbackMode changes a native proxy"),
            "{warnings}"
        );
        assert!(!warnings.contains("used quitEndpoint"), "{warnings}");
        // Every kubelet new: the native form, as asked.
        let new = [("new-1", "v1.34.1"), ("new-2", "v1.33.6")];
        let out = answer_with_nodes("Pod", pod, settings.clone(), &new);
        assert_eq!(out["warnings"], serde_json::Value::Null, "{out}");
        // A Job's template: the fallback.
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"metadata": metadata, "spec": spec}}
        });
        let out = answer_with_nodes("Job", job, settings, &old);
        let command =
            &out["mutated_object"]["spec"]["template"]["spec"]["containers"][0]["command"];
        assert_eq!(command[3], crate::modes::quit_endpoint::NAME, "{out}");
        assert!(
            out["warnings"].to_string().contains("used quitEndpoint"),
            "{out}"
        );
    }

    /// The settings cache is keyed by the settings' text: a new text is read anew.
    #[test]
    fn settings_are_read_anew_when_they_change() {
        let exit = json!({
            "proxy.istio.io/config": "exitOnJobCompletion: true",
            "istio-job-sidecar/applied": r#"{"mode":"exitOnJobCompletion","inserted":"exitOnJobCompletion: true","created":true}"#
        });
        let native = json!({
            "sidecar.istio.io/nativeSidecar": "true",
            "istio-job-sidecar/applied": r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#
        });
        for _ in 0..2 {
            assert_eq!(
                mutated_annotations(json!({"mode": "exitOnJobCompletion"})),
                exit
            );
            assert_eq!(
                mutated_annotations(json!({"mode": "nativeSidecar"})),
                native
            );
            assert_eq!(mutated_annotations(json!({})), native);
        }
        let invalid: serde_json::Value = serde_json::from_slice(&evaluate(
            br#"{"request": {"kind": {"group": "batch", "kind": "Job"}, "operation": "CREATE",
                 "object": {"spec": {"template": {}}}}, "settings": {"mode": "x"}}"#,
        ))
        .unwrap();
        assert_eq!(invalid["mutated_object"], serde_json::Value::Null);
        assert!(invalid["warnings"][0]
            .as_str()
            .unwrap()
            .contains("invalid settings"));
    }
}
