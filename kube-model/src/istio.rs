//! A model of Istio's sidecar injector (the default revision), written
//! from Istio's source, for the Pod hop of a journey: the Pod the API
//! server stores once Istio's webhook has mutated it.
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
//!   never a `hostNetwork` Pod, never a Pod of `kube-system`,
//!   `kube-public`, `kube-node-lease` or `local-path-storage`
//!   (`initializer.go`, `IgnoredNamespaces`); then the label
//!   `sidecar.istio.io/inject` when present (even empty), else the
//!   annotation. Since 1.27 only the exact `"true"` and `"false"` decide
//!   and any other value leaves it to the default policy (`enabled`); up
//!   to 1.26 the value is lower-cased, `y`, `yes`, `true` and `on` inject,
//!   `""` leaves it to the default policy and any other value does not
//!   inject (`Release`).
//! - The form (`injection-template.yaml`): since 1.27 native unless
//!   `sidecar.istio.io/nativeSidecar`, or the mesh flag when it is absent
//!   or empty, says `"false"`; up to 1.26 native only for the exact
//!   `"true"`, or the flag when the annotation is absent.
//! - How (`inject.go` `RunTemplate`; `webhook.go` `injectPod`,
//!   `reapplyOverwrittenContainers`, `postProcessPod`, `reorderPod`): the
//!   template is rendered from the Pod stripped of what an earlier
//!   injection listed in `sidecar.istio.io/status`, but merged onto the Pod
//!   **as it came** (`mergedPod = params.pod`): containers merge by name
//!   into the list the template puts them in, so a proxy the Pod already
//!   has in `initContainers`, rendered classic, ends up in both lists (the
//!   API server then rejects the Pod). Only a classic proxy moves to
//!   `initContainers`, when the exact annotation `"true"` (or, without
//!   `"false"`, the flag) asks for native (`moveContainer`). The Pod's own
//!   containers of the template's names not listed in the status are
//!   applied over what was rendered (an injection customization); the
//!   proxy goes last among the containers; in native form the init
//!   containers are ordered `istio-init`, `istio-validation`, the proxy,
//!   `enable-core-dump`, then the rest; else `istio-validation` first and
//!   `istio-init`, `enable-core-dump` last. A new status names what the
//!   template injected.
//! - The proxy carries the Pod's `proxy.istio.io/config` as Istio read it
//!   at injection, in its `PROXY_CONFIG` environment variable: an
//!   annotation written after injection reaches no proxy.
//!
//! The containers the template renders are Istio's own, taken from
//! `istioctl kube-inject` output (`test_data/fixtures/`).

use crate::names::{INJECT, NATIVE, PROXY_CONFIG, STATUS};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

pub const PROXY: &str = "istio-proxy";
pub const INIT: &str = "istio-init";
pub const VALIDATION: &str = "istio-validation";
/// The init container of `values.global.proxy.enableCoreDump`.
pub const CORE_DUMP: &str = "enable-core-dump";

/// Namespaces Istio's injector never injects, whatever they are labelled
/// (`pkg/kube/inject/initializer.go`, `IgnoredNamespaces`): the list the
/// policy keeps of the same fact, spelled once.
pub use crate::names::NEVER_INJECTED_NAMESPACES as IGNORED_NAMESPACES;

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

/// The Istio releases whose injectors read a Pod differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// 1.24 to 1.26: `sidecar.istio.io/inject` lower-cased, YAML 1.1
    /// booleans; `sidecar.istio.io/nativeSidecar` native only for `"true"`.
    V1_24,
    /// 1.27 and later: only the exact `"true"` and `"false"` decide
    /// injection; `sidecar.istio.io/nativeSidecar` native unless `"false"`.
    V1_27,
}

impl Release {
    pub const ALL: [Release; 2] = [Release::V1_24, Release::V1_27];
}

/// istiod's configuration, as far as injection depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mesh {
    /// `ENABLE_NATIVE_SIDECARS` (or, since 1.27, `auto` with every node
    /// >= 1.33).
    pub native_flag: bool,
    /// The Istio CNI plugin: `istio-validation` instead of `istio-init`.
    pub cni: bool,
    pub release: Release,
}

