//! A model of Istio's sidecar injector (the default revision), written
//! from Istio's source, for the last hop of a journey: the Pod the API
//! server stores after Istio's webhook has mutated it.
//!
//! - Which Pods the webhook is called for: the `istio-sidecar-injector`
//!   MutatingWebhookConfiguration of the default revision
//!   (`manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml`):
//!   in a namespace labelled `istio-injection=enabled`, every Pod not
//!   labelled `sidecar.istio.io/inject=false`; in a namespace without that
//!   label, only Pods labelled `sidecar.istio.io/inject=true`; never in a
//!   namespace labelled `istio-injection=disabled`. Revisions are out of
//!   scope.
//! - Whether it injects (`pkg/kube/inject/inject.go`, `injectRequired`):
//!   never a `hostNetwork` Pod; the label `sidecar.istio.io/inject` when
//!   present (even empty), else the annotation; `"true"` and `"false"`
//!   decide, any other value leaves it to the default policy (`enabled`).
//! - How (`inject.go` `RunTemplate`, `stripPod`; `webhook.go` `injectPod`,
//!   `reapplyOverwrittenContainers`, `reorderPod`): a Pod that carries
//!   `sidecar.istio.io/status` loses the containers listed there and the
//!   status, then the template is rendered again (there is no "already
//!   injected" check); native form when the Pod's
//!   `sidecar.istio.io/nativeSidecar` is set and not `"false"`, else by the
//!   mesh flag (`injection-template.yaml`: `ne (annotation | default flag)
//!   "false"`); a proxy the Pod already has in `containers` moves to
//!   `initContainers` when the exact annotation `"true"` (or, without
//!   `"false"`, the flag) asks for native; the template's containers are
//!   merged into the Pod's by name, then the Pod's own containers of those
//!   names not listed in the status are applied over them (an injection
//!   customization); the proxy goes last among the containers, or right
//!   after `istio-init` / `istio-validation` in native form; a new status
//!   names what the template injected.
//!
//! The containers the template renders are Istio's own, taken from
//! `istioctl kube-inject` output (`test_data/fixtures/`).

use crate::names::{INJECT, NATIVE, STATUS};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

pub const PROXY: &str = "istio-proxy";
pub const INIT: &str = "istio-init";
pub const VALIDATION: &str = "istio-validation";

/// The namespace's `istio-injection` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// `istio-injection=enabled`.
    Enabled,
    /// No `istio-injection` label.
    Unlabelled,
    /// `istio-injection=disabled`.
    Disabled,
}

/// istiod's configuration, as far as injection depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mesh {
    /// `ENABLE_NATIVE_SIDECARS` (or `auto` with every node >= 1.33).
    pub native_flag: bool,
    /// The Istio CNI plugin: `istio-validation` instead of `istio-init`.
    pub cni: bool,
}

