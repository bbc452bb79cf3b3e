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
//!
//! A fourth comes from Istio's custom injection templates
//! (docs/facts.md, "Custom injection templates"): rendered native, a second template that
//! patches `containers[name=istio-proxy]` (Istio's `spire` fixture) adds a
//! partial proxy, without an image, beside the native one, and the status
//! names the proxy in both lists. Where the one in `containers` has no
//! image and the native one has, the partial copy is what the template
//! meant for the proxy: it is merged into the native one as Istio's
//! overlay merges a template (a strategic merge: maps merged, `env`,
//! `volumeMounts`, `ports`, `volumeDevices` by their keys, other values
//! replaced) and taken out, and the status lists the proxy as native.
//! Otherwise nothing tells the copies apart, and the Pod is left with a
//! warning that says so.

use crate::json::{Node, ShapeError};
use crate::modes::native_sidecar::{native_status, status_lists};
use crate::names::ANNOTATION_STATUS;
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
    /// Both named by Istio's status (a second injection template's partial
    /// proxy in `containers`, at `regular`, beside the native one at
    /// `native`): resolved by their images.
    Partial { regular: usize, native: usize },
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
    // Istio renders its classic proxy without a restartPolicy of its own
    // (a regular container may carry one only since Kubernetes' container
    // restart rules, and Istio's templates write none there): anything
    // else there is no copy Istio left.
    let classic = view.containers()[*c].restart_policy.is_none();
    let listed = |key| status_lists(status, key, name);
    match (listed("containers")?, listed("initContainers")?) {
        (true, false) => Some(Stale::Native(*i)),
        (false, true) if classic => Some(Stale::Classic(*c)),
        (true, true) if classic => Some(Stale::Partial {
            regular: *c,
            native: *i,
        }),
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
        Some(Stale::Partial { regular, native }) => {
            return merge_partial(object, name, regular, native)
        }
    };
    let reapplied = matches!(record, Some(Applied::NativeMove(m)) if m.container == name);
    let warning = (!reapplied)
        .then(|| format!("{name} was in both initContainers and containers: kept {kept}"));
    Ok((true, warning))
}

/// The partial proxy a second template left in `containers` merged into
/// the native one, when only the native one has an image; else a warning
/// that says why the Pod is left as it is.
fn merge_partial(
    object: &mut Object,
    name: &str,
    regular: usize,
    native: usize,
) -> Result<(bool, Option<String>), ShapeError> {
    let has_image = |node: &mut Node| -> Result<bool, ShapeError> {
        Ok(node.get_mut("image")?.is_some_and(|image| !image.is_null()))
    };
    let partial_has_image = has_image(object.item("containers", regular)?)?;
    let native_has_image = has_image(object.item("initContainers", native)?)?;
    let why = match (partial_has_image, native_has_image) {
        (false, true) => None,
        (true, _) => Some("both have an image"),
        (false, false) => Some("neither has an image"),
    };
    if let Some(why) = why {
        let full =
            format!("{name} in both lists (Istio's status names both), {why}: left unchanged");
        return Ok((
            false,
            Some(if crate::warning::fits(&full) {
                full
            } else {
                format!(
                    "the proxy in both lists (Istio's status names both), {why}: left unchanged"
                )
            }),
        ));
    }
    let status = object
        .view()?
        .injection_status()
        .map(|(at, s)| (at, s.to_owned()));
    let Some((at, status)) = status else {
        return Ok((false, None));
    };
    let new_status = native_status(&status, name);
    let partial = object.take_item("containers", regular)?;
    strategic_merge(object.item("initContainers", native)?, partial, true)?;
    let warning = match new_status {
        Ok(new) => {
            if let Some(new) = new {
                object.set_annotation_at(at, ANNOTATION_STATUS, Node::from_string(new))?;
            }
            "a template's partial proxy in containers merged into the native one"
        }
        Err(_) => "a template's partial proxy merged into the native one; status not updated",
    };
    Ok((true, Some(warning.to_owned())))
}

