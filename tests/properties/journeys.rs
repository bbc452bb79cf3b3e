//! Properties over generated journeys (`policy_testkit::journey`): a
//! workload created (or stored before the policy), maybe annotated or
//! living through a change of the cluster's mode, then run by its
//! controllers, each hop admitted by the policy natively, the Pod injected
//! by the model of Istio's injector (`policy_testkit::istio`) and judged.
//!
//! What each run must give is worked out here from the spec (`Model`):
//! which mode the workload asked for (its own word, nearest the pod first,
//! when `workloadOverride` honours it, else the cluster's mode) and whether
//! the user's explicit choice says otherwise: `disabled`, injection off on
//! a template Istio never injected (`hostNetwork`, `sidecar.istio.io/inject`
//! as Istio reads it), `sidecar.istio.io/nativeSidecar: "false"` under
//! nativeSidecar, the user's own `exitOnJobCompletion`, or a documented
//! limit (quitEndpoint and an app without a command or several apps, a
//! proxy config that is no mapping), which the policy names in a warning
//! on the way to the Pod. Never from what the policy does.

use crate::names::*;
use policy_testkit::istio::{self, Mesh, Namespace, Release};
use policy_testkit::journey::{self, Edit, Expect, Step, Trip, Validate, Webhooks};
use proptest::prelude::*;
use serde_json::{json, Value};

const JOB: &str = include_str!("../../test_data/journeys/workloads/job.yaml");
const CRONJOB: &str = include_str!("../../test_data/journeys/workloads/cronjob.yaml");
const POD: &str = include_str!("../../test_data/journeys/workloads/pod.yaml");
const INJECTED_CLASSIC: &str =
    include_str!("../../test_data/fixtures/istio-job-kube-injected-classic.yaml");
const INJECTED_NATIVE: &str =
    include_str!("../../test_data/fixtures/istio-job-kube-injected-native.yaml");
const INJECTED_CRONJOB: &str =
    include_str!("../../test_data/fixtures/istio-cronjob-old-version.yaml.injected");

/// The values a workload's `istio-job-sidecar/mode` takes here.
const MODE_VALUES: [&str; 5] = [
    "nativeSidecar",
    "exitOnJobCompletion",
    "quitEndpoint",
    "disabled",
    "bogus",
];
/// `sidecar.istio.io/inject` values: only the exact "false" says no.
const INJECT_VALUES: [&str; 5] = ["", "false", "False", "true", "no"];
/// A user's proxy config: extended, the user's own key, holding the app
/// until the proxy starts (Istio then puts a classic proxy first), no
/// mapping (Istio's injector refuses the Pod).
const PROXY_CONFIGS: [&str; 4] = [
    "concurrency: 2",
    "exitOnJobCompletion: false",
    "holdApplicationUntilProxyStarts: true",
    "- no mapping",
];
/// A pod's own status port (`status.sidecar.istio.io/port`).
const STATUS_PORTS: [&str; 1] = ["15120"];
/// `inject.istio.io/templates` (kube-model's injector knows these):
/// `sidecar` alone changes nothing; a custom template patching
/// `istio-proxy` after it, which Istio's native rendering makes a Pod the
/// API server refuses; `grpc-agent`, never native.
const TEMPLATE_VALUES: [&str; 3] = ["sidecar", "sidecar,custom", "grpc-agent"];

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text.split("\n---").next().unwrap()).unwrap()
}

/// Where the workload comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `kubectl create ... --dry-run=client -o yaml` output.
    Plain,
    /// `istioctl kube-inject` output, the proxy a classic container; for a
    /// CronJob with `on_owner` the older form, the status on
    /// `spec.jobTemplate.metadata`.
    Classic { on_owner: bool },
    /// `istioctl kube-inject` output, the proxy a native sidecar.
    Native,
}

/// A workload as its owner writes it.
#[derive(Debug, Clone)]
pub struct Workload {
    pub kind: Kind,
    pub base: Base,
    /// The app keeps its command (else only `args`, or nothing).
    pub command: bool,
    /// A second app container.
    pub second_app: bool,
    pub mode_object: Option<&'static str>,
    pub mode_job_template: Option<&'static str>,
    pub mode_template: Option<&'static str>,
    pub inject_label: Option<&'static str>,
    pub inject_annotation: Option<&'static str>,
    pub host_network: bool,
    pub native: Option<&'static str>,
    pub proxy_config: Option<&'static str>,
    pub status_port: Option<&'static str>,
    /// `inject.istio.io/templates` on a plain workload's template.
    pub templates: Option<&'static str>,
}

