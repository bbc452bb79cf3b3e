//! The laws of a change of mode (docs/design.md, "The laws of a change of
//! mode"), checked on generated workloads by the `mode_change` target.
//!
//! A pass runs the policy's `validate` on one admission request: the
//! workload with the mode said through the settings or the workload's
//! `istio-job-sidecar/mode` annotation (on the pod template or on the
//! object), in one of the three member orders. `P(x)` is the mutated object,
//! or `x` itself when the answer is not a mutation. Every answer must be an
//! accept, JSON, with warnings of at most 120 characters (testkit's
//! `check_answer`). For modes A and B (each of the three or `disabled`):
//!
//! 1. `A(A(x))` is not a mutation, and warns of nothing `A(x)` did not;
//! 2. `B(A(x)) == B(x)`, the whole object, the record included;
//! 3. `disabled(A(x)) == disabled(x)`, and `disabled(x)` is `x` when `x`
//!    carries no record, but for the owner's mode the policy carries down
//!    to the pod template: `istio-job-sidecar/owner-mode: disabled` where
//!    the Job's or CronJob's own metadata says `disabled`;
//! 4. with a history (`x = C(x0)`, the record possibly in its legacy form
//!    `istio-job-sidecar/quit-wrapped`): also `B(x) == B(x0)`;
//! 5. with a user edit `e` of fields the policy never writes (an annotation
//!    or label of its own, every container's image, an env var in every
//!    container, a toleration: `Edit`, the last one this target's own)
//!    made between the passes: `B(e(A(x))) == e(B(x))`.
//!
//! The laws are checked by `policy_testkit::laws`, as the golden mode
//! changes and the properties check them: objects are compared up to what
//! Kubernetes does not keep apart (`policy_testkit::kube::normalize`:
//! `null` members are absent, and so are the empty maps, lists and
//! structs of the members the API server reads so; an `emptyDir: {}` is
//! not) and an inert
//! owner's mode (`owner_mode_inert`), and the warnings of the two passes
//! compared too (`policy_testkit::laws::Warned`: the same, but for the
//! caveats of an edit only one of them makes). CronJobs are created by the first pass and
//! updated by the later ones (B(x) is a CREATE); Jobs and Pods are created
//! by every pass (a Job is never mutated on UPDATE).
//!
//! 2-4 hold for workloads this version of the policy may have written, as
//! the API server sends them: they are checked when `x0` reads as the typed
//! Kubernetes object (k8s-openapi: annotations strings, commands lists of
//! strings...) with every container named, no two alike (the API server
//! cannot decode anything else, or rejects it after admission), carries no record of its
//! own (neither record annotation on its pod template) nor an owner's mode
//! (`istio-job-sidecar/owner-mode`, which the policy alone writes: one it
//! did not write may be left where the template's own mode makes it
//! inert, or read by a Job as its owner's word) and no command
//! already wrapped by quitEndpoint (quitEndpoint adopts a wrapper without a
//! record as its own, by design, so a later mode takes it off while B(x)
//! leaves it), and when the mode annotation can be written. Everything
//! else, records of every form and garbage included, gets 1 and the checks
//! of every answer. `MODE_CHANGE_UNTYPED=1` (or `"untyped": true` in a
//! stored scenario) checks the laws on objects that are not well typed or
//! named too.

use crate::records::is_wrapped;
use crate::{Input, Kind};
use arbitrary::Arbitrary;
use policy_testkit::laws::{self, Pass, Warned};
pub use policy_testkit::mode_change::{Carrier, UserEdit};
use policy_testkit::names::{
    APPLIED, INJECT, MODE as MODE_ANNOTATION, OWNER_MODE, QUIT_WRAPPED, STATUS,
};
use policy_testkit::{differences, Order};
use serde_json::{json, Map, Value};

#[derive(Debug, Arbitrary, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    CronJob,
    Job,
    Pod,
}

/// A mode, or none.
#[derive(Debug, Arbitrary, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    NativeSidecar,
    ExitOnJobCompletion,
    QuitEndpoint,
    Disabled,
}

/// A user's edit between two passes: one of the shared model's
/// (`UserEdit`, which the properties draw too), or the fuzz target's own,
/// so that a blind spot of the shared model is not one of both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    Shared(UserEdit),
    /// A toleration of the user's own appended to the pod spec's (a field
    /// the policy never writes; a `tolerations` that is no list is left
    /// alone: no edit).
    Toleration,
}

impl Edit {
    const TOLERATION: &'static str = "toleration";

    pub fn name(self) -> String {
        match self {
            Edit::Shared(edit) => edit.name(),
            Edit::Toleration => Edit::TOLERATION.to_owned(),
        }
    }