/// `patch` merged into `base` as a strategic merge patch of a Pod merges a
/// container (Kubernetes' `patchMergeKey`s of `Container`; `container`:
/// at the container's own level): `null` removes a member, objects merge
/// member by member, the lists with a merge key item by item on it,
/// everything else is replaced. Done on the policy's own JSON tree.
pub fn strategic_merge<'a>(
    base: &mut Node<'a>,
    mut patch: Node<'a>,
    container: bool,
) -> Result<(), ShapeError> {
    let members = match patch.members_mut() {
        Ok(members) => std::mem::take(members),
        Err(_) => {
            *base = patch;
            return Ok(());
        }
    };
    if base.members_mut().is_err() {
        *base = Node::Object(members);
        return Ok(());
    }
    for (key, value) in members {
        if value.is_null() {
            base.members_mut()?.retain(|(k, _)| *k != key);
            continue;
        }
        let merge_key = match key.as_ref() {
            "env" if container => Some("name"),
            "volumeMounts" if container => Some("mountPath"),
            "ports" if container => Some("containerPort"),
            "volumeDevices" if container => Some("devicePath"),
            _ => None,
        };
        match (base.get_mut(&key)?, merge_key) {
            (Some(existing), Some(merge_key)) => merge_list(existing, value, merge_key)?,
            (Some(existing), None) => strategic_merge(existing, value, false)?,
            (None, _) => base.set(&key, value)?,
        }
    }
    Ok(())
}

/// The items of `patch` merged into the list `base` by `merge_key`: an item
/// whose key is there merges into it, another is added; a value that is
/// no list replaces it.
fn merge_list<'a>(
    base: &mut Node<'a>,
    mut patch: Node<'a>,
    merge_key: &str,
) -> Result<(), ShapeError> {
    let (Ok(_), Ok(patch_items)) = (base.items_mut(), patch.items_mut()) else {
        *base = patch;
        return Ok(());
    };
    for mut item in std::mem::take(patch_items) {
        let key = key_text(&mut item, merge_key);
        let items = base.items_mut()?;
        let found = match key {
            Some(_) => items
                .iter_mut()
                .rposition(|existing| key_text(existing, merge_key) == key),
            None => None,
        };
        match found {
            Some(i) => strategic_merge(&mut items[i], item, false)?,
            None => items.push(item),
        }
    }
    Ok(())
}