/// What happens after the workload is created, before the last run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    /// Its controllers make a Pod.
    Run,
    /// `kubectl annotate` of `istio-job-sidecar/mode` on the object's own
    /// metadata (`None`: the annotation removed).
    Annotate(Option<&'static str>),
    /// The cluster's mode changes.
    Settings(Mode),
}

/// A generated journey.
#[derive(Debug, Clone)]
pub struct Journey {
    pub workload: Workload,
    pub mode: Mode,
    pub workload_override: Option<bool>,
    pub namespace: Namespace,
    pub mesh: Mesh,
    /// Which of the policy's webhook and Istio's is called first.
    pub webhooks: Webhooks,
    /// A CronJob stored before the policy was installed.
    pub stored: bool,
    pub later: Vec<Later>,
}

fn template_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Job => "/spec/template",
        Kind::CronJob => "/spec/jobTemplate/spec/template",
        Kind::Pod | Kind::Other => "",
    }
}

fn meta_map<'v>(
    object: &'v mut Value,
    owner: &str,
    map: &str,
) -> &'v mut serde_json::Map<String, Value> {
    let owner = object.pointer_mut(owner).expect("the workload has it");
    if !owner["metadata"].is_object() {
        owner["metadata"] = json!({});
    }
    if !owner["metadata"][map].is_object() {
        owner["metadata"][map] = json!({});
    }
    owner["metadata"][map].as_object_mut().unwrap()
}

fn annotation<'v>(object: &'v Value, owner: &str, key: &str) -> Option<&'v str> {
    object.pointer(owner)?["metadata"]["annotations"][key].as_str()
}

impl Workload {
    /// The manifest.
    pub fn object(&self) -> Value {
        let t = template_of(self.kind);
        let classic_template = || yaml(INJECTED_CLASSIC)["spec"]["template"].clone();
        let mut o = match (self.kind, self.base) {
            (Kind::Job, Base::Plain) => yaml(JOB),
            (Kind::Job, Base::Classic { .. }) => yaml(INJECTED_CLASSIC),
            (Kind::Job, Base::Native) => yaml(INJECTED_NATIVE),
            (Kind::CronJob, Base::Plain) => yaml(CRONJOB),
            (Kind::CronJob, Base::Classic { on_owner: true }) => {
                let mut c = yaml(INJECTED_CRONJOB);
                // Its app's argv as its command, as one writes it.
                let app =
                    &mut c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
                app["command"] = app["args"].take();
                c
            }
            (Kind::CronJob, base) => {
                let mut c = yaml(CRONJOB);
                let job = if base == Base::Native {
                    yaml(INJECTED_NATIVE)
                } else {
                    yaml(INJECTED_CLASSIC)
                };
                c["spec"]["jobTemplate"]["spec"]["template"] = job["spec"]["template"].clone();
                c
            }
            (_, base) => {
                let mut pod = yaml(POD);
                if base != Base::Plain {
                    let template = if base == Base::Native {
                        yaml(INJECTED_NATIVE)["spec"]["template"].clone()
                    } else {
                        classic_template()
                    };
                    let mut metadata = template["metadata"].clone();
                    metadata["name"] = json!("pi-1");
                    pod["metadata"] = metadata;
                    pod["spec"] = template["spec"].clone();
                }
                pod
            }
        };
        let spec = o.pointer_mut(&format!("{t}/spec")).unwrap();
        let apps = spec["containers"].as_array_mut().unwrap();
        let app = apps.iter_mut().find(|c| c["name"] != PROXY).unwrap();
        if !self.command {
            app.as_object_mut().unwrap().remove("command");
        }
        if self.second_app {
            apps.insert(
                1,
                json!({"name": "uploader", "image": "registry.example.com/upload:2",
                       "command": ["/upload", "--watch"]}),
            );
        }
        if self.host_network {
            spec["hostNetwork"] = json!(true);
        }
        let mut annotate = |owner: &str, key: &str, value: Option<&str>| {
            if let Some(value) = value {
                meta_map(&mut o, owner, "annotations").insert(key.into(), json!(value));
            }
        };
        annotate("", MODE, self.mode_object);
        if self.kind == Kind::CronJob {
            annotate("/spec/jobTemplate", MODE, self.mode_job_template);
        }
        annotate(t, MODE, self.mode_template);
        annotate(t, INJECT, self.inject_annotation);
        annotate(t, NATIVE, self.native);
        annotate(t, PROXY_CONFIG, self.proxy_config);
        // Istio renders the port where it injects: a kube-injected
        // workload's proxy was rendered with the mesh's.
        if self.base == Base::Plain {
            annotate(t, STATUS_PORT, self.status_port);
            annotate(t, istio::TEMPLATES, self.templates);
        }
        if let Some(value) = self.inject_label {
            meta_map(&mut o, t, "labels").insert(INJECT.into(), json!(value));
        }
        o
    }
}

