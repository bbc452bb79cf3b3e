//! What the fuzz targets check, and the structure-aware input.
//!
//! Every target ends in one of the `check_*` functions: the policy must not
//! panic, its answer must be JSON with `accepted: true` (a mutating helper
//! never denies), warnings must be at most 120 characters, and a mutated
//! object sent again must not be mutated again. `merge_fast_path` is
//! differential: the exitOnJobCompletion merge without a YAML parser
//! answers as the one with it (`check_merge`, on `ConfigText`).
//!
//! `Input` is what `validate_structured` gets from libFuzzer through
//! `arbitrary`: a kind, an operation, settings, containers and annotations
//! drawn mostly from the names the policy reacts to, and a list of splices
//! that put an arbitrary JSON-ish tree at any key of any part of the object
//! (so `containers: "x"`, `metadata: 7` or a 40-deep tree in an annotation
//! are all reachable). The object is written as JSON text by hand, so
//! duplicate keys and odd numbers reach the policy too. The pod template may
//! carry records of earlier edits (`istio-job-sidecar/applied`, and the
//! legacy `istio-job-sidecar/quit-wrapped`): valid ones of every form,
//! near-valid ones and garbage (`RecordAnnotation`), and a container's
//! command may already be the quitEndpoint wrapper.
//!
//! `ModeChange` is what `mode_change` gets: a workload (`Input`) and modes A
//! and B (each of the three or `disabled`, said through the settings or the
//! workload's mode annotation), checked against the laws of a change of
//! mode by `check_scenario` (see there).

#![forbid(unsafe_code)]

pub mod mode_change;
mod records;

pub use mode_change::{
    check_scenario, Carrier, Checked, Choice, Edit, ModeChange, Scenario, Shape, UserEdit,
    WorkloadKind,
};
pub use records::{NearRecord, RecordAnnotation, RecordText, ValidRecord, Wrapper};

use arbitrary::{Arbitrary, Unstructured};
use policy_testkit::{names, Order};
use serde_json::Value;

// ------------------------------------------------------------------ checks

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

/// Checks one `validate` answer (policy-testkit: JSON, an accept, warnings
/// of at most 120 characters); returns the mutated object, if any.
pub fn check_answer(answer: &[u8]) -> Option<Value> {
    policy_testkit::check_answer(answer)
        .unwrap_or_else(|e| panic!("{e}"))
        .mutated
}

/// `validate` on raw bytes: never a panic, always an accept.
pub fn check_raw(payload: &[u8]) {
    check_answer(&validate(payload));
}