/// The JSON text of member `key` of an object item, to compare merge keys.
fn key_text(item: &mut Node, key: &str) -> Option<String> {
    let value = item.get_mut(key).ok()??;
    serde_json::to_string(&*value).ok()
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
        Some(Stale::Partial { regular: 1, native: 1 })
    )]
    #[case::status_not_json(pod(Some("{"), json!({"name": "istio-proxy"})), None)]
    #[case::once(pod(Some(CLASSIC), json!({"name": "other"})), None)]
    fn which_copy_is_stale(#[case] object: Value, #[case] expected: Option<Stale>) {
        assert_eq!(stale(object), expected);
    }

    /// The shape of Istio's `sidecar-spire` fixture rendered natively
    /// (`inject.istio.io/templates: sidecar,spire`): the spire template's
    /// partial proxy in `containers`, the status naming both.
    fn spire(partial_image: Option<&str>) -> Value {
        let mut partial = json!({"name": "istio-proxy", "resources": {}, "volumeMounts": [
            {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket", "readOnly": true}
        ]});
        if let Some(image) = partial_image {
            partial["image"] = json!(image);
        }
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"annotations": {
            "inject.istio.io/templates": "sidecar,spire",
            "sidecar.istio.io/status": r#"{"initContainers":["istio-init","istio-proxy"],"containers":["istio-proxy"],"volumes":["workload-socket"],"imagePullSecrets":null,"revision":"default"}"#
        }},
        "spec": {"restartPolicy": "Never",
            "containers": [{"name": "hello", "image": "hello:1.0"}, partial],
            "initContainers": [
                {"name": "istio-init", "image": "proxyv2:1.30"},
                {"name": "istio-proxy", "image": "proxyv2:1.30", "restartPolicy": "Always",
                 "args": ["proxy", "sidecar"],
                 "env": [{"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"}],
                 "volumeMounts": [
                    {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket"},
                    {"mountPath": "/etc/istio/pod", "name": "istio-podinfo"}]}
            ]}})
    }

    fn resolved(object: &Value) -> (bool, Option<String>, Value) {
        let text = object.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let mut node = Node::raw(raw);
        let mut handle = Object::read(Kind::Pod, &mut node).unwrap().unwrap();
        let (changed, warning) = resolve(&mut handle, "istio-proxy", None).unwrap();
        (changed, warning, node.to_value().unwrap())
    }

    #[test]
    fn a_templates_partial_proxy_is_merged_into_the_native_one() {
        let (changed, warning, out) = resolved(&spire(None));
        assert!(changed);
        assert!(warning
            .unwrap()
            .contains("partial proxy in containers merged"));
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "hello", "image": "hello:1.0"}])
        );
        let proxy = &out["spec"]["initContainers"][1];
        assert_eq!(proxy["image"], "proxyv2:1.30");
        assert_eq!(proxy["restartPolicy"], "Always");
        assert_eq!(
            proxy["volumeMounts"],
            json!([
                {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket", "readOnly": true},
                {"mountPath": "/etc/istio/pod", "name": "istio-podinfo"}
            ])
        );
        assert_eq!(
            proxy["env"],
            json!([{"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"}])
        );
        let status = out["metadata"]["annotations"]["sidecar.istio.io/status"]
            .as_str()
            .unwrap();
        assert_eq!(
            status_lists(status, "containers", "istio-proxy"),
            Some(false)
        );
        assert_eq!(
            status_lists(status, "initContainers", "istio-proxy"),
            Some(true)
        );
        // Once is enough: the result has the proxy once.
        assert_eq!(resolved(&out), (false, None, out.clone()));
    }

    #[rstest]
    #[case::both_have_an_image(Some("proxyv2:1.30"), "both have an image: left unchanged")]
    fn copies_that_cannot_be_told_apart_are_left(#[case] image: Option<&str>, #[case] says: &str) {
        let object = spire(image);
        let (changed, warning, out) = resolved(&object);
        assert!(!changed);
        let warning = warning.unwrap();
        assert!(warning.contains(says), "{warning}");
        assert!(crate::warning::fits(&warning), "{warning}");
        assert_eq!(out, object);
    }

    #[test]
    fn neither_with_an_image_is_left() {
        let mut object = spire(None);
        object["spec"]["initContainers"][1]
            .as_object_mut()
            .unwrap()
            .remove("image");
        let (changed, warning, out) = resolved(&object);
        assert!(!changed);
        assert!(warning.unwrap().contains("neither has an image"));
        assert_eq!(out, object);
    }

    #[test]
    fn the_merge_is_kubernetes_strategic_merge_of_a_container() {
        let base = json!({"name": "p", "image": "a", "args": ["x", "y"],
            "ports": [{"containerPort": 15090, "name": "prom"}],
            "securityContext": {"runAsUser": 1337, "capabilities": {"drop": ["ALL"]}},
            "resources": {"limits": {"cpu": "2"}}});
        let patch = json!({"name": "p", "args": ["z"],
            "ports": [{"containerPort": 15090, "protocol": "TCP"}, {"containerPort": 8080}],
            "securityContext": {"runAsUser": null, "capabilities": {"drop": ["NET_RAW"]}},
            "resources": {}});
        let (base_text, patch_text) = (base.to_string(), patch.to_string());
        let mut base = Node::raw(serde_json::from_str(&base_text).unwrap());
        let patch = Node::raw(serde_json::from_str(&patch_text).unwrap());
        strategic_merge(&mut base, patch, true).unwrap();
        assert_eq!(
            base.to_value().unwrap(),
            json!({"name": "p", "image": "a", "args": ["z"],
            "ports": [{"containerPort": 15090, "name": "prom", "protocol": "TCP"}, {"containerPort": 8080}],
            "securityContext": {"capabilities": {"drop": ["NET_RAW"]}},
            "resources": {"limits": {"cpu": "2"}}})
        );
    }
}