const PROXY: &str = istio::PROXY;

impl Workload {
    /// Its templates name one but `sidecar` (nativeSidecar then applies
    /// nothing, with a warning: docs/install.md, `fallbackMode`).
    fn custom_templates(&self) -> bool {
        self.templates
            .is_some_and(|t| t.split(',').any(|n| n.trim() != "sidecar"))
    }

    /// Its templates add a custom template after `sidecar`.
    fn custom_patches_proxy(&self) -> bool {
        self.templates == Some("sidecar,custom")
    }
}

impl Journey {
    fn settings(&self, mode: Mode) -> Value {
        let mut s = json!({"mode": mode.name()});
        if let Some(over) = self.workload_override {
            s["workloadOverride"] = json!(over);
        }
        s
    }

    /// The journey, and what each run must give (the spec's word for it).
    pub fn case(&self) -> (journey::Journey, Vec<Outcome>) {
        let object = self.workload.object();
        let mut model = Model {
            journey: self,
            object: object.clone(),
            admitted: !self.stored,
            mode: self.mode,
        };
        let mut steps = vec![if self.stored {
            Step::Stored(object)
        } else {
            Step::Create(object)
        }];
        let mut outcomes = Vec::new();
        for later in self.later.iter().chain([&Later::Run]) {
            match *later {
                Later::Run => {
                    let outcome = model.outcome();
                    steps.push(Step::Run(match outcome {
                        // Istio's native rendering of a custom template is
                        // refused where it injects after the policy, with
                        // or without it.
                        Outcome::Ends(mode) if self.workload.custom_patches_proxy() => {
                            Expect::EndsOrRefusedAlike(mode.name())
                        }
                        Outcome::Ends(mode) => Expect::Ends(mode.name()),
                        Outcome::Untouched(_) => Expect::AsWithoutPolicy,
                        Outcome::Valid => Expect::Valid,
                    }));
                    outcomes.push(outcome);
                }
                Later::Annotate(value) => {
                    steps.push(Step::Update(Edit::Annotate(MODE, value)));
                    model.annotate(value);
                }
                Later::Settings(mode) => {
                    steps.push(Step::Settings(self.settings(mode)));
                    model.mode = mode;
                }
            }
        }
        let case = journey::Journey {
            name: "generated",
            about: "a generated journey",
            settings: self.settings(self.mode),
            namespace: self.namespace,
            namespace_name: journey::NAMESPACE,
            mesh: self.mesh,
            webhooks: self.webhooks,
            selected: true,
            steps,
        };
        (case, outcomes)
    }
}

/// What a run must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The Pod ends with its app, by this mode.
    Ends(Mode),
    /// The Pod is as the journey makes it without the policy; where a
    /// documented limit is the reason, a hop on the way says so in a warning
    /// that holds this text.
    Untouched(Option<&'static str>),
    /// A valid Pod, no more: exitOnJobCompletion's key on a kube-injected
    /// Pod Istio does not inject again reaches no proxy (docs/modes.md, "A note on
    /// exitOnJobCompletion").
    Valid,
}

/// The spec's view of the journey so far.
struct Model<'j> {
    journey: &'j Journey,
    /// The workload as its owner wrote it, with their later annotations.
    object: Value,
    /// The policy has admitted the object itself (a CronJob stored before
    /// it has not, until its next update).
    admitted: bool,
    /// The cluster's mode now.
    mode: Mode,
}