/// `validate` on a payload that parses as JSON: as `check_raw`, and the
/// mutated object, sent again in the same request, is a fixed point.
pub fn check_idempotent(payload: &[u8]) {
    let Some(mutated) = check_answer(&validate(payload)) else {
        return;
    };
    let sent = policy_testkit::json::from_slice(payload).expect("a mutated payload is JSON");
    let (request, settings) = (&sent["request"], sent.get("settings"));
    policy_testkit::check_fixed_point(validate, request, settings, &mutated, Order::PolicyServer)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// `validate_settings` on raw bytes: a `SettingsValidationResponse` always;
/// settings it calls valid are used by `validate` without complaint, and
/// invalid ones make `validate` answer unchanged with a warning.
pub fn check_settings(data: &[u8]) {
    let answer =
        istio_job_sidecar_policy::validate_settings(data).expect("validate_settings never errors");
    let answer: Value = serde_json::from_slice(&answer).expect("the answer is JSON");
    let valid = answer["valid"].as_bool().expect("`valid` is a boolean");
    if !valid {
        assert!(answer["message"].is_string(), "invalid without a message");
    }
    // Only JSON text can be spliced into a payload.
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(!valid);
        return;
    };
    if serde_json::from_str::<&serde_json::value::RawValue>(text).is_err() {
        assert!(!valid, "settings that are not JSON called valid");
        return;
    }
    let payload = format!(r#"{{"request":{SAMPLE_REQUEST},"settings":{text}}}"#);
    let answer = istio_job_sidecar_policy::validate(payload.as_bytes()).unwrap();
    let answer: Value = serde_json::from_slice(&answer).expect("the answer is JSON");
    assert_eq!(answer["accepted"], Value::Bool(true));
    let complained = answer["warnings"].as_array().is_some_and(|w| {
        w.iter()
            .any(|w| w.as_str().unwrap().contains("invalid settings"))
    });
    assert_eq!(
        complained, !valid,
        "validate_settings said valid={valid}, validate: {answer}"
    );
}

/// A Job CREATE that every mode changes (a classic injected proxy).
const SAMPLE_REQUEST: &str = r#"{"uid":"u","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE","object":{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"metadata":{"annotations":{"sidecar.istio.io/status":"{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"]}"}},"spec":{"restartPolicy":"Never","initContainers":[{"name":"istio-init","image":"i"}],"containers":[{"name":"app","image":"a","command":["/bin/app","--x"]},{"name":"istio-proxy","image":"p"}]}}}}}"#;

// ------------------------------------------------------------------ JSON-ish trees

/// Words the policy reacts to, so random input reaches its branches.
const WORDS: &[&str] = &[
    "istio-proxy",
    "envoy",
    "istio-init",
    "istio-validation",
    "app",
    "Never",
    "OnFailure",
    "Always",
    "true",
    "false",
    "",
    "disabled",
    "nativeSidecar",
    "exitOnJobCompletion",
    "quitEndpoint",
    "/bin/sh",
    "-c",
    "$(VAR) 'q' \"d\" \\ \n",
    "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"revision\":\"default\"}",
    "{\"initContainers\":[\"istio-init\",\"istio-proxy\"],\"containers\":null}",
    "{\"containers\":[\"envoy\",\"istio-proxy\"]}",
    "{\"containers\":\"istio-proxy\"}",
    "holdApplicationUntilProxyStarts: true",
    "concurrency: 2\ntracing:\n  sampling: 10\n",
    "{ holdApplicationUntilProxyStarts: true }",
    "{\"concurrency\": 2, \"proxyMetadata\": {\"A\": \"}\"}}",
    "exitOnJobCompletion: false",
    "# c\n",
    "---\na: 1\n",
    "  a: 1\n  b: |\n    x\n",
    "- a",
    "{a: 1} # }",
    "\u{feff}a: 1",
    "a: &x 1\nb: *x",
    "a: !!binary aGk=",
    "? [a]\n: b",
    // Configs that already hold the key exitOnJobCompletion adds (the undo
    // looks for the inserted text in them).
    "concurrency: 2\nexitOnJobCompletion: true",
    "exitOnJobCompletion: true",
    "{\"concurrency\": 2, \"exitOnJobCompletion\": true}",
    "a: \"x\nexitOnJobCompletion: true\"\nexitOnJobCompletion: true",
    "exitOnJobCompletion: true\n# exitOnJobCompletion: true\n",
    // Records, as values of any key.
    "{\"mode\":\"quitEndpoint\",\"container\":\"app\"}",
    "{\"mode\":\"nativeSidecar\",\"annotation\":\"sidecar.istio.io/nativeSidecar\"}",
    "{\"mode\":\"exitOnJobCompletion\",\"inserted\":\"\\nexitOnJobCompletion: true\"}",
    "{\"mode\":\"nativeSidecar\",\"annotation\":\"sidecar.istio.io/nativeSidecar\",\"moved\":\"istio-proxy\",\"from\":1,\"added\":[\"restartPolicy\"]}",
    // Injection values that are no exact "false": Istio injects.
    "False",
    "no",
];

const KEYS: &[&str] = &[
    "metadata",
    "annotations",
    "labels",
    "spec",
    "template",
    "jobTemplate",
    "containers",
    "initContainers",
    "name",
    "image",
    "command",
    "args",
    "restartPolicy",
    "startupProbe",
    "creationTimestamp",
    names::STATUS,
    names::NATIVE,
    names::INJECT,
    names::PROXY_CONFIG,
    names::MODE,
    names::QUIT_WRAPPED,
    names::APPLIED,
    names::OWNER_MODE,
    names::STATUS_PORT,
    "hostNetwork",
    names::EXIT_KEY,
    "kind",
    "object",
    "x-unknown",
];

#[derive(Debug, Clone)]
pub struct Text(pub String);

impl<'a> Arbitrary<'a> for Text {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Text(if u.ratio(3, 4)? {
            u.choose(WORDS)?.to_string()
        } else {
            String::arbitrary(u)?
        }))
    }
}

#[derive(Debug, Clone)]
pub struct Key(pub String);