    pub fn parse(text: &str) -> Option<Edit> {
        match text {
            Edit::TOLERATION => Some(Edit::Toleration),
            other => UserEdit::parse(other).map(Edit::Shared),
        }
    }

    /// `object` (its pod template at `template`) with the edit made; `x`
    /// is the scenario's workload. `None` where it cannot be made.
    pub fn apply(self, template: &str, object: &Value, x: &Value) -> Option<Value> {
        match self {
            Edit::Shared(edit) => edit.apply(template, object, x),
            Edit::Toleration => {
                let mut o = object.clone();
                let spec = o
                    .pointer_mut(&format!("{template}/spec"))?
                    .as_object_mut()?;
                let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
                if tolerations.is_null() {
                    *tolerations = json!([]);
                }
                tolerations.as_array_mut()?.push(json!({
                    "key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"
                }));
                Some(o)
            }
        }
    }
}

/// The edits a fuzzed scenario draws from (`ModeChange::edit`): each one
/// of the pod template's or the object's metadata, of every container, or
/// of the pod spec.
const EDITS: [Edit; 6] = [
    Edit::Shared(UserEdit::TemplateAnnotation),
    Edit::Shared(UserEdit::TemplateLabel),
    Edit::Shared(UserEdit::ObjectAnnotation),
    Edit::Shared(UserEdit::Image(None)),
    Edit::Shared(UserEdit::Env(None)),
    Edit::Toleration,
];

/// A shape given to the generated workload, so that each mode's main path
/// is reached often: an injected proxy to move, or one app to wrap.
/// `status_on_job_template`: the status where `istioctl kube-inject`
/// writes it for a CronJob (its jobTemplate's metadata) and where the
/// CronJob controller copies it for a Job (the Job's own metadata).
#[derive(Debug, Arbitrary, Clone, Copy)]
pub enum Shape {
    AsGenerated,
    /// Only the first container, with a name and a command.
    SingleApp,
    /// A proxy injected by Istio (named as the settings say) at `at` in
    /// `containers`, the status annotation on the pod template (or the
    /// CronJob's job template), `istio-init` before it.
    Injected {
        at: u8,
        istio_init: bool,
        status_on_job_template: bool,
        /// The proxy's own `restartPolicy`: none, Always, Never, OnFailure.
        restart_policy: u8,
        readiness_probe: bool,
        lifecycle: bool,
    },
}

impl Shape {
    fn apply(self, kind: WorkloadKind, sidecar: &str, object: &mut Value) {
        let template = kind.template();
        let Some(Value::Object(spec)) = object.pointer_mut(&format!("{template}/spec")) else {
            return;
        };
        let Some(Value::Array(containers)) = spec.get_mut("containers") else {
            return;
        };
        let app = || json!({"name": "app", "image": "busybox", "command": ["/bin/app", "--x"]});
        if !matches!(self, Shape::AsGenerated) && containers.is_empty() {
            containers.push(app());
        }
        match self {
            Shape::AsGenerated => {}
            Shape::SingleApp => {
                containers.truncate(1);
                if let Some(Value::Object(app)) = containers.first_mut() {
                    app.entry("name").or_insert("app".into());
                    app.entry("command").or_insert(json!(["/bin/app", "--x"]));
                }
            }
            Shape::Injected {
                at,
                istio_init,
                status_on_job_template,
                restart_policy,
                readiness_probe,
                lifecycle,
            } => {
                let mut proxy =
                    json!({"name": sidecar, "image": "proxyv2", "args": ["proxy", "sidecar"]});
                if let Some(policy) = [None, Some("Always"), Some("Never"), Some("OnFailure")]
                    [usize::from(restart_policy % 4)]
                {
                    proxy["restartPolicy"] = policy.into();
                }
                if readiness_probe {
                    proxy["readinessProbe"] =
                        json!({"httpGet": {"path": "/healthz/ready", "port": 15021}});
                }
                if lifecycle {
                    proxy["lifecycle"] = json!({"preStop": {"exec": {"command": ["sleep", "5"]}}});
                }
                let at = usize::from(at) % (containers.len() + 1);
                containers.insert(at, proxy);
                if istio_init {
                    let init = spec.entry("initContainers").or_insert(json!([]));
                    if init.is_null() {
                        *init = json!([]);
                    }
                    if let Value::Array(init) = init {
                        init.insert(0, json!({"name": "istio-init", "image": "proxyv2"}));
                    }
                }
                let status = json!({
                    "initContainers": if istio_init { json!(["istio-init"]) } else { Value::Null },
                    "containers": [sidecar],
                    "volumes": ["istio-envoy"],
                    "imagePullSecrets": null,
                    "revision": "default",
                })
                .to_string();
                let owner = match (kind, status_on_job_template) {
                    (WorkloadKind::CronJob, true) => "/spec/jobTemplate",
                    (WorkloadKind::Job, true) => "",
                    _ => template,
                };
                if let Some(Value::Object(owner)) = object.pointer_mut(owner) {
                    let meta = owner.entry("metadata").or_insert(json!({}));
                    if meta.is_null() {
                        *meta = json!({});
                    }
                    if let Value::Object(meta) = meta {
                        let annotations = meta.entry("annotations").or_insert(json!({}));
                        if annotations.is_null() {
                            *annotations = json!({});
                        }
                        if let Value::Object(annotations) = annotations {
                            annotations.insert(STATUS.into(), status.into());
                        }
                    }
                }
            }
        }
    }
}