impl Model<'_> {
    fn kind(&self) -> Kind {
        self.journey.workload.kind
    }

    /// A `kubectl annotate` of the object: a CronJob's reaches its next
    /// Jobs (its update is admitted); a Job's template is immutable and
    /// never changes after its creation, so its Pods keep its word then.
    fn annotate(&mut self, value: Option<&'static str>) {
        match self.kind() {
            Kind::CronJob => {
                let annotations = meta_map(&mut self.object, "", "annotations");
                match value {
                    Some(v) => annotations.insert(MODE.into(), json!(v)),
                    None => annotations.remove(MODE),
                };
                self.admitted = true;
            }
            Kind::Job | Kind::Pod | Kind::Other => {}
        }
    }

    /// Whether Istio's injector injects the workload's Pods (again, for a
    /// kube-injected one), as the namespace and the template say.
    fn istio_injects(&self) -> bool {
        let t = template_of(self.kind());
        let template = self.object.pointer(t).cloned().unwrap_or_default();
        let pod = json!({
            "metadata": {
                "namespace": journey::NAMESPACE,
                "labels": template["metadata"]["labels"],
                "annotations": template["metadata"]["annotations"],
            },
            "spec": {"hostNetwork": template["spec"]["hostNetwork"]},
        });
        istio::webhook_called(&pod, self.journey.namespace)
            && istio::inject_required(&pod, self.journey.mesh.release)
    }

    /// The workload's own word, nearest the pod first: the template's; a
    /// CronJob's jobTemplate's (each Job's own metadata), then its own
    /// metadata's once the policy has seen it; a Job's own metadata's.
    fn word(&self) -> Option<&str> {
        let t = template_of(self.kind());
        annotation(&self.object, t, MODE).or_else(|| match self.kind() {
            Kind::CronJob => annotation(&self.object, "/spec/jobTemplate", MODE)
                .or_else(|| annotation(&self.object, "", MODE).filter(|_| self.admitted)),
            Kind::Job => annotation(&self.object, "", MODE),
            Kind::Pod | Kind::Other => None,
        })
    }

    fn outcome(&self) -> Outcome {
        let w = &self.journey.workload;
        let honoured = self.journey.workload_override != Some(false);
        let mode = match self.word().filter(|_| honoured) {
            Some("disabled") => return Outcome::Untouched(None),
            Some(word) => Mode::parse(word).unwrap_or(self.mode),
            None => self.mode,
        };
        // Istio's injector refuses a Pod whose proxy config it cannot read,
        // whatever the policy did.
        if w.proxy_config == Some("- no mapping") && self.istio_injects() {
            return Outcome::Untouched(None);
        }
        // Istio never injects it, and nothing is injected yet.
        let inject = w.inject_label.or(w.inject_annotation);
        let injection_off = w.host_network || inject == Some("false");
        if injection_off && w.base == Base::Plain {
            return Outcome::Untouched(None);
        }
        // A kube-injected workload carries its proxy (a Pod of the older
        // CronJob form without the status): the mode is applied to it,
        // and the wrapper goes beside a native proxy too (Istio's injector
        // renders it again, classic unless asked for native).
        // The user's "false" beside a proxy Istio injected natively: Istio
        // renders it classic again, beside the native one, and the cluster
        // refuses the Pod whatever the policy does before the injector;
        // after it, the policy keeps the classic one and applies the mode.
        let twice = w.base == Base::Native && w.native == Some("false") && self.istio_injects();
        if twice && self.journey.webhooks == Webhooks::PolicyFirst {
            return Outcome::Untouched(None);
        }
        // A Job's template is immutable: where Istio's injector runs after
        // the policy, a Job admitted under another mode has its Pods come
        // out of the injector as that template asks (native for good, a
        // proxy config baked in), and the policy, at Pod CREATE, can only
        // take back what Istio did not render (docs/releases.md, "Which Istio and
        // Kubernetes each mode needs"): a valid Pod, no more promised, but
        // by nativeSidecar, which moves the proxy all the same (unless it
        // applies nothing: the user's "false", or templates it cannot run).
        let created = match self.word().filter(|_| honoured) {
            Some(word) => Mode::parse(word).unwrap_or(self.journey.mode),
            None => self.journey.mode,
        };
        if self.kind() == Kind::Job
            && self.journey.webhooks == Webhooks::InjectorFirst
            && created != mode
            && (mode != Mode::Native || w.native == Some("false") || w.custom_templates())
        {
            return Outcome::Valid;
        }
        match mode {
            Mode::Native if w.native == Some("false") => Outcome::Untouched(None),
            Mode::Native if w.custom_templates() => {
                Outcome::Untouched(Some("nativeSidecar unsafe"))
            }
            Mode::Quit if w.second_app => {
                Outcome::Untouched(Some("quitEndpoint wraps a single app container"))
            }
            Mode::Quit if !w.command => Outcome::Untouched(Some("no command, not wrapped")),
            // The key reaches a kube-injected proxy only if Istio renders it
            // again: not where its webhook skips the Pod, nor where the Pod
            // carries the proxy without the status (the older CronJob form),
            // whose own container then wins over the rendering.
            // Nor a Pod created directly where Istio's injector runs first:
            // the key comes after the injection.
            Mode::Exit
                if matches!(w.base, Base::Classic { on_owner: true })
                    || (matches!(w.base, Base::Classic { .. }) && !self.istio_injects())
                    || (self.kind() == Kind::Pod
                        && self.journey.webhooks == Webhooks::InjectorFirst) =>
            {
                Outcome::Valid
            }
            Mode::Exit => match w.proxy_config {
                Some("exitOnJobCompletion: false") => Outcome::Untouched(None),
                Some("- no mapping") => {
                    Outcome::Untouched(Some("proxy.istio.io/config left unchanged"))
                }
                _ => Outcome::Ends(mode),
            },
            _ => Outcome::Ends(mode),
        }
    }
}