impl<'a> Arbitrary<'a> for Key {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Key(if u.ratio(3, 4)? {
            u.choose(KEYS)?.to_string()
        } else {
            String::arbitrary(u)?
        }))
    }
}

/// `Some` `SOME` times in `OF` (and, once the fuzzer's bytes run out, when
/// that is the more likely).
#[derive(Debug, Clone)]
pub struct Maybe<const SOME: u32, const OF: u32, T>(pub Option<T>);

impl<'a, const SOME: u32, const OF: u32, T: Arbitrary<'a>> Arbitrary<'a> for Maybe<SOME, OF, T> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let some = if u.is_empty() {
            2 * SOME > OF
        } else {
            u.ratio(SOME, OF)?
        };
        Ok(Maybe(if some { Some(T::arbitrary(u)?) } else { None }))
    }
}

/// A JSON value, written by hand: object members are a list, so duplicate
/// keys are possible; numbers may be any text JSON allows.
#[derive(Debug, Arbitrary)]
pub enum Tree {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    BigNumber(u8),
    Str(Text),
    Array(Vec<Tree>),
    Object(Vec<(Key, Tree)>),
}

/// Trees deeper than this are cut (to `null`) when written.
const MAX_DEPTH: usize = 64;

impl Tree {
    pub fn write(&self, out: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            out.push_str("null");
            return;
        }
        match self {
            Tree::Null => out.push_str("null"),
            Tree::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Tree::Int(i) => out.push_str(&i.to_string()),
            Tree::Float(f) if f.is_finite() => out.push_str(&Value::from(*f).to_string()),
            Tree::Float(_) => out.push_str("1e308"),
            Tree::BigNumber(n) => {
                // Numbers JSON allows and a host can read (1e400 is refused by
                // serde_json before a policy is ever called).
                out.push_str(
                    [
                        "1E+300",
                        "-0",
                        "123456789012345678901234567890",
                        "1.50",
                        "1e-400",
                    ][*n as usize % 5],
                )
            }
            Tree::Str(s) => write_str(out, &s.0),
            Tree::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out, depth + 1);
                }
                out.push(']');
            }
            Tree::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, &k.0);
                    out.push(':');
                    v.write(out, depth + 1);
                }
                out.push('}');
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push_str(&Value::from(s).to_string());
}

// ------------------------------------------------------------------ admission requests

#[derive(Debug, Arbitrary, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Job,
    CronJob,
    Pod,
    Deployment,
}

#[derive(Debug, Arbitrary, Clone, Copy)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
    Missing,
}

#[derive(Debug, Arbitrary)]
pub enum Settings {
    Absent,
    Known {
        mode: Option<u8>,
        sidecar: Option<bool>,
        workload_override: Option<bool>,
        quit_url: Option<bool>,
    },
    Any(Tree),
}

#[derive(Debug, Arbitrary)]
pub struct Container {
    /// Mostly there: Kubernetes requires it (the laws of a change of mode
    /// are checked on workloads the API server accepts).
    pub name: Maybe<7, 8, Text>,
    pub command: Option<Vec<Text>>,
    /// The command wrapped by quitEndpoint before (`Wrapper`).
    pub wrapped: Maybe<1, 8, Wrapper>,
    /// The container's own `restartPolicy` (a native sidecar's is `Always`).
    pub restart_policy: Maybe<1, 3, ContainerRestart>,
    pub startup_probe: bool,
    pub extra: Vec<(Key, Tree)>,
}

#[derive(Debug, Arbitrary)]
pub enum ContainerRestart {
    Always,
    Never,
    OnFailure,
    Other(Text),
}

/// Where a splice goes.
#[derive(Debug, Arbitrary, Clone, Copy)]
pub enum Slot {
    Object,
    ObjectMeta,
    ObjectAnnotations,
    Spec,
    JobTemplate,
    JobTemplateMeta,
    JobTemplateAnnotations,
    Template,
    TemplateMeta,
    TemplateAnnotations,
    TemplateLabels,
    PodSpec,
    Container(u8),
    InitContainer(u8),
}

