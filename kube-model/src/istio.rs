//! A model of Istio's sidecar injector (the default revision) and of what
//! pilot-agent reads of the Pod it runs in, written from Istio's source
//! (istio/istio at commit 86c9f01, 2026-08-22, the tree of 1.28+, and read
//! again at branch `release-1.31`, a8d70121, 2026-08-20, which differs from
//! 1.30.3 and from 86c9f01 in nothing modelled here; where 1.24-1.26
//! differ, `Release` says how): for the Pod hop of a journey, the Pod the
//! API server stores once Istio's webhook has mutated it. Not modelled:
//! 1.31's refusal of a Pod whose `prometheus.io/port` (or
//! `prometheus.istio.io/scrape-targets`) names no port, the agent's port or
//! one Istio reserves (`applyPrometheusMerge`, `webhook.go`).
//!
//! This is a second, independent statement of Istio's rules: it spells
//! every name and list itself and shares nothing with the policy crate,
//! so that a wrong name or list in one of them fails the test that
//! compares the two (`tests/model_agreement.rs`) instead of moving both.
//!
//! - Which Pods the webhook is called for: the `istio-sidecar-injector`
//!   MutatingWebhookConfiguration of the default revision
//!   (`manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml`):
//!   in a namespace labelled `istio-injection=enabled`, every Pod not
//!   labelled `sidecar.istio.io/inject=false`; in a namespace without that
//!   label, only Pods labelled `sidecar.istio.io/inject=true`, or labelled
//!   `istio.io/rev` (a revision or tag that is installed: its own
//!   `rev.object.` webhook, unless the Pod is labelled
//!   `sidecar.istio.io/inject=false`); never in a namespace labelled
//!   `istio-injection=disabled`. A namespace labelled `istio.io/rev` is out
//!   of scope.
//! - Whether it injects (`pkg/kube/inject/webhook.go`, `Webhook.inject`,
//!   which calls `injectRequired(IgnoredNamespaces.UnsortedList(), ...)`
//!   of `inject.go` on the Pod, its namespace the request's when the Pod
//!   names none): first never a `hostNetwork` Pod, then never a Pod of
//!   `IgnoredNamespaces` (`initializer.go`: `kube-system`, `kube-public`,
//!   `kube-node-lease`, `local-path-storage`, from
//!   `pkg/config/constants`); then the label `sidecar.istio.io/inject`
//!   when present (even empty), else the annotation. Since 1.27 only the
//!   exact `"true"` and `"false"` decide and any other value leaves it to
//!   the default policy (`enabled`); up to 1.26 the value is lower-cased,
//!   `y`, `yes`, `true` and `on` inject, `""` leaves it to the default
//!   policy and any other value does not inject (`Release`).
//! - What it refuses (`inject.go` `RunTemplate` calls `validateAnnotations`,
//!   `validate.go`): a `status.sidecar.istio.io/port` that is no port
//!   (`validateStatusPort`: `strconv.ParseUint` of the trimmed value, 16
//!   bits), a `proxy.istio.io/config` that is no proxy config
//!   (`validateProxyConfig`: YAML of a mapping; unknown keys are dropped,
//!   `protomarshal.ApplyYAML`). The webhook fails closed: the Pod is
//!   refused (`Err`).
//! - The form (`injection-template.yaml`): since 1.27 native unless
//!   `sidecar.istio.io/nativeSidecar`, or the mesh flag when it is absent
//!   or empty, says `"false"`; up to 1.26 native only for the exact
//!   `"true"`, or the flag when the annotation is absent.
//! - The status port (`injection-template.yaml`: `annotation .ObjectMeta
//!   "status.sidecar.istio.io/port" .Values.global.proxy.statusPort`, 15020
//!   by default): `istio-init` excludes it from capture (`-d
//!   15090,15021,<port>`, `excludeInboundPort` in `template.go`: nothing
//!   added for `0`); the native proxy's `preStop` drains through it
//!   (`pilot-agent request --debug-port=<port> POST drain`); with `"0"` the
//!   proxy has no readiness and no startup probe. The template passes no
//!   `--statusPort` argument: pilot-agent reads the port from the Pod's
//!   annotations itself (`agent_status_port`).
//! - `holdApplicationUntilProxyStarts` (`hold_application`): from the
//!   Pod's `proxy.istio.io/config` merged over the mesh's `defaultConfig`
//!   (`mesh.ApplyProxyConfig`). The template gives a classic proxy the
//!   `postStart` hook `pilot-agent wait` (`$holdProxy`, not in native form),
//!   and `reorderPod` (`webhook.go`) moves the proxy first among the
//!   containers (`MoveFirst`), last without it (`MoveLast`).
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
//!   applied over what was rendered (an injection customization). Then
//!   `reorderPod`: the proxy first (hold) or last among the containers; in
//!   native form the init containers are ordered `istio-init`,
//!   `istio-validation`, the proxy, `enable-core-dump`, then the rest; else
//!   `istio-validation` first and `istio-init`, `enable-core-dump` last. A
//!   new status names what the template injected.
//! - The proxy carries the Pod's `proxy.istio.io/config` as Istio read it
//!   at injection, in its `PROXY_CONFIG` environment variable. pilot-agent
//!   reads the annotation again when it starts (`pilot/cmd/pilot-agent/
//!   config/config.go`, `ConstructProxyConfig`: `/etc/istio/pod/annotations`
//!   from the `istio-podinfo` Downward API volume, applied last over
//!   `PROXY_CONFIG`), so a key written after injection still reaches a proxy
//!   that mounts that volume; the injector's decisions (form, order, hold's
//!   `postStart`) were taken on the annotation as it stood at injection.
//!
//! - Which templates (`inject.go`, `selectTemplates`, `RunTemplate`;
//!   1.24 to 1.31 alike): `inject.istio.io/templates` when the Pod has it,
//!   split at commas and trimmed, else the mesh's `defaultTemplates`
//!   (`sidecar` when it sets none); a name the injector lacks fails the
//!   Pod. Each is merged in turn onto the Pod as it came and onto the
//!   template Pod the earlier ones made, whose names the status lists;
//!   the classic proxy moves before each merge when native is asked and
//!   the template Pod so far has the proxy in `initContainers`. Three
//!   templates: `sidecar`; `custom`, istio.io's example ("Custom
//!   templates"), a patch of `containers[name=istio-proxy]` (an env var,
//!   a volume mount) and a volume, with no native branch, so that after a
//!   native `sidecar` it leaves a partial proxy (no image) in `containers`
//!   beside the native one and the status names the proxy in both lists
//!   (`sidecar-spire.yaml.injected` from 1.27.0): the API server refuses
//!   that Pod; and `grpc-agent` (`files/grpc-agent.yaml`), the agent in
//!   `containers` whatever the Pod asks. Left out: template aliases, a
//!   template's metadata, templates that range over the Pod's containers
//!   (`custom-template.iop.yaml`), and the strategic merge beyond
//!   containers by name and volumes added by name.
//!
//! The containers the template renders are Istio's own, taken from
//! `istioctl kube-inject` output (`test_data/fixtures/`, rendered with the
//! default status port and without hold) and changed as the template
//! changes them for the Pod's status port and hold.

