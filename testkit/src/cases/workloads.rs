//! The objects the cases admit: Istio's own manifests in
//! `test_data/fixtures/` (read from YAML, their order kept), the hand-made
//! Job, CronJob, Pod and containers, the names the cases annotate with,
//! and the edits made to an object (annotations, labels, a command wrapped
//! as the policy wraps it, by this version's wrapper or an earlier one's).

use super::json::Json;
use std::path::Path;

/// A YAML value as `Json`, its mappings in the order written.
fn from_yaml(value: serde_yaml::Value) -> Json {
    use serde_yaml::Value as Y;
    match value {
        Y::Null => Json::Null,
        Y::Bool(b) => Json::Bool(b),
        Y::Number(n) => match n.as_i64() {
            Some(i) => Json::Int(i),
            None => Json::Float(n.as_f64().unwrap_or_default()),
        },
        Y::String(s) => Json::Str(s),
        Y::Sequence(items) => Json::Arr(items.into_iter().map(from_yaml).collect()),
        Y::Mapping(members) => Json::Obj(
            members
                .into_iter()
                .map(|(k, v)| match k {
                    Y::String(k) => (k, from_yaml(v)),
                    other => panic!("a key that is no string: {other:?}"),
                })
                .collect(),
        ),
        Y::Tagged(tagged) => panic!("a tagged value: {tagged:?}"),
    }
}

const FIXTURES: [(&str, &str); 7] = [
    (
        "istio-job.yaml",
        include_str!("../../../test_data/fixtures/istio-job.yaml"),
    ),
    (
        "istio-cronjob.yaml",
        include_str!("../../../test_data/fixtures/istio-cronjob.yaml"),
    ),
    (
        "istio-native-sidecar-opt-in.yaml",
        include_str!("../../../test_data/fixtures/istio-native-sidecar-opt-in.yaml"),
    ),
    (
        "istio-job-kube-injected-classic.yaml",
        include_str!("../../../test_data/fixtures/istio-job-kube-injected-classic.yaml"),
    ),
    (
        "istio-job-kube-injected-native.yaml",
        include_str!("../../../test_data/fixtures/istio-job-kube-injected-native.yaml"),
    ),
    (
        "istio-cronjob-old-version.yaml.injected",
        include_str!("../../../test_data/fixtures/istio-cronjob-old-version.yaml.injected"),
    ),
    (
        "istio-cronjob.yaml.injected",
        include_str!("../../../test_data/fixtures/istio-cronjob.yaml.injected"),
    ),
];

/// The first document of a fixture (each starts with its object).
pub(super) fn fixture(name: &str) -> Json {
    let text = FIXTURES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
        .1;
    let doc = text.split("\n---").next().unwrap_or_default();
    from_yaml(serde_yaml::from_str(doc).unwrap_or_else(|e| panic!("{name}: {e}")))
}

pub(super) const CLASSIC_JOB: &str = "istio-job-kube-injected-classic.yaml";
pub(super) const NATIVE_JOB: &str = "istio-job-kube-injected-native.yaml";
pub(super) const CLASSIC_CRONJOB: &str = "istio-cronjob-old-version.yaml.injected";

pub(super) const MODE_KEY: &str = crate::names::MODE;
pub(super) const RECORD_KEY: &str = crate::names::APPLIED;
pub(super) const STATUS: &str = crate::names::STATUS;
pub(super) const NATIVE_KEY: &str = crate::names::NATIVE;
pub(super) const STATUS_PORT: &str = "status.sidecar.istio.io/port";

/// The pod template (or the Pod) of `obj`.
pub(super) fn template(obj: &mut Json) -> &mut Json {
    match obj["kind"].as_str() {
        Some("Job") => &mut obj["spec"]["template"],
        Some("CronJob") => &mut obj["spec"]["jobTemplate"]["spec"]["template"],
        _ => obj,
    }
}

pub(super) fn template_of(obj: &Json) -> &Json {
    match obj["kind"].as_str() {
        Some("Job") => &obj["spec"]["template"],
        Some("CronJob") => &obj["spec"]["jobTemplate"]["spec"]["template"],
        _ => obj,
    }
}

/// `obj` with annotation `key` set on its pod template (or its own metadata).
pub(super) fn annotate_on(
    mut obj: Json,
    key: &str,
    value: impl Into<Json>,
    on_template: bool,
) -> Json {
    let target = if on_template {
        template(&mut obj)
    } else {
        &mut obj
    };
    target["metadata"]["annotations"][key] = value.into();
    obj
}