#[derive(Debug, Arbitrary)]
pub struct Input {
    pub kind: Kind,
    pub operation: Operation,
    pub settings: Settings,
    pub object_annotations: Vec<(Key, Text)>,
    pub job_template_annotations: Option<Vec<(Key, Text)>>,
    pub template_annotations: Option<Vec<(Key, Text)>>,
    pub template_labels: Vec<(Key, Text)>,
    pub restart_policy: Option<Text>,
    pub containers: Vec<Container>,
    pub init_containers: Option<Vec<Container>>,
    /// Put in the pod template's annotations, after `template_annotations`.
    pub records: Maybe<1, 3, Vec<RecordAnnotation>>,
    pub splices: Vec<(Slot, Key, Tree)>,
}

/// A JSON object under construction: members in order, duplicates allowed,
/// values already written as text.
#[derive(Default)]
struct Obj(Vec<(String, String)>);

impl Obj {
    fn put(&mut self, k: &str, v: String) {
        self.0.push((k.to_owned(), v));
    }
    fn splice(&mut self, at: Slot, splices: &[(Slot, Key, Tree)]) {
        for (slot, k, v) in splices {
            if std::mem::discriminant(slot) == std::mem::discriminant(&at)
                && slot_index(slot) == slot_index(&at)
            {
                let mut text = String::new();
                v.write(&mut text, 1);
                self.0.push((k.0.clone(), text));
            }
        }
    }
    fn text(&self) -> String {
        let mut out = String::from("{");
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(&mut out, k);
            out.push(':');
            out.push_str(v);
        }
        out.push('}');
        out
    }
}

fn slot_index(slot: &Slot) -> u8 {
    match slot {
        Slot::Container(i) | Slot::InitContainer(i) => *i % 8,
        _ => 0,
    }
}

fn string_map(members: &[(Key, Text)], at: Slot, splices: &[(Slot, Key, Tree)]) -> String {
    let mut o = Obj::default();
    for (k, v) in members {
        let mut s = String::new();
        write_str(&mut s, &v.0);
        o.put(&k.0, s);
    }
    o.splice(at, splices);
    o.text()
}

fn container(c: &Container, slot: Slot, splices: &[(Slot, Key, Tree)]) -> String {
    let mut o = Obj::default();
    if let Some(name) = &c.name.0 {
        let mut s = String::new();
        write_str(&mut s, &name.0);
        o.put("name", s);
    }
    o.put("image", "\"busybox\"".into());
    if c.command.is_some() || c.wrapped.0.is_some() {
        let mut list: Vec<&str> = c
            .wrapped
            .0
            .as_ref()
            .map(Wrapper::prefix)
            .unwrap_or_default();
        list.extend(c.command.iter().flatten().map(|t| t.0.as_str()));
        o.put("command", serde_json::to_string(&list).unwrap());
    }
    if let Some(policy) = &c.restart_policy.0 {
        let policy = match policy {
            ContainerRestart::Always => "Always",
            ContainerRestart::Never => "Never",
            ContainerRestart::OnFailure => "OnFailure",
            ContainerRestart::Other(t) => &t.0,
        };
        o.put("restartPolicy", Value::from(policy).to_string());
    }
    if c.startup_probe {
        o.put("startupProbe", r#"{"exec":{"command":["true"]}}"#.into());
    }
    for (k, v) in &c.extra {
        let mut text = String::new();
        v.write(&mut text, 3);
        o.put(&k.0, text);
    }
    o.splice(slot, splices);
    o.text()
}

fn containers(list: &[Container], init: bool, splices: &[(Slot, Key, Tree)]) -> String {
    let items: Vec<String> = list
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let slot = if init {
                Slot::InitContainer(i as u8)
            } else {
                Slot::Container(i as u8)
            };
            container(c, slot, splices)
        })
        .collect();
    format!("[{}]", items.join(","))
}

impl Input {
    pub fn object(&self) -> String {
        self.object_as(self.kind)
    }