use crate::go_yaml;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// `sidecar.istio.io/inject`: a label (istio/api `label/labels.gen.go`,
/// `SidecarInject`) and a deprecated annotation of the same name
/// (`annotation/annotations.gen.go`, `SidecarInject`).
pub const INJECT: &str = "sidecar.istio.io/inject";
/// istio/api `annotation/annotations.gen.go`, `SidecarNativeSidecar`
/// (since 1.24).
pub const NATIVE_SIDECAR: &str = "sidecar.istio.io/nativeSidecar";
/// istio/api `annotation/annotations.gen.go`, `ProxyConfig`.
pub const PROXY_CONFIG: &str = "proxy.istio.io/config";
/// istio/api `annotation/annotations.gen.go`, `SidecarStatus`.
pub const STATUS: &str = "sidecar.istio.io/status";
/// istio/api `annotation/annotations.gen.go`, `SidecarStatusPort`.
pub const STATUS_PORT: &str = "status.sidecar.istio.io/port";
/// The ProxyConfig field (istio/api `mesh/v1alpha1/proxy.proto`,
/// `hold_application_until_proxy_starts`, a `BoolValue`) in its JSON name.
pub const HOLD_APPLICATION: &str = "holdApplicationUntilProxyStarts";
/// The mesh's status port (`values.global.proxy.statusPort` in
/// `manifests/charts/istio-control/istio-discovery/values.yaml`, and
/// `mesh.DefaultProxyConfig`'s `StatusPort`).
pub const DEFAULT_STATUS_PORT: u16 = 15020;
/// The port of the proxy's readiness and startup probes (Envoy's health
/// listener, fixed in `injection-template.yaml`).
pub const HEALTH_PORT: u16 = 15021;

pub const PROXY: &str = "istio-proxy";
pub const INIT: &str = "istio-init";
pub const VALIDATION: &str = "istio-validation";
/// The init container of `values.global.proxy.enableCoreDump`.
pub const CORE_DUMP: &str = "enable-core-dump";

/// istio/api `annotation/annotations.gen.go`, `InjectTemplates`: the
/// templates the injector renders for the Pod, comma-separated.
pub const TEMPLATES: &str = "inject.istio.io/templates";
/// Istio's own template (`files/injection-template.yaml`).
pub const SIDECAR_TEMPLATE: &str = "sidecar";
/// A custom template as istio.io's "Custom templates (experimental)"
/// installs one (`values.sidecarInjectorWebhook.templates.custom`): a patch
/// of `containers[name=istio-proxy]` only, with no native branch
/// (`custom_template`).
pub const CUSTOM_TEMPLATE: &str = "custom";
/// Istio's proxyless gRPC template (`files/grpc-agent.yaml`): the agent in
/// `containers`, whatever the Pod asks.
pub const GRPC_AGENT_TEMPLATE: &str = "grpc-agent";
/// The templates the model's injector knows, in the order its error lists
/// them (Istio lists its map's keys in no order).
pub const KNOWN_TEMPLATES: [&str; 3] = [SIDECAR_TEMPLATE, CUSTOM_TEMPLATE, GRPC_AGENT_TEMPLATE];
/// What the custom template adds to `istio-proxy`: istio.io's example
/// variable, and a volume mounted from a volume of its own (the shape of
/// Istio's `spire-template.iop.yaml` fixture, under a name no other
/// template renders).
pub const CUSTOM_ENV: &str = "GREETING";
pub const CUSTOM_VOLUME: &str = "custom-data";
/// The injector's `defaultTemplates` when the mesh sets none
/// (`inject.go`, `UnmarshalConfig`: an empty list is `sidecar`).
pub const DEFAULT_TEMPLATES: &[&str] = &[SIDECAR_TEMPLATE];