pub(super) fn annotate(obj: Json, key: &str, value: &str) -> Json {
    annotate_on(obj, key, value, true)
}

pub(super) fn label(mut obj: Json, key: &str, value: &str) -> Json {
    template(&mut obj)["metadata"]["labels"][key] = value.into();
    obj
}

pub(super) fn job() -> Json {
    let mut j = fixture("istio-job.yaml");
    j["metadata"]["namespace"] = "default".into();
    j["metadata"]["creationTimestamp"] = Json::Null;
    j
}

pub(super) fn cronjob() -> Json {
    let mut c = fixture("istio-cronjob.yaml");
    c["metadata"]["namespace"] = "batch".into();
    c
}

pub(super) fn args_split(hello: &mut Json, at: usize) -> (Vec<Json>, Vec<Json>) {
    let mut args = hello["args"].items().clone();
    let rest = args.split_off(at);
    (args, rest)
}

/// `cronjob()` whose container runs `command` (its args' first two), as
/// quitEndpoint needs.
pub(super) fn cronjob_with_command() -> Json {
    let mut c = cronjob();
    let hello = &mut template(&mut c)["spec"]["containers"][0];
    let (command, args) = args_split(hello, 2);
    hello["command"] = Json::Arr(command);
    hello["args"] = Json::Arr(args);
    c
}

pub(super) fn pod(restart_policy: Option<&str>) -> Json {
    let mut p = Json::parse(
        r#"{
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "report-28712345-x7k2p", "namespace": "default", "labels": {"app": "report"}},
            "spec": {
                "containers": [
                    {
                        "name": "report",
                        "image": "registry.example/report:1.4",
                        "command": ["/bin/report", "--since", "24h"],
                        "resources": {"requests": {"cpu": "100m"}}
                    }
                ],
                "serviceAccountName": "report"
            }
        }"#,
    );
    if let Some(policy) = restart_policy {
        p["spec"]["restartPolicy"] = policy.into();
    }
    p
}

/// The quitEndpoint wrapper script, as the module embeds it.
pub(super) const QUIT_SCRIPT: &str = include_str!("../../../src/modes/quit_wrapper.sh");

/// Every wrapper text an earlier version wrote, oldest first
/// (`test_data/quit_wrappers/`, every `.sh` there): (its number, its text).
pub(super) fn older_quit_scripts() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_data/quit_wrappers");
    let mut found: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?.strip_suffix(".sh")?.to_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            Some((name, text))
        })
        .collect();
    found.sort();
    found
}

/// `obj` with its first container wrapped as the policy wraps it, by
/// `script`, and its record.
pub(super) fn quit_wrapped(mut obj: Json, script: &str) -> Json {
    let spec = &mut template(&mut obj)["spec"];
    let when = if spec["restartPolicy"].as_str() == Some("OnFailure") {
        "on-success"
    } else {
        "always"
    };
    let app = &mut spec["containers"][0];
    let mut command = vec![
        Json::from("/bin/sh"),
        "-c".into(),
        script.into(),
        "istio-job-sidecar-quit".into(),
        "http://127.0.0.1:15020/quitquitquit".into(),
        when.into(),
    ];
    command.extend(app["command"].items().iter().cloned());
    app["command"] = Json::Arr(command);
    let name = app["name"].as_str().unwrap_or_default().to_owned();
    let record = format!(r#"{{"mode":"quitEndpoint","container":"{name}"}}"#);
    annotate(obj, RECORD_KEY, &record)
}

/// The container named `name` of a pod template's `list`.
pub(super) fn container<'a>(obj: &'a mut Json, list: &str, name: &str) -> &'a mut Json {
    template(obj)["spec"][list]
        .items()
        .iter_mut()
        .find(|c| c["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {list} {name}"))
}

pub(super) fn uploader() -> Json {
    Json::parse(
        r#"{"name": "uploader", "image": "registry.example/upload:2", "command": ["/upload", "--wait"]}"#,
    )
}

pub(super) fn db_migrate() -> Json {
    Json::parse(r#"{"name": "db-migrate", "image": "migrate:3", "command": ["migrate", "up"]}"#)
}

pub(super) fn pod_name_env() -> Json {
    Json::parse(
        r#"{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}"#,
    )
}