    /// The object, as a `kind` whatever `self.kind` says.
    pub fn object_as(&self, kind: Kind) -> String {
        let s = &self.splices[..];
        let meta =
            |annotations: &[(Key, Text)], labels: Option<&[(Key, Text)]>, slot, a_slot, l_slot| {
                let mut m = Obj::default();
                m.put("name", "\"x\"".into());
                m.put("annotations", string_map(annotations, a_slot, s));
                if let Some(labels) = labels {
                    m.put("labels", string_map(labels, l_slot, s));
                }
                m.splice(slot, s);
                m.text()
            };
        let mut pod_spec = Obj::default();
        if let Some(rp) = &self.restart_policy {
            let mut v = String::new();
            write_str(&mut v, &rp.0);
            pod_spec.put("restartPolicy", v);
        }
        pod_spec.put("containers", containers(&self.containers, false, s));
        if let Some(init) = &self.init_containers {
            pod_spec.put("initContainers", containers(init, true, s));
        }
        pod_spec.splice(Slot::PodSpec, s);
        let mut template_annotations = self.template_annotations.clone();
        if let Some(records) = self.records.0.as_ref().filter(|r| !r.is_empty()) {
            let list = template_annotations.get_or_insert_with(Vec::new);
            list.extend(records.iter().map(RecordAnnotation::member));
        }
        let template_meta = match &template_annotations {
            Some(a) => meta(
                a,
                Some(&self.template_labels),
                Slot::TemplateMeta,
                Slot::TemplateAnnotations,
                Slot::TemplateLabels,
            ),
            None => "{}".to_owned(),
        };
        let object_meta = meta(
            &self.object_annotations,
            None,
            Slot::ObjectMeta,
            Slot::ObjectAnnotations,
            Slot::ObjectAnnotations,
        );
        let mut template = Obj::default();
        template.put("metadata", template_meta.clone());
        template.put("spec", pod_spec.text());
        template.splice(Slot::Template, s);
        let mut object = Obj::default();
        let mut spec = Obj::default();
        match kind {
            Kind::Pod => {
                object.put("apiVersion", "\"v1\"".into());
                object.put("kind", "\"Pod\"".into());
                // A Pod's own metadata is its template's.
                object.put("metadata", template_meta);
                object.put("spec", pod_spec.text());
            }
            Kind::Job | Kind::Deployment => {
                spec.put("template", template.text());
                spec.splice(Slot::Spec, s);
                object.put("metadata", object_meta);
                object.put("spec", spec.text());
            }
            Kind::CronJob => {
                let mut jt = Obj::default();
                if let Some(a) = &self.job_template_annotations {
                    jt.put(
                        "metadata",
                        meta(
                            a,
                            None,
                            Slot::JobTemplateMeta,
                            Slot::JobTemplateAnnotations,
                            Slot::JobTemplateAnnotations,
                        ),
                    );
                }
                jt.put("spec", format!("{{\"template\":{}}}", template.text()));
                jt.splice(Slot::JobTemplate, s);
                spec.put("schedule", "\"* * * * *\"".into());
                spec.put("jobTemplate", jt.text());
                spec.splice(Slot::Spec, s);
                object.put("metadata", object_meta);
                object.put("spec", spec.text());
            }
        }
        object.splice(Slot::Object, s);
        object.text()
    }

    pub fn settings(&self) -> Option<String> {
        match &self.settings {
            Settings::Absent => None,
            Settings::Known {
                mode,
                sidecar,
                workload_override,
                quit_url,
            } => {
                let mut o = serde_json::Map::new();
                if let Some(m) = mode {
                    let modes = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"];
                    o.insert("mode".into(), modes[*m as usize % 3].into());
                }
                if let Some(s) = sidecar {
                    o.insert(
                        "sidecarContainerName".into(),
                        if *s { "istio-proxy" } else { "envoy" }.into(),
                    );
                }
                if let Some(w) = workload_override {
                    o.insert("workloadOverride".into(), (*w).into());
                }
                if let Some(q) = quit_url {
                    o.insert(
                        "quitUrl".into(),
                        if *q {
                            "http://127.0.0.1:15020/quitquitquit"
                        } else {
                            "http://[::1]:15020/quitquitquit?x=1"
                        }
                        .into(),
                    );
                }
                Some(Value::Object(o).to_string())
            }
            Settings::Any(tree) => {
                let mut text = String::new();
                tree.write(&mut text, 1);
                Some(text)
            }
        }
    }

