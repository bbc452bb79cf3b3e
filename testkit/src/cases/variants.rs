//! The CronJobs x the mode changes start from (the variants: plain, yaml,
//! json, injected, ordered, held, ported, asked, flip), each app container's
//! command full of quoting, how a variant's mode is picked, and which
//! second passes each makes.

use super::json::{strs, Json};
use super::request::{none, settings};
use super::workloads::{
    annotate, annotate_on, cronjob, db_migrate, fixture, pod_name_env, template, CLASSIC_CRONJOB,
    MODE_KEY, NATIVE_KEY, STATUS_PORT,
};

pub(super) const MODES: [&str; 3] = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"];
pub(super) const DISABLED: &str = "disabled";

/// A command and args full of what quoting gets wrong: both quotes, a
/// backslash, Kubernetes' $(VAR) and $$, spaces, newlines, an empty element.
const QUOTING_SCRIPT: &str = concat!(
    "set -eu\n",
    "printf '%s\\n' \"it's $1\" 'say \"hi\"' \"C:\\\\temp\\\\new\" \"cost: $$5\" \\\n",
    "  \"$(POD_NAME)\" '$$(NOT_EXPANDED)'\n",
    "echo \"done: $*\" >&2\n",
);
const QUOTING_ARGS: [&str; 10] = [
    "$(POD_NAME)",
    "$$(NOT_EXPANDED)",
    "cost: $$5",
    "two  words",
    "it's \"quoted\" \\ back\\slash",
    "line one\nline two",
    "",
    "--flag='a b'",
    "\\",
    "tab\there \u{00fc}n\u{00ef}code \u{2713}",
];

/// proxy.istio.io/config as a YAML block (a comment, quoted scalars, a
/// literal block last; the final line break a `|` annotation in a manifest
/// has: without it the policy refuses to add a line after the literal,
/// whose value would gain a line break) and as JSON.
const YAML_PROXY_CONFIG: &str = concat!(
    "# platform defaults: keep\n",
    "holdApplicationUntilProxyStarts: true\n",
    "proxyMetadata:\n",
    "  ISTIO_META_DNS_CAPTURE: \"true\"\n",
    "  GREETING: 'it''s \"quoted\" \\ $$ok'\n",
    "tracing:\n",
    "  sampling: 10\n",
    "  note: |\n",
    "    line one\n",
    "    line two\n",
);
const JSON_PROXY_CONFIG: &str = concat!(
    r#"{"holdApplicationUntilProxyStarts": true, "#,
    r#""proxyMetadata": {"ISTIO_META_DNS_CAPTURE": "true", "#,
    r#""GREETING": "it's \"quoted\" \\ $(ok)"}}"#,
);

/// `obj` with the quoting command and args on its one app container.
fn quoting(mut obj: Json) -> Json {
    let app = template(&mut obj)["spec"]["containers"]
        .items()
        .iter_mut()
        .find(|c| c["name"].as_str() != Some("istio-proxy"))
        .expect("an app container");
    app["command"] = strs(&["/bin/sh", "-c", QUOTING_SCRIPT, "report"]);
    app["args"] = strs(&QUOTING_ARGS);
    if app.get("env").is_none() {
        app["env"] = Json::Arr(Vec::new());
    }
    app["env"].items().push(pod_name_env());
    obj
}

fn quoting_cronjob(proxy_config: Option<&str>) -> Json {
    let c = quoting(cronjob());
    match proxy_config {
        Some(config) => annotate(c, "proxy.istio.io/config", config),
        None => c,
    }
}

/// istioctl kube-inject of a CronJob, the proxy a classic container.
fn injected_cronjob() -> Json {
    let mut c = quoting(fixture(CLASSIC_CRONJOB));
    c["metadata"]["namespace"] = "batch".into();
    c
}

/// The kube-injected CronJob with an init container of its own, which
/// Istio's classic form runs before istio-init.
fn injected_cronjob_with_init() -> Json {
    let mut c = injected_cronjob();
    template(&mut c)["spec"]["initContainers"]
        .items()
        .insert(0, db_migrate());
    c
}