/// The native policy, as the journeys call it.
fn policy() -> Validate<impl FnMut(&[u8]) -> Vec<u8>> {
    Validate(|p: &[u8]| istio_job_sidecar_policy::validate(p).unwrap())
}

/// The journey made with the policy, judged (`journey::judge`: every Pod
/// the API server accepts, each run as its `Expect` says, every warning
/// fits, a second journey from the stored objects changes nothing), and
/// the warning of each documented limit on the way to its Pod.
pub fn check(j: &Journey) -> Result<(), String> {
    let (case, outcomes) = j.case();
    let trip = journey::travel(&case, &mut policy())?;
    journey::judge(&case, &trip, &mut policy())?;
    for (run, outcome) in outcomes.iter().enumerate() {
        let Outcome::Untouched(Some(limit)) = outcome else {
            continue;
        };
        // Every hop up to the run's Pod: the limit is named where the
        // mode was applied (a Pod whose status stayed on its owner is not
        // injected as far as its own hop can tell).
        let upto = pod_hop(&trip, run).ok_or("no Pod hop")?;
        let hops = &trip.hops[..=upto];
        if !hops
            .iter()
            .any(|h| h.warnings.iter().any(|w| w.contains(limit)))
        {
            let warnings: Vec<(&str, &Vec<String>)> = hops
                .iter()
                .map(|h| (h.what.as_str(), &h.warnings))
                .collect();
            return Err(format!(
                "run {}: no hop says {limit:?}: {warnings:?}",
                run + 1
            ));
        }
    }
    Ok(())
}

/// The index of the hop that admitted the Pod of run `run` (a Pod created
/// directly is its own).
fn pod_hop(trip: &Trip, run: usize) -> Option<usize> {
    let pods: Vec<usize> = (0..trip.hops.len())
        .filter(|&i| trip.hops[i].what.starts_with("Pod CREATE"))
        .collect();
    pods.get(run).or(pods.last()).copied()
}

fn arb_mode() -> BoxedStrategy<Mode> {
    prop_oneof![Just(Mode::Native), Just(Mode::Exit), Just(Mode::Quit)].boxed()
}

fn some_of<T: Clone + std::fmt::Debug + 'static>(values: &[T], p: f64) -> BoxedStrategy<Option<T>> {
    prop::option::weighted(p, prop::sample::select(values.to_vec())).boxed()
}

fn arb_workload() -> BoxedStrategy<Workload> {
    (
        prop_oneof![Just(Kind::Job), Just(Kind::CronJob), Just(Kind::Pod)],
        prop_oneof![
            3 => Just(Base::Plain),
            1 => Just(Base::Classic { on_owner: false }),
            1 => Just(Base::Classic { on_owner: true }),
            1 => Just(Base::Native),
        ],
        prop::bool::weighted(0.85),
        prop::bool::weighted(0.1),
        (
            some_of(&MODE_VALUES, 0.3),
            some_of(&MODE_VALUES, 0.2),
            some_of(&MODE_VALUES, 0.2),
        ),
        (some_of(&INJECT_VALUES, 0.2), some_of(&INJECT_VALUES, 0.2)),
        prop::bool::weighted(0.08),
        // The exact values, and ones Istio 1.24-1.26 read otherwise.
        some_of(&["true", "false", "True", "yes"], 0.2),
        some_of(&PROXY_CONFIGS, 0.3),
        some_of(&STATUS_PORTS, 0.15),
    )
        .prop_map(
            |(
                kind,
                base,
                command,
                second_app,
                modes,
                inject,
                host_network,
                native,
                config,
                port,
            )| {
                let (mode_object, mode_job_template, mode_template) = modes;
                Workload {
                    kind,
                    // The older kube-inject form is a CronJob's.
                    base: match (kind, base) {
                        (Kind::CronJob, b) => b,
                        (_, Base::Classic { .. }) => Base::Classic { on_owner: false },
                        (_, b) => b,
                    },
                    command,
                    second_app,
                    mode_object: mode_object.filter(|_| kind != Kind::Pod),
                    mode_job_template: mode_job_template.filter(|_| kind == Kind::CronJob),
                    mode_template,
                    inject_label: inject.0,
                    inject_annotation: inject.1,
                    host_network,
                    native,
                    proxy_config: config,
                    status_port: port,
                    templates: None,
                }
            },
        )
        .boxed()
}

