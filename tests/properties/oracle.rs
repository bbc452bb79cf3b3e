//! The oracle, written from the README, docs/modes.md, docs/changing-modes.md,
//! docs/design.md, docs/facts.md and
//! the spec, never from src/:
//! what the decision table makes of a request (`plan`), where the
//! workload's mode and the owner's mode carried down are read and written
//! (`mode_asked`, `owner_edit`), whether Istio injects (`injection_off`,
//! `injection_status`), the record and its reader (`Applied`), the undo of
//! another mode's recorded edit, modelled exactly (`undo_expectation`: the
//! object it leaves, or a refusal and its reason), what each mode does and
//! records (`native_record_edit`, `exit_record_edit`, `quit_expectation`,
//! `expected_record`), and the parts a pass may change (`strip`).

use crate::generators::Case;
use crate::names::*;
use crate::object_of;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use policy_testkit::Answer;
use serde_json::{json, Value};

pub struct Settings {
    pub mode: Mode,
    pub sidecar: String,
    pub workload_override: bool,
    pub quit_url: String,
}

pub fn settings_of(s: &Option<Value>) -> Settings {
    let s = s.clone().unwrap_or(Value::Null);
    Settings {
        mode: s["mode"]
            .as_str()
            .and_then(Mode::parse)
            .unwrap_or(Mode::Native),
        sidecar: s["sidecarContainerName"]
            .as_str()
            .unwrap_or("istio-proxy")
            .to_owned(),
        workload_override: s["workloadOverride"].as_bool().unwrap_or(true),
        quit_url: s["quitUrl"].as_str().unwrap_or(DEFAULT_QUIT_URL).to_owned(),
    }
}

pub fn template_pointer(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "",
        Kind::Job => "/spec/template",
        Kind::CronJob => "/spec/jobTemplate/spec/template",
        Kind::Other => "/spec/template",
    }
}

pub const JOB_TEMPLATE: &str = "/spec/jobTemplate";

pub fn annotation<'v>(object: &'v Value, meta_owner: &str, key: &str) -> Option<&'v str> {
    object
        .pointer(&format!("{meta_owner}/metadata/annotations"))?
        .get(key)?
        .as_str()
}

pub fn label<'v>(object: &'v Value, meta_owner: &str, key: &str) -> Option<&'v str> {
    object
        .pointer(&format!("{meta_owner}/metadata/labels"))?
        .get(key)?
        .as_str()
}

/// Whether the policy handles this request at all (the decision table:
/// Job CREATE, CronJob CREATE/UPDATE, run-to-completion Pod CREATE).
/// Nothing else is ever changed, whatever record it carries.
pub fn handled_request(kind: Kind, operation: &str, object: &Value) -> bool {
    match kind {
        Kind::Job => operation == "CREATE",
        Kind::CronJob => operation == "CREATE" || operation == "UPDATE",
        Kind::Pod => {
            operation == "CREATE"
                && matches!(
                    object
                        .pointer("/spec/restartPolicy")
                        .and_then(Value::as_str),
                    Some("Never" | "OnFailure")
                )
        }
        Kind::Other => false,
    }
}

pub fn handled(case: &Case) -> bool {
    let op = case.request["operation"].as_str().unwrap_or_default();
    handled_request(case.kind, op, &object_of(&case.request))
}

/// What the decision table makes of a request, written from the spec
/// rather than from src/decide.rs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Not a request the policy may mutate.
    NotHandled,
    /// The workload asks for `disabled`.
    Disabled,
    /// Istio will not inject the pod and no proxy is there.
    InjectionOff,
    /// This mode is wanted.
    Apply(Mode),
}

impl Plan {
    pub fn mode(self) -> Option<Mode> {
        match self {
            Plan::Apply(mode) => Some(mode),
            _ => None,
        }
    }
}

pub fn plan(case: &Case) -> Plan {
    let op = case.request["operation"].as_str().unwrap_or_default();
    let settings = settings_of(&case.settings);
    plan_of(case.kind, op, &object_of(&case.request), &settings)
}

/// The plan for `object` sent under `operation`.
pub fn plan_of(kind: Kind, operation: &str, object: &Value, settings: &Settings) -> Plan {
    if !handled_request(kind, operation, object) {
        return Plan::NotHandled;
    }
    let asked = mode_asked(kind, object).filter(|_| settings.workload_override);
    let mode = match asked {
        None => settings.mode,
        Some("disabled") => return Plan::Disabled,
        Some(other) => Mode::parse(other).unwrap_or(settings.mode),
    };
    if injection_off(kind, object) && !proxy_there(kind, object, &settings.sidecar) {
        return Plan::InjectionOff;
    }
    Plan::Apply(mode)
}

/// The mode the decision table applies; `None` when no mode applies (not
/// handled, `disabled`, or injection off and no proxy there).
pub fn expected_mode(case: &Case) -> Option<Mode> {
    plan(case).mode()
}

/// `istio-job-sidecar/mode` as the workload asks for it, nearest the pod
/// first: a Pod's own, else the owner's mode its template carried down
/// (`istio-job-sidecar/owner-mode`); a Job's template, the Job's own
/// metadata, then the owner's mode on its template (a CronJob's word); a
/// CronJob's template, its `spec.jobTemplate.metadata`, then its own
/// metadata (the owner-mode on a CronJob's template is its own copy and
/// never read).
pub fn mode_asked(kind: Kind, object: &Value) -> Option<&str> {
    let t = template_pointer(kind);
    let own = annotation(object, t, MODE);
    match kind {
        Kind::Pod => own.or_else(|| annotation(object, t, OWNER_MODE)),
        Kind::Job => own
            .or_else(|| annotation(object, "", MODE))
            .or_else(|| annotation(object, t, OWNER_MODE)),
        Kind::CronJob => own
            .or_else(|| annotation(object, JOB_TEMPLATE, MODE))
            .or_else(|| annotation(object, "", MODE)),
        Kind::Other => None,
    }
}

/// Istio's injector will not inject the pod, as Istio reads it: never on
/// the host's network; else the label `sidecar.istio.io/inject` when
/// present (even empty: the annotation is then not read), else the
/// annotation; only the exact `"false"` says no.
pub fn injection_off(kind: Kind, object: &Value) -> bool {
    let t = template_pointer(kind);
    if object.pointer(&format!("{t}/spec/hostNetwork")) == Some(&Value::Bool(true)) {
        return true;
    }
    label(object, t, INJECT).or_else(|| annotation(object, t, INJECT)) == Some("false")
}

/// What a pass does to `istio-job-sidecar/owner-mode` on the pod template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerEdit {
    Keep,
    Set(String),
    Remove,
}

/// The owner's mode carried down to the pod template, so that every Job
/// and Pod made from it reads what its owner asked for: on Job CREATE and
/// CronJob CREATE and UPDATE, unless injection is off or the workload's
/// word is not honoured (`workloadOverride: false`), and only where the
/// template has no mode of its own. A CronJob's is its jobTemplate's
/// metadata mode, else its own metadata's, set when it differs and
/// removed with it; a Job's is its own metadata's, set when it differs,
/// never removed (its template may carry a CronJob's word). A Pod's is
/// never written.
pub fn owner_edit(kind: Kind, operation: &str, object: &Value, settings: &Settings) -> OwnerEdit {
    match plan_of(kind, operation, object, settings) {
        Plan::NotHandled | Plan::InjectionOff => return OwnerEdit::Keep,
        Plan::Disabled | Plan::Apply(_) => {}
    }
    let t = template_pointer(kind);
    if !settings.workload_override || annotation(object, t, MODE).is_some() {
        return OwnerEdit::Keep;
    }
    let carried = annotation(object, t, OWNER_MODE);
    match kind {
        Kind::CronJob => {
            let wanted =
                annotation(object, JOB_TEMPLATE, MODE).or_else(|| annotation(object, "", MODE));
            match (wanted, carried) {
                (Some(v), carried) if carried != Some(v) => OwnerEdit::Set(v.to_owned()),
                (None, Some(_)) => OwnerEdit::Remove,
                _ => OwnerEdit::Keep,
            }
        }
        Kind::Job => match annotation(object, "", MODE) {
            Some(v) if carried != Some(v) => OwnerEdit::Set(v.to_owned()),
            _ => OwnerEdit::Keep,
        },
        Kind::Pod | Kind::Other => OwnerEdit::Keep,
    }
}

