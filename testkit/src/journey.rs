//! A workload's journey, hop by hop, as a cluster makes it: the user
//! creates (or updates) a CronJob, Job or Pod; the CronJob controller
//! makes a Job, the Job controller a Pod (`controllers`); each is an
//! admission request of its own, sent to the policy when its webhook
//! selects the namespace, defaulted again after each webhook's patch,
//! validated, then stored (`kube`); Istio's injector mutates each Pod,
//! before or after the policy as the webhooks' names sort (`Webhooks`).
//! The Pod the kubelet would run is then judged: is it valid, does it end
//! when its app ends, in the mode the workload asked for, and did a
//! workload that asked for nothing (disabled, injection off, a user's own
//! choice) get nothing?
//!
//! The policy is anything that answers an AdmissionRequest as the engine
//! does (`kube_model::policy::Policy`): the policy crate called natively,
//! `policy.wasm` in the engine, or `kwctl run`. Every answer it gives on
//! the way must hold what every answer of this policy holds (it accepts,
//! its warnings fit: `check_verdict`), whoever gives it.

use crate::controllers::{job_from_cronjob, pod_from_job};
use crate::istio::{self, Mesh, Namespace, Release};
use crate::kube::{decode, normalize, store, validate};
use crate::names::{APPLIED, EXIT_KEY, OWNER_MODE};
use crate::{check_verdict, differences};
use kube_model::policy::NoPolicy;
use serde_json::{json, Value};

pub mod golden;

// Re-exported for the policy crate's tests, which reach kube-model only
// through this crate.
pub use kube_model::policy::{Policy, Validate};

/// The namespace a journey's objects live in, unless it says otherwise.
pub const NAMESPACE: &str = "batch";
/// The annotation `kubectl apply` keeps the manifest it applied in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Which mutating webhook the API server calls first for a Pod: it calls
/// mutating webhook configurations in the order of their names
/// (docs/facts.md, "Admission").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Webhooks {
    /// Kubewarden up to 1.37.1 names a ClusterAdmissionPolicy's
    /// configuration `clusterwide-<name>`, which sorts before Istio's
    /// `istio-sidecar-injector` and `istio-revision-tag-*`: the policy
    /// sees a Pod before it is injected.
    PolicyFirst,
    /// Since Kubewarden 1.37.2 it is `kw.cap.<name>`, which sorts after
    /// them: the policy sees a Pod Istio has injected.
    InjectorFirst,
}

impl Webhooks {
    pub const ALL: [Webhooks; 2] = [Webhooks::PolicyFirst, Webhooks::InjectorFirst];
}
/// `$0` of the quitEndpoint wrapper: how a wrapped command is told.
pub const QUIT_NAME: &str = "istio-job-sidecar-quit";

/// One journey: where the workload starts, what happens to it, and what
/// each run of its controllers must give.
#[derive(Debug, Clone)]
pub struct Journey {
    pub name: &'static str,
    /// What it shows, in a sentence.
    pub about: &'static str,
    /// The policy's settings at the start (`Step::Settings` changes them).
    pub settings: Value,
    /// The namespace's `istio-injection` label.
    pub namespace: Namespace,
    /// The namespace's name (`NAMESPACE` unless the journey is about it).
    pub namespace_name: &'static str,
    pub mesh: Mesh,
    /// Which of the policy's webhook and Istio's is called first.
    pub webhooks: Webhooks,
    /// Whether the policy's webhook is called in this namespace (its
    /// `namespaceSelector`); Istio's is decided by `namespace`.
    pub selected: bool,
    pub steps: Vec<Step>,
}

impl Journey {
    /// The same journey in every cluster that matters to it: each webhook
    /// order, each mesh flag, each Istio release's reading; itself first.
    pub fn variants(&self) -> Vec<Journey> {
        let mut all = vec![self.clone()];
        for webhooks in Webhooks::ALL {
            for native_flag in [false, true] {
                for release in Release::ALL {
                    let mesh = Mesh {
                        native_flag,
                        release,
                        ..self.mesh
                    };
                    if (webhooks, mesh) != (self.webhooks, self.mesh) {
                        all.push(Journey {
                            webhooks,
                            mesh,
                            ..self.clone()
                        });
                    }
                }
            }
        }
        all
    }