    /// The `validate` payload: `{"request": ..., "settings": ...}`.
    pub fn payload(&self) -> String {
        let (group, kind) = match self.kind {
            Kind::Job => ("batch", "Job"),
            Kind::CronJob => ("batch", "CronJob"),
            Kind::Pod => ("", "Pod"),
            Kind::Deployment => ("apps", "Deployment"),
        };
        let operation = match self.operation {
            Operation::Create => ",\"operation\":\"CREATE\"",
            Operation::Update => ",\"operation\":\"UPDATE\"",
            Operation::Delete => ",\"operation\":\"DELETE\"",
            Operation::Connect => ",\"operation\":\"CONNECT\"",
            Operation::Missing => "",
        };
        let settings = self
            .settings()
            .map(|s| format!(",\"settings\":{s}"))
            .unwrap_or_default();
        format!(
            r#"{{"request":{{"uid":"fuzz","kind":{{"group":"{group}","version":"v1","kind":"{kind}"}}{operation},"object":{}}}{settings}}}"#,
            self.object()
        )
    }
}

/// The structure-aware check: the payload is JSON by construction.
pub fn check_structured(input: &Input) {
    let payload = input.payload();
    assert!(
        serde_json::from_str::<&serde_json::value::RawValue>(&payload).is_ok(),
        "harness bug: payload is not JSON: {payload}"
    );
    check_idempotent(payload.as_bytes());
}

// ------------------------------------------------------------------ proxy config merge

/// The exitOnJobCompletion merge: wherever its fast path answers, the
/// answer is the one the YAML-verified path gives.
pub fn check_merge(text: &str) {
    use istio_job_sidecar_policy::modes::exit_on_completion::{merge_fast, merge_verified};
    if let Some(fast) = merge_fast(text) {
        assert_eq!(
            Ok(fast),
            merge_verified(text),
            "the fast path differs from the YAML parser on {text:?}"
        );
    }
}

/// A proxy config assembled from pieces of YAML and JSON, so that many
/// inputs are mappings the fast path takes, with the characters that YAML
/// readers treat specially mixed in.
#[derive(Debug, Arbitrary)]
pub struct ConfigText(Vec<ConfigPiece>);

#[derive(Debug, Arbitrary)]
enum ConfigPiece {
    /// `key: value` and a line break, indented by 0, 2 or 4 spaces.
    Line {
        indent: u8,
        key: u8,
        value: u8,
    },
    /// A whole JSON object of `"key": value` members.
    Json(Vec<(u8, u8)>),
    /// One of `TRICKY`.
    Tricky(u8),
    Text(String),
}

const CONFIG_KEYS: &[&str] = &[
    "a",
    "b",
    "key-1",
    "x.y/z",
    "_u",
    "proxyMetadata",
    "exitOnJobCompletion",
    "holdApplicationUntilProxyStarts",
    "true",
    "null",
    "yes",
    "On",
    "1",
    "01",
    ".inf",
    "a b",
];

const CONFIG_VALUES: &[&str] = &[
    "1",
    "true",
    "false",
    "null",
    "~",
    "x",
    "\"q\"",
    "'s'",
    "5s",
    "-2",
    "+7",
    "1e3",
    "0x1F",
    "123456789012345678",
    "44444444444444444444444",
    "",
    "{}",
    "[a]",
    "a: b",
    "x # c",
    "x#c",
    "'it''s'",
    "\"a\\u00e9\"",
    "&x 1",
    "*x",
    "|",
    "- a",
];

const TRICKY: &[&str] = &[
    ": ", ":", " ", "\n", "\n  ", "# c", " # c", "{", "}", "[", "]", ",", "\"", "'", "\\",
    "\u{2028}", "\u{85}", "\u{2029}", "\r", "\r\n", "\t", "\u{1}", "\u{7f}", "\u{feff}", "é",
    "---\n", "...\n", "- ", "? ", "%", "@", "`", "<<: ",
];