/// Namespaces Istio's injector never injects, whatever they are labelled
/// (`pkg/kube/inject/initializer.go`, `IgnoredNamespaces`, from
/// `pkg/config/constants`: `KubeSystemNamespace`, `KubePublicNamespace`,
/// `KubeNodeLeaseNamespace`, `LocalPathStorageNamespace`).
pub const IGNORED_NAMESPACES: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

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
    /// `meshConfig.defaultConfig.holdApplicationUntilProxyStarts`: what a
    /// Pod's `proxy.istio.io/config` does not set itself
    /// (`hold_application`).
    pub hold_application: bool,
    /// The injector's `defaultTemplates` (`values.sidecarInjectorWebhook.defaultTemplates`),
    /// what a Pod without `inject.istio.io/templates` gets.
    pub default_templates: &'static [&'static str],
}

impl Mesh {
    /// Istio's defaults of `release`: native sidecars off, no CNI, no hold.
    pub const fn default_of(release: Release) -> Mesh {
        Mesh {
            native_flag: false,
            cni: false,
            release,
            hold_application: false,
            default_templates: DEFAULT_TEMPLATES,
        }
    }
}

/// The Pod after Istio's webhook, or the Pod as it was when Istio does
/// not inject it. An error is Istio refusing the Pod (its webhook fails
/// closed).
pub fn inject(pod: &Value, namespace: Namespace, mesh: Mesh) -> Result<Value, String> {
    if !webhook_called(pod, namespace) || !inject_required(pod, mesh.release) {
        return Ok(pod.clone());
    }
    validate_annotations(pod)?;
    let input = Input {
        native: renders_native(pod, mesh),
        hold: hold_application(pod, mesh)?,
        status_port: annotation(pod, STATUS_PORT).unwrap_or("15020"),
        proxy_config: annotation(pod, PROXY_CONFIG),
    };
    // Each template is rendered from the stripped Pod; here it depends on
    // the mesh, the form, the status port, hold and the proxy config.
    let names = templates(pod, mesh);
    let mut rendered = Vec::new();
    for name in &names {
        rendered.push(render_template(name, mesh, &input)?);
    }
    let (mut merged, template) = run_template(pod, &rendered, mesh);
    reapply_overwritten_containers(&mut merged, pod, &template);
    post_process(
        &mut merged,
        &template,
        input.hold,
        names.iter().any(|n| n == SIDECAR_TEMPLATE),
    );
    Ok(merged)
}

/// The templates the injector renders for `pod`, in order (`inject.go`,
/// `selectTemplates`): `inject.istio.io/templates` when the Pod has it
/// (even empty), split at commas, each name trimmed (`strings.TrimSpace`);
/// else the mesh's `defaultTemplates`. Istio's aliases are left out.
pub fn templates(pod: &Value, mesh: Mesh) -> Vec<String> {
    match annotation(pod, TEMPLATES) {
        Some(value) => value.split(',').map(|n| n.trim().to_owned()).collect(),
        None => mesh
            .default_templates
            .iter()
            .map(|n| (*n).to_owned())
            .collect(),
    }
}

/// The Pod label that picks a revision (or a revision tag) of Istio.
pub const REVISION: &str = "istio.io/rev";

/// Whether the webhooks of the default revision, or of the revision the
/// Pod's `istio.io/rev` names (installed), are called for `pod`.
pub fn webhook_called(pod: &Value, namespace: Namespace) -> bool {
    let labels = &pod["metadata"]["labels"];
    let label = labels[INJECT].as_str();
    match namespace {
        Namespace::Enabled => label != Some("false"),
        // `object.`: inject "true" without a revision label; `rev.object.`:
        // a revision label, and not inject "false".
        Namespace::Unlabelled => {
            label == Some("true") || (labels.get(REVISION).is_some() && label != Some("false"))
        }
        Namespace::Disabled => false,
    }
}

/// `injectRequired` with the default policy `enabled`, as `release` reads
/// the Pod, in its order: `hostNetwork` first, then the namespace (the
/// Pod's own; the webhook gives a Pod without one the request's, and the
/// journeys' Pods always name theirs), then the selector.
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
    let asked = annotation(pod, NATIVE_SIDECAR);
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

/// `holdApplicationUntilProxyStarts` for `pod`: its `proxy.istio.io/config`
/// merged over the mesh's default config (`mesh.ApplyProxyConfig`, read
/// by `reorderPod` and by the template's `.ProxyConfig`): the Pod's own
/// value when it sets one, else the mesh's. An error is a config Istio
/// cannot apply (a value that is no boolean: the field is a `BoolValue`).
pub fn hold_application(pod: &Value, mesh: Mesh) -> Result<bool, String> {
    let config = proxy_config(pod)?;
    match config.get(HOLD_APPLICATION) {
        None | Some(Value::Null) => Ok(mesh.hold_application),
        Some(Value::Bool(hold)) => Ok(*hold),
        Some(other) => Err(format!(
            "invalid value '{other}' for {HOLD_APPLICATION} in annotation '{PROXY_CONFIG}'"
        )),
    }
}

