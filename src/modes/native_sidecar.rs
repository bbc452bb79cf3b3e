//! mode nativeSidecar: `istio-proxy` becomes a Kubernetes native sidecar (a
//! restartable init container), which the kubelet stops once the app
//! containers have exited.
//!
//! - The pod template asks Istio (>= 1.24) for it with the per-pod
//!   annotation `sidecar.istio.io/nativeSidecar: "true"`, the exact value
//!   every release reads as native (1.24-1.26 read only `"true"`, 1.27+
//!   any value but `"false"`): a user's `"false"` stands, and then nothing
//!   is changed; a user's other value is made `"true"`, and recorded, so
//!   that a change of mode gives it back.
//! - Already injected in `containers` (`sidecar.istio.io/status` present):
//!   the container moves into `initContainers` in the order Istio's
//!   `reorderPod` gives the native form (Istio's own init containers, the
//!   proxy, then the user's, so that they run inside the mesh), with
//!   `restartPolicy: Always` and the drain hook of Istio's native form, and
//!   the status is updated as Istio writes it for a native sidecar. The
//!   annotation is written too: Istio's injector re-injects a pod that
//!   carries a status, natively only when the pod asks for it or the mesh
//!   flag is on.
//!
//! The other modes ask for the native form too beside a proxy Istio
//! already injected natively (`keep_native`): rendered classic again, it
//! would be a second `istio-proxy`, and the API server refuses the Pod.

use crate::json::{Node, ShapeError};
use crate::modes::target::{ModeOutcome, RecordEdit, Target, Undone};
use crate::names::{Kind, ANNOTATION_NATIVE_SIDECAR, ANNOTATION_STATUS};
use crate::record::{Annotated, Applied, Move};
use crate::workload::Container;
use crate::workload::{StatusAt, Workload};
use serde_json::{json, Value};

/// Istio's init containers a native proxy follows (`istio-validation` with
/// the CNI plugin), in the order `reorderPod` puts them first.
pub const ISTIO_FIRST: [&str; 2] = ["istio-init", "istio-validation"];
/// The init container of Istio's `enableCoreDump`, right after the proxy.
pub const CORE_DUMP: &str = "enable-core-dump";