    /// The cluster a variant runs in, for messages.
    pub fn cluster(&self) -> String {
        let kubewarden = match self.webhooks {
            Webhooks::PolicyFirst => "Kubewarden <= 1.37.1 (policy first)",
            Webhooks::InjectorFirst => "Kubewarden >= 1.37.2 (Istio first)",
        };
        let release = match self.mesh.release {
            Release::V1_24 => "Istio 1.24-1.26",
            Release::V1_27 => "Istio >= 1.27",
        };
        let flag = if self.mesh.native_flag { "on" } else { "off" };
        format!("{kubewarden}, {release}, native flag {flag}")
    }
}

#[derive(Debug, Clone)]
pub enum Step {
    /// The user creates the workload (`kubectl create`, or a first apply).
    Create(Value),
    /// The workload was stored before the policy was installed.
    Stored(Value),
    /// The user changes the stored workload: an UPDATE.
    Update(Edit),
    /// The cluster's settings change.
    Settings(Value),
    /// The controllers make the next Pod (a CronJob's next Job first),
    /// Istio injects it, and it must be as `Expect` says.
    Run(Expect),
}

#[derive(Debug, Clone)]
pub enum Edit {
    /// `kubectl annotate` of the object's own metadata (`None` removes).
    Annotate(&'static str, Option<&'static str>),
    /// A server-side apply of this manifest by a field manager that owns
    /// what it applies: each of its fields comes back as written, every
    /// other stays as stored (a webhook's annotation, the policy's record).
    Apply(Value),
    /// `kubectl apply` of this manifest: a three-way strategic merge of the
    /// manifest it last applied, this one and the stored object.
    KubectlApply(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The Pod ends when its app ends, by this mode: `nativeSidecar` (the
    /// proxy a native sidecar), `quitEndpoint` (the app's command the
    /// wrapper, or the proxy native), `exitOnJobCompletion` (the key in
    /// the proxy's config, for an Istio build that acts on it). Its record,
    /// if any, names this mode, and no other mode's edit is on it.
    Ends(&'static str),
    /// The Pod is as it would be without the policy (but for the owner's
    /// mode carried down): the workload is disabled, Istio does not inject
    /// it, or its owner chose so (a `sidecar.istio.io/nativeSidecar:
    /// "false"` stands). Where the cluster refuses that Pod, the policy's
    /// may be refused alike, or be valid.
    AsWithoutPolicy,
    /// As `Ends`, but where the cluster refuses the Pod without the policy
    /// too (Istio's own rendering that the API server refuses, such as a
    /// custom template's partial proxy beside the native one, when Istio
    /// injects after the policy), the policy's may be refused alike.
    EndsOrRefusedAlike(&'static str),
    /// The Pod is valid, and no more is promised: a documented limit (the
    /// key exitOnJobCompletion adds reaches a proxy only through Istio's
    /// injection, and a kube-injected Pod Istio does not inject again keeps
    /// the config it was injected with).
    Valid,
}

/// One admission request and what came of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hop {
    /// "CronJob CREATE", "Job CREATE (CronJob controller)", ...
    pub what: String,
    pub operation: String,
    /// The policy's settings at this hop.
    pub settings: Value,
    /// Whether the policy's webhook was called.
    pub sent: bool,
    /// The request's object: what the policy was sent.
    pub object: Value,
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
    /// The object with the policy's patch applied.
    pub admitted: Value,
    /// The object as stored (for a Pod: after Istio's injector).
    pub stored: Value,
    /// Why the API server refused the object, if it did: it is not stored.
    pub rejected: Option<String>,
}

/// A journey made: its hops, and the Pod of every `Run`.
#[derive(Debug, Clone, PartialEq)]
pub struct Trip {
    pub hops: Vec<Hop>,
    pub pods: Vec<Value>,
}

/// The journey of `case` with `policy` answering for the policy's webhook.
/// An object the API server refuses is not stored: its hop says why.
pub fn travel(case: &Journey, policy: &mut dyn Policy) -> Result<Trip, String> {
    let mut trip = Trip {
        hops: Vec::new(),
        pods: Vec::new(),
    };
    let mut settings = case.settings.clone();
    let mut top: Option<Value> = None;
    // Minutes since the epoch of the next scheduled run (2025-12-08 13:20).
    let mut minute = 29_420_000;
    let mut uids = 0;
    let mut next_uid = || {
        uids += 1;
        format!("00000000-0000-4000-8000-{uids:012}")
    };
    for step in &case.steps {
        match step {
            Step::Create(object) => {
                let object = decode(&in_namespace(object, case.namespace_name));
                let kind = kind_of(&object);
                let what = format!("{kind} CREATE");
                let hop = if kind == "Pod" {
                    pod_admission(case, policy, &settings, &what, &object)?
                } else {
                    admit(case, policy, &settings, &what, &object, None)?
                };
                // The API server gives the object its uid after admission.
                let uid = next_uid();
                if hop.rejected.is_none() {
                    top = Some(store(&with_uid(&hop.stored, &uid), &uid));
                }
                trip.hops.push(hop);
            }
            Step::Stored(object) => {
                let uid = next_uid();
                let object = decode(&in_namespace(object, case.namespace_name));
                top = Some(store(&with_uid(&object, &uid), &uid));
            }
            Step::Update(edit) => {
                let old = top.clone().ok_or("an update before the workload exists")?;
                let object = decode(&edit.apply(&old, case.namespace_name));
                let kind = kind_of(&object);
                let what = format!("{kind} UPDATE");
                let hop = admit(case, policy, &settings, &what, &object, Some(&old))?;
                if kind == "Job" && hop.patch.is_some() {
                    return Err("a Job UPDATE was patched: its template is immutable".into());
                }
                if hop.rejected.is_none() {
                    top = Some(store(&hop.stored, ""));
                }
                trip.hops.push(hop);
            }
            Step::Settings(new) => settings = new.clone(),
            Step::Run(_) => {
                // A workload the API server refused makes no Pod.
                let refused = trip.hops.last().is_some_and(|h| h.rejected.is_some());
                if top.is_none() && refused {
                    trip.pods.push(Value::Null);
                    continue;
                }
                let top = top.as_ref().ok_or("a run before the workload exists")?;
                let pod = match kind_of(top).as_str() {
                    "Pod" => Some(top.clone()),
                    "Job" => pod_hop(case, policy, &settings, top, &mut trip)?,
                    "CronJob" => {
                        let job = decode(&job_from_cronjob(top, minute));
                        minute += 60;
                        let what = "Job CREATE (CronJob controller)";
                        let hop = admit(case, policy, &settings, what, &job, None)?;
                        let uid = next_uid();
                        let stored = hop
                            .rejected
                            .is_none()
                            .then(|| store(&with_uid(&hop.stored, &uid), &uid));
                        trip.hops.push(hop);
                        match stored {
                            Some(job) => pod_hop(case, policy, &settings, &job, &mut trip)?,
                            None => None,
                        }
                    }
                    other => return Err(format!("no controller runs a {other}")),
                };
                trip.pods.push(pod.unwrap_or(Value::Null));
            }
        }
    }
    Ok(trip)
}

/// What each `Run` of `case` must give, checked on a trip made with the
/// policy: every object the API server accepts (the policy never makes
/// one it refuses that it would accept without the policy), a Pod that ends by the mode asked for (`Ends`) or is as
/// the same journey makes it without the policy (`AsWithoutPolicy`); every
/// warning fits; every object the policy patched, sent again as the
/// policy left it, is not patched again (a second journey from the stored
/// objects changes nothing).
pub fn judge(case: &Journey, trip: &Trip, policy: &mut dyn Policy) -> Result<(), String> {
    let without = travel(case, &mut NoPolicy)?;
    // A refusal is the policy's doing unless the cluster refuses the same
    // object without it (a user's own word the policy respects).
    for (i, hop) in trip.hops.iter().enumerate() {
        if let Some(why) = &hop.rejected {
            let alike = without.hops.get(i).and_then(|h| h.rejected.as_ref()) == Some(why);
            if !alike {
                return Err(format!("{}: the API server refuses it: {why}", hop.what));
            }
        }
    }
    let expects = case.steps.iter().filter_map(|s| match s {
        Step::Run(expect) => Some(*expect),
        _ => None,
    });
    for (i, expect) in expects.enumerate() {
        let run = |e: String| format!("run {}: {e}", i + 1);
        let pod = &trip.pods[i];
        let alike = matches!(
            expect,
            Expect::AsWithoutPolicy | Expect::EndsOrRefusedAlike(_)
        );
        if pod.is_null() && alike && without.pods[i].is_null() {
            continue;
        }
        if pod.is_null() {
            return Err(run("no Pod was made".into()));
        }
        check_pod(pod).map_err(run)?;
        if let Expect::Ends(mode) | Expect::EndsOrRefusedAlike(mode) = expect {
            check_runs(pod).map_err(run)?;
            check_ends(pod, mode).map_err(run)?;
        }
        // Where the cluster refuses the Pod without the policy (a user's own
        // word, such as "false" beside a proxy Istio injected natively), a
        // Pod the policy made valid without applying a mode is as good.
        if expect == Expect::AsWithoutPolicy && !without.pods[i].is_null() {
            let got = as_without_policy(pod);
            let want = as_without_policy(&without.pods[i]);
            if got != want {
                return Err(format!(
                    "run {}: the Pod is not as without the policy:\n{}",
                    i + 1,
                    differences(&want, &got)
                ));
            }
        }
    }
    for hop in &trip.hops {
        check_verdict(true, &hop.warnings).map_err(|e| format!("{}: {e}", hop.what))?;
    }
    for hop in trip.hops.iter().filter(|h| h.sent && h.patch.is_some()) {
        let old = (hop.operation == "UPDATE").then_some(&hop.admitted);
        let again = decode(&hop.admitted);
        let request = admission_request(&hop.operation, &again, old);
        let admitted = policy.admit(&request, &hop.settings)?;
        check_verdict(admitted.accepted, &admitted.warnings)
            .map_err(|e| format!("{} sent again: {e}", hop.what))?;
        if let Some(patch) = admitted.patch {
            return Err(format!(
                "{}: the policy's result sent again is patched again: {patch}",
                hop.what
            ));
        }
    }
    Ok(())
}

/// Which clusters a journey is made in by `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clusters {
    /// Every variant (`Journey::variants`).
    All,
    /// The journey as written, and the same with the other webhook order.
    BothWebhookOrders,
}

/// A journey made and judged in each of `clusters`, the journey as written
/// compared whole with its golden file `golden` (`None`: not compared).
/// The first failure names the cluster it happened in.
pub fn check(
    case: &Journey,
    policy: &mut dyn Policy,
    golden: Option<&std::path::Path>,
    clusters: Clusters,
) -> Result<(), String> {
    let variants = case.variants();
    let variants = variants
        .iter()
        .enumerate()
        .filter(|(i, v)| *i == 0 || clusters == Clusters::All || v.mesh == case.mesh);
    for (i, variant) in variants {
        let outcome = travel(variant, policy).and_then(|trip| {
            judge(variant, &trip, policy)?;
            match golden {
                Some(path) if i == 0 => compare_golden(path, variant, &trip),
                _ => Ok(()),
            }
        });
        outcome.map_err(|e| format!("{}: {e}", variant.cluster()))?;
    }
    Ok(())
}

/// The journey as written compared with its golden file, or (with
/// `UPDATE_GOLDEN=1`) the file written: `golden::golden_form`'s text, but
/// for its comments, which say what the journey is. The text is read back
/// as YAML and must give the value it was written from.
fn compare_golden(path: &std::path::Path, case: &Journey, trip: &Trip) -> Result<(), String> {
    let (value, text) = golden::golden_form(case, trip);
    let back: Value = serde_yaml::from_str(&text).map_err(|e| {
        format!(
            "{}: the YAML written does not read back: {e}",
            path.display()
        )
    })?;
    if back != value {
        return Err(format!(
            "{}: the YAML written reads back as another value:\n{}",
            path.display(),
            differences(&value, &back)
        ));
    }
    if crate::updating_golden() {
        // A journey that ends as another is compared with that one's file
        // and writes none of its own.
        let own = path.file_stem().is_some_and(|s| s == case.name);
        if !own {
            return Ok(());
        }
        return std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()));
    }
    let stored = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (run `make golden` and review the diff)",
            path.display()
        )
    })?;
    if golden::significant(&stored) == golden::significant(&text) {
        Ok(())
    } else {
        Err(format!(
            "{} differs from the journey made now (`-` the file, `+` now; `make golden` rewrites it):\n{}",
            path.display(),
            golden::text_differences(&stored, &text)
        ))
    }
}