/// The Pod after Istio's webhook, or the Pod as it was when Istio does
/// not inject it. An error is Istio refusing the Pod (its webhook fails
/// closed).
pub fn inject(pod: &Value, namespace: Namespace, mesh: Mesh) -> Result<Value, String> {
    if !webhook_called(pod, namespace) || !inject_required(pod) {
        return Ok(pod.clone());
    }
    let original = pod.clone();
    let annotation = annotation(pod, NATIVE).unwrap_or_default();
    // injection-template.yaml: `default` takes the flag for an empty value.
    let render_native = if annotation.is_empty() {
        mesh.native_flag
    } else {
        annotation != "false"
    };
    // RunTemplate: only the exact strings override the flag.
    let move_native = match annotation {
        "true" => true,
        "false" => false,
        _ => mesh.native_flag,
    };
    let listed = listed_in_status(&original);
    let mut merged = strip(&original, &listed);

    let template = render(mesh, render_native);
    if move_native
        && find(&template["spec"]["initContainers"], PROXY).is_some()
        && find(&merged["spec"]["containers"], PROXY).is_some()
    {
        let proxy = take(&mut merged["spec"]["containers"], PROXY);
        if let Some(proxy) = proxy {
            push(&mut merged["spec"], "initContainers", proxy);
        }
    }
    for list in ["initContainers", "containers"] {
        for container in items(&template["spec"][list]) {
            let name = container["name"].as_str().unwrap_or_default();
            match find_mut(&mut merged["spec"][list], name) {
                Some(existing) => overlay(existing, container),
                None => push(&mut merged["spec"], list, container.clone()),
            }
        }
    }
    // The Pod's own containers of the template's names, not injected by an
    // earlier pass, are customizations: applied over what was rendered.
    for list in ["initContainers", "containers"] {
        for container in items(&template["spec"][list]) {
            let name = container["name"].as_str().unwrap_or_default();
            if listed.iter().any(|(l, n)| *l == list && n == name) {
                continue;
            }
            let own = match list {
                "containers" => find(&original["spec"]["containers"], name),
                _ => find(&original["spec"]["initContainers"], name)
                    .or_else(|| find(&original["spec"]["containers"], name)),
            };
            if let (Some(own), Some(target)) =
                (own.cloned(), find_mut(&mut merged["spec"][list], name))
            {
                overlay(target, &own);
            }
        }
    }
    for volume in items(&template["spec"]["volumes"]) {
        let name = volume["name"].as_str().unwrap_or_default();
        if find(&merged["spec"]["volumes"], name).is_none() {
            push(&mut merged["spec"], "volumes", volume.clone());
        }
    }
    reorder(&mut merged);
    let status = json!({
        "initContainers": names(&template["spec"]["initContainers"]),
        "containers": Some(names(&template["spec"]["containers"])).filter(|n| !n.is_empty()),
        "volumes": names(&template["spec"]["volumes"]),
        "imagePullSecrets": null,
        "revision": "default",
    });
    let annotations = metadata_map(&mut merged, "annotations");
    annotations.insert(STATUS.into(), Value::from(status.to_string()));
    annotations.insert("istio.io/rev".into(), Value::from("default"));
    let labels = metadata_map(&mut merged, "labels");
    labels
        .entry("security.istio.io/tlsMode")
        .or_insert_with(|| Value::from("istio"));
    Ok(merged)
}

/// Whether the default revision's webhooks are called for `pod`.
pub fn webhook_called(pod: &Value, namespace: Namespace) -> bool {
    let label = pod["metadata"]["labels"][INJECT].as_str();
    match namespace {
        Namespace::Enabled => label != Some("false"),
        Namespace::Unlabelled => label == Some("true"),
        Namespace::Disabled => false,
    }
}

/// `injectRequired` with the default policy `enabled`.
pub fn inject_required(pod: &Value) -> bool {
    if pod["spec"]["hostNetwork"] == true {
        return false;
    }
    let label = pod["metadata"]["labels"]
        .get(INJECT)
        .and_then(Value::as_str);
    let selector = label
        .or_else(|| annotation(pod, INJECT))
        .unwrap_or_default();
    selector != "false"
}

fn annotation<'v>(pod: &'v Value, key: &str) -> Option<&'v str> {
    pod["metadata"]["annotations"]
        .get(key)
        .and_then(Value::as_str)
}

/// (list, name) of the containers `sidecar.istio.io/status` lists; none
/// when it is absent or not JSON (Istio then strips nothing).
fn listed_in_status(pod: &Value) -> Vec<(&'static str, String)> {
    let Some(status) = annotation(pod, STATUS) else {
        return Vec::new();
    };
    let Ok(status) = serde_json::from_str::<Value>(status) else {
        return Vec::new();
    };
    let mut listed = Vec::new();
    for (key, list) in [
        ("containers", "containers"),
        ("initContainers", "initContainers"),
    ] {
        for name in items(&status[key]) {
            if let Some(name) = name.as_str() {
                listed.push((list, name.to_owned()));
            }
        }
    }
    listed
}

