//! The golden cases of `test_data/cases/<case>/`: every case's input
//! (`request.json`, `settings.json`), built here from Istio's own manifests
//! in `test_data/fixtures/` and a few hand-made objects. The list is the
//! one place a case is added: `tests/golden.rs` makes a test of each, holds
//! the committed inputs to what is built here (`UPDATE_GOLDEN=1` writes
//! them) and fails on a directory the list does not name; `e2e.bats` runs
//! every case the `cases` binary lists through kwctl. The inputs stay
//! committed because kwctl, policy-server and the wasm-level tests read
//! them; `expected.json` is the policy's answer, written by the golden test.
//!
//! Mode changes (reversible modes: B(A(x)) == B(x)) are made in two
//! passes. `mode-change-<variant>-<mode>` admits a CronJob x under one mode
//! (a CREATE; `<mode>` is `disabled` for x with `istio-job-sidecar/mode:
//! disabled`); `mode-change-<variant>-<A>-then-<B>` is a CronJob UPDATE
//! whose object is the first pass's result A(x) (oldObject A(x) too), with
//! the user's edit that picks B when an annotation picks it, admitted under
//! B. A second pass's input is an answer of the policy, so it is computed
//! from its first pass by the policy itself, natively, in the same run
//! (`Cases::input`). Variants: plain, yaml, json (no proxy config, a YAML
//! block one, a JSON one), injected (istioctl kube-inject's CronJob),
//! ordered (the same with an init container of its own), held (the same
//! as Istio renders it for a pod that holds its application until the
//! proxy starts: the proxy first), ported (the same with a status port of
//! its own), asked (a user's nativeSidecar "yes"), flip (the mode set by the template's annotation);
//! every app container runs a command full of quoting. The unreadable-
//! record, edited-command and legacy-mark cases start from the result of
//! `mode-change-plain-quitEndpoint`, the re-applies from that of
//! `mode-change-injected-nativeSidecar`. `tests/mode_changes.rs` holds the
//! passes to the laws.
//!
//! The files are written as the inputs always were (two-space indented
//! JSON, every member in the order it was made, every character outside
//! printable ASCII escaped), so a case unchanged stays byte for byte the
//! same: `Json` keeps that order, which `serde_json::Value` does not.

use crate::{check_answer, payload, Order};
use serde_json::Value;
use std::ops::{Index, IndexMut};
use std::path::Path;

// --- JSON in the order it was made ---------------------------------------

/// A JSON value whose objects keep their members in the order they were
/// made: a member set anew goes last, one set again keeps its place, one
/// removed closes the gap (as Python's dict, which wrote these files first).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

static NULL: Json = Json::Null;

impl Json {
    /// The JSON `text`, its members in the order written.
    pub fn parse(text: &str) -> Json {
        let mut parser = Parser {
            text: text.as_bytes(),
            at: 0,
        };
        let value = parser.value();
        parser.space();
        match value {
            Ok(value) if parser.at == text.len() => value,
            Ok(_) => panic!("more after the value at byte {}: {text}", parser.at),
            Err(e) => panic!("{e}: {text}"),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes member `key` out, the others keeping their order.
    pub fn remove(&mut self, key: &str) -> Option<Json> {
        let Json::Obj(members) = self else {
            return None;
        };
        let at = members.iter().position(|(k, _)| k == key)?;
        Some(members.remove(at).1)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of an array.
    pub fn items(&mut self) -> &mut Vec<Json> {
        match self {
            Json::Arr(items) => items,
            other => panic!("not an array: {other:?}"),
        }
    }

    /// The same value as `serde_json` holds it (what the policy is sent).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::Float(f) => Value::from(*f),
            Json::Str(s) => Value::from(s.as_str()),
            Json::Arr(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Obj(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// `value` with its members in the order `serde_json` holds them (the
    /// order `expected.json` is written in).
    pub fn from_value(value: &Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Json::Int(i),
                None => Json::Float(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Arr(items.iter().map(Json::from_value).collect()),
            Value::Object(members) => Json::Obj(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The text of an input file: indented by two spaces, a line break at
    /// the end.
    pub fn to_file(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(0));
        out.push('\n');
        out
    }

    /// The text on one line, without spaces.
    pub fn to_compact(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, None);
        out
    }

    fn write(&self, out: &mut String, indent: Option<usize>) {
        let newline = |out: &mut String, depth: usize| {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', 2 * depth));
        };
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => out.push_str(&i.to_string()),
            Json::Float(f) => out.push_str(&float(*f)),
            Json::Str(s) => string(out, s),
            Json::Arr(items) if items.is_empty() => out.push_str("[]"),
            Json::Obj(members) if members.is_empty() => out.push_str("{}"),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if let Some(depth) = indent {
                        newline(out, depth + 1);
                    }
                    item.write(out, indent.map(|d| d + 1));
                }
                if let Some(depth) = indent {
                    newline(out, depth);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if let Some(depth) = indent {
                        newline(out, depth + 1);
                    }
                    string(out, key);
                    out.push(':');
                    if indent.is_some() {
                        out.push(' ');
                    }
                    value.write(out, indent.map(|d| d + 1));
                }
                if let Some(depth) = indent {
                    newline(out, depth);
                }
                out.push('}');
            }
        }
    }
}

/// A float as the inputs write it: the shortest text that reads back the
/// same, with `.0` when whole.
fn float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

/// A JSON string, every character outside printable ASCII escaped
/// (`\uXXXX`, in UTF-16 surrogates beyond it).
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

impl Index<&str> for Json {
    type Output = Json;
    fn index(&self, key: &str) -> &Json {
        self.get(key).unwrap_or(&NULL)
    }
}

/// Setting a member: a null becomes an object, a missing member is added
/// last (as null until set).
impl IndexMut<&str> for Json {
    fn index_mut(&mut self, key: &str) -> &mut Json {
        if *self == Json::Null {
            *self = Json::Obj(Vec::new());
        }
        let Json::Obj(members) = self else {
            panic!("not an object: {self:?}");
        };
        let at = match members.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                members.push((key.to_owned(), Json::Null));
                members.len() - 1
            }
        };
        &mut members[at].1
    }
}

impl Index<usize> for Json {
    type Output = Json;
    fn index(&self, i: usize) -> &Json {
        match self {
            Json::Arr(items) => items.get(i).unwrap_or(&NULL),
            _ => &NULL,
        }
    }
}

impl IndexMut<usize> for Json {
    fn index_mut(&mut self, i: usize) -> &mut Json {
        &mut self.items()[i]
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_owned())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

impl From<i64> for Json {
    fn from(i: i64) -> Json {
        Json::Int(i)
    }
}

impl From<Option<&str>> for Json {
    fn from(s: Option<&str>) -> Json {
        s.map_or(Json::Null, Json::from)
    }
}

/// Reads JSON text, every object's members in the order written.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.at))
    }

    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let found = self.text.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        let rest = &self.text[self.at..];
        for (word, value) in [
            ("null", Json::Null),
            ("true", Json::Bool(true)),
            ("false", Json::Bool(false)),
        ] {
            if rest.starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(value);
            }
        }
        match rest.first() {
            Some(b'"') => self.string().map(Json::Str),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return self.fail("expected , or ]");
                        }
                    }
                }
                Ok(Json::Arr(items))
            }
            Some(b'{') => {
                self.at += 1;
                let mut value = Json::Obj(Vec::new());
                if !self.eat(b'}') {
                    loop {
                        self.space();
                        let key = self.string()?;
                        if !self.eat(b':') {
                            return self.fail("expected :");
                        }
                        value[key.as_str()] = self.value()?;
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return self.fail("expected , or }");
                        }
                    }
                }
                Ok(value)
            }
            Some(b'-' | b'0'..=b'9') => {
                let len = rest
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(rest.len());
                let number = std::str::from_utf8(&rest[..len]).unwrap_or_default();
                self.at += len;
                if number.contains(['.', 'e', 'E']) {
                    number.parse().map(Json::Float).map_err(|e| e.to_string())
                } else {
                    number.parse().map(Json::Int).map_err(|e| e.to_string())
                }
            }
            _ => self.fail("expected a value"),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.text.get(self.at) != Some(&b'"') {
            return self.fail("expected a string");
        }
        self.at += 1;
        let mut units: Vec<u16> = Vec::new();
        loop {
            let rest = std::str::from_utf8(&self.text[self.at..]).map_err(|e| e.to_string())?;
            let mut chars = rest.chars();
            let c = chars.next().ok_or("an unterminated string")?;
            self.at += c.len_utf8();
            match c {
                '"' => return String::from_utf16(&units).map_err(|e| e.to_string()),
                '\\' => {
                    let escaped = chars.next().ok_or("an unterminated string")?;
                    self.at += 1;
                    let c = match escaped {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'u' => {
                            let hex = rest.get(2..6).ok_or("a short \\u escape")?;
                            self.at += 4;
                            units.push(u16::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
                            continue;
                        }
                        other => other,
                    };
                    units.extend(c.encode_utf16(&mut [0; 2]).iter());
                }
                c => units.extend(c.encode_utf16(&mut [0; 2]).iter()),
            }
        }
    }
}

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