pub fn owner_edit_of(case: &Case) -> OwnerEdit {
    let op = case.request["operation"].as_str().unwrap_or_default();
    let settings = settings_of(&case.settings);
    owner_edit(case.kind, op, &object_of(&case.request), &settings)
}

/// The template's owner-mode after a pass that makes `edit` to `before`.
pub fn owner_mode_after(kind: Kind, before: &Value, edit: &OwnerEdit) -> Option<String> {
    match edit {
        OwnerEdit::Keep => {
            annotation(before, template_pointer(kind), OWNER_MODE).map(str::to_owned)
        }
        OwnerEdit::Set(v) => Some(v.clone()),
        OwnerEdit::Remove => None,
    }
}

/// `object` with `edit` made as the policy makes it (a removal takes an
/// emptied `annotations`, then an emptied `metadata`, with it).
pub fn with_owner_edit(kind: Kind, object: &Value, edit: &OwnerEdit) -> Value {
    let t = template_pointer(kind);
    let mut o = object.clone();
    match edit {
        OwnerEdit::Keep => {}
        OwnerEdit::Set(v) => set_annotation(&mut o, t, OWNER_MODE, v),
        OwnerEdit::Remove => remove_annotations(&mut o, t, &[OWNER_MODE]),
    }
    o
}

pub fn injected(kind: Kind, object: &Value) -> bool {
    injection_status(kind, object).is_some()
}

/// A proxy is already there, as far as the decision table is concerned:
/// Istio recorded an injection (`injection_status`), or a container,
/// regular or init, has the sidecar's name (the Pods of an older
/// kube-injected CronJob carry the proxy, not the status, which stays on
/// the Job's own metadata).
pub fn proxy_there(kind: Kind, object: &Value, sidecar: &str) -> bool {
    let t = template_pointer(kind);
    injected(kind, object)
        || ["containers", "initContainers"].iter().any(|list| {
            containers(object, t, list)
                .iter()
                .any(|c| c["name"] == json!(sidecar))
        })
}

/// Where Istio recorded the injection, and what it says: the template's
/// `sidecar.istio.io/status`, else where `istioctl kube-inject` writes it
/// for a CronJob (its jobTemplate's metadata) and where the CronJob
/// controller copies that (a Job's own metadata).
pub fn injection_status(kind: Kind, object: &Value) -> Option<(&'static str, String)> {
    let t = template_pointer(kind);
    let owner = match kind {
        Kind::CronJob => Some(JOB_TEMPLATE),
        Kind::Job => Some(""),
        Kind::Pod | Kind::Other => None,
    };
    match annotation(object, t, STATUS) {
        Some(status) => Some((t, status.to_owned())),
        None => owner.and_then(|at| annotation(object, at, STATUS).map(|s| (at, s.to_owned()))),
    }
}

pub fn containers(object: &Value, t: &str, list: &str) -> Vec<Value> {
    object
        .pointer(&format!("{t}/spec/{list}"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The container named `name` in `list` of the template.
pub fn container_mut<'v>(
    object: &'v mut Value,
    t: &str,
    list: &str,
    name: &str,
) -> Option<&'v mut Value> {
    object
        .pointer_mut(&format!("{t}/spec/{list}"))?
        .as_array_mut()?
        .iter_mut()
        .find(|c| c["name"] == json!(name))
}

/// The proxy Istio itself injects in native form: its `startupProbe` and
/// `lifecycle`, from `istioctl kube-inject` (test_data/fixtures/).
pub fn istio_native_proxy() -> &'static Value {
    static PROXY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    PROXY.get_or_init(|| {
        let text = include_str!("../../test_data/fixtures/istio-job-kube-injected-native.yaml");
        let job: Value = serde_yaml::from_str(text.split("\n---").next().unwrap()).unwrap();
        containers(&job, "/spec/template", "initContainers")
            .into_iter()
            .find(|c| c["name"] == "istio-proxy")
            .expect("the fixture has a native istio-proxy")
    })
}

/// pilot-agent's status port for this pod: its annotation, else Istio's default.
pub fn status_port(kind: Kind, object: &Value) -> u16 {
    pods_status_port(kind, object).unwrap_or(15020)
}

/// `status.sidecar.istio.io/port` when the pod sets it; a value that is no
/// port number is 0, as pilot-agent reads it
/// (docs/facts.md, "pilot-agent's quit endpoint").
fn pods_status_port(kind: Kind, object: &Value) -> Option<u16> {
    let t = template_pointer(kind);
    // Where the injection status of a kube-injected CronJob is: its
    // jobTemplate's metadata, or a Job's own made from it.
    let owner = match kind {
        Kind::CronJob => annotation(object, JOB_TEMPLATE, STATUS_PORT),
        Kind::Job => annotation(object, "", STATUS_PORT),
        Kind::Pod | Kind::Other => None,
    };
    annotation(object, t, STATUS_PORT)
        .or(owner)
        .map(|p| p.parse().unwrap_or(0))
}

/// The sidecar as Istio would have injected it in native form: what it had
/// (its startup probe where the mesh wrote one: Istio writes it in both
/// forms or in neither), `restartPolicy: Always`, and, where it has none,
/// Istio's drain hook on the pod's status port
/// (docs/facts.md, "The native form"; docs/design.md, "The move compared
/// with Istio's own native injection").
pub fn made_native(sidecar: &Value, status_port: u16) -> Value {
    let istio = istio_native_proxy();
    let mut moved = sidecar.clone();
    moved["restartPolicy"] = json!("Always");
    let absent = |key: &str| sidecar.get(key).is_none_or(Value::is_null);
    if absent("lifecycle") && status_port != 0 {
        let hook = serde_json::to_string(&istio["lifecycle"])
            .unwrap()
            .replace("--debug-port=15020", &format!("--debug-port={status_port}"));
        moved["lifecycle"] = serde_json::from_str(&hook).unwrap();
    }
    moved
}

/// Istio's init containers in the order its native form puts them first
/// (`reorderPod`): `istio-init`, `istio-validation`, then, after the
/// proxy, `enable-core-dump` (docs/facts.md, "The native form").
pub const ISTIO_FIRST: [&str; 3] = ["istio-init", "istio-validation", "enable-core-dump"];

/// The init containers (the proxy aside) in the native form's order:
/// Istio's first, the others in their order after them; and where each of
/// Istio's was, when any of them had to move.
pub fn native_order(init: &[Value]) -> (Vec<Value>, Vec<(String, usize)>) {
    let istio = |c: &Value| ISTIO_FIRST.iter().any(|n| c["name"] == json!(n));
    let mut order: Vec<Value> = Vec::new();
    for name in ISTIO_FIRST {
        order.extend(init.iter().filter(|c| c["name"] == json!(name)).cloned());
    }
    order.extend(init.iter().filter(|c| !istio(c)).cloned());
    if order == init {
        return (order, Vec::new());
    }
    let from = (0..init.len())
        .filter(|&i| istio(&init[i]))
        .filter_map(|i| Some((init[i]["name"].as_str()?.to_owned(), i)))
        .collect();
    (order, from)
}

/// Where the moved proxy goes in the native order: after `istio-init` and
/// `istio-validation`, before everything else.
pub fn native_position(order: &[Value]) -> usize {
    order
        .iter()
        .rposition(|c| ISTIO_INITS.iter().any(|n| c["name"] == json!(n)))
        .map_or(0, |i| i + 1)
}

/// A JSON object's members in their order, each value as its text:
/// what `sidecar.istio.io/status` is rewritten in, keeping the rest as it
/// was written.
pub struct Ordered(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Ordered, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = a.next_entry()? {
                    members.push(member);
                }
                Ok(Ordered(members))
            }
        }
        d.deserialize_map(Members)
    }
}