/// What `mode_change` gets from libFuzzer.
#[derive(Debug, Arbitrary)]
pub struct ModeChange {
    pub kind: WorkloadKind,
    /// A mode applied before A (`x = C(x0)`), and whether its record is then
    /// rewritten in the legacy form (a quitEndpoint record only).
    pub history: Option<(Choice, bool)>,
    pub first: Choice,
    pub second: Choice,
    /// Where each pass says its mode: `Carrier::ALL[carrier % 3]`.
    pub carrier: u8,
    /// The `mode` setting when an annotation says the mode.
    pub base_mode: Option<u8>,
    pub sidecar_envoy: Option<bool>,
    /// `workloadOverride` when the settings say the mode.
    pub workload_override: Option<bool>,
    pub other_quit_url: bool,
    /// A Pod's `restartPolicy` made `Never` (`true`) or `OnFailure`, so that
    /// more Pods run to completion.
    pub pod_completes: Option<bool>,
    pub shape: Shape,
    /// A user's edit between A and B: `EDITS[edit % 6]`.
    pub edit: Option<u8>,
    pub order: u8,
    pub workload: Input,
}

/// One case of the laws, as stored in `fuzz/regressions/mode_change/`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub kind: WorkloadKind,
    /// `x0`.
    pub object: Value,
    pub history: Option<Choice>,
    pub legacy: bool,
    pub first: Choice,
    pub second: Choice,
    pub carrier: Carrier,
    /// The settings of every pass; `mode` (and `workloadOverride`) is set
    /// by each pass as the carrier needs.
    pub settings: Map<String, Value>,
    /// A user's edit between A and B (law 5).
    pub edit: Option<Edit>,
    pub order: Order,
    /// The laws are checked on `x0` even when it is not the typed object
    /// or its containers are not named as Kubernetes requires.
    pub untyped: bool,
}

impl ModeChange {
    /// The scenario (a generated object that is not JSON is a harness
    /// bug: it panics).
    pub fn scenario(&self) -> Scenario {
        let kind = match self.kind {
            WorkloadKind::CronJob => Kind::CronJob,
            WorkloadKind::Job => Kind::Job,
            WorkloadKind::Pod => Kind::Pod,
        };
        let text = self.workload.object_as(kind);
        // Read literally: a generated key may be serde_json's private
        // RawValue key, which `Value`'s own reader takes for something else.
        let mut object = policy_testkit::json::from_slice(text.as_bytes())
            .unwrap_or_else(|e| panic!("harness bug: the object is not JSON ({e}): {text}"));
        let sidecar = if self.sidecar_envoy == Some(true) {
            "envoy"
        } else {
            "istio-proxy"
        };
        self.shape.apply(self.kind, sidecar, &mut object);
        if let (WorkloadKind::Pod, Some(never)) = (self.kind, self.pod_completes) {
            if let Some(Value::Object(spec)) = object.get_mut("spec") {
                let policy = if never { "Never" } else { "OnFailure" };
                spec.insert("restartPolicy".into(), policy.into());
            }
        }
        let mut settings = Map::new();
        if let Some(m) = self.base_mode {
            settings.insert(
                "mode".into(),
                Choice::ALL[usize::from(m) % 3].as_str().into(),
            );
        }
        if let Some(envoy) = self.sidecar_envoy {
            let name = if envoy { "envoy" } else { "istio-proxy" };
            settings.insert("sidecarContainerName".into(), name.into());
        }
        if let Some(w) = self.workload_override {
            settings.insert("workloadOverride".into(), w.into());
        }
        if self.other_quit_url {
            settings.insert(
                "quitUrl".into(),
                "http://[::1]:15020/quitquitquit?x=1".into(),
            );
        }
        Scenario {
            kind: self.kind,
            object,
            history: self.history.map(|(c, _)| c),
            legacy: self.history.is_some_and(|(_, legacy)| legacy),
            first: self.first,
            second: self.second,
            carrier: Carrier::ALL[usize::from(self.carrier) % Carrier::ALL.len()],
            settings,
            edit: self.edit.map(|e| EDITS[usize::from(e) % EDITS.len()]),
            order: Order::ALL[usize::from(self.order) % 3],
            untyped: untyped_from_env(),
        }
    }
}

