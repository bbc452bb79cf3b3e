//! One proxy: a pod template with the proxy both in `initContainers` (as a
//! native sidecar) and in `containers` is one the API server refuses
//! (container names are unique across both lists). It comes two ways
//! (docs/facts.md, "The journey of a workload"): Istio's re-injection of a
//! Pod whose proxy is native, rendered classic, merges the classic proxy
//! onto the Pod as it came; and a re-apply (`kubectl apply`, server-side
//! apply) of a kube-injected manifest whose proxy the policy moved brings
//! the classic proxy back beside the moved one.
//!
//! Since 1.27 a third: Istio renders native for a `sidecar.istio.io/nativeSidecar`
//! that is not `"false"`, but moves a classic proxy the Pod already has
//! only for the exact `"true"`, so a kube-injected Pod saying `"True"` gets
//! a native proxy beside its classic one.
//!
//! Istio's status, which it writes with each injection (and which a
//! re-apply brings back with the manifest), names the proxy that is not a
//! stale copy: before any mode, in every mode, such a template keeps the
//! one in `containers` when the status lists it there (the latest
//! rendering, or the manifest's own, which the mode then treats as any
//! classic proxy: nativeSidecar moves it again), and the native one when
//! the status lists it under `initContainers` and the one in `containers`
//! is a classic proxy. A proxy twice otherwise (a copy of a native sidecar
//! among the regular containers, a status that names neither) is no such
//! copy, and is left to the mode's refusal.

use crate::json::ShapeError;
use crate::modes::native_sidecar::status_lists;
use crate::object::Object;
use crate::record::Applied;
use crate::workload::Workload;

/// Which copy of a proxy a template has twice to take out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// The one in `initContainers`, at this index.
    Native(usize),
    /// The one in `containers`, at this index.
    Classic(usize),
}

/// The stale copy of the proxy `name`, when it is once in `containers` and
/// once in `initContainers` as a native sidecar and the injection status
/// tells which is stale.
pub fn twice(view: &Workload, name: &str) -> Option<Stale> {
    let of = |list: &[crate::workload::Container]| -> Vec<usize> {
        (0..list.len())
            .filter(|&i| list[i].name.as_deref() == Some(name))
            .collect()
    };
    let (regular, init) = (of(view.containers()), of(view.init_containers()));
    let ([c], [i]) = (regular.as_slice(), init.as_slice()) else {
        return None;
    };
    if view.init_containers()[*i].restart_policy.as_deref() != Some("Always") {
        return None;
    }
    let (_, status) = view.injection_status()?;
    // A classic proxy has no restartPolicy of its own (a regular container
    // may not have one): anything else there is no copy Istio left.
    let classic = view.containers()[*c].restart_policy.is_none();
    let listed = |key| status_lists(status, key, name);
    match (listed("containers")?, listed("initContainers")?) {
        (true, false) => Some(Stale::Native(*i)),
        (false, true) if classic => Some(Stale::Classic(*c)),
        _ => None,
    }
}

/// Take the stale copy out of a template that has the proxy twice
/// (`twice`). Whether the template changed, and the warning to give: none
/// when the policy's own moved proxy met its classic self again (a
/// re-apply, as the record tells), since the apply then lands as it should.
pub fn resolve(
    object: &mut Object,
    name: &str,
    record: Option<&Applied>,
) -> Result<(bool, Option<String>), ShapeError> {
    let kept = match twice(object.view()?, name) {
        None => return Ok((false, None)),
        Some(Stale::Native(init)) => {
            object.take_item("initContainers", init)?;
            object.drop_empty_list("initContainers")?;
            "the one in containers"
        }
        Some(Stale::Classic(regular)) => {
            object.take_item("containers", regular)?;
            "the native one"
        }
    };
    let reapplied = matches!(record, Some(Applied::NativeMove(m)) if m.container == name);
    let warning = (!reapplied)
        .then(|| format!("{name} was in both initContainers and containers: kept {kept}"));
    Ok((true, warning))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Node;
    use crate::names::Kind;
    use rstest::rstest;
    use serde_json::{json, Value};

    const CLASSIC: &str = r#"{"initContainers":["istio-init"],"containers":["istio-proxy"]}"#;
    const NATIVE: &str = r#"{"initContainers":["istio-init","istio-proxy"],"containers":null}"#;

    fn pod(status: Option<&str>, regular: Value) -> Value {
        let annotations = match status {
            Some(s) => json!({"sidecar.istio.io/status": s}),
            None => json!({}),
        };
        json!({"metadata": {"annotations": annotations}, "spec": {
            "initContainers": [{"name": "istio-init"}, {"name": "istio-proxy", "restartPolicy": "Always"}],
            "containers": [{"name": "app"}, regular]}})
    }

    fn stale(object: Value) -> Option<Stale> {
        let text = object.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let mut node = Node::raw(raw);
        let view = Workload::read(Kind::Pod, &mut node).unwrap().unwrap();
        twice(&view, "istio-proxy")
    }

    /// The copy Istio's status does not name is the stale one; a copy of a
    /// native sidecar among the regular containers, or no status, is none.
    #[rstest]
    #[case::rendered_classic_again(pod(Some(CLASSIC), json!({"name": "istio-proxy"})), Some(Stale::Native(1)))]
    #[case::rendered_native_beside_classic(pod(Some(NATIVE), json!({"name": "istio-proxy"})), Some(Stale::Classic(1)))]
    #[case::a_native_copy_among_the_containers(
        pod(Some(NATIVE), json!({"name": "istio-proxy", "restartPolicy": "Always"})),
        None
    )]
    #[case::no_status(pod(None, json!({"name": "istio-proxy"})), None)]
    #[case::status_names_both(
        pod(Some(r#"{"initContainers":["istio-proxy"],"containers":["istio-proxy"]}"#), json!({"name": "istio-proxy"})),
        None
    )]
    #[case::status_not_json(pod(Some("{"), json!({"name": "istio-proxy"})), None)]
    #[case::once(pod(Some(CLASSIC), json!({"name": "other"})), None)]
    fn which_copy_is_stale(#[case] object: Value, #[case] expected: Option<Stale>) {
        assert_eq!(stale(object), expected);
    }
}