/// The port pilot-agent serves its status server (and `/quitquitquit`,
/// and the `drain` the native `preStop` asks) on, in the Pod as it runs:
/// `status.sidecar.istio.io/port` when the Pod has it (read from the
/// Downward API's annotations file with `strconv.Atoi`, 0 on an error:
/// `pilot/cmd/pilot-agent/config/config.go`, `applyAnnotations`), else the
/// mesh's 15020. `None`: no status server (`0`, or no port at all).
pub fn agent_status_port(pod: &Value) -> Option<u16> {
    let Some(text) = annotation(pod, STATUS_PORT) else {
        return Some(DEFAULT_STATUS_PORT);
    };
    // Go's Atoi: an optional sign, then decimal digits only.
    let digits = text.strip_prefix('+').unwrap_or(text);
    let port = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<u64>().unwrap_or(0)
    } else {
        0
    };
    u16::try_from(port).ok().filter(|p| *p != 0)
}

/// `validateAnnotations` (`validate.go`) for the annotations the model
/// reads: the status port and the proxy config.
fn validate_annotations(pod: &Value) -> Result<(), String> {
    if let Some(port) = annotation(pod, STATUS_PORT) {
        if port.trim().parse::<u16>().is_err() {
            return Err(format!(
                "invalid value '{port}' for annotation '{STATUS_PORT}': failed parsing port"
            ));
        }
    }
    proxy_config(pod).map(|_| ())
}

