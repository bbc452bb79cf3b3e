//! The laws a change of mode follows (docs/design.md, "The laws of a change of
//! mode"), over workloads as users write them: how each pass chooses its mode,
//! the user's edits between passes, the workloads (`LawCase`) and what the laws
//! compare up to (`inert_off`); the laws themselves are checked by
//! `policy_testkit::laws`, as the golden mode changes and the fuzz target check
//! them.

use crate::generators::*;
use crate::names::*;
use crate::oracle::*;
use crate::{cases, config, object_of, pass};
use policy_testkit::laws::{Pass, Warned};
use policy_testkit::mode_change::{Carrier, UserEdit};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// A workload x for the laws: a Job or Pod CREATE, or a CronJob CREATE or
/// UPDATE, the policy's follow-up passes sent as a CronJob UPDATE (or a
/// Job or Pod CREATE) of the previous pass's object.
///
/// x is as a user writes it: the generators' records, owner's modes and
/// unrecorded wrappers taken off (an edit of the policy without a record
/// of it is the user's to the policy: it cannot be undone, and the laws do
/// not hold for it), and every mode annotation (each pass writes its own). `recorded` x carry a record of their own: an earlier pass of the
/// policy in some mode, or the legacy `quit-wrapped` annotation of an
/// earlier version with its wrapper.
#[derive(Debug, Clone)]
pub struct LawCase {
    pub kind: Kind,
    pub operation: &'static str,
    pub x: Value,
    /// The settings; each pass sets or ignores `mode`.
    pub settings: Map<String, Value>,
    pub recorded: bool,
    /// Where the first pass says each mode (in `MODES` order), and the
    /// second.
    pub first: [Carrier; 4],
    pub second: [Carrier; 4],
    pub edit: Edit,
}

/// A user's edit between two passes: one of the shared model's
/// (`UserEdit`, which the fuzz target draws too), or one of the
/// properties' own, so that a blind spot of the shared model is not one of
/// both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    Shared(UserEdit),
    /// A volume of the user's own added to the pod template: an
    /// `emptyDir: {}` (the API server keeps it: it is the volume's
    /// source), or a ConfigMap's, each named apart from every other.
    Volume {
        empty_dir: bool,
    },
}

impl Edit {
    /// `object` (whose pod template is at `template`) with the edit made;
    /// `x` is the workload the scenario started from. `None` where it
    /// cannot be made.
    pub fn apply(self, template: &str, object: &Value, x: &Value) -> Option<Value> {
        match self {
            Edit::Shared(edit) => edit.apply(template, object, x),
            Edit::Volume { empty_dir } => {
                let mut o = object.clone();
                let spec = o
                    .pointer_mut(&format!("{template}/spec"))?
                    .as_object_mut()?;
                let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
                if volumes.is_null() {
                    *volumes = json!([]);
                }
                let volumes = volumes.as_array_mut()?;
                let name = (0..)
                    .map(|n| format!("users-volume-{n}"))
                    .find(|n| !volumes.iter().any(|v| v["name"] == json!(n)))?;
                volumes.push(if empty_dir {
                    json!({"name": name, "emptyDir": {}})
                } else {
                    json!({"name": name, "configMap": {"name": "settings"}})
                });
                Some(o)
            }
        }
    }
}