fn pick(table: &[&'static str], i: u8) -> &'static str {
    table[usize::from(i) % table.len()]
}

impl ConfigText {
    pub fn text(&self) -> String {
        let mut text = String::new();
        for piece in &self.0 {
            match piece {
                ConfigPiece::Line { indent, key, value } => {
                    text.extend(std::iter::repeat_n(' ', usize::from(indent % 3) * 2));
                    // One key in 256 is too long for a YAML simple key.
                    match *key {
                        u8::MAX => text.push_str(&"k".repeat(1030)),
                        key => text.push_str(pick(CONFIG_KEYS, key)),
                    }
                    text.push(':');
                    let value = pick(CONFIG_VALUES, *value);
                    if !value.is_empty() {
                        text.push(' ');
                        text.push_str(value);
                    }
                    text.push('\n');
                }
                ConfigPiece::Json(members) => {
                    let members: Vec<String> = members
                        .iter()
                        .map(|(k, v)| {
                            format!("{:?}: {}", pick(CONFIG_KEYS, *k), pick(CONFIG_VALUES, *v))
                        })
                        .collect();
                    text.push('{');
                    text.push_str(&members.join(", "));
                    text.push('}');
                }
                ConfigPiece::Tricky(i) => text.push_str(pick(TRICKY, *i)),
                ConfigPiece::Text(s) => text.push_str(s),
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_request_is_mutated_by_every_mode() {
        for mode in ["nativeSidecar", "exitOnJobCompletion"] {
            let payload =
                format!(r#"{{"request":{SAMPLE_REQUEST},"settings":{{"mode":"{mode}"}}}}"#);
            let answer = istio_job_sidecar_policy::validate(payload.as_bytes()).unwrap();
            assert!(check_answer(&answer).is_some(), "{mode}");
        }
    }

    /// Deterministic bytes for `arbitrary`, different for every seed.
    fn pseudo_random(seed: u32, len: u32, shift: u32) -> Vec<u8> {
        (0..len)
            .map(|i| {
                (seed
                    .wrapping_mul(2654435761)
                    .wrapping_add(i.wrapping_mul(40503))
                    >> shift) as u8
            })
            .collect()
    }

    /// Bytes from splitmix64: `pseudo_random`'s are too regular for the
    /// choices of a deep `arbitrary` structure.
    fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E3779B97F4A7C15) ^ 0xD1B54A32D192ED03;
        (0..len)
            .map(|_| {
                state = state.wrapping_add(0x9E3779B97F4A7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
                (z ^ (z >> 31)) as u8
            })
            .collect()
    }

    /// `ConfigText` reaches both answers of the fast path (block and JSON
    /// forms it takes) and the parser path, so `merge_fast_path` compares
    /// something.
    #[test]
    fn config_texts_reach_the_fast_path() {
        use istio_job_sidecar_policy::modes::exit_on_completion::merge_fast;
        let (mut fast, mut json, mut verified) = (0, 0, 0);
        for seed in 0..4000u32 {
            let bytes = pseudo_random(seed, 64, 9);
            let Ok(input) = ConfigText::arbitrary(&mut Unstructured::new(&bytes)) else {
                continue;
            };
            let text = input.text();
            match merge_fast(&text) {
                Some(_) if text.trim_start().starts_with('{') => json += 1,
                Some(_) => fast += 1,
                None => verified += 1,
            }
            check_merge(&text);
        }
        eprintln!("of 4000 pseudo-random configs: {fast} block and {json} JSON on the fast path, {verified} left to the parser");
        assert!(
            fast > 50 && json > 10 && verified > 1000,
            "{fast} {json} {verified}"
        );
    }

    /// The record generator reaches every form the policy reads, and
    /// records it refuses; `validate` answers on all of them.
    #[test]
    fn records_of_every_form_and_unreadable_ones() {
        use istio_job_sidecar_policy::record::{Applied, Record};
        let mut forms = std::collections::BTreeMap::new();
        for seed in 0..4000u32 {
            let bytes = random_bytes(seed.into(), 256);
            let Ok(record) = RecordText::arbitrary(&mut Unstructured::new(&bytes)) else {
                continue;
            };
            let text = record.text();
            let form = match Record::read(Some(&text), None) {
                Record::Read { applied, .. } => match applied {
                    Applied::NativeAnnotation(_) => "native annotation",
                    Applied::NativeMove(m) if m.annotation.is_some() => "move with annotation",
                    Applied::NativeMove(m) if m.status.is_some() => "move with status",
                    Applied::NativeMove(m) if m.restart_policy.is_some() => "move replacing",
                    Applied::NativeMove(_) => "move",
                    Applied::ExitOnJobCompletion { created: true, .. } => "exit created",
                    Applied::ExitOnJobCompletion { .. } => "exit",
                    Applied::QuitEndpoint { .. } => "quit",
                },
                Record::Unreadable(_) => "unreadable",
                Record::Absent => unreachable!(),
            };
            *forms.entry(form).or_insert(0) += 1;
            if let RecordText::Valid(v) = &record {
                assert_eq!(Applied::parse(&text), Ok(v.applied()), "{text}");
            }
        }
        eprintln!("of 4000 pseudo-random records: {forms:?}");
        assert_eq!(forms.len(), 9, "{forms:?}");
        assert!(forms.values().all(|n| *n > 20), "{forms:?}");
    }

    /// `ModeChange` reaches the laws with something to undo: A(x) carries
    /// a record and B is another mode (or disabled), on each kind.
    #[test]
    fn mode_changes_reach_the_undo() {
        let (mut lawful, mut undone) = (0, std::collections::BTreeMap::new());
        let mut forms = std::collections::BTreeMap::new();
        for seed in 0..1500u32 {
            let bytes = random_bytes(seed.into(), 1024);
            let Ok(input) = ModeChange::arbitrary(&mut Unstructured::new(&bytes)) else {
                continue;
            };
            let scenario = input.scenario();
            let checked = scenario.run().unwrap_or_else(|e| {
                panic!(
                    "{e}\n{}",
                    serde_json::to_string_pretty(&scenario.to_json()).unwrap()
                )
            });
            if checked.laws {
                lawful += 1;
                if let (Some(form), true) = (checked.recorded, scenario.first != scenario.second) {
                    *undone.entry(scenario.kind.as_str()).or_insert(0) += 1;
                    *forms.entry(form).or_insert(0) += 1;
                }
            }
        }
        eprintln!("of 1500 pseudo-random mode changes: {lawful} under the laws; A(x) recorded and B another: {undone:?}, records {forms:?}");
        assert!(lawful > 300, "{lawful}");
        assert_eq!(undone.len(), 3, "{undone:?}");
        assert_eq!(forms.len(), 4, "{forms:?}");
    }

    /// Not a check: `SURVEY=<n> [MODE_CHANGE_UNTYPED=1] [SURVEY_DIR=<dir>]
    /// cargo test --release -p policy-fuzz-harness survey -- --ignored --nocapture`
    /// runs n pseudo-random mode changes and sums up the failures by law
    /// and by why the laws would not apply (the first scenario of each
    /// class is written to SURVEY_DIR).
    #[test]
    #[ignore]
    fn survey() {
        let mut classes = std::collections::BTreeMap::new();
        let n: u64 = std::env::var("SURVEY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20000);
        for seed in 0..n {
            let bytes = random_bytes(seed + 1_000_000, 1024);
            let Ok(input) = ModeChange::arbitrary(&mut Unstructured::new(&bytes)) else {
                continue;
            };
            let scenario = input.scenario();
            let Err(e) = scenario.run() else {
                continue;
            };
            let law = e.lines().next().unwrap_or_default();
            let law = law.split(" differ").next().unwrap_or_default();
            let class = format!("[{}] {law}", scenario.outside_the_laws().join(", "));
            let entry = classes.entry(class).or_insert((0, seed));
            entry.0 += 1;
            if entry.0 == 1 {
                if let Ok(dir) = std::env::var("SURVEY_DIR") {
                    let text = serde_json::to_string_pretty(&scenario.to_json()).unwrap();
                    std::fs::write(format!("{dir}/{seed}.json"), text).unwrap();
                }
            }
        }
        eprintln!("failures of {n} pseudo-random mode changes:");
        for (class, (count, seed)) in classes {
            eprintln!("{count:6} {class} (first: seed {seed})");
        }
    }

    /// fuzz/regressions/mode_change/*.json: scenarios a law once failed on.
    #[test]
    fn mode_change_regressions() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../regressions/mode_change");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let scenario = Scenario::from_json(&serde_json::from_str(&text).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if let Err(e) = scenario.run() {
                panic!("{}: {e}", path.display());
            }
            n += 1;
        }
        eprintln!("{n} mode_change regressions replayed");
    }

    #[test]
    fn structured_inputs_are_json_and_reach_the_modes() {
        let mut mutated = 0;
        for seed in 0..2000u32 {
            let bytes = pseudo_random(seed, 512, 7);
            let mut u = Unstructured::new(&bytes);
            if let Ok(input) = Input::arbitrary(&mut u) {
                let payload = input.payload();
                let answer = istio_job_sidecar_policy::validate(payload.as_bytes()).unwrap();
                if check_answer(&answer).is_some() {
                    mutated += 1;
                }
                check_structured(&input);
            }
        }
        eprintln!("{mutated} of 2000 pseudo-random inputs mutated");
    }
}