impl Choice {
    pub const ALL: [Choice; 4] = [
        Choice::NativeSidecar,
        Choice::ExitOnJobCompletion,
        Choice::QuitEndpoint,
        Choice::Disabled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Choice::NativeSidecar => "nativeSidecar",
            Choice::ExitOnJobCompletion => "exitOnJobCompletion",
            Choice::QuitEndpoint => "quitEndpoint",
            Choice::Disabled => "disabled",
        }
    }

    fn parse(s: &str) -> Option<Choice> {
        Choice::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl WorkloadKind {
    const ALL: [WorkloadKind; 3] = [WorkloadKind::CronJob, WorkloadKind::Job, WorkloadKind::Pod];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::CronJob => "CronJob",
            WorkloadKind::Job => "Job",
            WorkloadKind::Pod => "Pod",
        }
    }

    /// The pod template, as a JSON pointer.
    fn template(self) -> &'static str {
        match self {
            WorkloadKind::CronJob => "/spec/jobTemplate/spec/template",
            WorkloadKind::Job => "/spec/template",
            WorkloadKind::Pod => "",
        }
    }
}

fn order_str(order: Order) -> &'static str {
    match order {
        Order::PolicyServer => "policyServer",
        Order::ApiServer => "apiServer",
        Order::ObjectFirst => "objectFirst",
    }
}

/// What `Scenario::run` checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The laws (2-4), not only the checks of every answer and 1.
    pub laws: bool,
    /// The form of the record A(x) left, if it was a mutation that left one:
    /// `annotation`, `move`, `exit` or `quit`.
    pub recorded: Option<&'static str>,
}

/// What one pass came to: the pass as the laws see it (its `sent` is the
/// object with the mode annotation written as the carrier says, its
/// `source` the payload), and whether that annotation could be written.
#[derive(Clone)]
struct Passed {
    pass: Pass,
    settable: bool,
}

impl std::ops::Deref for Passed {
    type Target = Pass;
    fn deref(&self) -> &Pass {
        &self.pass
    }
}

/// The record annotations of a pod template, if it has any.
fn has_record(template: Option<&Value>) -> bool {
    has_annotation(template, &[APPLIED, QUIT_WRAPPED])
}

/// Whether the pod template has one of `keys` among its annotations.
fn has_annotation(template: Option<&Value>, keys: &[&str]) -> bool {
    template
        .and_then(|t| t.pointer("/metadata/annotations"))
        .and_then(Value::as_object)
        .is_some_and(|a| keys.iter().any(|k| a.contains_key(*k)))
}

/// `text` (JSON) with the quitEndpoint wrapper script, 2 KiB of shell,
/// written `<SCRIPT>`.
pub fn shorten(text: &str) -> String {
    let script = Value::from(istio_job_sidecar_policy::modes::quit_endpoint::SCRIPT).to_string();
    text.replace(&script[1..script.len() - 1], "<SCRIPT>")
}

/// `MODE_CHANGE_UNTYPED=1`.
fn untyped_from_env() -> bool {
    static UNTYPED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *UNTYPED.get_or_init(|| std::env::var_os("MODE_CHANGE_UNTYPED").is_some_and(|v| v == "1"))
}

const NOT_TYPED: &str = "not the typed object";
const NOT_NAMED: &str = "containers without a name or of the same name";

/// Every container of the pod template has a name, and no two the same
/// (`containers` and `initContainers` together), as the API server's
/// validation requires (k8s-openapi reads a missing name as "").
fn named(template: Option<&Value>) -> bool {
    let mut names = std::collections::BTreeSet::new();
    ["/spec/containers", "/spec/initContainers"]
        .iter()
        .all(|list| {
            template
                .and_then(|t| t.pointer(list))
                .and_then(Value::as_array)
                .is_none_or(|list| {
                    list.iter().all(|c| {
                        c.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|name| names.insert(name.to_owned()))
                    })
                })
        })
}