/// The kube-injected CronJob as Istio renders it for a pod that holds its
/// application until the proxy starts (`holdApplicationUntilProxyStarts`
/// in `proxy.istio.io/config`): the proxy the first container
/// (`webhook.go`, `reorderPod`: `MoveFirst`), waiting in `postStart`
/// (`injection-template.yaml`, `$holdProxy`).
fn held_cronjob() -> Json {
    let mut c = annotate(
        injected_cronjob(),
        "proxy.istio.io/config",
        "holdApplicationUntilProxyStarts: true\n",
    );
    let containers = template(&mut c)["spec"]["containers"].items();
    let at = containers
        .iter()
        .position(|c| c["name"].as_str() == Some("istio-proxy"))
        .expect("the kube-injected CronJob has its proxy");
    let mut proxy = containers.remove(at);
    proxy["lifecycle"] =
        Json::parse(r#"{"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}"#);
    containers.insert(0, proxy);
    c
}

/// The kube-injected CronJob whose pod sets its own status port.
fn ported_cronjob() -> Json {
    annotate(injected_cronjob(), STATUS_PORT, "15120")
}

/// How a variant's mode is picked.
#[derive(Clone, Copy)]
pub(super) enum Pick {
    /// The cluster's mode (settings); disabled is the user's
    /// `istio-job-sidecar/mode: disabled` on the CronJob.
    BySettings,
    /// The team flips `istio-job-sidecar/mode` on the template.
    ByAnnotation,
}

impl Pick {
    /// x under `mode`.
    pub(super) fn pick(self, x: &Json, mode: &str) -> Json {
        match self {
            Pick::BySettings if mode == DISABLED => {
                annotate_on(x.clone(), MODE_KEY, DISABLED, false)
            }
            Pick::BySettings => x.clone(),
            Pick::ByAnnotation => annotate(x.clone(), MODE_KEY, mode),
        }
    }

    /// The settings of a pass under `mode` after one under `before`.
    pub(super) fn settings(self, mode: &str, before: &str) -> Json {
        match self {
            // disabled is the workload's word: the cluster's mode stays as it was
            Pick::BySettings => settings(if mode == DISABLED { before } else { mode }),
            Pick::ByAnnotation => none(),
        }
    }
}

/// A variant: its name, x, how a mode is picked, the second passes (A, B)
/// made.
pub(super) type Variant = (&'static str, Json, Pick, Vec<(&'static str, &'static str)>);

/// Every variant.
pub(super) fn variants() -> Vec<Variant> {
    let all_pairs: Vec<(&str, &str)> = MODES
        .iter()
        .flat_map(|a| MODES.iter().chain([&DISABLED]).map(move |b| (*a, *b)))
        .collect();
    vec![
        // no proxy config
        (
            "plain",
            quoting_cronjob(None),
            Pick::BySettings,
            all_pairs.clone(),
        ),
        (
            "yaml",
            quoting_cronjob(Some(YAML_PROXY_CONFIG)),
            Pick::BySettings,
            all_pairs.clone(),
        ),
        (
            "json",
            quoting_cronjob(Some(JSON_PROXY_CONFIG)),
            Pick::BySettings,
            all_pairs.clone(),
        ),
        // the move of nativeSidecar, taken back by the other modes
        (
            "injected",
            injected_cronjob(),
            Pick::BySettings,
            all_pairs.clone(),
        ),
        // the move puts istio-init first; taken back, it goes back last
        (
            "ordered",
            injected_cronjob_with_init(),
            Pick::BySettings,
            all_pairs.clone(),
        ),
        // hold: the proxy first, moved and put back first
        ("held", held_cronjob(), Pick::BySettings, all_pairs.clone()),
        // the pod's own status port: the drain hook's and the wrapper's
        (
            "ported",
            ported_cronjob(),
            Pick::BySettings,
            all_pairs.clone(),
        ),
        // a user's "yes", made the exact "true" and given back
        (
            "asked",
            annotate(quoting_cronjob(None), NATIVE_KEY, "yes"),
            Pick::BySettings,
            all_pairs,
        ),
        (
            "flip",
            quoting_cronjob(Some(JSON_PROXY_CONFIG)),
            Pick::ByAnnotation,
            vec![
                ("quitEndpoint", "exitOnJobCompletion"),
                ("exitOnJobCompletion", "nativeSidecar"),
                ("nativeSidecar", "quitEndpoint"),
                ("quitEndpoint", DISABLED),
            ],
        ),
    ]
}