/// The Pod's `proxy.istio.io/config` as a JSON object (`{}` without one),
/// read as Istio reads it (`go_yaml`: YAML 1.1 words, merge keys, the later
/// of two equal keys); an error when it is no YAML mapping.
fn proxy_config(pod: &Value) -> Result<Map<String, Value>, String> {
    let Some(text) = annotation(pod, PROXY_CONFIG).filter(|t| !t.trim().is_empty()) else {
        return Ok(Map::new());
    };
    match go_yaml::yaml_to_json(text) {
        Ok(Value::Object(config)) => Ok(config),
        Ok(Value::Null) => Ok(Map::new()),
        _ => Err(format!(
            "invalid value for annotation '{PROXY_CONFIG}': could not parse proxy config"
        )),
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

/// What the template reads of the Pod.
struct Input<'p> {
    native: bool,
    hold: bool,
    /// The annotation's text as the template writes it, or the mesh's.
    status_port: &'p str,
    proxy_config: Option<&'p str>,
}

/// What Istio's template renders for a Pod: its init container, and the
/// proxy in classic or native form, with their volumes; the proxy's
/// `PROXY_CONFIG` is the Pod's `proxy.istio.io/config` as JSON (over an
/// empty mesh default), `{}` without one.
fn render(mesh: Mesh, input: &Input) -> Value {
    let istio = rendered();
    let mut init = istio.init.clone();
    if mesh.cni {
        init["name"] = Value::from(VALIDATION);
    }
    // `-d 15090,15021,<excludeInboundPort statusPort "">`.
    let port = input.status_port.trim();
    let excluded = if port.is_empty() || port == "0" {
        "15090,15021".to_owned()
    } else {
        format!("15090,15021,{port}")
    };
    if let Some(args) = init["args"].as_array_mut() {
        if let Some(i) = args.iter().position(|a| a == "-d") {
            if let Some(ports) = args.get_mut(i + 1) {
                *ports = Value::from(excluded);
            }
        }
    }
    let mut proxy = if input.native {
        istio.native_proxy.clone()
    } else {
        istio.classic_proxy.clone()
    };
    if let Some(members) = proxy.as_object_mut() {
        // `lifecycle`: `pilot-agent wait` for a held classic proxy, the
        // drain through the status port for a native one.
        members.remove("lifecycle");
        if input.hold && !input.native {
            members.insert(
                "lifecycle".into(),
                json!({"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}),
            );
        } else if input.native {
            let debug_port = format!("--debug-port={}", input.status_port);
            members.insert(
                "lifecycle".into(),
                json!({"preStop": {"exec": {"command": ["pilot-agent", "request", debug_port, "POST", "drain"]}}}),
            );
        }
        // No status server, no probes (`ne statusPort "0"`, exact).
        if input.status_port == "0" {
            members.remove("readinessProbe");
            members.remove("startupProbe");
        }
    }
    if let Some(env) = proxy["env"].as_array_mut() {
        for var in env.iter_mut().filter(|v| v["name"] == "PROXY_CONFIG") {
            var["value"] = Value::from(proxy_config_env(input));
        }
    }
    let (init_containers, containers) = if input.native {
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

/// The template `name` rendered for the Pod (`RunTemplate`: a template
/// the injector does not have is an error, and the webhook, failing
/// closed, refuses the Pod).
fn render_template(name: &str, mesh: Mesh, input: &Input) -> Result<Value, String> {
    match name {
        SIDECAR_TEMPLATE => Ok(render(mesh, input)),
        CUSTOM_TEMPLATE => Ok(custom_template()),
        GRPC_AGENT_TEMPLATE => Ok(grpc_agent(input)),
        _ => Err(format!(
            "failed to run injection template: requested template {name:?} not found; have {}",
            KNOWN_TEMPLATES.join(", ")
        )),
    }
}

/// istio.io's custom template ("Sidecar injection", "Custom templates
/// (experimental)": `spec.containers[name=istio-proxy].env` `GREETING`),
/// with a volume mount and its volume in the shape of Istio's
/// `spire-template.iop.yaml` (`pkg/kube/inject/testdata/inject/`). Like
/// both, it patches `containers` whatever the form: it has no native
/// branch.
fn custom_template() -> Value {
    json!({"spec": {
        "containers": [{
            "name": PROXY,
            "env": [{"name": CUSTOM_ENV, "value": "hello-world"}],
            "volumeMounts": [{"name": CUSTOM_VOLUME, "mountPath": "/var/lib/custom", "readOnly": true}],
        }],
        "volumes": [{"name": CUSTOM_VOLUME, "emptyDir": {}}],
    }})
}

/// `files/grpc-agent.yaml`, as far as the model goes: the agent, named
/// `istio-proxy`, in `containers` (pilot-agent `proxy sidecar` with
/// `DISABLE_ENVOY`), its readiness on 15020 unless the status port is
/// `"0"`, no init container and no native branch; its metadata (no
/// `security.istio.io/tlsMode`) left out.
fn grpc_agent(input: &Input) -> Value {
    let istio = rendered();
    let mut agent = json!({
        "name": PROXY,
        "image": istio.classic_proxy["image"],
        "args": ["proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"],
        "ports": [{"containerPort": 15020, "protocol": "TCP", "name": "mesh-metrics"}],
        "env": [
            {"name": "PROXY_CONFIG", "value": proxy_config_env(input)},
            {"name": "ISTIO_META_DNS_CAPTURE", "value": "false"},
            {"name": "DISABLE_ENVOY", "value": "true"},
        ],
    });
    if input.status_port != "0" {
        agent["readinessProbe"] = json!({
            "httpGet": {"path": "/healthz/ready", "port": 15020},
            "initialDelaySeconds": 0, "periodSeconds": 15, "timeoutSeconds": 3, "failureThreshold": 4,
        });
    }
    json!({"spec": {"containers": [agent], "volumes": istio.volumes}})
}

/// The proxy's `PROXY_CONFIG`: the Pod's `proxy.istio.io/config` as JSON
/// (over an empty mesh default), `{}` without one.
fn proxy_config_env(input: &Input) -> String {
    let config = input
        .proxy_config
        .and_then(|text| go_yaml::yaml_to_json(text).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    format!("{config}\n")
}

/// `RunTemplate` (`inject.go`, 1.24 to 1.31 alike but for where the flag
/// comes from): the templates applied in turn, each a strategic merge onto
/// the Pod as it came (`mergedPod = params.pod`) and onto the template Pod
/// the earlier ones made. Before each merge, a classic proxy the merged Pod
/// has in `containers` moves to `initContainers` when native is asked
/// (`moveContainer`: only the exact strings override the flag) and the
/// template Pod so far has the proxy there. So a second template that
/// patches `containers[name=istio-proxy]`, after `sidecar` rendered native,
/// finds nothing to move and adds a partial proxy (no image) beside the
/// native one; the template Pod, whose names make the status, has it in
/// both lists (`sidecar-spire.yaml.injected`, from 1.27.0). The merged Pod
/// and the template Pod.
fn run_template(pod: &Value, templates: &[Value], mesh: Mesh) -> (Value, Value) {
    let move_native = match annotation(pod, NATIVE_SIDECAR) {
        Some("true") => true,
        Some("false") => false,
        _ => mesh.native_flag,
    };
    let mut merged = pod.clone();
    let mut template_pod = json!({"spec": {}});
    for template in templates {
        merge_pod(&mut template_pod, template);
        if move_native
            && find(&template_pod["spec"]["initContainers"], PROXY).is_some()
            && find(&merged["spec"]["containers"], PROXY).is_some()
        {
            if let Some(proxy) = take(&mut merged["spec"]["containers"], PROXY) {
                push(&mut merged["spec"], "initContainers", proxy);
            }
        }
        merge_pod(&mut merged, template);
    }
    (merged, template_pod)
}

/// A template's strategic merge onto a Pod, as far as the model goes: its
/// containers merged by name into the list it puts them in (appended when
/// new), its volumes added when the Pod has none of that name.
fn merge_pod(pod: &mut Value, template: &Value) {
    for list in ["initContainers", "containers"] {
        for container in items(&template["spec"][list]) {
            let name = container["name"].as_str().unwrap_or_default();
            match find_mut(&mut pod["spec"][list], name) {
                Some(existing) => overlay(existing, container),
                None => push(&mut pod["spec"], list, container.clone()),
            }
        }
    }
    for volume in items(&template["spec"]["volumes"]) {
        let name = volume["name"].as_str().unwrap_or_default();
        if find(&pod["spec"]["volumes"], name).is_none() {
            push(&mut pod["spec"], "volumes", volume.clone());
        }
    }
}

/// `reapplyOverwrittenContainers`: the Pod's own containers of the
/// template's names, not injected by an earlier pass, are customizations,
/// applied over what was rendered (`image: auto` asks for the image
/// Istio renders).
fn reapply_overwritten_containers(merged: &mut Value, original: &Value, template: &Value) {
    let listed = listed_in_status(original);
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
                if own["image"] == "auto" {
                    if let Some(members) = own.as_object_mut() {
                        members.remove("image");
                    }
                }
                overlay(target, &own);
            }
        }
    }
}

/// `postProcessPod`, as far as the model goes: the new status, the names
/// of what the template Pod holds (`applyMetadata`, `getInjectionStatus`),
/// the revision and, when `sidecar` was rendered, its label, then
/// `reorderPod`.
fn post_process(merged: &mut Value, template: &Value, hold: bool, sidecar: bool) {
    let status = json!({
        // Go's nil slices: `null` for a list the template Pod lacks.
        "initContainers": Some(names(&template["spec"]["initContainers"])).filter(|n| !n.is_empty()),
        "containers": Some(names(&template["spec"]["containers"])).filter(|n| !n.is_empty()),
        "volumes": names(&template["spec"]["volumes"]),
        "imagePullSecrets": null,
        "revision": "default",
    });
    let annotations = metadata_map(merged, "annotations");
    annotations.insert(STATUS.into(), Value::from(status.to_string()));
    annotations.insert("istio.io/rev".into(), Value::from("default"));
    if sidecar {
        let labels = metadata_map(merged, "labels");
        labels
            .entry("security.istio.io/tlsMode")
            .or_insert_with(|| Value::from("istio"));
    }
    reorder_pod(merged, hold);
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
            let job: Value = go_yaml::yaml_to_json(doc).expect("Istio's kube-inject fixture");
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

/// `reorderPod`: the proxy first among the containers when the Pod holds
/// its application until the proxy starts (`MoveFirst`), else last
/// (`MoveLast`); in native form `istio-init`, `istio-validation`, the
/// proxy, `enable-core-dump`, then the rest of the init containers (so
/// that they run inside the mesh); else `istio-validation` first,
/// `istio-init` then `enable-core-dump` last.
fn reorder_pod(pod: &mut Value, hold: bool) {
    if let Some(proxy) = take(&mut pod["spec"]["containers"], PROXY) {
        if hold {
            if let Some(items) = pod["spec"]["containers"].as_array_mut() {
                items.insert(0, proxy);
            }
        } else {
            push(&mut pod["spec"], "containers", proxy);
        }
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
            ..Mesh::default_of(release)
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
        let asked = pod(json!({NATIVE_SIDECAR: "true"}), json!({}), app());
        assert_eq!(
            where_is_the_proxy(&inject(&asked, Namespace::Enabled, OFF).unwrap())
                .0
                .len(),
            2
        );
        let refused = pod(json!({NATIVE_SIDECAR: "false"}), json!({}), app());
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
            let annotations = value.map_or(json!({}), |v| json!({ NATIVE_SIDECAR: v }));
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
            // A revision (or tag) label: that revision's object webhook.
            (
                json!({}),
                json!({REVISION: "canary"}),
                Namespace::Unlabelled,
                true,
                true,
            ),
            (
                json!({}),
                json!({REVISION: "canary", INJECT: "false"}),
                Namespace::Unlabelled,
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
        asking["metadata"]["annotations"][NATIVE_SIDECAR] = json!("true");
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

    fn proxy_of(pod: &Value) -> &Value {
        find(&pod["spec"]["containers"], PROXY)
            .or_else(|| find(&pod["spec"]["initContainers"], PROXY))
            .expect("a proxy")
    }

    /// `holdApplicationUntilProxyStarts`, from the Pod's config or the
    /// mesh's: `reorderPod` moves the proxy first, and the template gives
    /// a classic proxy `pilot-agent wait`; native, neither.
    #[test]
    fn hold_moves_the_proxy_first_and_waits_for_it() {
        let held = pod(
            json!({PROXY_CONFIG: "holdApplicationUntilProxyStarts: true"}),
            json!({}),
            app(),
        );
        let held_by_mesh = Mesh {
            hold_application: true,
            ..OFF
        };
        let plain = pod(json!({}), json!({}), app());
        for (pod, mesh) in [(&held, OFF), (&plain, held_by_mesh)] {
            let classic = inject(pod, Namespace::Enabled, mesh).unwrap();
            assert_eq!(
                where_is_the_proxy(&classic).1,
                vec![PROXY.to_owned(), "app".into()]
            );
            assert_eq!(
                proxy_of(&classic)["lifecycle"],
                json!({"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}})
            );
            // Injected again: still first.
            let again = inject(&classic, Namespace::Enabled, mesh).unwrap();
            assert_eq!(again, classic);
            let native = inject(
                pod,
                Namespace::Enabled,
                Mesh {
                    native_flag: true,
                    ..mesh
                },
            )
            .unwrap();
            assert_eq!(names(&native["spec"]["containers"]), vec!["app"]);
            assert_eq!(
                proxy_of(&native)["lifecycle"]["preStop"]["exec"]["command"][2],
                "--debug-port=15020"
            );
        }
        // The Pod's own false wins over the mesh's true.
        let refused = pod(
            json!({PROXY_CONFIG: "{\"holdApplicationUntilProxyStarts\": false}"}),
            json!({}),
            app(),
        );
        let classic = inject(&refused, Namespace::Enabled, held_by_mesh).unwrap();
        assert_eq!(
            where_is_the_proxy(&classic).1,
            vec!["app".to_owned(), PROXY.into()]
        );
        assert_eq!(proxy_of(&classic)["lifecycle"], Value::Null);
    }

    /// The Pod's status port in what the template renders: the port
    /// `istio-init` leaves uncaptured and the native drain hook's; no
    /// probes for "0".
    #[test]
    fn the_status_port_is_rendered() {
        let custom = pod(json!({STATUS_PORT: "15120"}), json!({}), app());
        let native = inject(&custom, Namespace::Enabled, ON).unwrap();
        let init = find(&native["spec"]["initContainers"], INIT).unwrap();
        let args = items(&init["args"]);
        let d = args.iter().position(|a| a == "-d").unwrap();
        assert_eq!(args[d + 1], "15090,15021,15120");
        assert_eq!(
            proxy_of(&native)["lifecycle"]["preStop"]["exec"]["command"],
            json!([
                "pilot-agent",
                "request",
                "--debug-port=15120",
                "POST",
                "drain"
            ])
        );
        assert_eq!(
            proxy_of(&native)["readinessProbe"]["httpGet"]["port"],
            HEALTH_PORT
        );
        assert_eq!(agent_status_port(&native), Some(15120));
        let none = pod(json!({STATUS_PORT: "0"}), json!({}), app());
        for mesh in [ON, OFF] {
            let injected = inject(&none, Namespace::Enabled, mesh).unwrap();
            let proxy = proxy_of(&injected);
            assert_eq!(proxy["readinessProbe"], Value::Null);
            assert_eq!(proxy["startupProbe"], Value::Null);
            let init = find(&injected["spec"]["initContainers"], INIT).unwrap();
            assert!(items(&init["args"]).contains(&json!("15090,15021")));
            assert_eq!(agent_status_port(&injected), None);
        }
        let plain = inject(&pod(json!({}), json!({}), app()), Namespace::Enabled, ON).unwrap();
        assert_eq!(agent_status_port(&plain), Some(DEFAULT_STATUS_PORT));
        assert_eq!(
            proxy_of(&plain)["lifecycle"]["preStop"]["exec"]["command"][2],
            "--debug-port=15020"
        );
    }

    /// pilot-agent reads the annotation with Go's `strconv.Atoi`: 0 (no
    /// status server) on anything else.
    #[test]
    fn the_agents_status_port() {
        for (value, port) in [
            ("15120", Some(15120)),
            ("+15120", Some(15120)),
            ("015020", Some(15020)),
            ("0", None),
            (" 15120", None),
            ("x", None),
            ("", None),
            ("70000", None),
            ("-1", None),
        ] {
            let p = pod(json!({ STATUS_PORT: value }), json!({}), app());
            assert_eq!(agent_status_port(&p), port, "{value:?}");
        }
    }

    /// `validateAnnotations`: Istio refuses a Pod whose status port or
    /// proxy config it cannot read, and the Pod is not created.
    #[test]
    fn istio_refuses_what_it_cannot_read() {
        for annotations in [
            json!({STATUS_PORT: "x"}),
            json!({STATUS_PORT: "70000"}),
            json!({PROXY_CONFIG: "[1, 2]"}),
            json!({PROXY_CONFIG: "a: [b"}),
            json!({PROXY_CONFIG: "holdApplicationUntilProxyStarts: \"sure\""}),
        ] {
            let p = pod(annotations.clone(), json!({}), app());
            assert!(
                inject(&p, Namespace::Enabled, OFF).is_err(),
                "{annotations}"
            );
            // Not called, or not injecting: nothing is read.
            let mut host = p.clone();
            host["spec"]["hostNetwork"] = json!(true);
            assert_eq!(inject(&host, Namespace::Enabled, OFF), Ok(host));
        }
        let spaced = pod(json!({STATUS_PORT: " 15120 "}), json!({}), app());
        assert!(inject(&spaced, Namespace::Enabled, OFF).is_ok());
    }

    fn with_templates(value: &str) -> Value {
        pod(json!({ TEMPLATES: value }), json!({}), app())
    }

    fn status_of(pod: &Value) -> Value {
        serde_json::from_str(pod["metadata"]["annotations"][STATUS].as_str().unwrap()).unwrap()
    }

    /// Classic, a second template patching `istio-proxy` merges into the
    /// proxy `sidecar` rendered, by name.
    #[test]
    fn a_custom_template_merges_into_the_classic_proxy() {
        let classic = inject(&with_templates("sidecar, custom"), Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            where_is_the_proxy(&classic),
            (vec![INIT.into()], vec!["app".into(), PROXY.into()])
        );
        let proxy = proxy_of(&classic);
        assert!(proxy["image"].is_string());
        assert!(items(&proxy["env"]).iter().any(|v| v["name"] == CUSTOM_ENV));
        assert!(items(&proxy["env"])
            .iter()
            .any(|v| v["name"] == "PROXY_CONFIG"));
        assert!(items(&proxy["volumeMounts"])
            .iter()
            .any(|m| m["name"] == CUSTOM_VOLUME));
        assert!(find(&classic["spec"]["volumes"], CUSTOM_VOLUME).is_some());
        assert_eq!(status_of(&classic)["containers"], json!([PROXY]));
        assert!(crate::kube::validate(&classic).is_ok());
        // Injected again, from its status: the same Pod.
        assert_eq!(inject(&classic, Namespace::Enabled, OFF).unwrap(), classic);
    }

    /// Native, nothing moves: the second template's patch lands in
    /// `containers` as a partial proxy without an image, beside the
    /// native one, and the status names the proxy in both lists (Istio's
    /// `sidecar-spire.yaml.injected`, 1.27.0 to 1.31); the API server
    /// refuses the Pod. Asked by the annotation or the flag alike, in
    /// either release's reading.
    #[test]
    fn a_custom_template_rendered_native_leaves_a_partial_proxy() {
        let asked = pod(
            json!({ TEMPLATES: "sidecar,custom", NATIVE_SIDECAR: "true" }),
            json!({}),
            app(),
        );
        for (p, mesh) in [
            (with_templates("sidecar,custom"), ON),
            (with_templates("sidecar,custom"), mesh(true, Release::V1_24)),
            (asked.clone(), OFF),
            (asked, mesh(false, Release::V1_24)),
        ] {
            let native = inject(&p, Namespace::Enabled, mesh).unwrap();
            assert_eq!(
                where_is_the_proxy(&native),
                (
                    vec![INIT.into(), PROXY.into()],
                    vec!["app".into(), PROXY.into()]
                ),
                "{mesh:?}"
            );
            let partial = find(&native["spec"]["containers"], PROXY).unwrap();
            assert_eq!(partial["image"], Value::Null);
            assert!(items(&partial["env"])
                .iter()
                .all(|v| v["name"] == CUSTOM_ENV));
            let full = find(&native["spec"]["initContainers"], PROXY).unwrap();
            assert_eq!(full["restartPolicy"], "Always");
            assert!(items(&full["env"]).iter().all(|v| v["name"] != CUSTOM_ENV));
            let status = status_of(&native);
            assert_eq!(status["initContainers"], json!([INIT, PROXY]));
            assert_eq!(status["containers"], json!([PROXY]));
            let refused = crate::kube::validate(&native).unwrap_err();
            assert!(
                refused.contains("containers[1].image: Required value"),
                "{refused}"
            );
        }
        // The order matters: `custom` first adds its partial proxy to
        // `containers`, which `sidecar`, rendered native, then moves and
        // merges into: one native proxy, the status naming it in both lists.
        let first = inject(&with_templates("custom,sidecar"), Namespace::Enabled, ON).unwrap();
        assert_eq!(names(&first["spec"]["containers"]), vec!["app"]);
        let proxy = find(&first["spec"]["initContainers"], PROXY).unwrap();
        assert!(items(&proxy["env"]).iter().any(|v| v["name"] == CUSTOM_ENV));
        assert!(proxy["image"].is_string());
        assert_eq!(status_of(&first)["containers"], json!([PROXY]));
        assert!(crate::kube::validate(&first).is_ok());
    }

    /// A classic proxy already in the Pod moves before `sidecar` merges
    /// (the template Pod has the proxy in `initContainers`), but the
    /// second template's patch, after it, finds none left to move.
    #[test]
    fn a_moved_proxy_gets_the_partial_one_beside_it() {
        let classic = inject(&with_templates("sidecar,custom"), Namespace::Enabled, OFF).unwrap();
        let mut asking = classic.clone();
        asking["metadata"]["annotations"][NATIVE_SIDECAR] = json!("true");
        let again = inject(&asking, Namespace::Enabled, OFF).unwrap();
        assert_eq!(
            where_is_the_proxy(&again),
            (
                vec![INIT.into(), PROXY.into()],
                vec!["app".into(), PROXY.into()]
            )
        );
        // The moved proxy kept what `custom` gave it classic; the new
        // partial one has no image.
        let moved = find(&again["spec"]["initContainers"], PROXY).unwrap();
        assert!(items(&moved["env"]).iter().any(|v| v["name"] == CUSTOM_ENV));
        assert_eq!(
            find(&again["spec"]["containers"], PROXY).unwrap()["image"],
            Value::Null
        );
    }

    /// `defaultTemplates` is what a Pod without the annotation gets; the
    /// annotation, even naming `sidecar` alone, wins.
    #[test]
    fn the_mesh_default_templates() {
        let mesh = Mesh {
            default_templates: &[SIDECAR_TEMPLATE, CUSTOM_TEMPLATE],
            ..OFF
        };
        let plain = pod(json!({}), json!({}), app());
        assert_eq!(templates(&plain, OFF), vec![SIDECAR_TEMPLATE]);
        assert_eq!(
            templates(&plain, mesh),
            vec![SIDECAR_TEMPLATE, CUSTOM_TEMPLATE]
        );
        assert_eq!(
            inject(&plain, Namespace::Enabled, mesh).unwrap(),
            inject(&with_templates("sidecar,custom"), Namespace::Enabled, OFF)
                .unwrap()
                .pipe_templates_removed()
        );
        let own = with_templates("sidecar");
        assert_eq!(templates(&own, mesh), vec![SIDECAR_TEMPLATE]);
        assert_eq!(
            templates(&with_templates(" sidecar , grpc-agent"), OFF),
            vec!["sidecar", "grpc-agent"]
        );
    }

    trait TemplatesRemoved {
        fn pipe_templates_removed(self) -> Value;
    }

    impl TemplatesRemoved for Value {
        fn pipe_templates_removed(mut self) -> Value {
            if let Some(a) = self["metadata"]["annotations"].as_object_mut() {
                a.remove(TEMPLATES);
            }
            self
        }
    }

    /// A template the injector does not have: the webhook fails closed.
    #[test]
    fn an_unknown_template_is_refused() {
        for value in ["sidecar,spire", "", "sidecar,"] {
            let refused = inject(&with_templates(value), Namespace::Enabled, OFF).unwrap_err();
            assert!(refused.contains("not found"), "{value:?}: {refused}");
        }
    }

    /// `grpc-agent` has no native branch: its agent is in `containers`
    /// whatever the Pod or the mesh asks, and nothing moves.
    #[test]
    fn grpc_agent_is_never_native() {
        let p = pod(
            json!({ TEMPLATES: "grpc-agent", NATIVE_SIDECAR: "true" }),
            json!({}),
            app(),
        );
        for mesh in [ON, OFF, mesh(true, Release::V1_24)] {
            let agent = inject(&p, Namespace::Enabled, mesh).unwrap();
            assert_eq!(
                where_is_the_proxy(&agent),
                (vec![], vec!["app".into(), PROXY.into()])
            );
            assert_eq!(status_of(&agent)["initContainers"], Value::Null);
            assert_eq!(injected_proxy_config(&agent), Some(json!({})));
            assert!(crate::kube::validate(&agent).is_ok());
        }
    }
}