/// An object of `members`, in that order.
fn obj<const N: usize>(members: [(&str, Json); N]) -> Json {
    Json::Obj(members.map(|(k, v)| (k.to_owned(), v)).into())
}

fn strs(items: &[&str]) -> Json {
    Json::Arr(items.iter().map(|s| Json::from(*s)).collect())
}

// --- the workloads -------------------------------------------------------

const FIXTURES: [(&str, &str); 7] = [
    (
        "istio-job.yaml",
        include_str!("../../test_data/fixtures/istio-job.yaml"),
    ),
    (
        "istio-cronjob.yaml",
        include_str!("../../test_data/fixtures/istio-cronjob.yaml"),
    ),
    (
        "istio-native-sidecar-opt-in.yaml",
        include_str!("../../test_data/fixtures/istio-native-sidecar-opt-in.yaml"),
    ),
    (
        "istio-job-kube-injected-classic.yaml",
        include_str!("../../test_data/fixtures/istio-job-kube-injected-classic.yaml"),
    ),
    (
        "istio-job-kube-injected-native.yaml",
        include_str!("../../test_data/fixtures/istio-job-kube-injected-native.yaml"),
    ),
    (
        "istio-cronjob-old-version.yaml.injected",
        include_str!("../../test_data/fixtures/istio-cronjob-old-version.yaml.injected"),
    ),
    (
        "istio-cronjob.yaml.injected",
        include_str!("../../test_data/fixtures/istio-cronjob.yaml.injected"),
    ),
];

/// The first document of a fixture (each starts with its object).
fn fixture(name: &str) -> Json {
    let text = FIXTURES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
        .1;
    let doc = text.split("\n---").next().unwrap_or_default();
    from_yaml(serde_yaml::from_str(doc).unwrap_or_else(|e| panic!("{name}: {e}")))
}

const CLASSIC_JOB: &str = "istio-job-kube-injected-classic.yaml";
const NATIVE_JOB: &str = "istio-job-kube-injected-native.yaml";
const CLASSIC_CRONJOB: &str = "istio-cronjob-old-version.yaml.injected";

const MODE_KEY: &str = crate::names::MODE;
const RECORD_KEY: &str = crate::names::APPLIED;
const STATUS: &str = crate::names::STATUS;
const NATIVE_KEY: &str = crate::names::NATIVE;
const STATUS_PORT: &str = "status.sidecar.istio.io/port";

/// The pod template (or the Pod) of `obj`.
fn template(obj: &mut Json) -> &mut Json {
    match obj["kind"].as_str() {
        Some("Job") => &mut obj["spec"]["template"],
        Some("CronJob") => &mut obj["spec"]["jobTemplate"]["spec"]["template"],
        _ => obj,
    }
}

fn template_of(obj: &Json) -> &Json {
    match obj["kind"].as_str() {
        Some("Job") => &obj["spec"]["template"],
        Some("CronJob") => &obj["spec"]["jobTemplate"]["spec"]["template"],
        _ => obj,
    }
}

/// `obj` with annotation `key` set on its pod template (or its own metadata).
fn annotate_on(mut obj: Json, key: &str, value: impl Into<Json>, on_template: bool) -> Json {
    let target = if on_template {
        template(&mut obj)
    } else {
        &mut obj
    };
    target["metadata"]["annotations"][key] = value.into();
    obj
}

fn annotate(obj: Json, key: &str, value: &str) -> Json {
    annotate_on(obj, key, value, true)
}

fn label(mut obj: Json, key: &str, value: &str) -> Json {
    template(&mut obj)["metadata"]["labels"][key] = value.into();
    obj
}

fn job() -> Json {
    let mut j = fixture("istio-job.yaml");
    j["metadata"]["namespace"] = "default".into();
    j["metadata"]["creationTimestamp"] = Json::Null;
    j
}

fn cronjob() -> Json {
    let mut c = fixture("istio-cronjob.yaml");
    c["metadata"]["namespace"] = "batch".into();
    c
}

fn args_split(hello: &mut Json, at: usize) -> (Vec<Json>, Vec<Json>) {
    let mut args = hello["args"].items().clone();
    let rest = args.split_off(at);
    (args, rest)
}

/// `cronjob()` whose container runs `command` (its args' first two), as
/// quitEndpoint needs.
fn cronjob_with_command() -> Json {
    let mut c = cronjob();
    let hello = &mut template(&mut c)["spec"]["containers"][0];
    let (command, args) = args_split(hello, 2);
    hello["command"] = Json::Arr(command);
    hello["args"] = Json::Arr(args);
    c
}