/// One request through the policy's webhook (when its namespace is
/// selected), the object defaulted again after its patch and validated.
fn admit(
    case: &Journey,
    policy: &mut dyn Policy,
    settings: &Value,
    what: &str,
    object: &Value,
    old: Option<&Value>,
) -> Result<Hop, String> {
    let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
    let mut hop = Hop {
        what: what.to_owned(),
        operation: operation.to_owned(),
        settings: settings.clone(),
        sent: case.selected,
        object: object.clone(),
        patch: None,
        warnings: Vec::new(),
        admitted: object.clone(),
        stored: object.clone(),
        rejected: None,
    };
    if case.selected {
        let request = admission_request(operation, object, old);
        let admitted = policy
            .admit(&request, settings)
            .and_then(|a| check_verdict(a.accepted, &a.warnings).map(|()| a))
            .map_err(|e| format!("{what}: {e}"))?;
        if let Some(patch) = &admitted.patch {
            hop.admitted = apply_patch(object, patch).map_err(|e| format!("{what}: {e}"))?;
            hop.stored = decode(&hop.admitted);
        }
        hop.patch = admitted.patch;
        hop.warnings = admitted.warnings;
    }
    hop.rejected = validate(&hop.stored).err();
    Ok(hop)
}

/// A Pod CREATE through both mutating webhooks, in the order their names
/// sort, each patch defaulted before the next, then validated.
fn pod_admission(
    case: &Journey,
    policy: &mut dyn Policy,
    settings: &Value,
    what: &str,
    pod: &Value,
) -> Result<Hop, String> {
    // Istio's webhook fails closed: its refusal is the API server's, and
    // no webhook after it is called.
    let mut hop = match case.webhooks {
        Webhooks::PolicyFirst => {
            let mut hop = admit(case, policy, settings, what, pod, None)?;
            match istio_hop(case, &hop.stored) {
                Ok(injected) => hop.stored = decode(&injected),
                Err(why) => {
                    hop.rejected = Some(why);
                    return Ok(hop);
                }
            }
            hop
        }
        Webhooks::InjectorFirst => match istio_hop(case, pod) {
            Ok(injected) => admit(case, policy, settings, what, &decode(&injected), None)?,
            Err(why) => {
                return Ok(Hop {
                    what: what.to_owned(),
                    operation: "CREATE".to_owned(),
                    settings: settings.clone(),
                    sent: false,
                    object: pod.clone(),
                    patch: None,
                    warnings: Vec::new(),
                    admitted: pod.clone(),
                    stored: pod.clone(),
                    rejected: Some(why),
                })
            }
        },
    };
    hop.rejected = validate(&hop.stored).err();
    Ok(hop)
}