/// `stripPod`: the listed containers and the status taken off.
fn strip(pod: &Value, listed: &[(&'static str, String)]) -> Value {
    let mut pod = pod.clone();
    if annotation(&pod, STATUS).is_none() {
        return pod;
    }
    for (list, name) in listed {
        if let Some(items) = pod["spec"][*list].as_array_mut() {
            items.retain(|c| c["name"].as_str() != Some(name));
        }
    }
    if let Some(annotations) = pod["metadata"]["annotations"].as_object_mut() {
        annotations.remove(STATUS);
    }
    pod
}

/// What Istio's template renders for a Pod: its init container, and the
/// proxy in classic or native form, with their volumes.
fn render(mesh: Mesh, native: bool) -> Value {
    let istio = rendered();
    let mut init = istio.init.clone();
    if mesh.cni {
        init["name"] = Value::from(VALIDATION);
    }
    let (init_containers, containers) = if native {
        (vec![init, istio.native_proxy.clone()], vec![])
    } else {
        (vec![init], vec![istio.classic_proxy.clone()])
    };
    json!({"spec": {
        "initContainers": init_containers,
        "containers": containers,
        "volumes": istio.volumes,
    }})
}

struct Rendered {
    init: Value,
    native_proxy: Value,
    classic_proxy: Value,
    volumes: Value,
}

fn rendered() -> &'static Rendered {
    static RENDERED: OnceLock<Rendered> = OnceLock::new();
    RENDERED.get_or_init(|| {
        let spec = |text: &str| -> Value {
            let doc = text.split("\n---").next().unwrap_or_default();
            let job: Value = serde_yaml::from_str(doc).expect("Istio's kube-inject fixture");
            job["spec"]["template"]["spec"].clone()
        };
        let native = spec(include_str!(
            "../../test_data/fixtures/istio-job-kube-injected-native.yaml"
        ));
        let classic = spec(include_str!(
            "../../test_data/fixtures/istio-job-kube-injected-classic.yaml"
        ));
        Rendered {
            init: find(&native["initContainers"], INIT)
                .cloned()
                .unwrap_or_default(),
            native_proxy: find(&native["initContainers"], PROXY)
                .cloned()
                .unwrap_or_default(),
            classic_proxy: find(&classic["containers"], PROXY)
                .cloned()
                .unwrap_or_default(),
            volumes: native["volumes"].clone(),
        }
    })
}

/// `reorderPod`: the proxy last among the containers; in native form
/// `istio-init`, `istio-validation`, then the proxy, first among the init
/// containers; else `istio-validation` first and `istio-init` last.
fn reorder(pod: &mut Value) {
    if let Some(proxy) = take(&mut pod["spec"]["containers"], PROXY) {
        push(&mut pod["spec"], "containers", proxy);
    }
    let init = &mut pod["spec"]["initContainers"];
    if find(init, PROXY).is_some() {
        for name in [PROXY, VALIDATION, INIT] {
            move_first(init, name);
        }
    } else {
        move_first(init, VALIDATION);
        if let Some(c) = take(init, INIT) {
            if let Some(items) = init.as_array_mut() {
                items.push(c);
            }
        }
    }
}

fn move_first(list: &mut Value, name: &str) {
    if let Some(c) = take(list, name) {
        if let Some(items) = list.as_array_mut() {
            items.insert(0, c);
        }
    }
}

/// A strategic merge of one container: `over`'s members win; objects are
/// merged member by member.
fn overlay(base: &mut Value, over: &Value) {
    match (base.as_object_mut(), over.as_object()) {
        (Some(base), Some(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        overlay(existing, value)
                    }
                    _ => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        _ => *base = over.clone(),
    }
}

fn items(list: &Value) -> &[Value] {
    list.as_array().map_or(&[], Vec::as_slice)
}

fn names(list: &Value) -> Vec<String> {
    items(list)
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

fn find<'v>(list: &'v Value, name: &str) -> Option<&'v Value> {
    items(list)
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
}

fn find_mut<'v>(list: &'v mut Value, name: &str) -> Option<&'v mut Value> {
    list.as_array_mut()?
        .iter_mut()
        .find(|c| c["name"].as_str() == Some(name))
}

fn take(list: &mut Value, name: &str) -> Option<Value> {
    let items = list.as_array_mut()?;
    let index = items
        .iter()
        .position(|c| c["name"].as_str() == Some(name))?;
    Some(items.remove(index))
}

fn push(spec: &mut Value, list: &str, item: Value) {
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let entry = spec.entry(list).or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    if let Some(items) = entry.as_array_mut() {
        items.push(item);
    }
}