/// `sidecar.istio.io/status` as Istio writes it for a native sidecar
/// (docs/facts.md, "The native form"): `name` taken out of `containers` (an emptied list is `null`)
/// and put in `initContainers` after Istio's own init containers, key order
/// and every other member kept; `Ok(None)` when `containers` does not list
/// `name`; `Err` when the status is not an object of string lists.
pub fn native_status(status: &str, name: &str) -> Result<Option<String>, ()> {
    let Ordered(mut members) = serde_json::from_str(status).map_err(|_| ())?;
    // The last member of a name counts, and `null` is absent.
    let names = |members: &[(String, Box<serde_json::value::RawValue>)], key: &str| match members
        .iter()
        .rev()
        .find(|(k, _)| k == key)
    {
        Some((_, v)) if v.get() != "null" => serde_json::from_str::<Vec<String>>(v.get()),
        _ => Ok(Vec::new()),
    };
    let mut list = names(&members, "containers").map_err(|_| ())?;
    let Some(at) = list.iter().position(|c| c == name) else {
        return Ok(None);
    };
    list.remove(at);
    let mut init = names(&members, "initContainers").map_err(|_| ())?;
    if !init.iter().any(|c| c == name) {
        let after_istio = init
            .iter()
            .rposition(|n| ISTIO_INITS.contains(&n.as_str()))
            .map_or(0, |i| i + 1);
        init.insert(after_istio, name.to_owned());
    }
    let mut set = |key: &str, value: Value| {
        let raw = serde_json::value::to_raw_value(&value).unwrap();
        match members.iter_mut().rev().find(|(k, _)| k == key) {
            Some((_, v)) => *v = raw,
            None => members.push((key.to_owned(), raw)),
        }
    };
    set("initContainers", json!(init));
    set(
        "containers",
        if list.is_empty() {
            Value::Null
        } else {
            json!(list)
        },
    );
    let members: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), v.get()))
        .collect();
    Ok(Some(format!("{{{}}}", members.join(","))))
}

// ---------------------------------------------------------------- the record

/// A proxy the nativeSidecar mode moved into `initContainers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub container: String,
    /// Its index in `containers` before.
    pub from: usize,
    /// The members the move created.
    pub added: Vec<String>,
    /// Its own `restartPolicy` before, when it had one.
    pub restart_policy: Option<String>,
    /// The status annotation before, when the move rewrote it.
    pub status: Option<String>,
    /// Where Istio's init containers were before the move put them first.
    pub init_from: Vec<(String, usize)>,
    /// The move made `sidecar.istio.io/nativeSidecar` "true" (or kept the
    /// one the record said was the policy's).
    pub annotation: Option<Annotated>,
}

/// The policy made `sidecar.istio.io/nativeSidecar` the exact "true",
/// replacing the user's `was` (docs/changing-modes.md, "The record"; docs/design.md, "The
/// members").
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Annotated {
    pub was: Option<String>,
}

/// What `istio-job-sidecar/applied` records, form by form (docs/changing-modes.md,
/// "The record: `istio-job-sidecar/applied`"; docs/design.md, "The members").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    NativeAnnotation(Annotated),
    NativeMove(Move),
    Exit {
        inserted: String,
        created: bool,
        annotation: Option<Annotated>,
    },
    Quit {
        container: String,
        annotation: Option<Annotated>,
    },
}

impl Applied {
    pub fn mode(&self) -> Mode {
        match self {
            Applied::NativeAnnotation(_) | Applied::NativeMove(_) => Mode::Native,
            Applied::Exit { .. } => Mode::Exit,
            Applied::Quit { .. } => Mode::Quit,
        }
    }