/// The Pod after Istio's webhook, or the Pod as it was when Istio does
/// not inject it. An error is Istio refusing the Pod (its webhook fails
/// closed).
pub fn inject(pod: &Value, namespace: Namespace, mesh: Mesh) -> Result<Value, String> {
    if !webhook_called(pod, namespace) || !inject_required(pod, mesh.release) {
        return Ok(pod.clone());
    }
    let original = pod;
    let render_native = renders_native(pod, mesh);
    // RunTemplate: only the exact strings override the flag.
    let move_native = match annotation(pod, NATIVE) {
        Some("true") => true,
        Some("false") => false,
        _ => mesh.native_flag,
    };
    let listed = listed_in_status(original);
    // The template is rendered from the stripped Pod; here it depends on
    // the mesh and the form only, and on the proxy config the Pod asks for.
    let template = render(mesh, render_native, annotation(pod, PROXY_CONFIG));
    let mut merged = original.clone();
    if move_native
        && find(&template["spec"]["initContainers"], PROXY).is_some()
        && find(&merged["spec"]["containers"], PROXY).is_some()
    {
        if let Some(proxy) = take(&mut merged["spec"]["containers"], PROXY) {
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
            if let (Some(mut own), Some(target)) =
                (own.cloned(), find_mut(&mut merged["spec"][list], name))
            {
                // `image: auto` asks for the image Istio renders.
                if own["image"] == "auto" {
                    if let Some(members) = own.as_object_mut() {
                        members.remove("image");
                    }
                }
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

/// `injectRequired` with the default policy `enabled`, as `release` reads
/// the Pod.
pub fn inject_required(pod: &Value, release: Release) -> bool {
    if pod["spec"]["hostNetwork"] == true {
        return false;
    }
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    if IGNORED_NAMESPACES.contains(&namespace) {
        return false;
    }
    let label = pod["metadata"]["labels"]
        .get(INJECT)
        .and_then(Value::as_str);
    let selector = label
        .or_else(|| annotation(pod, INJECT))
        .unwrap_or_default();
    match release {
        Release::V1_27 => selector != "false",
        Release::V1_24 => matches!(
            selector.to_lowercase().as_str(),
            "" | "y" | "yes" | "true" | "on"
        ),
    }
}

/// Whether the template renders the proxy as a native sidecar.
pub fn renders_native(pod: &Value, mesh: Mesh) -> bool {
    let asked = annotation(pod, NATIVE);
    match mesh.release {
        // `ne (annotation | default flag) "false"`: `default` takes the
        // flag for an empty value too.
        Release::V1_27 => match asked {
            None | Some("") => mesh.native_flag,
            Some(value) => value != "false",
        },
        // `or (and (not isset) flag) (eq annotation "true")`.
        Release::V1_24 => match asked {
            None => mesh.native_flag,
            Some(value) => value == "true",
        },
    }
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

/// What Istio's template renders for a Pod: its init container, and the
/// proxy in classic or native form, with their volumes; the proxy's
/// `PROXY_CONFIG` is the Pod's `proxy.istio.io/config` as JSON (over an
/// empty mesh default), `{}` without one or when it does not parse.
fn render(mesh: Mesh, native: bool, proxy_config: Option<&str>) -> Value {
    let istio = rendered();
    let mut init = istio.init.clone();
    if mesh.cni {
        init["name"] = Value::from(VALIDATION);
    }
    let mut proxy = if native {
        istio.native_proxy.clone()
    } else {
        istio.classic_proxy.clone()
    };
    let config = proxy_config
        .and_then(|text| serde_yaml::from_str::<Value>(text).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    if let Some(env) = proxy["env"].as_array_mut() {
        for var in env.iter_mut().filter(|v| v["name"] == "PROXY_CONFIG") {
            var["value"] = Value::from(format!("{config}\n"));
        }
    }
    let (init_containers, containers) = if native {
        (vec![init, proxy], vec![])
    } else {
        (vec![init], vec![proxy])
    };
    json!({"spec": {
        "initContainers": init_containers,
        "containers": containers,
        "volumes": istio.volumes,
    }})
}

/// The proxy config Istio gave the Pod's proxy at injection (its
/// `PROXY_CONFIG`), if the Pod has an injected proxy.
pub fn injected_proxy_config(pod: &Value) -> Option<Value> {
    let proxy = ["containers", "initContainers"]
        .iter()
        .find_map(|list| find(&pod["spec"][*list], PROXY))?;
    let var = items(&proxy["env"])
        .iter()
        .find(|v| v["name"] == "PROXY_CONFIG")?;
    serde_json::from_str(var["value"].as_str()?).ok()
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
/// `istio-init`, `istio-validation`, the proxy, `enable-core-dump`, then
/// the rest of the init containers (so that they run inside the mesh);
/// else `istio-validation` first, `istio-init` then `enable-core-dump`
/// last.
fn reorder(pod: &mut Value) {
    if let Some(proxy) = take(&mut pod["spec"]["containers"], PROXY) {
        push(&mut pod["spec"], "containers", proxy);
    }
    let init = &mut pod["spec"]["initContainers"];
    if find(init, PROXY).is_some() {
        for name in [CORE_DUMP, PROXY, VALIDATION, INIT] {
            move_first(init, name);
        }
    } else {
        move_first(init, VALIDATION);
        for name in [INIT, CORE_DUMP] {
            if let Some(c) = take(init, name) {
                if let Some(items) = init.as_array_mut() {
                    items.push(c);
                }
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
/// merged member by member, lists of named items (`env`, the containers)
/// item by item by name, other lists replaced.
fn overlay(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => overlay(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(base), Value::Array(over)) if named(base) && named(over) => {
            for item in over {
                match base.iter_mut().find(|b| b["name"] == item["name"]) {
                    Some(existing) => overlay(existing, item),
                    None => base.push(item.clone()),
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

fn named(items: &[Value]) -> bool {
    items.iter().all(|i| i["name"].is_string())
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
        json!({"kind": "Pod", "metadata": {"namespace": "batch", "annotations": annotations, "labels": labels},
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

    const fn mesh(native_flag: bool, release: Release) -> Mesh {
        Mesh {
            native_flag,
            cni: false,
            release,
        }
    }

    const ON: Mesh = mesh(true, Release::V1_27);
    const OFF: Mesh = mesh(false, Release::V1_27);

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

    /// `sidecar.istio.io/nativeSidecar` as each release's template reads it.
    #[test]
    fn the_native_annotation_by_release() {
        let cases = [
            // (annotation, flag, native since 1.27, native up to 1.26)
            (None, false, false, false),
            (None, true, true, true),
            (Some("true"), false, true, true),
            (Some("false"), true, false, false),
            (Some("True"), false, true, false),
            (Some("yes"), false, true, false),
            (Some(""), true, true, false),
            (Some(""), false, false, false),
            (Some("False"), false, true, false),
        ];
        for (value, flag, since_127, up_to_126) in cases {
            let annotations = value.map_or(json!({}), |v| json!({ NATIVE: v }));
            let p = pod(annotations, json!({}), app());
            assert_eq!(
                renders_native(&p, mesh(flag, Release::V1_27)),
                since_127,
                "{value:?} {flag} 1.27"
            );
            assert_eq!(
                renders_native(&p, mesh(flag, Release::V1_24)),
                up_to_126,
                "{value:?} {flag} 1.24"
            );
        }
    }

    #[test]
    fn who_is_injected() {
        // (annotations, labels, namespace, injected since 1.27, up to 1.26)
        let cases = [
            (json!({}), json!({}), Namespace::Enabled, true, true),
            (json!({}), json!({}), Namespace::Unlabelled, false, false),
            (
                json!({}),
                json!({INJECT: "true"}),
                Namespace::Unlabelled,
                true,
                true,
            ),
            (
                json!({}),
                json!({INJECT: "true"}),
                Namespace::Disabled,
                false,
                false,
            ),
            (
                json!({INJECT: "false"}),
                json!({}),
                Namespace::Enabled,
                false,
                false,
            ),
            // The label, present even empty, wins over the annotation.
            (
                json!({INJECT: "false"}),
                json!({INJECT: ""}),
                Namespace::Enabled,
                true,
                true,
            ),
            // Only the exact strings count since Istio 1.27; up to 1.26
            // the value is lower-cased and only YAML 1.1's true injects.
            (
                json!({}),
                json!({INJECT: "False"}),
                Namespace::Enabled,
                true,
                false,
            ),
            (
                json!({INJECT: "no"}),
                json!({}),
                Namespace::Enabled,
                true,
                false,
            ),
            (
                json!({INJECT: "Yes"}),
                json!({}),
                Namespace::Enabled,
                true,
                true,
            ),
        ];
        for (annotations, labels, namespace, since_127, up_to_126) in cases {
            let p = pod(annotations.clone(), labels.clone(), app());
            for (release, injected) in [(Release::V1_27, since_127), (Release::V1_24, up_to_126)] {
                let out = inject(&p, namespace, mesh(false, release)).unwrap();
                assert_eq!(
                    out != p,
                    injected,
                    "{annotations} {labels} {namespace:?} {release:?}"
                );
            }
        }
        let mut host = pod(json!({}), json!({}), app());
        host["spec"]["hostNetwork"] = json!(true);
        assert_eq!(inject(&host, Namespace::Enabled, OFF).unwrap(), host);
        for namespace in IGNORED_NAMESPACES {
            let mut system = pod(json!({}), json!({INJECT: "true"}), app());
            system["metadata"]["namespace"] = json!(namespace);
            for release in Release::ALL {
                let m = mesh(false, release);
                assert_eq!(inject(&system, Namespace::Enabled, m).unwrap(), system);
            }
        }
    }

    #[test]
    fn an_injected_pod_is_injected_again_from_its_status() {
        let plain = pod(json!({}), json!({}), app());
        let once = inject(&plain, Namespace::Enabled, OFF).unwrap();
        let twice = inject(&once, Namespace::Enabled, OFF).unwrap();
        assert_eq!(twice, once);
        // Re-injected natively when the pod now asks for it: the classic
        // proxy moves.
        let mut asking = once.clone();
        asking["metadata"]["annotations"][NATIVE] = json!("true");
        let native = inject(&asking, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            where_is_the_proxy(&native),
            (vec![INIT.into(), PROXY.into()], vec!["app".into()])
        );
    }

    /// The merge is onto the Pod as it came: a native proxy rendered
    /// classic again is in both lists, which the API server rejects.
    #[test]
    fn a_native_proxy_rendered_classic_is_there_twice() {
        let plain = pod(json!({}), json!({}), app());
        let native = inject(&plain, Namespace::Enabled, ON).unwrap();
        let again = inject(&native, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            where_is_the_proxy(&again),
            (
                vec![INIT.into(), PROXY.into()],
                vec!["app".into(), PROXY.into()]
            )
        );
        // Rendered native again, it merges onto itself.
        assert_eq!(inject(&native, Namespace::Enabled, ON).unwrap(), native);
    }

    #[test]
    fn native_order_puts_the_users_init_containers_in_the_mesh() {
        let mut p = pod(json!({}), json!({}), app());
        p["spec"]["initContainers"] = json!([{"name": "db-migrate"}, {"name": CORE_DUMP}]);
        let native = inject(&p, Namespace::Enabled, ON).unwrap();
        assert_eq!(
            names(&native["spec"]["initContainers"]),
            vec![INIT, PROXY, CORE_DUMP, "db-migrate"]
        );
        let classic = inject(&p, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            names(&classic["spec"]["initContainers"]),
            vec!["db-migrate", INIT, CORE_DUMP]
        );
    }

    #[test]
    fn the_proxy_gets_the_config_the_pod_had_at_injection() {
        let p = pod(
            json!({PROXY_CONFIG: "holdApplicationUntilProxyStarts: true\nexitOnJobCompletion: true\n"}),
            json!({}),
            app(),
        );
        let injected = inject(&p, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            injected_proxy_config(&injected),
            Some(json!({"holdApplicationUntilProxyStarts": true, "exitOnJobCompletion": true}))
        );
        let plain = inject(&pod(json!({}), json!({}), app()), Namespace::Enabled, OFF).unwrap();
        assert_eq!(injected_proxy_config(&plain), Some(json!({})));
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
        let env = items(&proxy["env"]);
        assert!(env.contains(&json!({"name": "X", "value": "1"})), "{env:?}");
        assert!(env.iter().any(|v| v["name"] == "PROXY_CONFIG"), "{env:?}");
        assert_eq!(proxy["image"], rendered().native_proxy["image"]);
        assert_eq!(names(&native["spec"]["containers"]), vec!["app".to_owned()]);
    }
}