pub fn apply(t: &mut Target) -> Result<ModeOutcome, ShapeError> {
    let view = t.object.view()?;
    // A user's "false" asks Istio for a classic proxy: their word stands.
    if native_annotation(view) == Some("false") {
        return Ok(ModeOutcome {
            warnings: twice_warning(
                natively_injected(view, &t.settings.sidecar_container_name),
                &t.settings.sidecar_container_name,
            ),
            ..ModeOutcome::unchanged()
        });
    }
    match view.injection_status() {
        None if native_annotation(view) != Some("true") => {
            // Istio will inject the proxy with requests of its own (100m
            // CPU and 128Mi memory by default, `global.proxy.resources`):
            // asked for the native form, it makes the same sum as a move.
            match summed_with_proxy(t, None)? {
                Some(init) => Ok(ModeOutcome::unchanged_because(pod_level_warning(
                    "native form not asked",
                    &init,
                    "the proxy",
                ))),
                None => request_native_injection(t),
            }
        }
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

/// Make `sidecar.istio.io/nativeSidecar` the exact `"true"`, unless it says
/// `"false"` (the caller's to decide). What the record must say of it: the
/// recorded edit when the value is still `"true"`, the edit made now, or
/// `None` for a user's own `"true"`. The second value says whether the
/// template changed.
fn ask_native(t: &mut Target) -> Result<(Option<Annotated>, bool), ShapeError> {
    let recorded = t.record.and_then(Applied::annotation).cloned();
    match native_annotation(t.object.view()?) {
        Some("true") => Ok((recorded, false)),
        current => {
            // A value the policy wrote and someone changed since is theirs:
            // the edit records it as what it replaces.
            let was = current.map(str::to_owned);
            t.object
                .set_annotation(ANNOTATION_NATIVE_SIDECAR, Node::from_string("true"))?;
            Ok((Some(Annotated { was }), true))
        }
    }
}

fn request_native_injection(t: &mut Target) -> Result<ModeOutcome, ShapeError> {
    let (annotation, changed) = ask_native(t)?;
    let Some(annotation) = annotation else {
        return Ok(ModeOutcome::unchanged());
    };
    // A proxy this mode moved stays recorded as moved, so that a later mode
    // can move it back.
    let applied = match t.record {
        Some(Applied::NativeMove(m)) => Applied::NativeMove(Move {
            annotation: Some(annotation),
            ..m.clone()
        }),
        _ => Applied::NativeAnnotation(annotation),
    };
    Ok(ModeOutcome {
        changed,
        warnings: Vec::new(),
        record: RecordEdit::Set(applied),
    })
}

/// Take back what the record says the policy did to
/// `sidecar.istio.io/nativeSidecar`, if it still says `"true"`: the user's
/// value comes back, or the annotation goes. A value changed since is the
/// user's and stays.
pub fn undo_annotation(edit: &Annotated, t: &mut Target) -> Result<bool, ShapeError> {
    if native_annotation(t.object.view()?) != Some("true") {
        return Ok(false);
    }
    match &edit.was {
        Some(was) => {
            let was = Node::from_string(was.as_str());
            t.object.set_annotation(ANNOTATION_NATIVE_SIDECAR, was)?;
            Ok(true)
        }
        None => t.object.remove_annotations(&[ANNOTATION_NATIVE_SIDECAR]),
    }
}

/// A proxy Istio injected natively: the template carries the injection
/// status and the proxy in `initContainers` as a native sidecar.
pub fn natively_injected(view: &Workload, name: &str) -> bool {
    view.injection_status().is_some()
        && view.init_containers().iter().any(|c| {
            c.name.as_deref() == Some(name) && c.restart_policy.as_deref() == Some("Always")
        })
}

/// The warning for a user's `"false"` beside a native proxy (`native`):
/// Istio renders the proxy classic again, beside the native one, and the
/// API server refuses the Pod.
fn twice_warning(native: bool, name: &str) -> Vec<String> {
    if !native {
        return Vec::new();
    }
    let full = format!(
        "{ANNOTATION_NATIVE_SIDECAR} \"false\" by a native {name}: re-injected, it is there twice"
    );
    vec![if crate::warning::fits(&full) {
        full
    } else {
        format!("{ANNOTATION_NATIVE_SIDECAR} \"false\" by a native proxy: re-injected, it is there twice")
    }]
}

/// What `keep_native` decides on, read from the view before the mode's own
/// edit: exitOnJobCompletion and quitEndpoint edit neither
/// `sidecar.istio.io/nativeSidecar`, nor Istio's status, nor which
/// containers there are and their restart policies, so the whole view need
/// not be read again after their edit on every request (that read was
/// about a tenth of such a request: docs/performance.md).
#[derive(Debug, Clone, Copy)]
pub struct NativeFacts {
    annotation: NativeAnnotation,
    /// `natively_injected`.
    native: bool,
    /// A proxy is there: Istio's status, or a container of its name.
    injected: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NativeAnnotation {
    Absent,
    /// The exact `"true"` every release reads as native.
    True,
    False,
    /// A value the releases read differently.
    Other,
}

impl NativeFacts {
    pub fn of(view: &Workload, name: &str) -> NativeFacts {
        NativeFacts {
            annotation: match native_annotation(view) {
                None => NativeAnnotation::Absent,
                Some("true") => NativeAnnotation::True,
                Some("false") => NativeAnnotation::False,
                Some(_) => NativeAnnotation::Other,
            },
            native: natively_injected(view, name),
            injected: view.injection_status().is_some() || view.has_container(name),
        }
    }
}

/// For the modes other than nativeSidecar: ask Istio's re-injection for
/// the native form where it would otherwise give the Pod a second proxy
/// (docs/facts.md, "Re-injection"): beside a proxy Istio injected natively
/// (rendered classic again, it would be there twice), and where a proxy is
/// there and the user's `sidecar.istio.io/nativeSidecar` is a value the
/// releases read differently (`"True"`: 1.27 renders it native but moves a
/// classic proxy only for the exact `"true"`), made the exact `"true"`.
/// Recorded in the mode's record; a mode that recorded nothing (it applied
/// nothing) asks for nothing.
pub fn keep_native(
    t: &mut Target,
    outcome: &mut ModeOutcome,
    facts: NativeFacts,
) -> Result<(), ShapeError> {
    let applied = match &outcome.record {
        RecordEdit::Set(applied) => applied.clone(),
        RecordEdit::Keep => match t.record {
            Some(applied) => applied.clone(),
            None => return Ok(()),
        },
        RecordEdit::Remove => return Ok(()),
    };
    let name = t.settings.sidecar_container_name.as_str();
    let asks = match facts.annotation {
        NativeAnnotation::True => false,
        NativeAnnotation::False => {
            outcome.warnings.extend(twice_warning(facts.native, name));
            false
        }
        NativeAnnotation::Absent => facts.native,
        NativeAnnotation::Other => facts.native || facts.injected,
    };
    if !asks {
        // A recorded edit no longer there (the annotation changed or gone
        // since) is no longer the policy's to take back.
        if applied.annotation().is_some() && facts.annotation != NativeAnnotation::True {
            outcome.record = RecordEdit::Set(applied.with_annotation(None));
        }
        return Ok(());
    }
    let (annotation, changed) = ask_native(t)?;
    if changed || annotation.as_ref() != applied.annotation() {
        outcome.changed |= changed;
        outcome.record = RecordEdit::Set(applied.with_annotation(annotation));
    }
    Ok(())
}

/// Move the proxy back where it was in `containers`, without the members
/// the move added, put Istio's init containers back where they were, and
/// give the status annotation back its text (the annotation is the
/// caller's, `undo_annotation`). Nothing is left to undo when the proxy is
/// no longer in `initContainers` and the status is not the one the move
/// wrote (an applier that owns the containers wrote them back). Refused
/// when the proxy or the status is not as the move left them: the proxy
/// was then re-injected or edited, and moving it would guess.
pub fn undo_move(moved: &Move, t: &mut Target) -> Result<Undone, ShapeError> {
    let name = moved.container.as_str();
    let refused = |why: &str| Ok(Undone::Refused(why.into()));
    let written = moved
        .status
        .as_deref()
        .and_then(|before| native_status(before, name).ok().flatten());
    let pod = t.object.kind() == Kind::Pod;
    let view = t.object.view()?;
    let init = view.init_containers();
    let named: Vec<usize> = (0..init.len())
        .filter(|&i| init[i].name.as_deref() == Some(name))
        .collect();
    let status_now = view.injection_status();
    let index = match named[..] {
        [index] => index,
        [] if written.is_none() || status_now.map(|(_, now)| now) != written.as_deref() => {
            let changed = put_istio_init_back(t, &moved.init_from)?;
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
        // On a Pod, a status the move did not write that lists the proxy
        // as an init container is Istio's: its injector rendered the proxy
        // natively again, after the policy's webhook (Kubewarden >= 1.37.2),
        // and the proxy is Istio's own now.
        (Some(_), Some((_, now)))
            if pod && status_lists(now, "initContainers", name) == Some(true) =>
        {
            return Ok(Undone::Done { changed: false })
        }
        (Some(_), Some(_)) => return refused("sidecar.istio.io/status changed since"),
        (Some(_), None) => return refused("sidecar.istio.io/status gone since"),
    };

    let mut proxy = t.object.take_item("initContainers", index)?;
    put_istio_init_back(t, &moved.init_from)?;
    t.object.drop_empty_list("initContainers")?;
    proxy
        .members_mut()?
        .retain(|(k, _)| !moved.added.iter().any(|added| added == k));
    if let Some(policy) = &moved.restart_policy {
        proxy.set("restartPolicy", Node::from_string(policy.as_str()))?;
    }
    t.object.insert_item("containers", moved.from, proxy)?;
    if let Some((at, before)) = status {
        t.object
            .set_annotation_at(at, ANNOTATION_STATUS, Node::from_string(before.as_str()))?;
    }
    Ok(Undone::Done { changed: true })
}

/// Whether `sidecar.istio.io/status` lists `name` under `key`
/// (`containers`, `initContainers`); `None` when the status is not an
/// object of string lists. Read with the policy's own JSON tree.
pub fn status_lists(status: &str, key: &str, name: &str) -> Option<bool> {
    let raw: &serde_json::value::RawValue = serde_json::from_str(status).ok()?;
    let mut node = Node::raw(raw);
    let Some(list) = node.get_mut(key).ok()? else {
        return Some(false);
    };
    let mut listed = false;
    for item in list.items_mut().ok()? {
        listed |= item.read_string().ok()?.as_deref() == Some(name);
    }
    Some(listed)
}

/// Istio's init containers back at the indexes `init_from` records (each
/// at its place in the list as it was: the others kept their order).
/// Whether the list changed; a list already so is left as it is.
fn put_istio_init_back(t: &mut Target, init_from: &[(String, usize)]) -> Result<bool, ShapeError> {
    if init_from.is_empty() {
        return Ok(false);
    }
    let names: Vec<Option<String>> = t
        .object
        .view()?
        .init_containers()
        .iter()
        .map(|c| c.name.as_deref().map(str::to_owned))
        .collect();
    let mut wanted = init_from.to_vec();
    // By index, ties in record order. A record names each of Istio's three
    // first init containers at most once (`record::Fields::init_from`), so
    // an insertion sort does; the standard library's stable sort would be
    // about 4 KB of the module for three items.
    for i in 1..wanted.len() {
        let mut j = i;
        while j > 0 && wanted[j - 1].1 > wanted[j].1 {
            wanted.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut order: Vec<Option<String>> = names
        .iter()
        .filter(|n| !wanted.iter().any(|(w, _)| n.as_deref() == Some(w.as_str())))
        .cloned()
        .collect();
    for (name, index) in &wanted {
        if names.iter().any(|n| n.as_deref() == Some(name.as_str())) {
            order.insert((*index).min(order.len()), Some(name.clone()));
        }
    }
    if order == names {
        return Ok(false);
    }
    reorder_init(t, &order)?;
    Ok(true)
}

/// The template's `initContainers` in the order of `names` (each name once,
/// as read from the list).
fn reorder_init(t: &mut Target, names: &[Option<String>]) -> Result<(), ShapeError> {
    let count = names.len();
    let mut items: Vec<Option<Node>> = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(Some(t.object.take_item("initContainers", 0)?));
    }
    let current: Vec<Option<String>> = items
        .iter_mut()
        .map(|item| {
            item.as_mut()
                .and_then(|node| node.get_mut("name").ok().flatten())
                .and_then(|name| name.read_string().ok().flatten())
                .map(|name| name.into_owned())
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let from = (0..count)
            .find(|&j| items[j].is_some() && current[j] == *name)
            .ok_or_else(|| ShapeError("initContainers changed under the view".into()))?;
        let item = items[from].take().unwrap_or(Node::Value(Value::Null));
        t.object.insert_item("initContainers", i, item)?;
    }
    Ok(())
}

fn move_injected_sidecar(
    t: &mut Target,
    at: StatusAt,
    status: &str,
) -> Result<ModeOutcome, ShapeError> {
    let name = t.settings.sidecar_container_name.as_str();
    let is_sidecar = |c: &Container| c.name.as_deref() == Some(name);
    let view = t.object.view()?;
    let containers = view.containers();
    let Some(index) = containers.iter().position(is_sidecar) else {
        return match view.init_containers().iter().find(|c| is_sidecar(c)) {
            // Injected natively: only a re-injection must stay native.
            Some(c) if c.restart_policy.as_deref() == Some("Always") => request_native_injection(t),
            Some(_) => Ok(ModeOutcome::unchanged_because(format!(
                "init container {name} lacks restartPolicy: Always; left unchanged"
            ))),
            None => Ok(ModeOutcome::unchanged_because(format!(
                "injected pod template has no container {name}; left unchanged"
            ))),
        };
    };
    if containers.len() == 1 {
        return Ok(ModeOutcome::unchanged_because(format!(
            "{name} is the only container; left unchanged"
        )));
    }
    // Kubernetes rejects the pod anyway; moving one of them would leave the
    // other to be moved by a second run, and a proxy moved beside an init
    // container of its name could not be told from it to be moved back.
    let init_named = view.init_containers().iter().any(is_sidecar);
    if init_named || containers.iter().filter(|c| is_sidecar(c)).count() > 1 {
        return Ok(ModeOutcome::unchanged_because(format!(
            "more than one container is named {name}; left unchanged"
        )));
    }
    let init_names: Vec<Option<String>> = view
        .init_containers()
        .iter()
        .map(|c| c.name.as_deref().map(str::to_owned))
        .collect();
    let status_port = view.status_port();
    let new_status = native_status(status, name);
    if let Some(init) = summed_with_proxy(t, Some(index))? {
        return Ok(ModeOutcome::unchanged_because(pod_level_warning(
            &format!("{name} not moved"),
            &init,
            name,
        )));
    }

    let mut sidecar = t.object.take_item("containers", index)?;
    let (added, restart_policy) = make_native(&mut sidecar, status_port)?;
    let (order, init_from) = native_order(&init_names);
    if !init_from.is_empty() {
        reorder_init(t, &order)?;
    }
    let insert_at = position_after_istio_init(order.iter().map(|n| n.as_deref()));
    t.object.insert_item("initContainers", insert_at, sidecar)?;

    let mut warnings = Vec::new();
    let mut recorded_status = None;
    match new_status {
        Ok(None) => {}
        Ok(Some(new)) => {
            t.object
                .set_annotation_at(at, ANNOTATION_STATUS, Node::from_string(new))?;
            recorded_status = Some(status.to_owned());
        }
        Err(why) => warnings.push(format!(
            "moved {name}, but {ANNOTATION_STATUS} was not updated: {why}"
        )),
    }
    // The annotation asks a re-injection for the native form; one the
    // user wrote as "true" stays theirs, one this mode wrote stays recorded.
    let (annotation, _) = ask_native(t)?;
    let moved = Move {
        container: name.to_owned(),
        from: index,
        added,
        restart_policy,
        status: recorded_status,
        init_from,
        annotation,
    };
    Ok(ModeOutcome {
        warnings,
        ..ModeOutcome::applied(Applied::NativeMove(moved))
    })
}

/// Pod-level resources (`spec.resources`): the API server refuses a pod
/// whose pod-level requests are below its containers' aggregate, summed as
/// the sidecar formula of Kubernetes' `AggregateContainerRequests`
/// (component-helpers `resource/helpers.go`): app containers and
/// restartable init containers add up, and a plain init container counts
/// its own request plus those of the restartable ones before it. Moved
/// before the user's init containers, the proxy leaves the sum of the app
/// and restartable containers as it was but adds its request to every
/// plain init container after it, which can exceed what the pod-level
/// requests allowed. Without arithmetic on quantities: the first init
/// container the move would put after the proxy, not restartable, that
/// names a resource (in `requests` or `limits`, which default requests)
/// named by both the proxy (`containers[proxy]`; not injected yet, `None`:
/// any) and the pod level; then the move could make a valid pod invalid.
fn summed_with_proxy(t: &mut Target, proxy: Option<usize>) -> Result<Option<String>, ShapeError> {
    let pod = match t.object.spec()?.get_mut("resources")? {
        Some(node) => resource_names(&node.to_value()?),
        None => return Ok(None),
    };
    if pod.is_empty() {
        return Ok(None);
    }
    let shared: Vec<String> = match proxy {
        None => pod,
        Some(index) => match t.object.item("containers", index)?.get_mut("resources")? {
            Some(node) => resource_names(&node.to_value()?)
                .into_iter()
                .filter(|r| pod.contains(r))
                .collect(),
            None => return Ok(None),
        },
    };
    if shared.is_empty() {
        return Ok(None);
    }
    let view = t.object.view()?;
    let plain_after: Vec<(usize, String)> = view
        .init_containers()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.restart_policy.as_deref() != Some("Always"))
        .filter(|(_, c)| !c.name.as_deref().is_some_and(|n| ISTIO_FIRST.contains(&n)))
        .map(|(i, c)| (i, c.name.as_deref().unwrap_or("?").to_owned()))
        .collect();
    for (i, init) in plain_after {
        if let Some(node) = t.object.item("initContainers", i)?.get_mut("resources")? {
            if resource_names(&node.to_value()?)
                .iter()
                .any(|r| shared.contains(r))
            {
                return Ok(Some(init));
            }
        }
    }
    Ok(None)
}

/// What the user is told when `summed_with_proxy` holds the mode back:
/// `what` was not done, as init container `init` plus `proxy` could exceed
/// the pod-level resources.
fn pod_level_warning(what: &str, init: &str, proxy: &str) -> String {
    let full = format!("{what}: pod-level resources must cover init container {init} plus {proxy}");
    if crate::warning::fits(&full) {
        full
    } else {
        format!("{what}: pod-level resources must cover an init container plus the proxy")
    }
}

/// The resource names a `resources` member sets in `requests` or `limits`.
fn resource_names(resources: &Value) -> Vec<String> {
    ["requests", "limits"]
        .iter()
        .filter_map(|side| resources.get(side)?.as_object())
        .flat_map(|list| list.keys().cloned())
        .collect()
}

/// The init containers in the order Istio's `reorderPod` gives the native
/// form, the proxy aside: `istio-init`, `istio-validation`, then (after
/// the proxy) `enable-core-dump`, then the others in their order. With
/// where each of Istio's was, when any of them moved.
pub fn native_order(names: &[Option<String>]) -> (Vec<Option<String>>, Vec<(String, usize)>) {
    let is = |n: &Option<String>, name: &str| n.as_deref() == Some(name);
    let mut order: Vec<Option<String>> = Vec::with_capacity(names.len());
    for first in ISTIO_FIRST.iter().chain([&CORE_DUMP]) {
        order.extend(names.iter().filter(|n| is(n, first)).cloned());
    }
    let istio = |n: &Option<String>| ISTIO_FIRST.iter().chain([&CORE_DUMP]).any(|f| is(n, f));
    order.extend(names.iter().filter(|n| !istio(n)).cloned());
    if order == names {
        return (order, Vec::new());
    }
    let init_from = names
        .iter()
        .enumerate()
        .filter(|(_, n)| istio(n))
        .filter_map(|(i, n)| n.clone().map(|n| (n, i)))
        .collect();
    (order, init_from)
}

/// Index right after the last of Istio's init containers that precede the
/// proxy, else 0, so every other init container runs inside the mesh.
pub fn position_after_istio_init<'n>(names: impl Iterator<Item = Option<&'n str>>) -> usize {
    names
        .enumerate()
        .filter(|(_, n)| n.is_some_and(|n| ISTIO_FIRST.contains(&n)))
        .map(|(i, _)| i + 1)
        .last()
        .unwrap_or(0)
}

/// What Istio's injector gives a proxy it injects in native form, added to
/// a proxy moved there: `restartPolicy: Always`, and, unless the proxy has
/// one, the `preStop` hook that starts draining when the pod stops. Istio
/// writes the startup probe in both forms when the mesh enables it
/// (`global.proxy.startupProbe.enabled`): a classic proxy without one comes
/// from a mesh with it off, whose native form has none either.
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

    /// Istio's native form, from what the proxy says about itself: the
    /// startup probe only where the mesh wrote one (it is kept), the drain
    /// hook on the pod's status port unless that is off.
    #[rstest]
    #[case::istio_default(
        json!({"name": "istio-proxy", "readinessProbe": {"httpGet": {"path": "/healthz/ready", "port": 15021}}}),
        None,
        Some(drain(15020))
    )]
    #[case::other_ports(
        json!({"name": "istio-proxy", "startupProbe": {"httpGet": {"path": "/ready", "port": 15121}}}),
        Some(15120),
        Some(drain(15120))
    )]
    #[case::no_readiness_no_probe(json!({"name": "istio-proxy"}), None, Some(drain(15020)))]
    #[case::status_port_off(json!({"name": "istio-proxy"}), Some(0), None)]
    #[case::own_lifecycle_kept(
        json!({"name": "istio-proxy", "lifecycle": {"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}}),
        Some(15120),
        Some(json!({"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}))
    )]
    fn made_native_like_istio(
        #[case] sidecar: Value,
        #[case] status_port: Option<u16>,
        #[case] lifecycle: Option<Value>,
    ) {
        let out = native(sidecar.clone(), status_port);
        assert_eq!(out["restartPolicy"], "Always");
        assert_eq!(out["startupProbe"], sidecar["startupProbe"]);
        assert_eq!(out["lifecycle"], lifecycle.unwrap_or(Value::Null));
        // Nothing else changes.
        let mut rest = out.as_object().unwrap().clone();
        for key in ["restartPolicy", "lifecycle"] {
            if sidecar.get(key).is_none() {
                rest.remove(key);
            }
        }
        assert_eq!(Value::Object(rest), sidecar);
    }

    fn names(list: &[&str]) -> Vec<Option<String>> {
        list.iter().map(|n| Some((*n).to_owned())).collect()
    }

    /// `reorderPod`'s native order: Istio's init containers first, the
    /// user's after the proxy, so that they run inside the mesh.
    #[rstest]
    #[case::already(&["istio-init", "db"], &["istio-init", "db"], &[])]
    #[case::classic_order(&["db", "istio-init"], &["istio-init", "db"], &[("istio-init", 1)])]
    #[case::cni(&["istio-validation", "db"], &["istio-validation", "db"], &[])]
    #[case::core_dump(
        &["db", "istio-init", "enable-core-dump"],
        &["istio-init", "enable-core-dump", "db"],
        &[("istio-init", 1), ("enable-core-dump", 2)]
    )]
    #[case::none(&["db", "seed"], &["db", "seed"], &[])]
    fn istio_first(
        #[case] before: &[&str],
        #[case] after: &[&str],
        #[case] init_from: &[(&str, usize)],
    ) {
        let (order, from) = native_order(&names(before));
        assert_eq!(order, names(after));
        let from: Vec<(&str, usize)> = from.iter().map(|(n, i)| (n.as_str(), *i)).collect();
        assert_eq!(from, init_from);
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

    fn cpu(amount: &str) -> Value {
        json!({"requests": {"cpu": amount}})
    }

    /// A kube-injected Job with pod-level resources: moved only where no
    /// plain init container after the proxy would add the proxy's request
    /// to its own (Kubernetes' `AggregateContainerRequests`), which could
    /// put the aggregate above the pod-level requests.
    /// Not injected yet: Istio's proxy has requests of its own, so asked
    /// for the native form it makes the same sum; the annotation is not
    /// written where a plain init container and the pod level name a
    /// resource in common.
    #[rstest]
    #[case::summed(Some(json!({"requests": {"memory": "1Gi"}})), json!({"name": "db", "resources": {"requests": {"memory": "1Gi"}}}), false)]
    #[case::restartable(Some(json!({"requests": {"memory": "1Gi"}})), json!({"name": "db", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}}), true)]
    #[case::other_resource(Some(json!({"requests": {"memory": "1Gi"}})), json!({"name": "db", "resources": cpu("1")}), true)]
    #[case::no_pod_level(None, json!({"name": "db", "resources": cpu("1")}), true)]
    fn pod_level_resources_hold_the_annotation(
        #[case] pod_level: Option<Value>,
        #[case] init: Value,
        #[case] annotated: bool,
    ) {
        let mut spec = json!({"restartPolicy": "Never", "initContainers": [init], "containers": [{"name": "app", "image": "app"}]});
        if let Some(resources) = pod_level {
            spec["resources"] = resources;
        }
        let request = json!({"request": {"kind": {"group": "batch", "kind": "Job"}, "operation": "CREATE",
            "object": {"spec": {"template": {"spec": spec}}}}});
        let answer: Value =
            serde_json::from_slice(&crate::policy::evaluate(request.to_string().as_bytes()))
                .unwrap();
        assert_eq!(answer["mutated_object"].is_object(), annotated, "{answer}");
        if !annotated {
            assert_eq!(
                answer["warnings"],
                json!(["istio-job-sidecar: native form not asked: pod-level resources must cover init container db plus the proxy"])
            );
        }
    }

    #[rstest]
    #[case::summed_with_a_plain_init(Some(json!({"requests": {"cpu": "1"}})), json!({"name": "db", "resources": cpu("1")}), false)]
    #[case::limits_default_requests(Some(json!({"limits": {"cpu": "1"}})), json!({"name": "db", "resources": {"limits": {"cpu": "1"}}}), false)]
    #[case::restartable_init(Some(json!({"requests": {"cpu": "1"}})), json!({"name": "db", "restartPolicy": "Always", "resources": cpu("1")}), true)]
    #[case::istio_init_stays_before(Some(json!({"requests": {"cpu": "1"}})), json!({"name": "istio-init", "resources": cpu("1")}), true)]
    #[case::other_resource(Some(json!({"requests": {"memory": "1Gi"}})), json!({"name": "db", "resources": cpu("1")}), true)]
    #[case::init_without_resources(Some(json!({"requests": {"cpu": "1"}})), json!({"name": "db"}), true)]
    #[case::no_pod_level(None, json!({"name": "db", "resources": cpu("1")}), true)]
    fn pod_level_resources_hold_the_move(
        #[case] pod_level: Option<Value>,
        #[case] init: Value,
        #[case] moved: bool,
    ) {
        let status = r#"{"initContainers":["istio-init"],"containers":["istio-proxy"]}"#;
        let mut spec = json!({
            "restartPolicy": "Never",
            "initContainers": [init],
            "containers": [{"name": "app", "image": "app"}, {"name": "istio-proxy", "image": "proxy", "resources": cpu("100m")}]
        });
        if let Some(resources) = pod_level {
            spec["resources"] = resources;
        }
        let request = json!({"request": {"kind": {"group": "batch", "kind": "Job"}, "operation": "CREATE",
            "object": {"spec": {"template": {"metadata": {"annotations": {"sidecar.istio.io/status": status}}, "spec": spec}}}}});
        let answer: Value =
            serde_json::from_slice(&crate::policy::evaluate(request.to_string().as_bytes()))
                .unwrap();
        assert_eq!(answer["mutated_object"].is_object(), moved, "{answer}");
        if !moved {
            let name = init["name"].as_str().unwrap();
            assert_eq!(
                answer["warnings"],
                json!([format!("istio-job-sidecar: istio-proxy not moved: pod-level resources must cover init container {name} plus istio-proxy")])
            );
        }
    }
}