    /// The four forms, to count what the generators reach.
    pub fn form(&self) -> &'static str {
        match self {
            Applied::NativeAnnotation(_) => "annotation",
            Applied::NativeMove(_) => "move",
            Applied::Exit { .. } => "exit",
            Applied::Quit { .. } => "quit",
        }
    }

    /// What it says the policy did to `sidecar.istio.io/nativeSidecar`.
    pub fn annotation(&self) -> Option<&Annotated> {
        match self {
            Applied::NativeAnnotation(a) => Some(a),
            Applied::NativeMove(m) => m.annotation.as_ref(),
            Applied::Exit { annotation, .. } | Applied::Quit { annotation, .. } => {
                annotation.as_ref()
            }
        }
    }

    pub fn with_annotation(mut self, edit: Option<Annotated>) -> Applied {
        match &mut self {
            Applied::NativeAnnotation(a) => *a = edit.unwrap_or_default(),
            Applied::NativeMove(m) => m.annotation = edit,
            Applied::Exit { annotation, .. } | Applied::Quit { annotation, .. } => {
                *annotation = edit
            }
        }
        self
    }

    /// The annotation's value as docs/design.md writes it ("Why a record,
    /// and why this one"): compact JSON, `mode` first, then the annotation
    /// edit (`annotation`, `was`), then the form's own members.
    pub fn text(&self) -> String {
        let s = |v: &str| serde_json::to_string(v).unwrap();
        let mut text = format!(r#"{{"mode":{}"#, s(self.mode().name()));
        if let Some(a) = self.annotation() {
            text += &format!(r#","annotation":{}"#, s(NATIVE));
            if let Some(was) = &a.was {
                text += &format!(r#","was":{}"#, s(was));
            }
        }
        match self {
            Applied::NativeAnnotation(_) => {}
            Applied::NativeMove(m) => {
                text += &format!(
                    r#","moved":{},"from":{},"added":{}"#,
                    s(&m.container),
                    m.from,
                    serde_json::to_string(&m.added).unwrap()
                );
                if let Some(policy) = &m.restart_policy {
                    text += &format!(r#","restartPolicy":{}"#, s(policy));
                }
                if let Some(status) = &m.status {
                    text += &format!(r#","status":{}"#, s(status));
                }
                if !m.init_from.is_empty() {
                    let members: Vec<String> = m
                        .init_from
                        .iter()
                        .map(|(name, i)| format!("{}:{i}", s(name)))
                        .collect();
                    text += &format!(r#","initFrom":{{{}}}"#, members.join(","));
                }
            }
            Applied::Exit {
                inserted, created, ..
            } => {
                text += &format!(r#","inserted":{}"#, s(inserted));
                if *created {
                    text += r#","created":true"#;
                }
            }
            Applied::Quit { container, .. } => {
                text += &format!(r#","container":{}"#, s(container));
            }
        }
        text + "}"
    }

    /// A record read as docs/design.md describes it ("The members"; members
    /// in any order): the
    /// reader is strict; `None` when the record is not one the policy may
    /// trust: not JSON, not an object, no or an unknown mode, a member
    /// missing, of the wrong type, unknown or given twice, a move adding a
    /// member it never adds or from an index beyond 32 bits, or an inserted
    /// text without the key. A member that is `null` is absent.
    pub fn parse(text: &str) -> Option<Applied> {
        let Ordered(members) = serde_json::from_str(text).ok()?;
        let get = |key: &str| -> Result<Option<&str>, ()> {
            let mut found = members.iter().filter(|(k, _)| k == key);
            let first = found.next().map(|(_, v)| v.get());
            match found.next() {
                None => Ok(first.filter(|v| *v != "null")),
                Some(_) => Err(()),
            }
        };
        let string = |key: &str| -> Result<Option<String>, ()> {
            get(key)?
                .map(|raw| serde_json::from_str::<String>(raw).map_err(|_| ()))
                .transpose()
        };
        let mode = string("mode").ok()??;
        // The annotation edit, in every form: `was` only beside it.
        let annotation = match string("annotation").ok()? {
            Some(a) if a == NATIVE => Some(Annotated {
                was: string("was").ok()?,
            }),
            Some(_) => return None,
            None => None,
        };
        let annotated: &[&str] = match &annotation {
            Some(Annotated { was: Some(_) }) => &["annotation", "was"],
            Some(_) => &["annotation"],
            None => &[],
        };
        let (applied, allowed): (Applied, &[&str]) = match Mode::parse(&mode)? {
            // A move, with or without the annotation it wrote; without
            // `moved`, the annotation alone; with neither, no record.
            Mode::Native => match string("moved").ok()? {
                None => (Applied::NativeAnnotation(annotation?), &[][..]),
                Some(container) => {
                    let added = match get("added").ok()? {
                        None => Vec::new(),
                        Some(raw) => serde_json::from_str::<Vec<Value>>(raw)
                            .ok()?
                            .iter()
                            .map(|i| {
                                i.as_str()
                                    .filter(|s| MOVE_ADDS.contains(s))
                                    .map(str::to_owned)
                            })
                            .collect::<Option<_>>()?,
                    };
                    // Istio's init containers only, each once, at an index.
                    let init_from = match get("initFrom").ok()? {
                        None => Vec::new(),
                        Some(raw) => {
                            let Ordered(members) = serde_json::from_str(raw).ok()?;
                            let mut from: Vec<(String, usize)> = Vec::new();
                            for (name, index) in members {
                                if !ISTIO_FIRST.contains(&name.as_str())
                                    || from.iter().any(|(n, _)| *n == name)
                                {
                                    return None;
                                }
                                from.push((name, index.get().parse::<u32>().ok()? as usize));
                            }
                            from
                        }
                    };
                    let moved = Move {
                        container,
                        // At most 32 bits, in the module as natively.
                        from: get("from").ok()??.parse::<u32>().ok()? as usize,
                        added,
                        restart_policy: string("restartPolicy").ok()?,
                        status: string("status").ok()?,
                        init_from,
                        annotation,
                    };
                    (
                        Applied::NativeMove(moved),
                        &[
                            "moved",
                            "from",
                            "added",
                            "restartPolicy",
                            "status",
                            "initFrom",
                        ][..],
                    )
                }
            },
            Mode::Exit => (
                Applied::Exit {
                    // Every merge inserts the key: any other text is not one.
                    inserted: Some(string("inserted").ok()??)
                        .filter(|text| text.contains(EXIT_KEY))?,
                    created: match get("created").ok()? {
                        None | Some("false") => false,
                        Some("true") => true,
                        Some(_) => return None,
                    },
                    annotation,
                },
                &["inserted", "created"],
            ),
            Mode::Quit => (
                Applied::Quit {
                    container: string("container").ok()??,
                    annotation,
                },
                &["container"],
            ),
        };
        members
            .iter()
            .all(|(k, _)| {
                k == "mode" || allowed.contains(&k.as_str()) || annotated.contains(&k.as_str())
            })
            .then_some(applied)
    }
}

/// The record on a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Absent,
    /// `legacy`: the `istio-job-sidecar/quit-wrapped: <container>` of
    /// earlier versions, read as a quitEndpoint record.
    Read {
        applied: Applied,
        legacy: bool,
    },
    Unreadable,
}

pub fn record_of(object: &Value, t: &str) -> Record {
    match (
        annotation(object, t, APPLIED),
        annotation(object, t, QUIT_WRAPPED),
    ) {
        (Some(text), _) => {
            Applied::parse(text).map_or(Record::Unreadable, |applied| Record::Read {
                applied,
                legacy: false,
            })
        }
        (None, Some(container)) => Record::Read {
            applied: Applied::Quit {
                container: container.to_owned(),
                annotation: None,
            },
            legacy: true,
        },
        (None, None) => Record::Absent,
    }
}

/// The record's keys on a template, as they are.
pub fn record_keys(object: &Value, t: &str) -> [Option<String>; 2] {
    RECORD_KEYS.map(|k| annotation(object, t, k).map(str::to_owned))
}

// ---------------------------------------------------------------- the undo

/// What a pass does before it applies the wanted mode (docs/changing-modes.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoOutcome {
    /// No record, or a record of the wanted mode itself.
    Nothing,
    /// Another mode's edit taken back, and the record removed. `edited`:
    /// the edit was still there (not only the record).
    Done { form: &'static str, edited: bool },
    /// A readable record whose edit is no longer on the object as it was
    /// left: nothing undone, the record kept, a warning that says why.
    Refused(Mode, &'static str),
    /// An unreadable record: nothing undone, the record kept, a warning.
    Unreadable,
}

#[derive(Debug, Clone)]
pub struct Undo {
    /// The object once the undo is done (the input itself unless `Done`):
    /// what the wanted mode is applied to.
    pub object: Value,
    pub outcome: UndoOutcome,
    /// Whether the pass may write the record: an untrusted one is left as
    /// it is.
    pub trusted: bool,
    /// The wanted mode's own (trusted) record, and whether it is legacy.
    pub current: Option<Applied>,
    pub legacy: bool,
}

/// A proxy the template has twice, resolved to one before anything else
/// (docs/modes.md, "What is mutated"; docs/facts.md, "Re-injection"): the proxy
/// once in `containers` and once in `initContainers` as a native sidecar,
/// with an injection status that names one of them (Istio writes it with
/// each injection): listed under `containers`, the native copy goes; under
/// `initContainers`, the classic copy goes (a regular container without a
/// `restartPolicy`; a copy of a native sidecar there is no proxy Istio left).
/// `None` when there is nothing to resolve.
pub fn one_proxy(kind: Kind, object: &Value, sidecar: &str) -> Option<Value> {
    let t = template_pointer(kind);
    let name = json!(sidecar);
    let of = |list: &str| -> Vec<usize> {
        let items = containers(object, t, list);
        (0..items.len())
            .filter(|&i| items[i]["name"] == name)
            .collect()
    };
    let ([c], [i]) = (&of("containers")[..], &of("initContainers")[..]) else {
        return None;
    };
    if containers(object, t, "initContainers")[*i]["restartPolicy"] != "Always" {
        return None;
    }
    let (_, status) = injection_status(kind, object)?;
    let listed: Value = serde_json::from_str(&status).ok()?;
    let has = |key: &str| listed[key].as_array().is_some_and(|l| l.contains(&name));
    // A classic proxy has no restartPolicy of its own.
    let classic = containers(object, t, "containers")[*c]
        .get("restartPolicy")
        .is_none();
    let (list, at) = match (has("containers"), has("initContainers")) {
        (true, false) => ("initContainers", *i),
        (false, true) if classic => ("containers", *c),
        _ => return None,
    };
    let mut o = object.clone();
    let mut items = containers(&o, t, list);
    items.remove(at);
    let spec = o.pointer_mut(&format!("{t}/spec"))?.as_object_mut()?;
    if items.is_empty() && list == "initContainers" {
        spec.remove(list);
    } else {
        spec.insert(list.into(), json!(items));
    }
    Some(o)
}

/// The undo step, modelled from docs/changing-modes.md ("What is taken back"): a proxy
/// there twice resolved to one (`one_proxy`), then, for a readable record
/// naming another mode than `wanted` (or any, when no mode is wanted), that
/// mode's edit taken back exactly; the record alone goes when nothing of
/// the edit is left; refused when the object holds it otherwise than it
/// was left.
pub fn undo_expectation(kind: Kind, object: &Value, sidecar: &str, wanted: Option<Mode>) -> Undo {
    let t = template_pointer(kind);
    let object = &one_proxy(kind, object, sidecar).unwrap_or_else(|| object.clone());
    let mut undo = Undo {
        object: object.clone(),
        outcome: UndoOutcome::Nothing,
        trusted: true,
        current: None,
        legacy: false,
    };
    match record_of(object, t) {
        Record::Absent => {}
        Record::Unreadable => {
            undo.trusted = false;
            undo.outcome = UndoOutcome::Unreadable;
        }
        Record::Read { applied, legacy } if Some(applied.mode()) == wanted => {
            undo.current = Some(applied);
            undo.legacy = legacy;
        }
        Record::Read { applied, .. } => {
            let mut o = object.clone();
            let done = match &applied {
                Applied::NativeAnnotation(_) => Ok(false),
                Applied::NativeMove(m) => undo_move(kind, &mut o, m),
                Applied::Exit {
                    inserted, created, ..
                } => undo_exit(&mut o, t, inserted, *created),
                Applied::Quit { container, .. } => undo_quit(&mut o, t, container, sidecar),
            };
            // Then what the record says the policy did to the annotation.
            let done = done.map(|edited| match applied.annotation() {
                Some(a) => undo_annotation(&mut o, t, a) || edited,
                None => edited,
            });
            match done {
                Ok(edited) => {
                    remove_annotations(&mut o, t, &RECORD_KEYS);
                    undo.object = o;
                    undo.outcome = UndoOutcome::Done {
                        form: applied.form(),
                        edited,
                    };
                }
                Err(why) => {
                    undo.trusted = false;
                    undo.outcome = UndoOutcome::Refused(applied.mode(), why);
                }
            }
        }
    }
    undo
}

/// The container's `command`, unless absent, null or empty.
pub fn command_of(container: &Value) -> Option<Vec<String>> {
    serde_json::from_value::<Vec<String>>(container.get("command")?.clone())
        .ok()
        .filter(|c| !c.is_empty())
}

/// The original argv inside a command the quitEndpoint wrapper wraps (its
/// six-element prefix: docs/design.md, "The members"), whatever script and
/// URL it has.
pub fn wrapped_original(command: &[String]) -> Option<&[String]> {
    let ours = command.len() >= 6
        && command[0] == QUIT_SHELL[0]
        && command[1] == QUIT_SHELL[1]
        && command[3] == QUIT_NAME;
    ours.then(|| &command[6..])
}

/// quitEndpoint undone: the one container of the record's name (a
/// nameless one is named "") gets back the argv after the wrapper's
/// prefix, element for element. Nothing is left when there is no such
/// container, or its command is no wrapper (or none): its owner wrote it
/// back. Refused when there are several, or the wrapper holds no command.
pub fn undo_quit(
    o: &mut Value,
    t: &str,
    container: &str,
    sidecar: &str,
) -> Result<bool, &'static str> {
    let list = containers(o, t, "containers");
    let named: Vec<usize> = (0..list.len())
        .filter(|&i| list[i]["name"].as_str().unwrap_or_default() == container)
        .collect();
    let i = match named[..] {
        // A record naming the proxy, whose refused undo left the wrapper
        // on it when nativeSidecar moved it: still refused there.
        [] if container == sidecar
            && containers(o, t, "initContainers")
                .iter()
                .find(|c| c["name"].as_str() == Some(container))
                .and_then(command_of)
                .is_some_and(|c| wrapped_original(&c).is_some()) =>
        {
            return Err("the wrapped proxy is a native sidecar")
        }
        [] => return Ok(false),
        [i] => i,
        _ => return Err("container not in the pod once"),
    };
    let Some(command) = command_of(&list[i]) else {
        return Ok(false);
    };
    match wrapped_original(&command) {
        None => Ok(false),
        Some([]) => Err("the wrapper holds no command"),
        Some(original) => {
            let at = format!("{t}/spec/containers/{i}");
            o.pointer_mut(&at).unwrap()["command"] = json!(original);
            Ok(true)
        }
    }
}

/// A proxy config read as YAML: its mapping (an empty text is an empty
/// one), or `None` when it is no mapping.
pub fn yaml_mapping(text: &str) -> Option<serde_yaml::Mapping> {
    match serde_yaml::from_str::<serde_yaml::Value>(text) {
        Ok(serde_yaml::Value::Mapping(m)) => Some(m),
        Ok(serde_yaml::Value::Null) => Some(serde_yaml::Mapping::new()),
        _ => None,
    }
}

/// exitOnJobCompletion undone: the recorded inserted text taken out of the
/// config, at the last place whose removal re-reads as the same mapping
/// minus `exitOnJobCompletion: true`, so the user's text is back byte for
/// byte; a config the policy created goes whole when nothing is left.
/// Nothing is left when the config or the key is gone, or the key holds
/// another value (the user's); refused when the config is no mapping or
/// the text around the key changed.
pub fn undo_exit(
    o: &mut Value,
    t: &str,
    inserted: &str,
    created: bool,
) -> Result<bool, &'static str> {
    let Some(text) = annotation(o, t, PROXY_CONFIG).map(str::to_owned) else {
        return Ok(false);
    };
    let mut expected = yaml_mapping(&text).ok_or("proxy.istio.io/config no longer a mapping")?;
    match expected.get(EXIT_KEY) {
        Some(serde_yaml::Value::Bool(true)) => {}
        _ => return Ok(false),
    }
    expected.remove(EXIT_KEY);
    // Every place the text occurs (overlapping ones too), the last first.
    let restored = (0..=text.len())
        .rev()
        .filter(|&at| text.is_char_boundary(at) && text[at..].starts_with(inserted))
        .map(|at| [&text[..at], &text[at + inserted.len()..]].concat())
        .find(|candidate| yaml_mapping(candidate).as_ref() == Some(&expected))
        .ok_or("proxy.istio.io/config edited where the key was added")?;
    if created && restored.trim().is_empty() {
        remove_annotations(o, t, &[PROXY_CONFIG]);
    } else {
        set_annotation(o, t, PROXY_CONFIG, &restored);
    }
    Ok(true)
}

/// The annotation edit undone while the annotation still says "true"
/// (another value is the user's): the user's value it replaced back, or
/// the annotation removed.
pub fn undo_annotation(o: &mut Value, t: &str, edit: &Annotated) -> bool {
    let ours = annotation(o, t, NATIVE) == Some("true");
    if ours {
        match &edit.was {
            Some(was) => set_annotation(o, t, NATIVE, was),
            None => remove_annotations(o, t, &[NATIVE]),
        }
    }
    ours
}

/// Istio's init containers back where the move found them (`init_from`):
/// taken out, then put at their recorded indexes in ascending order, the
/// others keeping theirs. Whether the list changed.
pub fn put_istio_init_back(o: &mut Value, t: &str, init_from: &[(String, usize)]) -> bool {
    if init_from.is_empty() {
        return false;
    }
    let init = containers(o, t, "initContainers");
    let recorded = |c: &Value| init_from.iter().any(|(n, _)| c["name"] == json!(n));
    let mut order: Vec<Value> = init.iter().filter(|c| !recorded(c)).cloned().collect();
    let mut wanted = init_from.to_vec();
    wanted.sort_by_key(|(_, i)| *i);
    for (name, i) in wanted {
        if let Some(c) = init.iter().find(|c| c["name"] == json!(name)) {
            order.insert(i.min(order.len()), c.clone());
        }
    }
    if order == init {
        return false;
    }
    o.pointer_mut(&format!("{t}/spec"))
        .and_then(Value::as_object_mut)
        .unwrap()
        .insert("initContainers".into(), json!(order));
    true
}

/// The move undone: the proxy (in `initContainers` once, still a native
/// sidecar, its name not taken in `containers`, the status as the move left
/// it) back at its index in `containers`, without the members the move
/// added, with its own `restartPolicy` back, Istio's init containers back
/// where they were, the status back to its text where it was found; an
/// emptied `initContainers` removed (the annotation is `undo_annotation`'s).
/// On a Pod whose status Istio wrote again after the move, the proxy
/// native (its injector ran after the policy), the proxy is Istio's: the
/// record goes, nothing else.
/// Nothing is left (but the order of the init containers) when no init
/// container has the proxy's name and the status is not the one the move
/// wrote (or none was recorded): an applier that owns the containers wrote
/// them back.
pub fn undo_move(kind: Kind, o: &mut Value, m: &Move) -> Result<bool, &'static str> {
    let t = template_pointer(kind);
    let name = json!(m.container);
    let mut init = containers(o, t, "initContainers");
    let named: Vec<usize> = (0..init.len())
        .filter(|&i| init[i]["name"] == name)
        .collect();
    let written = m
        .status
        .as_ref()
        .and_then(|before| native_status(before, &m.container).ok().flatten());
    let now = injection_status(kind, o);
    let i = match named[..] {
        [i] => i,
        [] if written.is_none() || now.as_ref().map(|(_, s)| s) != written.as_ref() => {
            return Ok(put_istio_init_back(o, t, &m.init_from));
        }
        _ => return Err("proxy not in initContainers once"),
    };
    if init[i]["restartPolicy"] != "Always" {
        return Err("proxy no longer a native sidecar");
    }
    if containers(o, t, "containers")
        .iter()
        .any(|c| c["name"] == name)
    {
        return Err("a container has the proxy's name");
    }
    let lists_as_init = |status: &str| {
        serde_json::from_str::<Value>(status).is_ok_and(|s| {
            s["initContainers"]
                .as_array()
                .is_some_and(|l| l.contains(&name))
        })
    };
    let status = match (&m.status, now) {
        (None, _) => None,
        (Some(before), Some((at, now))) if written.as_ref() == Some(&now) => {
            Some((at, before.clone()))
        }
        // A Pod's status rewritten by Istio's injector after the policy,
        // the proxy native again: Istio's own now, nothing to move back.
        (Some(_), Some((_, now))) if kind == Kind::Pod && lists_as_init(&now) => return Ok(false),
        (Some(_), Some(_)) => return Err("sidecar.istio.io/status changed since"),
        (Some(_), None) => return Err("sidecar.istio.io/status gone since"),
    };
    let mut proxy = init.remove(i);
    o.pointer_mut(&format!("{t}/spec"))
        .and_then(Value::as_object_mut)
        .unwrap()
        .insert("initContainers".into(), json!(init));
    put_istio_init_back(o, t, &m.init_from);
    let init = containers(o, t, "initContainers");
    let mut list = containers(o, t, "containers");
    let spec = o
        .pointer_mut(&format!("{t}/spec"))
        .and_then(Value::as_object_mut)
        .unwrap();
    if init.is_empty() {
        spec.remove("initContainers");
    }
    let members = proxy.as_object_mut().unwrap();
    members.retain(|k, _| !m.added.contains(k));
    if let Some(policy) = &m.restart_policy {
        members.insert("restartPolicy".into(), json!(policy));
    }
    list.insert(m.from.min(list.len()), proxy);
    spec.insert("containers".into(), json!(list));
    if let Some((at, before)) = status {
        set_annotation(o, at, STATUS, &before);
    }
    Ok(true)
}

// ---------------------------------------------------------------- the apply

/// What a mode leaves in the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordEdit {
    /// As it was: nothing new applied.
    Keep,
    /// This, replacing what was there.
    Set(Applied),
    /// None: the mode took its own edit off.
    Remove,
}

/// What the record must be after the pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectRecord {
    /// Both keys as they were before the pass.
    Unchanged,
    /// Neither key.
    Absent,
    /// `istio-job-sidecar/applied` exactly this, and no legacy key.
    Exactly(Applied),
}

/// The record after the pass, from what the mode did (docs/design.md,
/// "Records that cannot be trusted"; docs/changing-modes.md): an untrusted
/// record stays as it is; the mode's record is written when it differs
/// from the one there (a legacy record is always rewritten in the new key,
/// even when nothing else changes); a record of the mode whose edit the
/// mode took off itself goes.
pub fn expected_record(undo: &Undo, edit: RecordEdit) -> ExpectRecord {
    if !undo.trusted {
        return ExpectRecord::Unchanged;
    }
    match edit {
        RecordEdit::Set(applied) if undo.legacy || undo.current.as_ref() != Some(&applied) => {
            ExpectRecord::Exactly(applied)
        }
        RecordEdit::Keep if undo.legacy => ExpectRecord::Exactly(undo.current.clone().unwrap()),
        RecordEdit::Remove => ExpectRecord::Absent,
        _ => ExpectRecord::Unchanged,
    }
}

/// Whether `after`'s record is what `expect` says, given the record
/// `before` the apply step.
pub fn check_record(
    before: &Value,
    after: &Value,
    t: &str,
    expect: &ExpectRecord,
) -> Result<(), String> {
    let now = record_keys(after, t);
    let [applied_before, legacy_before] = record_keys(before, t);
    let wanted = match expect {
        ExpectRecord::Unchanged => [applied_before, legacy_before],
        ExpectRecord::Absent => [None, None],
        // A legacy key beside a readable record is not read: left as it is.
        ExpectRecord::Exactly(applied) if applied_before.is_some() => {
            [Some(applied.text()), legacy_before]
        }
        ExpectRecord::Exactly(applied) => [Some(applied.text()), None],
    };
    if now == wanted {
        Ok(())
    } else {
        Err(format!(
            "record {RECORD_KEYS:?} is {now:?}, expected {wanted:?} ({expect:?})"
        ))
    }
}

/// What the record says of `sidecar.istio.io/nativeSidecar` once the
/// policy asked for the native form, `current` the mode's own trusted
/// record: a value other than the exact "true" (absent, or one Istio 1.24
/// to 1.26 would not read as native: `"True"`, `"yes"`, `""`) is made
/// "true", replacing the user's; an exact "true" is the record's if it
/// says so, else the user's own (`None`). Never called for "false".
pub fn native_ask(user: Option<&str>, current: Option<&Applied>) -> Option<Annotated> {
    match user {
        Some("true") => current.and_then(Applied::annotation).cloned(),
        other => Some(Annotated {
            was: other.map(str::to_owned),
        }),
    }
}

/// What nativeSidecar does to the template (after the undo), with
/// `current` its own trusted record: nothing at all where the template
/// says `sidecar.istio.io/nativeSidecar: "false"` (the user asks for a
/// classic proxy). Not injected, or injected with the proxy already a
/// native sidecar: asks Istio for a native proxy by the exact "true"
/// (`native_ask`), recorded as the annotation (or, where a move is on
/// record, as that move with the annotation). Injected with the proxy in
/// `containers` (its only container of that name, not the only container,
/// no init container of its name): moves it into `initContainers` in the
/// native order, recording where it was, the members it added, the
/// `restartPolicy` it replaced, the status text it rewrote, where Istio's
/// init containers were when they had to move first, and the annotation.
pub fn native_record_edit(
    kind: Kind,
    o: &Value,
    settings: &Settings,
    current: Option<&Applied>,
) -> RecordEdit {
    let t = template_pointer(kind);
    let user = annotation(o, t, NATIVE);
    if user == Some("false") {
        return RecordEdit::Keep;
    }
    let asked = native_ask(user, current);
    let ask = || match (asked.clone(), current) {
        (None, _) => RecordEdit::Keep,
        (Some(a), Some(Applied::NativeMove(m))) => RecordEdit::Set(Applied::NativeMove(Move {
            annotation: Some(a),
            ..m.clone()
        })),
        (Some(a), _) => RecordEdit::Set(Applied::NativeAnnotation(a)),
    };
    let Some((_, status)) = injection_status(kind, o) else {
        return ask();
    };
    let list = containers(o, t, "containers");
    let init = containers(o, t, "initContainers");
    let sidecar = json!(settings.sidecar);
    let named: Vec<usize> = (0..list.len())
        .filter(|&i| list[i]["name"] == sidecar)
        .collect();
    let init_named = init.iter().find(|c| c["name"] == sidecar);
    let from = match (&named[..], init_named) {
        // Injected natively already: only a re-injection must stay native.
        ([], Some(proxy)) if proxy["restartPolicy"] == "Always" => return ask(),
        ([from], None) if list.len() > 1 => *from,
        _ => return RecordEdit::Keep,
    };
    let proxy = &list[from];
    let absent = |key: &str| proxy.get(key).is_none_or(Value::is_null);
    let mut added = Vec::new();
    if absent("restartPolicy") {
        added.push("restartPolicy".to_owned());
    }
    if absent("lifecycle") && status_port(kind, o) != 0 {
        added.push("lifecycle".to_owned());
    }
    let rewritten = matches!(native_status(&status, &settings.sidecar), Ok(Some(_)));
    RecordEdit::Set(Applied::NativeMove(Move {
        container: settings.sidecar.clone(),
        from,
        added,
        restart_policy: proxy["restartPolicy"].as_str().map(str::to_owned),
        status: rewritten.then_some(status),
        init_from: native_order(&init).1,
        annotation: asked,
    }))
}

/// A proxy Istio injected natively: an injection status, and the proxy an
/// init container with `restartPolicy: Always`.
pub fn natively_injected(kind: Kind, o: &Value, sidecar: &str) -> bool {
    injected(kind, o)
        && containers(o, template_pointer(kind), "initContainers")
            .iter()
            .any(|c| c["name"] == json!(sidecar) && c["restartPolicy"] == "Always")
}

/// What exitOnJobCompletion and quitEndpoint record, from what the mode
/// itself did (`edit`): their record carries the annotation edit `current`
/// has; they ask for the native form too where Istio's re-injection would
/// otherwise give the Pod a second proxy (docs/modes.md, "What is mutated"; docs/facts.md,
/// "Re-injection"): beside a proxy Istio injected natively, and, where a
/// proxy is there, for a user's value the releases read differently
/// (neither "true" nor "false"), recorded in their record. A mode that
/// records nothing asks for nothing.
pub fn keep_native_edit(
    kind: Kind,
    o: &Value,
    settings: &Settings,
    edit: RecordEdit,
    current: Option<&Applied>,
) -> RecordEdit {
    let carried = current.and_then(Applied::annotation).cloned();
    let (applied, edit) = match edit {
        RecordEdit::Set(a) => {
            let a = a.with_annotation(carried);
            (a.clone(), RecordEdit::Set(a))
        }
        RecordEdit::Keep => match current {
            Some(c) => (c.clone(), RecordEdit::Keep),
            None => return RecordEdit::Keep,
        },
        RecordEdit::Remove => return RecordEdit::Remove,
    };
    let user = annotation(o, template_pointer(kind), NATIVE);
    let native = natively_injected(kind, o, &settings.sidecar);
    let asks = match user {
        Some("true" | "false") => false,
        None => native,
        Some(_) => native || proxy_there(kind, o, &settings.sidecar),
    };
    if !asks {
        // A recorded annotation edit no longer there is dropped.
        if applied.annotation().is_some() && user != Some("true") {
            return RecordEdit::Set(applied.with_annotation(None));
        }
        return edit;
    }
    let asked = native_ask(user, current);
    if user != Some("true") || asked.as_ref() != applied.annotation() {
        RecordEdit::Set(applied.with_annotation(asked))
    } else {
        edit
    }
}

/// Where `sidecar.istio.io/nativeSidecar` stands after a pass of `mode`
/// over `o` (the undo done), given the record edit the pass made: "true"
/// wherever the pass asked for the native form, else as it was.
pub fn native_annotation_after(
    kind: Kind,
    o: &Value,
    mode: Option<Mode>,
    edit: &RecordEdit,
) -> Option<String> {
    let user = annotation(o, template_pointer(kind), NATIVE);
    let asked = match (mode, edit) {
        (Some(Mode::Native), RecordEdit::Set(_)) => true,
        (Some(_), RecordEdit::Set(applied)) => applied.annotation().is_some(),
        _ => false,
    };
    if asked && user != Some("false") {
        Some("true".to_owned())
    } else {
        user.map(str::to_owned)
    }
}

/// What exitOnJobCompletion recorded, from the config before and after:
/// the text it inserted (the config after, less the longest common prefix
/// and suffix with the config before, must be the config before with that
/// text inserted in one place), and whether it created the annotation.
pub fn exit_record_edit(before: Option<&str>, after: Option<&str>) -> Result<RecordEdit, String> {
    let (before, after) = match (before, after) {
        (b, a) if b == a => return Ok(RecordEdit::Keep),
        (None, Some(after)) => {
            return Ok(RecordEdit::Set(Applied::Exit {
                inserted: after.to_owned(),
                created: true,
                annotation: None,
            }))
        }
        (Some(b), Some(a)) => (b, a),
        (_, None) => return Err("proxy config removed by exitOnJobCompletion".into()),
    };
    let (b, a) = (before.as_bytes(), after.as_bytes());
    let prefix = b.iter().zip(a).take_while(|(x, y)| x == y).count();
    let suffix = b[prefix..]
        .iter()
        .rev()
        .zip(a[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let inserted = after.get(prefix..a.len() - suffix);
    match inserted {
        Some(inserted) if prefix + suffix == b.len() && inserted.contains(EXIT_KEY) => {
            Ok(RecordEdit::Set(Applied::Exit {
                inserted: inserted.to_owned(),
                created: false,
                annotation: None,
            }))
        }
        _ => Err(format!(
            "proxy config {before:?} became {after:?}: not one insertion of the key"
        )),
    }
}

/// What quitEndpoint leaves of the containers, and of the record, from the
/// docs/modes.md ("quitEndpoint") and docs/design.md ("The quitEndpoint wrapper"),
/// not from src/.
pub struct QuitExpectation {
    pub containers: Vec<Value>,
    pub record: RecordEdit,
}

pub fn quit_expectation(
    kind: Kind,
    object: &Value,
    settings: &Settings,
    current: Option<&Applied>,
) -> QuitExpectation {
    let t = template_pointer(kind);
    let mut out = containers(object, t, "containers");
    // Beside a proxy injected natively too: Istio's injector renders a Pod
    // that carries its status again, classic unless asked for native.
    let apps: Vec<usize> = (0..out.len())
        .filter(|&i| out[i]["name"] != json!(settings.sidecar))
        .collect();
    let command = |c: &Value| -> Vec<String> {
        serde_json::from_value(c["command"].clone()).unwrap_or_default()
    };
    // Nothing to wrap: a record of this mode describes nothing and goes.
    let nothing = |containers| QuitExpectation {
        containers,
        record: match current {
            Some(_) => RecordEdit::Remove,
            None => RecordEdit::Keep,
        },
    };
    // pilot-agent listens on the pod's status port, and on none at all
    // when it is 0.
    let port = pods_status_port(kind, object);
    // After which exits the proxy is asked to quit: the container's own
    // restartPolicy decides over the Pod's (README, "quitEndpoint"); a
    // container restarted after every exit has no such exit, and is not
    // wrapped.
    let pod = object
        .pointer(&format!("{t}/spec/restartPolicy"))
        .and_then(Value::as_str);
    let by_pod = |pod: Option<&str>| match pod {
        Some("OnFailure") => "on-success",
        _ => "always",
    };
    // Kubelets before 1.35 ignore a container's own restartPolicy (README,
    // "quitEndpoint"): where theirs and a later kubelet's reading differ,
    // and no Node list says which kubelets run the Pod (none here), the
    // container is not wrapped.
    let when_of = |c: &Value| match c.get("restartPolicy").filter(|v| !v.is_null()) {
        None => Some(by_pod(pod)),
        Some(own) => match own.as_str() {
            Some("Never") => Some("always"),
            Some("OnFailure") => Some("on-success"),
            Some("Always") => None,
            _ => matches!(pod, Some("Never" | "OnFailure")).then(|| by_pod(pod)),
        }
        .filter(|when| *when == by_pod(pod)),
    };
    match apps[..] {
        [one] if port != Some(0) && when_of(&out[one]).is_some() => {
            let command = command(&out[one]);
            if command.is_empty() {
                return nothing(out);
            }
            let when = when_of(&out[one]).unwrap_or("always");
            let mut wrapped: Vec<String> = [
                QUIT_SHELL[0],
                QUIT_SHELL[1],
                crate::quit_script::SCRIPT,
                QUIT_NAME,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            wrapped.push(match port {
                Some(port) => {
                    let (authority, path) = settings.quit_url[7..].split_once('/').unwrap();
                    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
                    format!("http://{host}:{port}/{path}")
                }
                None => settings.quit_url.clone(),
            });
            wrapped.push(when.to_owned());
            wrapped.extend(
                wrapped_original(&command)
                    .map(<[String]>::to_vec)
                    .unwrap_or(command),
            );
            out[one]["command"] = json!(wrapped);
            let container = out[one]["name"].as_str().unwrap_or_default().to_owned();
            QuitExpectation {
                containers: out,
                record: RecordEdit::Set(Applied::Quit {
                    container,
                    annotation: None,
                }),
            }
        }
        [] => nothing(out),
        _ => {
            // Several apps, no quit endpoint, or no exit after which the
            // app is not restarted: none is wrapped, and a wrapper left
            // from before is taken off, with its record.
            for &i in &apps {
                if let Some(original) = wrapped_original(&command(&out[i])) {
                    out[i]["command"] = json!(original);
                }
            }
            QuitExpectation {
                containers: out,
                record: if current.is_some() {
                    RecordEdit::Remove
                } else {
                    RecordEdit::Keep
                },
            }
        }
    }
}

/// Whether the policy must change this request, where the spec says so
/// without running a mode's algorithm: always when the owner's mode is
/// carried down and after an undo (the record at least goes), else when
/// the wanted mode edits the template or its record; `None` where it
/// cannot tell (a proxy config in a form that may not extend in place).
pub fn change_due(case: &Case, undo: &Undo) -> Option<bool> {
    if owner_edit_of(case) != OwnerEdit::Keep {
        return Some(true);
    }
    let Some(mode) = expected_mode(case) else {
        return Some(matches!(undo.outcome, UndoOutcome::Done { .. }));
    };
    if matches!(undo.outcome, UndoOutcome::Done { .. }) {
        return Some(true);
    }
    let object = &undo.object;
    let t = template_pointer(case.kind);
    let settings = settings_of(&case.settings);
    // Beside a proxy Istio injected natively, the native form asked for.
    let kept = keep_native_edit(
        case.kind,
        object,
        &settings,
        RecordEdit::Keep,
        undo.current.as_ref(),
    );
    if mode != Mode::Native && kept != RecordEdit::Keep {
        return Some(true);
    }
    match mode {
        // A record set is an edit when it is another record, or when the
        // annotation is made "true" (the record may stay as it was).
        Mode::Native => Some(matches!(
            native_record_edit(case.kind, object, &settings, undo.current.as_ref()),
            RecordEdit::Set(applied) if undo.legacy
                || undo.current.as_ref() != Some(&applied)
                || annotation(object, t, NATIVE) != Some("true")
        )),
        Mode::Exit => match annotation(object, t, PROXY_CONFIG).map(serde_yaml::from_str) {
            None => Some(true),
            Some(Ok(serde_yaml::Value::Mapping(m))) if m.contains_key(EXIT_KEY) => Some(false),
            Some(Ok(serde_yaml::Value::Mapping(_) | serde_yaml::Value::Null)) => None,
            Some(_) => Some(false),
        },
        Mode::Quit => {
            let expected = quit_expectation(case.kind, object, &settings, undo.current.as_ref());
            let edit = keep_native_edit(
                case.kind,
                object,
                &settings,
                expected.record,
                undo.current.as_ref(),
            );
            let record = expected_record(undo, edit);
            // A wrapper already there whose script does what the script
            // must is the oracle's SCRIPT; one that does not is due a new one.
            let unchanged = crate::quit_script::judged(
                &containers(object, t, "containers"),
                &expected.containers,
            )
            .is_ok_and(|now| now == expected.containers);
            Some(!unchanged || check_record(object, object, t, &record).is_err())
        }
    }
}

// ---------------------------------------------------------------- the parts a mode may change

pub fn remove_annotation(object: &mut Value, meta_owner: &str, key: &str) {
    if let Some(Value::Object(a)) =
        object.pointer_mut(&format!("{meta_owner}/metadata/annotations"))
    {
        a.remove(key);
    }
}

/// Remove the annotations `keys` as the policy does: an emptied
/// `annotations`, then an emptied `metadata`, go too.
pub fn remove_annotations(object: &mut Value, meta_owner: &str, keys: &[&str]) {
    let Some(Value::Object(owner)) = object.pointer_mut(meta_owner) else {
        return;
    };
    let Some(Value::Object(metadata)) = owner.get_mut("metadata") else {
        return;
    };
    let Some(Value::Object(annotations)) = metadata.get_mut("annotations") else {
        return;
    };
    let before = annotations.len();
    annotations.retain(|k, _| !keys.contains(&k.as_str()));
    if annotations.len() == before || !annotations.is_empty() {
        return;
    }
    metadata.remove("annotations");
    if metadata.is_empty() {
        owner.remove("metadata");
    }
}

/// Set annotation `key` of `meta_owner`, creating (or replacing a `null`)
/// `metadata` and `annotations` as needed.
pub fn set_annotation(object: &mut Value, meta_owner: &str, key: &str, value: &str) {
    let owner = object.pointer_mut(meta_owner).unwrap();
    if !owner["metadata"].is_object() {
        owner["metadata"] = json!({});
    }
    if !owner["metadata"]["annotations"].is_object() {
        owner["metadata"]["annotations"] = json!({});
    }
    owner["metadata"]["annotations"][key] = json!(value);
}

/// `object` without the members a pass may create, or an undo empty, when
/// they are empty or `null`: the `metadata` and `annotations` of the pod
/// template (and of a CronJob's jobTemplate) and the template's
/// `initContainers`. They are among the parts a mode may change, so
/// `strip` takes them off; everything else `strip` leaves is compared
/// exactly (an empty map or list the policy added or dropped anywhere else
/// fails). The laws compare up to what Kubernetes drops
/// (`policy_testkit::kube::normalize`) instead.
fn created_parts_off(kind: Kind, object: &Value) -> Value {
    let mut o = object.clone();
    let job_template = (kind == Kind::CronJob).then_some(JOB_TEMPLATE);
    for owner in [Some(template_pointer(kind)), job_template]
        .into_iter()
        .flatten()
    {
        let Some(Value::Object(owner)) = o.pointer_mut(owner) else {
            continue;
        };
        if let Some(Value::Object(meta)) = owner.get_mut("metadata") {
            if meta.get("annotations").is_some_and(empty_or_null) {
                meta.remove("annotations");
            }
        }
        if owner.get("metadata").is_some_and(empty_or_null) {
            owner.remove("metadata");
        }
        if let Some(Value::Object(spec)) = owner.get_mut("spec") {
            if spec.get("initContainers").is_some_and(empty_or_null) {
                spec.remove("initContainers");
            }
        }
    }
    o
}

fn empty_or_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// `object` without the parts a pass under `mode` may change (and nothing
/// else), the members a pass may create among them (`created_parts_off`):
/// - every pass: the owner's mode carried down to the pod template,
///   `istio-job-sidecar/owner-mode` (checked on its own);
/// - every mode: the record, `istio-job-sidecar/applied` and the legacy
///   `istio-job-sidecar/quit-wrapped` (checked on their own);
/// - every mode: `sidecar.istio.io/nativeSidecar` (checked on its own);
/// - nativeSidecar: on the pod template the annotation
///   `sidecar.istio.io/status`, the status where else it is read (a
///   CronJob's jobTemplate, a Job's own metadata), the container named
///   `sidecarContainerName` in `containers` and `initContainers`, and the
///   order of Istio's init containers;
/// - exitOnJobCompletion: the template's `proxy.istio.io/config`;
/// - quitEndpoint: the `command` of the entries of `containers` (never
///   their `args`).
///
/// It is applied to the object as the undo leaves it (`undo_expectation`),
/// so the parts of a recorded mode taken back are compared exactly.
pub fn strip(kind: Kind, mode: Option<Mode>, sidecar: &str, object: &Value) -> Value {
    let mut o = object.clone();
    let t = template_pointer(kind);
    remove_annotation(&mut o, t, OWNER_MODE);
    let Some(mode) = mode else {
        return created_parts_off(kind, &o);
    };
    for key in RECORD_KEYS {
        remove_annotation(&mut o, t, key);
    }
    // Every mode may ask for the native form (checked on its own).
    remove_annotation(&mut o, t, NATIVE);
    match mode {
        Mode::Native => {
            remove_annotation(&mut o, t, STATUS);
            match kind {
                Kind::CronJob => remove_annotation(&mut o, JOB_TEMPLATE, STATUS),
                Kind::Job => remove_annotation(&mut o, "", STATUS),
                Kind::Pod | Kind::Other => {}
            }
            for list in ["containers", "initContainers"] {
                if let Some(Value::Array(l)) = o.pointer_mut(&format!("{t}/spec/{list}")) {
                    l.retain(|c| c["name"] != json!(sidecar));
                }
            }
            // The move puts Istio's init containers first: their order is
            // the mode's too.
            if let Some(Value::Array(l)) = o.pointer_mut(&format!("{t}/spec/initContainers")) {
                *l = native_order(l).0;
            }
        }
        Mode::Exit => remove_annotation(&mut o, t, PROXY_CONFIG),
        Mode::Quit => {
            if let Some(Value::Array(l)) = o.pointer_mut(&format!("{t}/spec/containers")) {
                for c in l.iter_mut().filter_map(Value::as_object_mut) {
                    c.remove("command");
                }
            }
        }
    }
    created_parts_off(kind, &o)
}

/// The output still reads as the same kind through Kubernetes' own types.
pub fn same_kind(kind: Kind, input: &Value, output: &Value) -> Result<(), String> {
    fn check<T: serde::de::DeserializeOwned>(input: &Value, output: &Value) -> Result<(), String> {
        serde_json::from_value::<T>(input.clone())
            .map_err(|e| format!("generator made an invalid input: {e}"))?;
        serde_json::from_value::<T>(output.clone())
            .map(|_| ())
            .map_err(|e| format!("output no longer deserializes: {e}"))
    }
    match kind {
        Kind::Job => check::<Job>(input, output),
        Kind::CronJob => check::<CronJob>(input, output),
        Kind::Pod => check::<Pod>(input, output),
        Kind::Other => Ok(()),
    }
}

pub fn diff_message(a: &Value, b: &Value) -> String {
    format!(
        "input (stripped):\n{}\noutput (stripped):\n{}",
        serde_json::to_string_pretty(a).unwrap(),
        serde_json::to_string_pretty(b).unwrap()
    )
}

/// The warnings of an answer that name the record.
pub fn record_warnings(answer: &Answer) -> Vec<&String> {
    answer
        .warnings
        .iter()
        .filter(|w| w.contains(APPLIED))
        .collect()
}

/// The warning docs/design.md gives for the undo's outcome ("Records that
/// cannot be trusted"): for an unreadable record,
/// `istio-job-sidecar/applied unreadable ...`; for a refusal,
/// `istio-job-sidecar/applied: <mode> edit kept: <why>` with its table's
/// `<why>`; none otherwise (a record whose edit is gone goes silently).
pub fn check_undo_warning(answer: &Answer, outcome: &UndoOutcome) -> Result<(), String> {
    let named = record_warnings(answer);
    let expected = match outcome {
        UndoOutcome::Unreadable => Some(format!("{APPLIED} unreadable")),
        UndoOutcome::Refused(mode, why) => {
            Some(format!("{APPLIED}: {} edit kept: {why}", mode.name()))
        }
        _ => None,
    };
    let ok = match (&expected, outcome) {
        (Some(text), UndoOutcome::Refused(..)) => named.len() == 1 && named[0] == text,
        (Some(start), _) => named.len() == 1 && named[0].starts_with(start.as_str()),
        (None, _) => named.is_empty(),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "undo {outcome:?}: expected the warning {expected:?}, got {:?}",
            answer.warnings
        ))
    }
}