impl LawCase {
    pub fn follow_up(&self) -> &'static str {
        if self.kind == Kind::CronJob {
            "UPDATE"
        } else {
            "CREATE"
        }
    }

    /// `object` and the settings for a pass in `mode`, said by `carrier`
    /// (`Carrier::say`: the workloads drawn here always take it).
    pub fn choose(&self, object: &Value, carrier: Carrier, mode: Option<Mode>) -> (Value, Value) {
        let mode = mode.map(Mode::name);
        carrier
            .say(template_pointer(self.kind), object, &self.settings, mode)
            .expect("a generated workload's metadata is a map or absent")
    }

    /// A pass of the policy in `mode` over `object`.
    pub fn pass(
        &self,
        operation: &str,
        object: &Value,
        carrier: Carrier,
        mode: Option<Mode>,
    ) -> Pass {
        let (o, settings) = self.choose(object, carrier, mode);
        pass(self.kind, operation, &o, &settings)
    }

    /// The plan of a pass in `mode` over `object` (the oracle's): which
    /// mode the workload then asks for.
    pub fn plan(
        &self,
        operation: &str,
        object: &Value,
        carrier: Carrier,
        mode: Option<Mode>,
    ) -> Plan {
        let (o, settings) = self.choose(object, carrier, mode);
        plan_of(self.kind, operation, &o, &settings_of(&Some(settings)))
    }

    /// Whether the laws apply to the follow-up pass in mode B over `ax` (a
    /// first pass's result): not where a Job's template carries its
    /// owner's word (`istio-job-sidecar/owner-mode`, written by a first
    /// pass chosen on the Job's own metadata) and B is said by the
    /// settings. The policy cannot tell such a Job from one a CronJob made,
    /// whose word it must keep (it is never removed on a Job): the owner's
    /// word stands, and is still on the object (and asks for its own mode)
    /// where B(x) has none. Anywhere else the oracle's plans over A(x) and
    /// over x must agree: `Err` if not.
    pub fn premise(&self, ax: &Value, b: usize) -> Result<bool, String> {
        let carried = annotation(ax, template_pointer(self.kind), OWNER_MODE).is_some();
        let read = !self.owner_mode_unread(b);
        if self.kind == Kind::Job && self.second[b] == Carrier::Settings && carried && read {
            return Ok(false);
        }
        let over_x = self.plan(self.operation, &self.x, self.second[b], MODES[b]);
        let over_ax = self.plan(self.follow_up(), ax, self.second[b], MODES[b]);
        if over_x == over_ax {
            return Ok(true);
        }
        Err(format!(
            "the oracle plans {over_ax:?} over A(x), {over_x:?} over x: only a Job's owner's mode may differ"
        ))
    }

    /// Whether the pass in mode B reads no owner's mode: B is said by the
    /// settings, and they do not honour the workload's word
    /// (`workloadOverride: false`); the policy then leaves the owner's mode
    /// as it is.
    pub fn owner_mode_unread(&self, b: usize) -> bool {
        self.second[b] == Carrier::Settings
            && self.settings.get("workloadOverride") == Some(&json!(false))
    }

    /// `object`, a result of a pass in mode B, without an owner's mode that
    /// is inert there, which the policy leaves as it is: on a template that
    /// says its own mode (which wins over it), on a pod Istio will not
    /// inject (no mode is applied to it, and the update that turns
    /// injection on brings the owner's mode up to date), or where B's pass
    /// reads none. The laws compare up to it (`policy_testkit::laws`), and
    /// up to what Kubernetes drops.
    pub fn inert_off(&self, b: usize, object: &Value) -> Value {
        let t = template_pointer(self.kind);
        let mut o = object.clone();
        let sidecar = settings_of(&Some(Value::Object(self.settings.clone()))).sidecar;
        let injection_off = injection_off(self.kind, &o) && !proxy_there(self.kind, &o, &sidecar);
        if annotation(&o, t, MODE).is_some() || injection_off || self.owner_mode_unread(b) {
            remove_annotation(&mut o, t, OWNER_MODE);
        }
        o
    }

    /// How the warnings of the passes `got` and `want` in `MODES[m]`
    /// compare (`policy_testkit::laws::Warned`), by the records on the
    /// objects they were given.
    pub fn warned(&self, m: usize, got: &Pass, want: &Pass) -> Warned {
        let mode = MODES[m].map(Mode::name);
        Warned::by_records(mode, template_pointer(self.kind), got, want)
    }

    /// A(x) for each mode A (`MODES` order): the first pass.
    pub fn firsts(&self) -> Vec<Pass> {
        (0..MODES.len())
            .map(|i| self.pass(self.operation, &self.x, self.first[i], MODES[i]))
            .collect()
    }

    /// B(x), or B(y) for y the result of a first pass (a follow-up).
    pub fn second(&self, object: &Value, b: usize, follow_up: bool) -> Pass {
        let operation = if follow_up {
            self.follow_up()
        } else {
            self.operation
        };
        self.pass(operation, object, self.second[b], MODES[b])
    }

    /// `object` with the user's edit made (`Edit::apply`, a container
    /// counted among x's); `None` where it cannot be made.
    pub fn edited(&self, object: &Value) -> Option<Value> {
        self.edit
            .apply(template_pointer(self.kind), object, &self.x)
    }
}

pub fn arb_carrier() -> BoxedStrategy<Carrier> {
    proptest::sample::select(Carrier::ALL.to_vec()).boxed()
}

/// The prefix of a wrapper of an earlier version (another script and URL).
pub const OLD_WRAPPER: [&str; 6] = [
    QUIT_SHELL[0],
    QUIT_SHELL[1],
    "# an older wrapper",
    QUIT_NAME,
    "http://localhost:15020/quitquitquit",
    "always",
];