/// The Job controller's next Pod of `job`, admitted, injected by Istio
/// and stored; `None` when the API server refuses it.
fn pod_hop(
    case: &Journey,
    policy: &mut dyn Policy,
    settings: &Value,
    job: &Value,
    trip: &mut Trip,
) -> Result<Option<Value>, String> {
    let pod = decode(&pod_from_job(job, 0));
    let what = "Pod CREATE (Job controller)";
    let hop = pod_admission(case, policy, settings, what, &pod)?;
    let pod = hop.rejected.is_none().then(|| store(&hop.stored, ""));
    trip.hops.push(hop);
    Ok(pod)
}

fn istio_hop(case: &Journey, pod: &Value) -> Result<Value, String> {
    istio::inject(pod, case.namespace, case.mesh).map_err(|e| format!("Istio's injector: {e}"))
}

/// The AdmissionRequest the API server sends (`admission/v1`), in the
/// object's namespace (`NAMESPACE` when it names none).
pub fn admission_request(operation: &str, object: &Value, old: Option<&Value>) -> Value {
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or(NAMESPACE);
    kube_model::admission::request(operation, object, old, namespace)
}

pub use kube_model::answer::apply_json as apply_patch;

impl Edit {
    /// The object the user sends: `stored` edited.
    pub fn apply(&self, stored: &Value, namespace: &str) -> Value {
        let mut object = stored.clone();
        match self {
            Edit::Annotate(key, value) => {
                if let Some(metadata) = object["metadata"].as_object_mut() {
                    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
                    if let Some(annotations) = annotations.as_object_mut() {
                        match value {
                            Some(v) => {
                                annotations.insert((*key).to_owned(), Value::from(*v));
                            }
                            None => {
                                annotations.remove(*key);
                            }
                        }
                    }
                }
            }
            Edit::Apply(manifest) => {
                server_side_apply(&mut object, &decode(&in_namespace(manifest, namespace)));
            }
            Edit::KubectlApply(manifest) => {
                object = kubectl_apply(stored, &in_namespace(manifest, namespace));
            }
        }
        object
    }
}