/// The form of a pod template's record (`istio-job-sidecar/applied`).
fn record_form(template: Option<&Value>) -> Option<&'static str> {
    use istio_job_sidecar_policy::record::Applied;
    let text = template?
        .pointer("/metadata/annotations")?
        .get(APPLIED)?
        .as_str()?;
    Some(match Applied::parse(text).ok()? {
        Applied::NativeAnnotation(_) => "annotation",
        Applied::NativeMove(_) => "move",
        Applied::ExitOnJobCompletion { .. } => "exit",
        Applied::QuitEndpoint { .. } => "quit",
    })
}

impl Scenario {
    fn template<'v>(&self, object: &'v Value) -> Option<&'v Value> {
        object.pointer(self.kind.template())
    }

    /// `x0` reads as the typed Kubernetes object of its kind.
    pub fn well_typed(&self) -> bool {
        use k8s_openapi::api::{batch::v1 as batch, core::v1 as core};
        let mut object = self.object.clone();
        let (api_version, kind) = match self.kind {
            WorkloadKind::Pod => ("v1", "Pod"),
            k => ("batch/v1", k.as_str()),
        };
        if let Value::Object(members) = &mut object {
            members.insert("apiVersion".into(), api_version.into());
            members.insert("kind".into(), kind.into());
        }
        match self.kind {
            WorkloadKind::CronJob => serde_json::from_value::<batch::CronJob>(object).is_ok(),
            WorkloadKind::Job => serde_json::from_value::<batch::Job>(object).is_ok(),
            WorkloadKind::Pod => serde_json::from_value::<core::Pod>(object).is_ok(),
        }
    }

    /// Why the laws (2-5) do not apply to `x0`; empty when they do.
    pub fn outside_the_laws(&self) -> Vec<&'static str> {
        let template = self.template(&self.object);
        let wrapped = template
            .and_then(|t| t.pointer("/spec/containers"))
            .and_then(Value::as_array)
            .is_some_and(|list| {
                list.iter()
                    .any(|c| c.get("command").is_some_and(is_wrapped))
            });
        [
            (!self.well_typed(), NOT_TYPED),
            (!named(template), NOT_NAMED),
            (has_record(template), "a record of its own"),
            (
                has_annotation(template, &[OWNER_MODE]),
                "an owner's mode of its own",
            ),
            (wrapped, "a command already wrapped"),
        ]
        .into_iter()
        .filter_map(|(is, why)| is.then_some(why))
        .collect()
    }

    /// `x0` is a workload this version of the policy may have written, as
    /// the API server sends it (`untyped`: as any).
    pub fn lawful(&self) -> bool {
        self.outside_the_laws()
            .iter()
            .all(|why| self.untyped && [NOT_TYPED, NOT_NAMED].contains(why))
    }

    fn pass(&self, object: &Value, choice: Choice, update: bool) -> Result<Passed, String> {
        let mode = (choice != Choice::Disabled).then(|| choice.as_str());
        let template = self.kind.template();
        // Where the carrier cannot write its annotation, the object goes as
        // it is: the answer is still checked, the laws are not.
        let (sent, settings, settable) =
            match self.carrier.say(template, object, &self.settings, mode) {
                Some((sent, settings)) => (sent, settings, true),
                None => (object.clone(), Value::Object(self.settings.clone()), false),
            };
        let (group, kind) = match self.kind {
            WorkloadKind::Pod => ("", "Pod"),
            k => ("batch", k.as_str()),
        };
        let mut request = json!({
            "uid": "mode-change",
            "kind": {"group": group, "version": "v1", "kind": kind},
            "operation": if update { "UPDATE" } else { "CREATE" },
            "object": sent,
        });
        if update {
            request["oldObject"] = object.clone();
        }
        let validate =
            |p: &[u8]| istio_job_sidecar_policy::validate(p).expect("validate never errors");
        let pass = Pass::run(validate, &request, Some(&settings), self.order)
            .map_err(|e| shorten(&format!("{} pass: {e}", choice.as_str())))?;
        Ok(Passed { pass, settable })
    }

    /// `x`: `x0`, or `C(x0)` with its record in the legacy form if asked.
    fn start(&self) -> Result<(Value, Option<Passed>), String> {
        let Some(c) = self.history else {
            return Ok((self.object.clone(), None));
        };
        let history = self.pass(&self.object, c, false)?;
        let mut x = history.out.clone();
        if self.legacy {
            let pointer = format!("{}/metadata/annotations", self.kind.template());
            if let Some(Value::Object(a)) = x.pointer_mut(&pointer) {
                let container = a
                    .get(APPLIED)
                    .and_then(Value::as_str)
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                    .filter(|r| r["mode"] == "quitEndpoint")
                    .and_then(|r| r["container"].as_str().map(str::to_owned));
                if let Some(container) = container {
                    a.remove(APPLIED);
                    a.insert(QUIT_WRAPPED.into(), container.into());
                }
            }
        }
        Ok((x, Some(history)))
    }

    /// `v` without an owner's mode that is inert (`owner_mode_inert`): the
    /// laws compare up to it (`policy_testkit::laws`), and up to what
    /// Kubernetes does not keep apart.
    fn inert_off(&self, v: &Value) -> Value {
        let mut v = v.clone();
        if self.owner_mode_inert(&v) {
            let pointer = format!("{}/metadata/annotations", self.kind.template());
            if let Some(Value::Object(a)) = v.pointer_mut(&pointer) {
                a.remove(OWNER_MODE);
            }
        }
        v
    }

    /// Whether the owner's mode on `v`'s pod template is inert, so that the
    /// policy leaves it as it is: the template says a mode of its own,
    /// which wins over it, or Istio will not inject the pod and no proxy
    /// is there (no mode is applied then, and no owner's mode carried
    /// down; the update that turns injection on brings it up to date).
    /// Injection off as Istio reads it: `hostNetwork: true`, else the
    /// label `sidecar.istio.io/inject` when present (even empty), else the
    /// annotation, saying exactly "false"; a proxy is there when
    /// `sidecar.istio.io/status` is on the template, or on a CronJob's
    /// jobTemplate or a Job's own metadata, or a container has the
    /// sidecar's name.
    fn owner_mode_inert(&self, v: &Value) -> bool {
        let template = self.kind.template();
        let meta = |owner: &str, map: &str, key: &str| {
            v.pointer(owner)
                .and_then(|o| o.pointer(&format!("/metadata/{map}")))
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let own_mode = meta(template, "annotations", MODE_ANNOTATION).is_some();
        let host = v.pointer(&format!("{template}/spec/hostNetwork")) == Some(&Value::Bool(true));
        let inject =
            meta(template, "labels", INJECT).or_else(|| meta(template, "annotations", INJECT));
        let owner = match self.kind {
            WorkloadKind::CronJob => Some("/spec/jobTemplate"),
            WorkloadKind::Job => Some(""),
            WorkloadKind::Pod => None,
        };
        let injected = [Some(template), owner]
            .into_iter()
            .flatten()
            .any(|at| meta(at, "annotations", STATUS).is_some());
        // A container of the sidecar's name is a proxy there too (the Pods
        // of an older kube-injected CronJob carry it without the status).
        let sidecar = self
            .settings
            .get("sidecarContainerName")
            .and_then(Value::as_str);
        let proxy = ["containers", "initContainers"].iter().any(|list| {
            v.pointer(&format!("{template}/spec/{list}"))
                .and_then(Value::as_array)
                .is_some_and(|l| {
                    l.iter()
                        .any(|c| c["name"].as_str() == Some(sidecar.unwrap_or("istio-proxy")))
                })
        });
        own_mode || ((host || inject.as_deref() == Some("false")) && !injected && !proxy)
    }

    /// B(A(x)) == B(x) for `got` a pass in `choice` over an object a pass
    /// made (or edited) and `want` the same mode's pass it should equal
    /// (`policy_testkit::laws::same`): the warnings compared as the records
    /// on the objects the two were given say.
    fn same(&self, what: &str, choice: Choice, got: &Pass, want: &Pass) -> Result<(), String> {
        let mode = (choice != Choice::Disabled).then(|| choice.as_str());
        let warned = Warned::by_records(mode, self.kind.template(), got, want);
        laws::same(what, got, want, &|v| self.inert_off(v), warned).map_err(|e| shorten(&e))
    }

    /// The checks of the module's documentation; `Err` says which failed.
    pub fn run(&self) -> Result<Checked, String> {
        let (a_name, b_name) = (self.first.as_str(), self.second.as_str());
        let update = self.kind == WorkloadKind::CronJob;
        let (x, history) = self.start()?;
        let a = self.pass(&x, self.first, false)?;
        let again = self.pass(&a.out, self.first, update)?;
        laws::fixed(&format!("A = {a_name}"), &a, &again).map_err(|e| shorten(&e))?;
        let b_a = self.pass(&a.out, self.second, update)?;
        let b_x = self.pass(&x, self.second, false)?;
        let d_a = self.pass(&a.out, Choice::Disabled, update)?;
        let d_x = self.pass(&x, Choice::Disabled, false)?;
        let settable = [&a, &b_a, &b_x, &d_a, &d_x]
            .iter()
            .chain(history.as_ref().iter())
            .all(|p| p.settable);
        let checked = Checked {
            laws: self.lawful() && settable,
            recorded: if a.mutated {
                record_form(self.template(&a.out))
            } else {
                None
            },
        };
        if !checked.laws {
            return Ok(checked);
        }
        self.same(
            &format!("B(A(x)) and B(x) (A = {a_name}, B = {b_name})"),
            self.second,
            &b_a,
            &b_x,
        )?;
        self.same(
            &format!("disabled(A(x)) and disabled(x) (A = {a_name})"),
            Choice::Disabled,
            &d_a,
            &d_x,
        )?;
        if let Some(edit) = self.edit {
            if let (Some(e_a), Some(e_b_x)) = (
                edit.apply(self.kind.template(), &a.out, &x),
                edit.apply(self.kind.template(), &b_x.out, &x),
            ) {
                let b_e_a = self.pass(&e_a, self.second, update)?;
                let e_b_x = Pass {
                    out: e_b_x,
                    ..b_x.pass.clone()
                };
                self.same(
                    &format!(
                        "B(e(A(x))) and e(B(x)) (A = {a_name}, B = {b_name}, e = {})",
                        edit.name()
                    ),
                    self.second,
                    &b_e_a,
                    &e_b_x,
                )?;
            }
        }
        self.after_history(history.is_some(), &d_x, &b_x, checked)
    }

    /// `disabled(x)` as the README says it for an `x` without a record:
    /// `x` as sent, but for the owner's mode the policy carries down to the
    /// pod template where the Job's or CronJob's own metadata says
    /// `disabled` (the template then says no mode of its own).
    fn disabled_of(&self, sent: &Value) -> Value {
        let mut expected = sent.clone();
        let on_object = self.carrier == Carrier::ObjectAnnotation;
        if on_object && self.kind != WorkloadKind::Pod {
            let carried = (|| {
                let template = expected
                    .pointer_mut(self.kind.template())?
                    .as_object_mut()?;
                let meta = template.entry("metadata").or_insert(json!({}));
                if meta.is_null() {
                    *meta = json!({});
                }
                let annotations = meta
                    .as_object_mut()?
                    .entry("annotations")
                    .or_insert(json!({}));
                if annotations.is_null() {
                    *annotations = json!({});
                }
                annotations
                    .as_object_mut()?
                    .insert(OWNER_MODE.into(), Choice::Disabled.as_str().into());
                Some(())
            })();
            if carried.is_none() {
                return sent.clone();
            }
        }
        expected
    }

    /// Laws 3 (disabled(x) is x, but for the owner's mode) and 4.
    fn after_history(
        &self,
        history: bool,
        d_x: &Pass,
        b_x: &Pass,
        checked: Checked,
    ) -> Result<Checked, String> {
        let b_name = self.second.as_str();
        match history {
            false => {
                // An object of an unexpected shape is answered unchanged,
                // with a warning (docs/modes.md, "What is mutated").
                let shape = d_x.warnings.iter().any(|w| w.contains("unexpected shape"));
                let expected = if shape {
                    d_x.sent.clone()
                } else {
                    self.disabled_of(&d_x.sent)
                };
                let what = "disabled(x) of an x without a record";
                laws::gives_back(what, d_x, &expected, &|v| self.inert_off(v))
                    .map_err(|e| shorten(&e))?;
                Ok(checked)
            }
            true => {
                let b_x0 = self.pass(&self.object, self.second, false)?;
                self.same(
                    &format!(
                        "B(C(x0)) and B(x0) (C = {}, legacy {}, B = {b_name})",
                        self.history.map_or("-", Choice::as_str),
                        self.legacy
                    ),
                    self.second,
                    b_x,
                    &b_x0,
                )?;
                Ok(checked)
            }
        }
    }

    /// As stored in `fuzz/regressions/mode_change/`.
    pub fn to_json(&self) -> Value {
        json!({
            "kind": self.kind.as_str(),
            "history": self.history.map(Choice::as_str),
            "legacy": self.legacy,
            "first": self.first.as_str(),
            "second": self.second.as_str(),
            "carrier": self.carrier.as_str(),
            "settings": self.settings,
            "edit": self.edit.map(Edit::name),
            "order": order_str(self.order),
            "untyped": self.untyped,
            "object": self.object,
        })
    }

    pub fn from_json(v: &Value) -> Result<Scenario, String> {
        let text = |key: &str| {
            v[key]
                .as_str()
                .ok_or_else(|| format!("{key}: expected a string"))
        };
        let choice = |key: &str| {
            text(key).and_then(|s| Choice::parse(s).ok_or_else(|| format!("{key}: {s:?}")))
        };
        Ok(Scenario {
            kind: WorkloadKind::ALL
                .into_iter()
                .find(|k| Ok(k.as_str()) == text("kind"))
                .ok_or("kind")?,
            object: v["object"].clone(),
            history: match &v["history"] {
                Value::Null => None,
                _ => Some(choice("history")?),
            },
            legacy: v["legacy"].as_bool().unwrap_or(false),
            first: choice("first")?,
            second: choice("second")?,
            carrier: text("carrier")
                .and_then(|s| Carrier::parse(s).ok_or(format!("carrier: {s:?}")))?,
            settings: v["settings"].as_object().cloned().unwrap_or_default(),
            edit: match &v["edit"] {
                Value::Null => None,
                _ => Some(text("edit").and_then(|s| Edit::parse(s).ok_or(format!("edit: {s:?}")))?),
            },
            untyped: v["untyped"].as_bool().unwrap_or(false) || untyped_from_env(),
            order: Order::ALL
                .into_iter()
                .find(|o| Ok(order_str(*o)) == text("order"))
                .ok_or("order")?,
        })
    }

    /// Every pass of `run`, as a reader follows it: the settings, what
    /// changed, the warnings, and how the objects the laws compare differ.
    pub fn explain(&self) -> String {
        fn show(out: &mut String, name: &str, pass: Result<Passed, String>) -> Option<Value> {
            let p = match pass {
                Err(e) => {
                    out.push_str(&format!("== {name}: {e}\n"));
                    return None;
                }
                Ok(p) => p,
            };
            let settings = serde_json::from_str::<Value>(&p.source)
                .map(|v| v["settings"].clone())
                .unwrap_or_default();
            let verdict = if p.mutated { "mutated" } else { "not mutated" };
            out.push_str(&format!("== {name}: settings {settings}, {verdict}\n"));
            if p.mutated {
                out.push_str(&shorten(&differences(&p.sent, &p.out)));
                out.push('\n');
            }
            if !p.warnings.is_empty() {
                out.push_str(&format!("   warnings: {:?}\n", p.warnings));
            }
            Some(p.pass.out)
        }
        let mut out = String::new();
        let update = self.kind == WorkloadKind::CronJob;
        let x = match self.start() {
            Ok((x, Some(h))) => {
                show(&mut out, "C(x0)", Ok(h));
                x
            }
            Ok((x, None)) => x,
            Err(e) => return format!("{out}{e}"),
        };
        let Some(a) = show(&mut out, "A(x)", self.pass(&x, self.first, false)) else {
            return out;
        };
        show(&mut out, "A(A(x))", self.pass(&a, self.first, update));
        for (choice, b) in [(self.second, "B"), (Choice::Disabled, "disabled")] {
            let left = show(
                &mut out,
                &format!("{b}(A(x))"),
                self.pass(&a, choice, update),
            );
            let right = show(&mut out, &format!("{b}(x)"), self.pass(&x, choice, false));
            if let (Some(l), Some(r)) = (left, right) {
                let inert = |v: &Value| self.inert_off(v);
                let (l, r) = (laws::up_to(&l, &inert), laws::up_to(&r, &inert));
                let diff = shorten(&differences(&l, &r));
                let diff = if diff.is_empty() { "equal" } else { &diff };
                out.push_str(&format!("== {b}(A(x)) -> {b}(x), normalized: {diff}\n"));
            }
        }
        out
    }
}

/// The `mode_change` check: panics with the scenario (as JSON, to store in
/// `fuzz/regressions/mode_change/`) when a law fails.
pub fn check_scenario(s: &Scenario) {
    if let Err(e) = s.run() {
        panic!(
            "{e}\nscenario:\n{}",
            shorten(&serde_json::to_string_pretty(&s.to_json()).unwrap_or_default())
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regressions store an edit by its name: each one the target
    /// draws reads back as itself, and its own edit is made.
    #[test]
    fn every_edit_reads_back_by_its_name() {
        for edit in EDITS {
            assert_eq!(Edit::parse(&edit.name()), Some(edit), "{}", edit.name());
        }
        let job = json!({"kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "app"}]}}}});
        let edited = Edit::Toleration
            .apply("/spec/template", &job, &job)
            .expect("a pod spec takes a toleration");
        assert_eq!(
            edited["spec"]["template"]["spec"]["tolerations"][0]["key"],
            "dedicated"
        );
        let odd = json!({"kind": "Job", "spec": {"template": {"spec": {"tolerations": "x"}}}});
        assert_eq!(Edit::Toleration.apply("/spec/template", &odd, &odd), None);
    }
}