/// Workloads for the laws: `recorded` lets x carry a record (else x never
/// does).
pub fn arb_law_case(recorded: bool) -> BoxedStrategy<LawCase> {
    (
        arb_case_as_written(
            vec![Kind::Job, Kind::CronJob, Kind::Pod],
            prop_oneof![Just("CREATE"), Just("UPDATE")].boxed(),
        ),
        // x as written, after an earlier pass in a mode (nativeSidecar most:
        // its move is the rarest edit), with a legacy wrapper.
        prop_oneof![
            3 => Just(None),
            2 => Just(Some(0usize)),
            1 => Just(Some(1)),
            1 => Just(Some(2)),
            2 => Just(Some(3)),
        ],
        vec(arb_carrier(), 8),
        prop_oneof![
            (0..8usize).prop_map(|n| Edit::Shared(UserEdit::Env(Some(n)))),
            (0..8usize).prop_map(|n| Edit::Shared(UserEdit::Image(Some(n)))),
            Just(Edit::Shared(UserEdit::TemplateLabel)),
            Just(Edit::Shared(UserEdit::TemplateAnnotation)),
            any::<bool>().prop_map(|empty_dir| Edit::Volume { empty_dir }),
        ],
    )
        .prop_map(move |(case, earlier, carriers, edit)| {
            let kind = case.kind;
            let t = template_pointer(kind);
            let operation = match (kind, case.request["operation"].as_str()) {
                (Kind::CronJob, Some("UPDATE")) => "UPDATE",
                _ => "CREATE",
            };
            let settings = match &case.settings {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            let sidecar = settings_of(&case.settings).sidecar;
            let mut x = object_of(&case.request);
            if kind == Kind::Pod
                && !matches!(
                    x["spec"]["restartPolicy"].as_str(),
                    Some("Never" | "OnFailure")
                )
            {
                x["spec"]["restartPolicy"] = json!("OnFailure");
            }
            for key in [APPLIED, QUIT_WRAPPED, MODE, OWNER_MODE] {
                remove_annotation(&mut x, t, key);
            }
            remove_annotation(&mut x, JOB_TEMPLATE, MODE);
            remove_annotation(&mut x, "", MODE);
            if let Some(Value::Array(list)) = x.pointer_mut(&format!("{t}/spec/containers")) {
                for c in list.iter_mut() {
                    if let Some(original) = command_of(c)
                        .as_deref()
                        .and_then(wrapped_original)
                        .map(<[String]>::to_vec)
                    {
                        c["command"] = json!(original);
                    }
                }
            }
            match earlier.filter(|_| recorded) {
                Some(3) => {
                    // What quitEndpoint wraps (and so an earlier version
                    // did): the one app container, with a command, of a
                    // pod whose proxy is not already a native sidecar.
                    let apps: Vec<Value> = containers(&x, t, "containers")
                        .into_iter()
                        .filter(|c| c["name"] != json!(sidecar))
                        .collect();
                    let native = containers(&x, t, "initContainers")
                        .iter()
                        .any(|c| c["name"] == json!(sidecar) && c["restartPolicy"] == "Always");
                    let app = match &apps[..] {
                        [app] if !native && command_of(app).is_some() => Some(app.clone()),
                        _ => None,
                    };
                    if let Some(app) = app {
                        let name = app["name"].as_str().unwrap().to_owned();
                        let mut command: Vec<String> =
                            OLD_WRAPPER.iter().map(|s| s.to_string()).collect();
                        command.extend(command_of(&app).unwrap());
                        container_mut(&mut x, t, "containers", &name).unwrap()["command"] =
                            json!(command);
                        set_annotation(&mut x, t, QUIT_WRAPPED, &name);
                    }
                }
                Some(mode) => {
                    let settings = Some(Value::Object(settings.clone()));
                    x = pre_pass(kind, &x, &settings, MODES[mode].unwrap());
                }
                None => {}
            }
            let recorded = record_of(&x, t) != Record::Absent;
            // `disabled` has no setting: chosen by the annotation.
            let carrier = |i: usize, c: Carrier| match c {
                Carrier::Settings if MODES[i % 4].is_none() => Carrier::TemplateAnnotation,
                c => c,
            };
            let first = std::array::from_fn(|i| carrier(i, carriers[i]));
            let second = std::array::from_fn(|i| carrier(i, carriers[i + 4]));
            LawCase {
                kind,
                operation,
                x,
                settings,
                recorded,
                first,
                second,
                edit,
            }
        })
        .boxed()
}

/// The laws over every ordered pair of modes run the policy some 40 times
/// a case: 64 cases (1,024 pairs, about 2 s), an eighth of the long mode's.
pub fn law_config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(64, 8),
        ..config()
    }
}

/// The laws over one pair of modes: 250 cases (1-2 s), a quarter of the
/// long mode's.
pub fn one_pair_config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(250, 4),
        ..config()
    }
}

/// The pair of a law's failure message.
pub fn pair(law: &LawCase, a: usize, b: usize) -> String {
    format!(
        "A = {} (by {:?}), B = {} (by {:?}), x recorded: {}",
        mode_name(MODES[a]),
        law.first[a],
        mode_name(MODES[b]),
        law.second[b],
        law.recorded
    )
}