/// A manifest as `kubectl apply` creates it: with the annotation that
/// keeps what it applied, for the next apply's three-way merge.
pub fn created_by_kubectl_apply(manifest: &Value) -> Value {
    let mut object = manifest.clone();
    let text = manifest.to_string();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(LAST_APPLIED.into(), Value::from(text));
        }
    }
    object
}

/// `kubectl apply` (`CreateThreeWayMergePatch`): what the manifest last
/// applied has and this one lacks is deleted, what this one has is set
/// where the stored object differs, lists of named items (containers,
/// env, volumes: patch merge key `name`) merged item by item, so an item
/// a webhook added and no manifest named stays; the annotation then keeps
/// this manifest.
fn kubectl_apply(stored: &Value, manifest: &Value) -> Value {
    let original: Value = stored["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    let mut object = stored.clone();
    delete_dropped(&mut object, &original, manifest);
    server_side_apply(&mut object, manifest);
    let text = manifest.to_string();
    object["metadata"]["annotations"][LAST_APPLIED] = Value::from(text);
    object
}

/// Deletes from `current` what `original` has and `modified` lacks.
fn delete_dropped(current: &mut Value, original: &Value, modified: &Value) {
    match (current, original) {
        (Value::Object(current), Value::Object(original)) => {
            for (key, was) in original {
                match modified.get(key) {
                    None => {
                        current.remove(key);
                    }
                    Some(now) => {
                        if let Some(child) = current.get_mut(key) {
                            delete_dropped(child, was, now);
                        }
                    }
                }
            }
        }
        (Value::Array(current), Value::Array(original)) if named_items(original) => {
            let modified = modified.as_array().map_or(&[][..], Vec::as_slice);
            for was in original {
                match modified.iter().find(|m| m["name"] == was["name"]) {
                    None => current.retain(|c| c["name"] != was["name"]),
                    Some(now) => {
                        if let Some(child) = current.iter_mut().find(|c| c["name"] == was["name"]) {
                            delete_dropped(child, was, now);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// A server-side apply of `applied` onto `stored`, for a field manager
/// that owns exactly what it applies: maps merge member by member, lists
/// of named items (containers, env, volumes: `listType=map` keyed by
/// name) merge by name, every other value (`command`, `args`: atomic) is
/// replaced whole.
fn server_side_apply(stored: &mut Value, applied: &Value) {
    match (stored, applied) {
        (Value::Object(stored), Value::Object(applied)) => {
            for (key, value) in applied {
                match stored.get_mut(key) {
                    Some(existing) => server_side_apply(existing, value),
                    None => {
                        stored.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(stored), Value::Array(applied))
            if named_items(applied) && named_items(stored) =>
        {
            for item in applied {
                match stored.iter_mut().find(|s| s["name"] == item["name"]) {
                    Some(existing) => server_side_apply(existing, item),
                    None => stored.push(item.clone()),
                }
            }
        }
        (stored, applied) => *stored = applied.clone(),
    }
}

fn named_items(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(|i| i["name"].is_string())
}

fn in_namespace(object: &Value, namespace: &str) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.insert("namespace".into(), namespace.into());
    }
    object
}

fn with_uid(object: &Value, uid: &str) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.entry("uid").or_insert_with(|| uid.into());
    }
    object
}

fn kind_of(object: &Value) -> String {
    object["kind"].as_str().unwrap_or_default().to_owned()
}

fn list<'v>(pod: &'v Value, key: &str) -> &'v [Value] {
    pod["spec"][key].as_array().map_or(&[], Vec::as_slice)
}

/// The Pod is one the API server accepts (`kube::validate`).
pub fn check_pod(pod: &Value) -> Result<(), String> {
    validate(pod).map_err(|why| format!("the Pod is rejected: {why}"))
}

/// The Pod runs as its proxy's agent expects, checked against the model of
/// Istio and pilot-agent: what asks pilot-agent anything (the quitEndpoint
/// wrapper's POST, the native proxy's `preStop` drain) asks it on the port
/// it listens on (`istio::agent_status_port`: the Pod's
/// `status.sidecar.istio.io/port`, else 15020; none for `"0"`), and a
/// classic proxy that holds the application until it starts (its
/// `postStart` is `pilot-agent wait`) is the first container, as Istio's
/// `reorderPod` puts it, or the application starts first and the hold does
/// nothing.
pub fn check_runs(pod: &Value) -> Result<(), String> {
    let agent = istio::agent_status_port(pod);
    for c in list(pod, "containers") {
        if c["command"][0] == "/bin/sh" && c["command"][3] == QUIT_NAME {
            let url = c["command"][4].as_str().unwrap_or_default();
            let port = url_port(url);
            match agent {
                None => {
                    return Err(format!(
                        "{} POSTs {url}, but pilot-agent runs no status server in this Pod",
                        c["name"]
                    ))
                }
                Some(agent) if port != Some(agent) => {
                    return Err(format!(
                        "{} POSTs {url}, but pilot-agent listens on {agent}",
                        c["name"]
                    ))
                }
                Some(_) => {}
            }
        }
    }
    let proxies = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| list(pod, l))
        .filter(|c| c["name"] == istio::PROXY);
    for proxy in proxies {
        let drain = &proxy["lifecycle"]["preStop"]["exec"]["command"];
        let asks = drain[0] == "pilot-agent" && drain[1] == "request";
        let debug_port = drain[2]
            .as_str()
            .and_then(|a| a.strip_prefix("--debug-port="))
            .and_then(|p| p.parse::<u16>().ok());
        if let (true, Some(agent)) = (asks, agent) {
            if debug_port != Some(agent) {
                return Err(format!(
                    "istio-proxy's preStop drains through {}, but pilot-agent listens on {agent}",
                    drain[2]
                ));
            }
        }
    }
    let containers = list(pod, "containers");
    if let Some(i) = containers.iter().position(|c| c["name"] == istio::PROXY) {
        let wait = json!(["pilot-agent", "wait"]);
        if containers[i]["lifecycle"]["postStart"]["exec"]["command"] == wait && i != 0 {
            return Err(format!(
                "istio-proxy holds the application until it starts, but is container {i}: the application starts first"
            ));
        }
    }
    Ok(())
}

/// The port of an `http://host:port/path` URL.
fn url_port(url: &str) -> Option<u16> {
    let rest = url.split_once("//")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    authority.rsplit_once(':')?.1.parse().ok()
}

/// The Pod ends when its app ends, by `mode`.
pub fn check_ends(pod: &Value, mode: &str) -> Result<(), String> {
    let containers = list(pod, "containers");
    let apps: Vec<&Value> = containers
        .iter()
        .filter(|c| c["name"] != istio::PROXY)
        .collect();
    let wrapped = |c: &Value| c["command"][0] == "/bin/sh" && c["command"][3] == QUIT_NAME;
    if let Some(record) = pod["metadata"]["annotations"][APPLIED].as_str() {
        let recorded: Value = serde_json::from_str(record).unwrap_or_default();
        if recorded["mode"] != mode {
            return Err(format!("the Pod's record names another mode: {record}"));
        }
    }
    if mode != "quitEndpoint" && apps.iter().any(|c| wrapped(c)) {
        return Err(format!("{mode}: the app is still wrapped by quitEndpoint"));
    }
    let init = list(pod, "initContainers");
    let native = init.iter().position(|c| c["name"] == istio::PROXY);
    if native.is_some_and(|i| init[i]["restartPolicy"] != "Always") {
        return Err("istio-proxy is a plain init container: the Pod never starts".into());
    }
    // Istio's native form: only its own init containers before the proxy,
    // so that the user's run inside the mesh.
    if let Some(before) = native.map(|i| &init[..i]) {
        let istio = [istio::INIT, istio::VALIDATION];
        if let Some(c) = before
            .iter()
            .find(|c| !istio.iter().any(|n| c["name"] == *n))
        {
            return Err(format!(
                "init container {} runs before the native istio-proxy, outside the mesh",
                c["name"]
            ));
        }
    }
    if !containers.iter().any(|c| c["name"] == istio::PROXY) {
        // No proxy, or a native one: the Pod ends with its app.
        return Ok(());
    }
    match mode {
        "quitEndpoint" if apps.len() == 1 && wrapped(apps[0]) => Ok(()),
        "exitOnJobCompletion" if exit_on_completion(pod) => Ok(()),
        _ => Err(format!(
            "{mode}: istio-proxy is a regular container and nothing stops it: the Pod hangs"
        )),
    }
}

/// The Pod's proxy was given `exitOnJobCompletion: true` when Istio
/// injected it (an Istio build that acts on the key reads it there).
fn exit_on_completion(pod: &Value) -> bool {
    istio::injected_proxy_config(pod).is_some_and(|config| config[EXIT_KEY] == true)
}

/// A Pod compared with one made without the policy: the owner's mode the
/// policy carries down is no edit of a mode.
fn as_without_policy(pod: &Value) -> Value {
    let mut pod = pod.clone();
    if let Some(annotations) = pod["metadata"]["annotations"].as_object_mut() {
        annotations.remove(OWNER_MODE);
    }
    normalize(&pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_model::policy::Admitted;

    /// A policy that refuses everything, with the engine's own words.
    struct Refusing;

    impl Policy for Refusing {
        fn admit(&mut self, _: &Value, _: &Value) -> Result<Admitted, String> {
            Ok(Admitted {
                accepted: false,
                message: Some("no".into()),
                patch: None,
                warnings: Vec::new(),
            })
        }
    }

    #[test]
    fn a_refusal_fails_the_journey_whoever_answers() {
        let case = crate::journeys::all()
            .into_iter()
            .find(|c| c.selected)
            .expect("a journey the policy's webhook sees");
        let error = travel(&case, &mut Refusing).expect_err("a refusal is no answer here");
        assert!(error.contains("never rejects"), "{error}");
    }
}