fn metadata_map<'v>(pod: &'v mut Value, key: &str) -> &'v mut Map<String, Value> {
    if !pod["metadata"].is_object() {
        pod["metadata"] = json!({});
    }
    if !pod["metadata"][key].is_object() {
        pod["metadata"][key] = json!({});
    }
    pod["metadata"][key]
        .as_object_mut()
        .expect("made an object above")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: Value, labels: Value, containers: Value) -> Value {
        json!({"kind": "Pod", "metadata": {"annotations": annotations, "labels": labels},
               "spec": {"restartPolicy": "Never", "containers": containers}})
    }

    fn app() -> Value {
        json!([{"name": "app", "image": "app:1", "command": ["run"]}])
    }

    fn where_is_the_proxy(pod: &Value) -> (Vec<String>, Vec<String>) {
        (
            names(&pod["spec"]["initContainers"]),
            names(&pod["spec"]["containers"]),
        )
    }

    const ON: Mesh = Mesh {
        native_flag: true,
        cni: false,
    };
    const OFF: Mesh = Mesh {
        native_flag: false,
        cni: false,
    };

    #[test]
    fn classic_or_native_from_the_annotation_then_the_flag() {
        let plain = pod(json!({}), json!({}), app());
        let classic = inject(&plain, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            where_is_the_proxy(&classic),
            (vec![INIT.into()], vec!["app".into(), PROXY.into()])
        );
        let native = inject(&plain, Namespace::Enabled, ON).unwrap();
        assert_eq!(
            where_is_the_proxy(&native),
            (vec![INIT.into(), PROXY.into()], vec!["app".into()])
        );
        assert_eq!(
            find(&native["spec"]["initContainers"], PROXY).unwrap()["restartPolicy"],
            "Always"
        );
        let asked = pod(json!({NATIVE: "true"}), json!({}), app());
        assert_eq!(
            where_is_the_proxy(&inject(&asked, Namespace::Enabled, OFF).unwrap())
                .0
                .len(),
            2
        );
        let refused = pod(json!({NATIVE: "false"}), json!({}), app());
        assert_eq!(
            where_is_the_proxy(&inject(&refused, Namespace::Enabled, ON).unwrap())
                .1
                .len(),
            2
        );
    }

    #[test]
    fn who_is_injected() {
        let cases = [
            (json!({}), json!({}), Namespace::Enabled, true),
            (json!({}), json!({}), Namespace::Unlabelled, false),
            (
                json!({}),
                json!({INJECT: "true"}),
                Namespace::Unlabelled,
                true,
            ),
            (
                json!({}),
                json!({INJECT: "true"}),
                Namespace::Disabled,
                false,
            ),
            (
                json!({INJECT: "false"}),
                json!({}),
                Namespace::Enabled,
                false,
            ),
            // The label, present even empty, wins over the annotation.
            (
                json!({INJECT: "false"}),
                json!({INJECT: ""}),
                Namespace::Enabled,
                true,
            ),
            // Only the exact strings count since Istio 1.27.
            (
                json!({}),
                json!({INJECT: "False"}),
                Namespace::Enabled,
                true,
            ),
            (json!({INJECT: "no"}), json!({}), Namespace::Enabled, true),
        ];
        for (annotations, labels, namespace, injected) in cases {
            let p = pod(annotations.clone(), labels.clone(), app());
            let out = inject(&p, namespace, OFF).unwrap();
            assert_eq!(out != p, injected, "{annotations} {labels} {namespace:?}");
        }
        let mut host = pod(json!({}), json!({}), app());
        host["spec"]["hostNetwork"] = json!(true);
        assert_eq!(inject(&host, Namespace::Enabled, OFF).unwrap(), host);
    }

    #[test]
    fn an_injected_pod_is_injected_again_from_its_status() {
        let plain = pod(json!({}), json!({}), app());
        let once = inject(&plain, Namespace::Enabled, OFF).unwrap();
        let twice = inject(&once, Namespace::Enabled, OFF).unwrap();
        assert_eq!(twice, once);
        // Re-injected natively when the pod now asks for it.
        let mut asking = once.clone();
        asking["metadata"]["annotations"][NATIVE] = json!("true");
        let native = inject(&asking, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            where_is_the_proxy(&native),
            (vec![INIT.into(), PROXY.into()], vec!["app".into()])
        );
    }

    #[test]
    fn a_proxy_without_status_is_a_customization() {
        let custom = pod(
            json!({}),
            json!({}),
            json!([{"name": "app"}, {"name": PROXY, "image": "auto", "env": [{"name": "X", "value": "1"}]}]),
        );
        let native = inject(&custom, Namespace::Enabled, ON).unwrap();
        let proxy = find(&native["spec"]["initContainers"], PROXY).unwrap();
        assert_eq!(proxy["env"], json!([{"name": "X", "value": "1"}]));
        assert_eq!(names(&native["spec"]["containers"]), vec!["app".to_owned()]);
    }
}