fn pod(restart_policy: Option<&str>) -> Json {
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

fn settings(mode: &str) -> Json {
    obj([("mode", mode.into())])
}

fn none() -> Json {
    Json::Obj(Vec::new())
}

fn exit() -> Json {
    settings("exitOnJobCompletion")
}

fn quit() -> Json {
    settings("quitEndpoint")
}

/// The quitEndpoint wrapper script, as the module embeds it.
const QUIT_SCRIPT: &str = include_str!("../../src/modes/quit_wrapper.sh");

/// Every wrapper text an earlier version wrote, oldest first
/// (`test_data/quit_wrappers/`, every `.sh` there): (its number, its text).
fn older_quit_scripts() -> Vec<(String, String)> {
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
fn quit_wrapped(mut obj: Json, script: &str) -> Json {
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
fn container<'a>(obj: &'a mut Json, list: &str, name: &str) -> &'a mut Json {
    template(obj)["spec"][list]
        .items()
        .iter_mut()
        .find(|c| c["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {list} {name}"))
}

fn uploader() -> Json {
    Json::parse(
        r#"{"name": "uploader", "image": "registry.example/upload:2", "command": ["/upload", "--wait"]}"#,
    )
}

fn db_migrate() -> Json {
    Json::parse(r#"{"name": "db-migrate", "image": "migrate:3", "command": ["migrate", "up"]}"#)
}

fn pod_name_env() -> Json {
    Json::parse(
        r#"{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}"#,
    )
}

/// An AdmissionRequest of `obj`, as the API server writes it.
fn request(object: Json, operation: &str, old: Option<Json>, namespace: &str) -> Json {
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    let (group, version, resource) = match kind.as_str() {
        "Job" => ("batch", "v1", "jobs"),
        "CronJob" => ("batch", "v1", "cronjobs"),
        "Pod" => ("", "v1", "pods"),
        "Deployment" => ("apps", "v1", "deployments"),
        other => panic!("no resource for kind {other}"),
    };
    let gvk = obj([
        ("group", group.into()),
        ("version", version.into()),
        ("kind", kind.as_str().into()),
    ]);
    let gvr = obj([
        ("group", group.into()),
        ("version", version.into()),
        ("resource", resource.into()),
    ]);
    let options = match operation {
        "CREATE" => Some("CreateOptions"),
        "UPDATE" => Some("UpdateOptions"),
        _ => None,
    };
    let name = object["metadata"]["name"].clone();
    obj([
        ("uid", "1299d386-525b-4032-98ae-1949f69f9cfc".into()),
        ("kind", gvk.clone()),
        ("resource", gvr.clone()),
        ("requestKind", gvk),
        ("requestResource", gvr),
        ("name", if name == Json::Null { "".into() } else { name }),
        ("namespace", namespace.into()),
        ("operation", operation.into()),
        (
            "userInfo",
            obj([
                ("username", "kubernetes-admin".into()),
                ("groups", strs(&["system:masters", "system:authenticated"])),
            ]),
        ),
        ("object", object),
        ("oldObject", old.unwrap_or(Json::Null)),
        ("dryRun", Json::Bool(false)),
        (
            "options",
            options.map_or(Json::Null, |kind| {
                obj([
                    ("kind", kind.into()),
                    ("apiVersion", "meta.k8s.io/v1".into()),
                ])
            }),
        ),
    ])
}

fn create(obj: Json) -> Json {
    request(obj, "CREATE", None, "default")
}

fn create_in(obj: Json, namespace: &str) -> Json {
    request(obj, "CREATE", None, namespace)
}

fn update(obj: Json, old: Json) -> Json {
    request(obj, "UPDATE", Some(old), "default")
}

// --- the list --------------------------------------------------------------

/// A change a second pass makes to its first pass's result (the user's
/// edit, a re-apply, a stale record).
type Edit = Box<dyn Fn(&mut Json) + Send + Sync>;

enum Input {
    /// A request and its settings, as they are.
    Given { request: Json, settings: Json },
    /// A CronJob UPDATE of the result of case `first` (its oldObject
    /// too), `edit` made to the object, admitted with `settings`.
    After {
        first: String,
        edit: Edit,
        settings: Json,
    },
}

/// One golden case: its name (its directory) and how its input is made.
pub struct GoldenCase {
    pub name: String,
    input: Input,
}

impl GoldenCase {
    /// The case whose result this one's input is made from, if any.
    pub fn first_pass(&self) -> Option<&str> {
        match &self.input {
            Input::Given { .. } => None,
            Input::After { first, .. } => Some(first),
        }
    }
}

/// Every golden case, in one list.
pub struct Cases {
    list: Vec<GoldenCase>,
}

/// A case's input: `request.json` and `settings.json`.
pub struct Inputs {
    pub request: Json,
    pub settings: Json,
}

impl Inputs {
    pub fn request_file(&self) -> String {
        self.request.to_file()
    }

    pub fn settings_file(&self) -> String {
        self.settings.to_file()
    }
}

/// The result of the native policy on a request, sent as policy-server
/// sends it: what a second pass starts from (the first pass's own test
/// holds that answer to its expected.json).
fn result_of(inputs: &Inputs) -> Result<Value, String> {
    let request = inputs.request.to_value();
    let settings = inputs.settings.to_value();
    let raw = istio_job_sidecar_policy::validate(&payload(
        &request,
        Some(&settings),
        Order::PolicyServer,
    ))
    .map_err(|e| format!("validate: {e:?}"))?;
    check_answer(&raw)?
        .mutated
        .ok_or_else(|| "mutated nothing, so no second pass can start from it".into())
}

impl Cases {
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|c| c.name.as_str())
    }

    pub fn get(&self, name: &str) -> Option<&GoldenCase> {
        self.list.iter().find(|c| c.name == name)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The input of case `name`; a second pass's made from its first
    /// pass's result, computed here by the native policy.
    pub fn input(&self, name: &str) -> Result<Inputs, String> {
        let case = self
            .get(name)
            .ok_or_else(|| format!("{name}: no such case"))?;
        match &case.input {
            Input::Given { request, settings } => Ok(Inputs {
                request: request.clone(),
                settings: settings.clone(),
            }),
            Input::After {
                first,
                edit,
                settings,
            } => {
                let after = self.input(first)?;
                let after = Json::from_value(
                    &result_of(&after).map_err(|e| format!("its first pass {first}: {e}"))?,
                );
                let mut object = after.clone();
                edit(&mut object);
                Ok(Inputs {
                    request: request(object, "UPDATE", Some(after), "batch"),
                    settings: settings.clone(),
                })
            }
        }
    }

    fn given(&mut self, name: impl Into<String>, request: Json, settings: Json) {
        self.push(GoldenCase {
            name: name.into(),
            input: Input::Given { request, settings },
        });
    }

    fn after(
        &mut self,
        name: impl Into<String>,
        first: impl Into<String>,
        settings: Json,
        edit: impl Fn(&mut Json) + Send + Sync + 'static,
    ) {
        self.push(GoldenCase {
            name: name.into(),
            input: Input::After {
                first: first.into(),
                edit: Box::new(edit),
                settings,
            },
        });
    }

    fn push(&mut self, case: GoldenCase) {
        assert!(self.get(&case.name).is_none(), "{}: named twice", case.name);
        self.list.push(case);
    }

    /// Every case.
    pub fn all() -> Cases {
        let mut cases = Cases { list: Vec::new() };
        decision_table(&mut cases);
        kube_injected(&mut cases);
        proxy_config_and_odd_shapes(&mut cases);
        quit_endpoint(&mut cases);
        releases_and_reinjection(&mut cases);
        native_where_it_cannot_run(&mut cases);
        mode_changes(&mut cases);
        cases
    }
}

/// The decision table (docs/modes.md, "What is mutated, and what never is"), row
/// by row.
fn decision_table(cases: &mut Cases) {
    cases.given("job-create-native", create(job()), none());
    cases.given("job-create-exit", create(job()), exit());
    cases.given("job-update-unchanged", update(job(), job()), none());
    cases.given("job-update-exit-unchanged", update(job(), job()), exit());
    cases.given("cronjob-create-native", create(cronjob()), none());
    cases.given(
        "cronjob-update-native",
        update(cronjob(), cronjob()),
        none(),
    );
    cases.given("cronjob-update-exit", update(cronjob(), cronjob()), exit());
    cases.given("pod-never-native", create(pod(Some("Never"))), none());
    cases.given("pod-onfailure-exit", create(pod(Some("OnFailure"))), exit());
    cases.given("pod-always-unchanged", create(pod(Some("Always"))), none());
    cases.given(
        "pod-restart-unset-unchanged",
        create(fixture("istio-native-sidecar-opt-in.yaml")),
        none(),
    );
    cases.given(
        "pod-update-unchanged",
        update(pod(Some("Never")), pod(Some("Never"))),
        none(),
    );
    cases.given(
        "injection-disabled-label-unchanged",
        create(label(job(), "sidecar.istio.io/inject", "false")),
        none(),
    );
    cases.given(
        "injection-disabled-annotation-unchanged",
        create(annotate(cronjob(), "sidecar.istio.io/inject", "false")),
        exit(),
    );
    cases.given(
        "workload-disabled-unchanged",
        create(annotate(job(), MODE_KEY, "disabled")),
        none(),
    );
    cases.given(
        "workload-mode-on-job-metadata",
        create(annotate_on(job(), MODE_KEY, "exitOnJobCompletion", false)),
        none(),
    );
    cases.given(
        "workload-mode-on-template-wins",
        create(annotate(
            annotate_on(cronjob(), MODE_KEY, "disabled", false),
            MODE_KEY,
            "nativeSidecar",
        )),
        exit(),
    );
    cases.given(
        "workload-override-off",
        create(annotate(job(), MODE_KEY, "disabled")),
        obj([("workloadOverride", Json::Bool(false))]),
    );
    cases.given(
        "workload-invalid-mode-warns",
        create(annotate(job(), MODE_KEY, "sometimes")),
        none(),
    );
    let deployment = obj([
        ("apiVersion", "apps/v1".into()),
        ("kind", "Deployment".into()),
        (
            "metadata",
            obj([("name", "web".into()), ("namespace", "default".into())]),
        ),
        (
            "spec",
            obj([
                (
                    "selector",
                    obj([("matchLabels", obj([("app", "web".into())]))]),
                ),
                ("template", template(&mut job()).clone()),
            ]),
        ),
    ]);
    cases.given("deployment-unchanged", create(deployment), none());
    cases.given(
        "native-annotation-present-unchanged",
        create(annotate(job(), NATIVE_KEY, "true")),
        none(),
    );
    cases.given(
        "native-false-respected",
        create(annotate(job(), NATIVE_KEY, "false")),
        none(),
    );
}

/// Already injected by `istioctl kube-inject` (Istio's own outputs).
fn kube_injected(cases: &mut Cases) {
    cases.given(
        "kube-injected-classic-job-native",
        create(fixture(CLASSIC_JOB)),
        none(),
    );
    cases.given(
        "kube-injected-classic-job-exit",
        create(fixture(CLASSIC_JOB)),
        exit(),
    );
    cases.given(
        "kube-injected-native-job-annotated",
        create(fixture(NATIVE_JOB)),
        none(),
    );
    cases.given(
        "kube-injected-classic-cronjob-native",
        create(fixture(CLASSIC_CRONJOB)),
        none(),
    );
    cases.given(
        "kube-injected-native-cronjob-annotated",
        create(fixture("istio-cronjob.yaml.injected")),
        none(),
    );
    let mut cni = fixture(CLASSIC_JOB);
    let spec = &mut template(&mut cni)["spec"];
    spec["initContainers"][0]["name"] = "istio-validation".into();
    spec["initContainers"].items().push(db_migrate());
    let annotations = &mut template(&mut cni)["metadata"]["annotations"];
    let mut status = Json::parse(annotations[STATUS].as_str().unwrap_or_default());
    status["initContainers"] = strs(&["istio-validation"]);
    annotations[STATUS] = status.to_compact().into();
    cases.given("kube-injected-cni-with-init-native", create(cni), none());

    // An older proxy (no startupProbe) whose status ports are not the
    // defaults: the added probe checks what its readinessProbe checks, the
    // drain hook talks to the pod's status port.
    let mut custom_ports = fixture(CLASSIC_JOB);
    let proxy = container(&mut custom_ports, "containers", "istio-proxy");
    proxy.remove("startupProbe");
    proxy["readinessProbe"]["httpGet"]["port"] = 15121.into();
    let custom_ports = annotate(custom_ports, STATUS_PORT, "15120");
    cases.given(
        "kube-injected-custom-status-port-native",
        create(custom_ports),
        none(),
    );

    // A proxy with its own lifecycle (holdApplicationUntilProxyStarts) keeps
    // it; one without a readinessProbe gets no startupProbe (Istio writes
    // both or neither).
    let mut held = fixture(CLASSIC_JOB);
    let proxy = container(&mut held, "containers", "istio-proxy");
    proxy["lifecycle"] =
        Json::parse(r#"{"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}"#);
    proxy.remove("readinessProbe");
    proxy.remove("startupProbe");
    cases.given(
        "kube-injected-lifecycle-no-probes-native",
        create(held),
        none(),
    );

    // Injection customization: a partial istio-proxy, no status: not a proxy.
    let mut custom = job();
    template(&mut custom)["spec"]["containers"]
        .items()
        .push(Json::parse(
            r#"{"name": "istio-proxy", "image": "auto", "resources": {"limits": {"memory": "256Mi"}}}"#,
        ));
    cases.given(
        "customization-partial-proxy-not-moved",
        create(custom),
        none(),
    );
}

/// proxy.istio.io/config forms, odd shapes and fields this crate does not
/// know.
fn proxy_config_and_odd_shapes(cases: &mut Cases) {
    const CONFIG: &str = "proxy.istio.io/config";
    cases.given(
        "cronjob-yaml-proxy-config-exit",
        create(annotate(
            cronjob(),
            CONFIG,
            "holdApplicationUntilProxyStarts: true\ntracing:\n  sampling: 10\n  zipkin:\n    address: zipkin.istio-system:9411\n",
        )),
        exit(),
    );
    cases.given(
        "job-json-proxy-config-exit",
        create(annotate(
            job(),
            CONFIG,
            r#"{"holdApplicationUntilProxyStarts": true, "proxyMetadata": {"ISTIO_META_DNS_CAPTURE": "true"}}"#,
        )),
        exit(),
    );
    cases.given(
        "proxy-config-key-present-unchanged",
        create(annotate(job(), CONFIG, "exitOnJobCompletion: false\n")),
        exit(),
    );
    cases.given(
        "proxy-config-not-mapping-warns",
        create(annotate(
            job(),
            CONFIG,
            "- holdApplicationUntilProxyStarts\n",
        )),
        exit(),
    );

    let mut odd = job();
    template(&mut odd)["spec"]["containers"] = "pi".into();
    cases.given("wrong-shape-containers-warns", create(odd), none());
    let mut odd = job();
    template(&mut odd)["metadata"]["annotations"] = strs(&["not", "a", "map"]);
    cases.given("wrong-shape-annotations-warns", create(odd), exit());
    let mut future = job();
    future["spec"]["futureJobField"] = Json::parse(r#"{"enabled": true}"#);
    future["spec"]["template"]["metadata"]["futureMetaField"] = 7.into();
    future["spec"]["template"]["spec"]["futurePodField"] =
        Json::parse(r#"[1.50, 2e3, {"x": null}]"#);
    future["spec"]["template"]["spec"]["containers"][0]["futureContainerField"] = "keep me".into();
    future["spec"]["template"]["spec"]["resourceClaims"] =
        Json::parse(r#"[{"name": "gpu", "resourceClaimTemplateName": "gpu-claim"}]"#);
    cases.given("future-fields-kept", create(future), none());
}

/// quitEndpoint: the app container's command is wrapped.
fn quit_endpoint(cases: &mut Cases) {
    cases.given("quit-job", create(job()), quit());
    let mut cron = cronjob();
    let hello = &mut template(&mut cron)["spec"]["containers"][0];
    let (command, mut args) = args_split(hello, 2);
    hello["command"] = Json::Arr(command);
    args.extend(["$(POD_NAME)", "$$(NOT_EXPANDED)", "cost: $$5"].map(Json::from));
    hello["args"] = Json::Arr(args);
    hello["env"] = Json::Arr(vec![pod_name_env()]);
    cases.given("quit-cronjob-with-args", update(cron, cronjob()), quit());
    cases.given("quit-pod-never", create(pod(Some("Never"))), quit());
    cases.given("quit-pod-onfailure", create(pod(Some("OnFailure"))), quit());
    cases.given("quit-no-command-warns", create(cronjob()), quit());
    // Container restart rules (Kubernetes 1.34 alpha, 1.35 beta): the
    // container's own restartPolicy and restartPolicyRules decide when its
    // proxy may quit, as the kubelet's ContainerShouldRestart reads them.
    // The first app container with the members of `own` (a JSON object).
    let set_own = |container: &mut Json, own: &str| {
        for (key, value) in match Json::parse(own) {
            Json::Obj(members) => members,
            _ => unreachable!("an object"),
        } {
            container[key.as_str()] = value;
        }
    };
    let retried = |pod_policy: &str, own: &str| {
        let mut p = pod(Some(pod_policy));
        set_own(&mut p["spec"]["containers"][0], own);
        create(p)
    };
    // A kubelet before 1.35 ignores them and reads the Pod's restartPolicy
    // (KEP-5307, "Version Skew Strategy"): where the two readings differ
    // the container is not wrapped, unless the Node list (nodeVersionCheck)
    // says which kubelets run it; where they agree it is wrapped.
    const RETRY_42: &str = r#"{"restartPolicy": "Never", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}"#;
    cases.given(
        "quit-container-restart-rule-retries-42-warns",
        retried("Never", RETRY_42),
        quit(),
    );
    cases.given(
        "quit-container-never-in-onfailure-pod-warns",
        retried("OnFailure", r#"{"restartPolicy": "Never"}"#),
        quit(),
    );
    cases.given(
        "quit-container-retries-42-in-onfailure-pod-nodes-not-read-warns",
        retried("OnFailure", RETRY_42),
        obj([
            ("mode", "quitEndpoint".into()),
            ("nodeVersionCheck", Json::Bool(true)),
        ]),
    );
    cases.given(
        "quit-container-never-in-never-pod",
        retried("Never", r#"{"restartPolicy": "Never"}"#),
        quit(),
    );
    cases.given(
        "quit-container-restart-not-0-in-onfailure-pod",
        retried(
            "OnFailure",
            r#"{"restartPolicy": "Never", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0]}}]}"#,
        ),
        quit(),
    );
    // The same in a Job's pod template.
    let job_with = |pod_policy: &str, own: &str| {
        let mut j = job();
        let t = template(&mut j);
        t["spec"]["restartPolicy"] = pod_policy.into();
        set_own(&mut t["spec"]["containers"][0], own);
        create(j)
    };
    cases.given(
        "quit-job-container-restart-rule-retries-42-warns",
        job_with("Never", RETRY_42),
        quit(),
    );
    cases.given(
        "quit-job-container-never-in-onfailure-pod-warns",
        job_with("OnFailure", r#"{"restartPolicy": "Never"}"#),
        quit(),
    );
    cases.given(
        "quit-container-always-restarted-warns",
        retried("Never", r#"{"restartPolicy": "Always"}"#),
        quit(),
    );
    let mut several = job();
    template(&mut several)["spec"]["containers"]
        .items()
        .push(uploader());
    cases.given("quit-several-containers-warns", create(several), quit());
    cases.given(
        "quit-kube-injected-job",
        create(fixture(CLASSIC_JOB)),
        quit(),
    );
    cases.given(
        "quit-kube-injected-native-wrapped",
        create(fixture(NATIVE_JOB)),
        quit(),
    );
    let mut wrapped = job();
    let pi = &mut template(&mut wrapped)["spec"]["containers"][0];
    let mut command = strs(&["/bin/sh", "-c"]);
    command.items().extend(
        [
            QUIT_SCRIPT,
            "istio-job-sidecar-quit",
            "http://127.0.0.1:15020/quitquitquit",
            "always",
        ]
        .map(Json::from),
    );
    command
        .items()
        .extend(pi["command"].items().iter().cloned());
    pi["command"] = command;
    let legacy = wrapped.clone();
    let wrapped = annotate(
        wrapped,
        RECORD_KEY,
        r#"{"mode":"quitEndpoint","container":"pi"}"#,
    );
    cases.given("quit-already-wrapped-unchanged", create(wrapped), quit());
    // Reversible modes: the quit-wrapped mark of 0.1.0 is read as a record
    // and replaced.
    let legacy = annotate(legacy, crate::names::QUIT_WRAPPED, "pi");
    cases.given("quit-legacy-mark-replaced", create(legacy), quit());
    // Each wrapper text an earlier version wrote is still the policy's own:
    // brought up to date (never wrapped twice), taken back by another mode,
    // taken off when a second app container comes.
    for (name, script) in older_quit_scripts() {
        let older = quit_wrapped(cronjob_with_command(), &script);
        let again = || request(older.clone(), "UPDATE", Some(older.clone()), "default");
        cases.given(
            format!("quit-older-wrapper-{name}-refreshed"),
            again(),
            quit(),
        );
        cases.given(
            format!("quit-older-wrapper-{name}-taken-back"),
            again(),
            none(),
        );
        cases.given(
            format!("quit-older-wrapper-{name}-taken-back-exit"),
            again(),
            exit(),
        );
        let mut several = older.clone();
        template(&mut several)["spec"]["containers"]
            .items()
            .push(uploader());
        cases.given(
            format!("quit-older-wrapper-{name}-several-taken-off"),
            update(several, older.clone()),
            quit(),
        );
    }
    // pilot-agent serves /quitquitquit on the pod's status port; "0" turns
    // its status server off, and nothing can end the proxy this way.
    cases.given(
        "quit-status-port-job",
        create(annotate(job(), STATUS_PORT, "15120")),
        quit(),
    );
    let made = obj([
        ("apiVersion", "batch/v1".into()),
        ("kind", "Job".into()),
        (
            "metadata",
            obj([
                ("name", "report-29420000".into()),
                ("namespace", "batch".into()),
                ("annotations", obj([(STATUS_PORT, "15320".into())])),
            ]),
        ),
        ("spec", job()["spec"].clone()),
    ]);
    cases.given(
        "quit-status-port-on-the-jobs-own-metadata",
        create_in(made, "batch"),
        quit(),
    );
    cases.given(
        "quit-status-port-zero-warns",
        create(annotate(job(), STATUS_PORT, "0")),
        quit(),
    );
    let zero = annotate(
        quit_wrapped(cronjob_with_command(), QUIT_SCRIPT),
        STATUS_PORT,
        "0",
    );
    cases.given(
        "quit-status-port-zero-wrapper-taken-off",
        update(zero.clone(), zero),
        quit(),
    );
    cases.given(
        "quit-workload-annotation",
        create(annotate(job(), MODE_KEY, "quitEndpoint")),
        none(),
    );
    cases.given("quit-job-update-unchanged", update(job(), job()), quit());
    // Injection read as Istio reads it: the label when present (even
    // empty), the exact "false" only, never a Pod on the host's network.
    cases.given(
        "injection-empty-label-wins-wrapped",
        create(annotate(
            label(job(), "sidecar.istio.io/inject", ""),
            "sidecar.istio.io/inject",
            "false",
        )),
        quit(),
    );
    cases.given(
        "injection-label-capital-false-wrapped",
        create(label(job(), "sidecar.istio.io/inject", "False")),
        quit(),
    );
    let mut host = job();
    template(&mut host)["spec"]["hostNetwork"] = Json::Bool(true);
    cases.given("quit-host-network-unchanged", create(host), quit());
    // The owner's word carried down to the template.
    cases.given(
        "workload-mode-on-cronjob-metadata",
        create(annotate_on(cronjob(), MODE_KEY, "disabled", false)),
        quit(),
    );
    let stale = annotate(cronjob(), crate::names::OWNER_MODE, "disabled");
    cases.given(
        "workload-owner-mode-removed-with-the-owners",
        update(stale.clone(), stale),
        quit(),
    );
    // A Job the CronJob controller made from a kube-injected CronJob: the
    // injection status on the Job's own metadata (spec.jobTemplate.metadata).
    let injected = fixture(CLASSIC_CRONJOB);
    let mut metadata = injected["spec"]["jobTemplate"]["metadata"].clone();
    metadata["name"] = "hellocron-29420000".into();
    metadata["namespace"] = "batch".into();
    metadata["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
        "2025-12-08T13:20:00Z".into();
    let made = obj([
        ("apiVersion", "batch/v1".into()),
        ("kind", "Job".into()),
        ("metadata", metadata),
        ("spec", injected["spec"]["jobTemplate"]["spec"].clone()),
    ]);
    cases.given(
        "kube-injected-cronjobs-job-native",
        create_in(made, "batch"),
        none(),
    );
    cases.given(
        "kube-injected-native-false-respected",
        create(annotate(fixture(CLASSIC_JOB), NATIVE_KEY, "false")),
        none(),
    );
}

/// The proxy of Istio's native kube-inject output (an init container).
fn native_proxy() -> Json {
    container(&mut fixture(NATIVE_JOB), "initContainers", "istio-proxy").clone()
}

/// A Pod of the Job of fixture `job` as the Job controller makes it.
fn pod_of(job: &str) -> Json {
    let t = template(&mut fixture(job)).clone();
    let mut metadata = t["metadata"].clone();
    metadata["generateName"] = "pi-".into();
    metadata["namespace"] = "default".into();
    obj([
        ("apiVersion", "v1".into()),
        ("kind", "Pod".into()),
        ("metadata", metadata),
        ("spec", t["spec"].clone()),
    ])
}

/// A Pod of Istio's classic kube-injected Job as the Job controller makes
/// it, seen after Istio's webhook (Kubewarden >= 1.37.2). With `twice`, its
/// template had the proxy native and the webhook rendered it classic again:
/// Istio merges onto the Pod as it came, so it is in both lists.
fn injected_pod(twice: bool) -> Json {
    let mut p = pod_of(CLASSIC_JOB);
    if twice {
        p["spec"]["initContainers"]
            .items()
            .insert(1, native_proxy());
    }
    p
}

/// nativeSidecar where the Pod could not run it: no `"true"`, no move, a
/// warning, and `fallbackMode` where the settings name one
/// (docs/facts.md, "Custom injection templates"; and
/// docs/facts.md, "Kubelets and native sidecars").
fn native_where_it_cannot_run(cases: &mut Cases) {
    let fallback = |mode: &str| {
        obj([
            ("mode", "nativeSidecar".into()),
            ("fallbackMode", mode.into()),
        ])
    };
    const TEMPLATES: &str = "inject.istio.io/templates";
    // Istio's spire-template fixture asks for two templates.
    cases.given(
        "native-custom-templates-warns",
        create(annotate(job(), TEMPLATES, "sidecar,spire")),
        none(),
    );
    cases.given(
        "native-custom-templates-fallback-quit",
        create(annotate(job(), TEMPLATES, "sidecar, spire")),
        fallback("quitEndpoint"),
    );
    // grpc-agent renders its agent in containers whatever the Pod asks.
    cases.given(
        "native-grpc-agent-fallback-quit",
        create(annotate(pod(Some("Never")), TEMPLATES, "grpc-agent")),
        fallback("quitEndpoint"),
    );
    // The same template named again is still sidecar alone.
    cases.given(
        "native-sidecar-template-repeated",
        create(annotate(job(), TEMPLATES, "sidecar,sidecar")),
        none(),
    );
    // A kube-injected classic proxy with a second template: not moved.
    cases.given(
        "native-custom-templates-kube-injected-not-moved",
        create(annotate(fixture(CLASSIC_JOB), TEMPLATES, "sidecar,spire")),
        fallback("exitOnJobCompletion"),
    );
    // Istio's sidecar-spire.yaml.injected shape on a Pod seen after the
    // injector: the spire template's partial proxy in containers beside
    // the native one, both in the status; merged into the native one.
    let status = r#"{"initContainers":["istio-init","istio-proxy"],"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert","istio-ca-crl"],"imagePullSecrets":null,"revision":"default"}"#;
    let mut spire_pod = pod_of(NATIVE_JOB);
    let annotations = &mut spire_pod["metadata"]["annotations"];
    annotations[TEMPLATES] = "sidecar,spire".into();
    annotations["sidecar.istio.io/status"] = status.into();
    spire_pod["spec"]["containers"].items().push(Json::parse(
        r#"{"name": "istio-proxy", "resources": {}, "volumeMounts": [
            {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket", "readOnly": true}]}"#,
    ));
    cases.given(
        "pod-spire-partial-proxy-merged",
        create(spire_pod.clone()),
        fallback("quitEndpoint"),
    );
    cases.given(
        "pod-spire-partial-proxy-merged-no-fallback",
        create(spire_pod),
        none(),
    );
    // nodeVersionCheck where the host lists no Nodes (kwctl without
    // --allow-context-aware, a policy-server not granted them): the
    // fallback, and a warning.
    let checked = |fallback: Option<&str>| {
        let mut settings = obj([
            ("mode", "nativeSidecar".into()),
            ("nodeVersionCheck", Json::Bool(true)),
        ]);
        if let Some(mode) = fallback {
            settings["fallbackMode"] = mode.into();
        }
        settings
    };
    cases.given(
        "native-node-check-no-cluster-context",
        create(job()),
        checked(Some("quitEndpoint")),
    );
    // A Pod Istio injected natively before the policy saw it (Kubewarden
    // 1.37.2 and later), from a Job whose template nativeSidecar asked
    // native of while every kubelet was new, where the Node check now
    // fails: no mode changes how the kubelet runs that proxy, nor can its
    // classic form be made from it, so it is kept native and the operator
    // told. Its Job's template is another matter: Istio renders each Pod
    // anew, so the fallback applies there.
    let mut native_pod = pod_of(NATIVE_JOB);
    let annotations = &mut native_pod["metadata"]["annotations"];
    annotations[NATIVE_KEY] = "true".into();
    annotations[RECORD_KEY] =
        r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#.into();
    cases.given(
        "pod-injected-native-node-check-fails-kept-native",
        create(native_pod.clone()),
        checked(Some("quitEndpoint")),
    );
    cases.given(
        "pod-injected-native-node-check-fails-no-fallback-kept-native",
        create(native_pod),
        checked(None),
    );
    cases.given(
        "kube-injected-native-job-node-check-fails-quit",
        create(fixture(NATIVE_JOB)),
        checked(Some("quitEndpoint")),
    );
    // Template names trimmed as Go's strings.TrimSpace trims them (Unicode
    // White_Space): still sidecar alone; a zero-width space is no space.
    cases.given(
        "native-template-name-unicode-space-trimmed",
        create(annotate(job(), TEMPLATES, "\u{a0}sidecar\u{3000}")),
        none(),
    );
    cases.given(
        "native-template-name-zero-width-space-warns",
        create(annotate(job(), TEMPLATES, "sidecar\u{200b}")),
        none(),
    );
}

/// What Istio's releases read differently, its re-injection, and the order
/// of the native form (docs/facts.md, "The journey of a workload").
fn releases_and_reinjection(cases: &mut Cases) {
    // sidecar.istio.io/nativeSidecar: 1.24-1.26 render native only for the
    // exact "true"; a user's other opt-in is made exact (and recorded).
    for (case, value) in [("capital-true", "True"), ("yes", "yes"), ("empty", "")] {
        cases.given(
            format!("native-annotation-{case}-made-exact"),
            create(annotate(job(), NATIVE_KEY, value)),
            none(),
        );
    }
    // Istio never injects these namespaces: nothing to wrap; a proxy
    // kube-injected there is moved all the same.
    cases.given(
        "kube-system-job-quit-unchanged",
        create_in(job(), "kube-system"),
        quit(),
    );
    cases.given(
        "kube-system-kube-injected-native",
        create_in(fixture(CLASSIC_JOB), "kube-system"),
        none(),
    );
    // The native form's order: Istio's init containers, the proxy, the rest.
    let mut own_init = fixture(CLASSIC_JOB);
    template(&mut own_init)["spec"]["initContainers"]
        .items()
        .insert(0, db_migrate());
    cases.given(
        "kube-injected-own-init-container-native",
        create(own_init),
        none(),
    );
    // Beside a proxy Istio injected natively the other modes ask for the
    // native form too; a user's "false" there is warned about.
    cases.given(
        "exit-kube-injected-native-annotated",
        create(fixture(NATIVE_JOB)),
        exit(),
    );
    cases.given(
        "quit-kube-injected-native-false-warns",
        create(annotate(fixture(NATIVE_JOB), NATIVE_KEY, "false")),
        quit(),
    );
    // A Pod seen after Istio's injector: moved; with the proxy twice, one kept.
    cases.given(
        "pod-injected-classic-native",
        create(injected_pod(false)),
        none(),
    );
    for (settings, mode) in [(none(), "native"), (exit(), "exit"), (quit(), "quit")] {
        cases.given(
            format!("pod-proxy-twice-{mode}"),
            create(injected_pod(true)),
            settings,
        );
    }
    cases.given(
        "pod-proxy-twice-disabled",
        create(annotate(injected_pod(true), MODE_KEY, "disabled")),
        none(),
    );
    cases.given(
        "pod-proxy-twice-user-true",
        create(annotate(injected_pod(true), NATIVE_KEY, "True")),
        quit(),
    );
    // Istio >= 1.27 renders "True" native but moves a classic proxy only for
    // the exact "true": the native rendering beside the kube-injected classic
    // one, the status naming the native one, which is kept.
    let mut quirk = injected_pod(false);
    quirk["spec"]["initContainers"]
        .items()
        .insert(1, native_proxy());
    let native_status =
        fixture(NATIVE_JOB)["spec"]["template"]["metadata"]["annotations"][STATUS].clone();
    quirk["metadata"]["annotations"][STATUS] = native_status;
    let quirk = annotate(quirk, NATIVE_KEY, "True");
    cases.given("pod-native-rendered-beside-classic", create(quirk), exit());
}

// --- mode changes (reversible modes) ----------------------------------------

const MODES: [&str; 3] = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"];
const DISABLED: &str = "disabled";

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
enum Pick {
    /// The cluster's mode (settings); disabled is the user's
    /// `istio-job-sidecar/mode: disabled` on the CronJob.
    BySettings,
    /// The team flips `istio-job-sidecar/mode` on the template.
    ByAnnotation,
}

impl Pick {
    /// x under `mode`.
    fn pick(self, x: &Json, mode: &str) -> Json {
        match self {
            Pick::BySettings if mode == DISABLED => {
                annotate_on(x.clone(), MODE_KEY, DISABLED, false)
            }
            Pick::BySettings => x.clone(),
            Pick::ByAnnotation => annotate(x.clone(), MODE_KEY, mode),
        }
    }

    /// The settings of a pass under `mode` after one under `before`.
    fn settings(self, mode: &str, before: &str) -> Json {
        match self {
            // disabled is the workload's word: the cluster's mode stays as it was
            Pick::BySettings => settings(if mode == DISABLED { before } else { mode }),
            Pick::ByAnnotation => none(),
        }
    }
}

/// A variant: its name, x, how a mode is picked, the second passes (A, B)
/// made.
type Variant = (&'static str, Json, Pick, Vec<(&'static str, &'static str)>);

/// Every variant.
fn variants() -> Vec<Variant> {
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

fn mode_annotation(obj: &Json, on_template: bool) -> Option<&str> {
    let target = if on_template { template_of(obj) } else { obj };
    target["metadata"]["annotations"][MODE_KEY].as_str()
}

fn mode_changes(cases: &mut Cases) {
    let variants = variants();
    for (variant, x, pick, pairs) in &variants {
        for mode in MODES.iter().chain([&DISABLED]) {
            cases.given(
                format!("mode-change-{variant}-{mode}"),
                create_in(pick.pick(x, mode), "batch"),
                pick.settings(mode, "nativeSidecar"),
            );
        }
        for (a, b) in pairs {
            // the user's edit between the passes: what picks b
            let (x_a, x_b) = (pick.pick(x, a), pick.pick(x, b));
            let changed: Vec<(bool, Json)> = [false, true]
                .into_iter()
                .filter(|t| mode_annotation(&x_a, *t) != mode_annotation(&x_b, *t))
                .map(|t| (t, Json::from(mode_annotation(&x_b, t))))
                .collect();
            cases.after(
                format!("mode-change-{variant}-{a}-then-{b}"),
                format!("mode-change-{variant}-{a}"),
                pick.settings(b, a),
                move |obj| {
                    for (on_template, now) in &changed {
                        let target = if *on_template {
                            template(obj)
                        } else {
                            &mut *obj
                        };
                        target["metadata"]["annotations"][MODE_KEY] = now.clone();
                    }
                },
            );
        }
    }
    let x_of = |name: &str| {
        variants
            .iter()
            .find(|v| v.0 == name)
            .map(|v| v.1.clone())
            .expect("a variant")
    };

    // A re-apply (kubectl apply or server-side apply) of the kube-injected
    // CronJob whose proxy the policy moved brings the classic proxy and
    // Istio's status back beside the moved proxy, which neither applier
    // owns: the policy resolves it to one, and the apply lands.
    let injected = x_of("injected");
    let containers = template_of(&injected)["spec"]["containers"].clone();
    let status = injected["spec"]["jobTemplate"]["metadata"]["annotations"][STATUS].clone();
    let reapplied = move |obj: &mut Json| {
        template(obj)["spec"]["containers"] = containers.clone();
        obj["spec"]["jobTemplate"]["metadata"]["annotations"][STATUS] = status.clone();
    };
    let moved = "mode-change-injected-nativeSidecar";
    for (mode, settings) in [("native", settings("nativeSidecar")), ("quit", quit())] {
        cases.after(
            format!("gitops-reapplied-moved-proxy-{mode}"),
            moved,
            settings,
            reapplied.clone(),
        );
    }
    cases.after(
        "gitops-reapplied-moved-proxy-disabled",
        moved,
        settings("nativeSidecar"),
        move |obj| {
            reapplied(obj);
            obj["metadata"]["annotations"][MODE_KEY] = DISABLED.into();
        },
    );

    // Records the policy cannot trust, and the mark of earlier versions, on
    // the quitEndpoint result of the plain CronJob, updated under
    // nativeSidecar.
    let quit_result = "mode-change-plain-quitEndpoint";
    let native = || settings("nativeSidecar");
    cases.after(
        "mode-change-unreadable-record-warns",
        quit_result,
        native(),
        |obj| template(obj)["metadata"]["annotations"][RECORD_KEY] = "garbage".into(),
    );
    cases.after(
        "mode-change-command-replaced-record-goes",
        quit_result,
        native(),
        |obj| {
            template(obj)["spec"]["containers"][0]["command"] =
                strs(&["/bin/report", "--since", "it's $(DAY)"]);
        },
    );
    // A server-side apply by a tool that owns `command` writes the original
    // back and leaves the record, which it does not own, as stored.
    let original = template_of(&x_of("plain"))["spec"]["containers"][0]["command"].clone();
    cases.after(
        "mode-change-command-written-back-record-goes",
        quit_result,
        native(),
        move |obj| template(obj)["spec"]["containers"][0]["command"] = original.clone(),
    );
    cases.after(
        "mode-change-legacy-mark-undone",
        quit_result,
        native(),
        |obj| {
            let annotations = &mut template(obj)["metadata"]["annotations"];
            let record = annotations.remove(RECORD_KEY).unwrap_or(Json::Null);
            let record = Json::parse(record.as_str().unwrap_or("null"));
            annotations[crate::names::QUIT_WRAPPED] = record["container"].clone();
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_as_the_inputs_always_were() {
        let value = Json::parse(r#"{"b": [1.50, 2e3, {}], "a": "\u00fc\u2713\n", "c": []}"#);
        assert_eq!(
            value.to_file(),
            "{\n  \"b\": [\n    1.5,\n    2000.0,\n    {}\n  ],\n  \"a\": \"\\u00fc\\u2713\\n\",\n  \"c\": []\n}\n"
        );
        assert_eq!(
            value.to_compact(),
            r#"{"b":[1.5,2000.0,{}],"a":"\u00fc\u2713\n","c":[]}"#
        );
    }

    #[test]
    fn a_member_set_again_keeps_its_place() {
        let mut value = Json::parse(r#"{"b": 1, "a": 2}"#);
        value["b"] = 3.into();
        value["c"]["d"] = "e".into();
        value.remove("a");
        assert_eq!(value.to_compact(), r#"{"b":3,"c":{"d":"e"}}"#);
    }

    #[test]
    fn every_case_is_named_once() {
        let cases = Cases::all();
        assert!(cases.len() > 100);
        for case in &cases.list {
            if let Some(first) = case.first_pass() {
                assert!(cases.get(first).is_some(), "{}: no {first}", case.name);
            }
        }
    }
}
