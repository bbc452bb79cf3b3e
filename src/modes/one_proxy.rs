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
use crate::record::Applied;
use crate::template::Template;
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
    let of = |list: &[crate::view::Container]| -> Vec<usize> {
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
    match listed_under(status, name) {
        Some(List::Containers) => Some(Stale::Native(*i)),
        Some(List::InitContainers) if classic => Some(Stale::Classic(*c)),
        _ => None,
    }
}

enum List {
    Containers,
    InitContainers,
}

/// Where `sidecar.istio.io/status` lists `name`, if it does, once.
fn listed_under(status: &str, name: &str) -> Option<List> {
    #[derive(serde::Deserialize)]
    struct Status<'a> {
        #[serde(borrow, default)]
        containers: Option<Vec<std::borrow::Cow<'a, str>>>,
        #[serde(borrow, default, rename = "initContainers")]
        init_containers: Option<Vec<std::borrow::Cow<'a, str>>>,
    }
    let status: Status = serde_json::from_str(status).ok()?;
    let has = |list: &Option<Vec<std::borrow::Cow<str>>>| {
        list.as_ref().is_some_and(|l| l.iter().any(|n| n == name))
    };
    match (has(&status.containers), has(&status.init_containers)) {
        (true, false) => Some(List::Containers),
        (false, true) => Some(List::InitContainers),
        _ => None,
    }
}

/// Take the stale copy out of a template that has the proxy twice
/// (`twice`). Whether the template changed, and the warning to give: none
/// when the policy's own moved proxy met its classic self again (a
/// re-apply, as the record tells), since the apply then lands as it should.
pub fn resolve(
    template: &mut Template,
    name: &str,
    record: Option<&Applied>,
) -> Result<(bool, Option<String>), ShapeError> {
    let kept = match twice(template.view()?, name) {
        None => return Ok((false, None)),
        Some(Stale::Native(init)) => {
            template.take_item("initContainers", init)?;
            template.drop_empty_list("initContainers")?;
            "the one in containers"
        }
        Some(Stale::Classic(regular)) => {
            template.take_item("containers", regular)?;
            "the native one"
        }
    };
    let reapplied = matches!(record, Some(Applied::NativeMove(m)) if m.container == name);
    let warning = (!reapplied)
        .then(|| format!("{name} was in both initContainers and containers: kept {kept}"));
    Ok((true, warning))
}