fn arb_later() -> BoxedStrategy<Later> {
    prop_oneof![
        Just(Later::Run),
        some_of(&MODE_VALUES, 0.75).prop_map(Later::Annotate),
        arb_mode().prop_map(Later::Settings),
    ]
    .boxed()
}

pub fn arb_journey() -> BoxedStrategy<Journey> {
    (
        arb_workload(),
        arb_mode(),
        prop_oneof![2 => Just(None), 2 => Just(Some(true)), 1 => Just(Some(false))],
        prop_oneof![
            3 => Just(Namespace::Enabled),
            1 => Just(Namespace::Unlabelled),
            1 => Just(Namespace::Disabled),
        ],
        (
            any::<bool>(),
            prop::bool::weighted(0.2),
            prop::sample::select(Release::ALL.to_vec()),
            prop::sample::select(Webhooks::ALL.to_vec()),
            prop::bool::weighted(0.25),
        ),
        prop::bool::weighted(0.25),
        prop::collection::vec(arb_later(), 0..3),
        any::<bool>(),
        some_of(&TEMPLATE_VALUES, 0.15),
    )
        .prop_map(
            |(
                mut workload,
                mode,
                workload_override,
                namespace,
                (flag, cni, release, webhooks, hold),
                stored,
                later,
                ask,
                templates,
            )| {
                // Without the namespace's label, Istio injects only a
                // template labelled for it.
                if namespace == Namespace::Unlabelled && ask {
                    workload.inject_label = Some("true");
                }
                // On a plain workload only: a kube-injected one was
                // rendered with `sidecar` alone.
                if workload.base == Base::Plain {
                    workload.templates = templates;
                }
                let kind = workload.kind;
                Journey {
                    workload,
                    mode,
                    workload_override,
                    namespace,
                    mesh: Mesh {
                        native_flag: flag,
                        cni,
                        release,
                        hold_application: hold,
                        ..Mesh::default_of(release)
                    },
                    webhooks,
                    stored: stored && kind == Kind::CronJob,
                    // A Pod created directly has no controller to run it
                    // again, nor a template to update.
                    later: if kind == Kind::Pod { Vec::new() } else { later },
                }
            },
        )
        .boxed()
}

/// Found by the generated journeys: a Job admitted under
/// exitOnJobCompletion, the cluster then moved to nativeSidecar, where
/// nativeSidecar applies nothing (the user's `"false"`, or a custom
/// injection template) and Istio injects first: the key Istio baked into
/// the proxy stays, a valid Pod, no more (the Job's template is immutable).
#[test]
fn a_job_of_another_mode_where_nativesidecar_applies_nothing() {
    let plain = Workload {
        kind: Kind::Job,
        base: Base::Plain,
        command: false,
        second_app: false,
        mode_object: None,
        mode_job_template: None,
        mode_template: None,
        inject_label: None,
        inject_annotation: None,
        host_network: false,
        native: None,
        proxy_config: None,
        status_port: None,
        templates: None,
    };
    for workload in [
        Workload {
            native: Some("false"),
            ..plain.clone()
        },
        Workload {
            templates: Some("sidecar,custom"),
            ..plain
        },
    ] {
        let j = Journey {
            workload,
            mode: Mode::Exit,
            workload_override: None,
            namespace: Namespace::Enabled,
            mesh: Mesh::default_of(Release::V1_24),
            webhooks: Webhooks::InjectorFirst,
            stored: false,
            later: vec![Later::Settings(Mode::Native)],
        };
        assert_eq!(j.case().1, vec![Outcome::Valid], "{j:?}");
        check(&j).unwrap_or_else(|e| panic!("{j:?}: {e}"));
    }
}
