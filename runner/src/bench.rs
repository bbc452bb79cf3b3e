//! `policy-runner bench`: time per `validate` call through waPC, for the
//! policy and three floor guests on the same requests, in one process.
//!
//! Each call is timed twice:
//! - guest only: `WapcHost::call("validate", payload)`, the copy into the
//!   guest, the guest's work, the copy back;
//! - guest + host: the whole `validate` of policy-evaluator 0.30 (what
//!   policy-server and `kwctl bench` pay): the request turned into a JSON
//!   value and the payload serialized, the call, the answer parsed and, when
//!   it carries `mutated_object`, that object cloned, diffed against the
//!   request's object with `json_patch::diff`, the patch serialized and
//!   base64-encoded.
//!
//! Mutations are compared with guest + host to floor (c), a minimal SDK policy
//! that returns the object with one annotation added; skips to floor (b),
//! which only parses. `write_cases` writes the same cases as files for
//! `kwctl bench` (`make bench-kwctl`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::admission::{admission_request_for, ModuleAnswer};
use crate::error::{Error, Result};
use crate::host::{validate_payload, Policy, ValidationResponse};
use crate::metered::{MeteredModule, UNBOUNDED_FUEL};

/// Where to find the four modules, and how long to measure.
#[derive(Debug, Clone)]
pub struct Options {
    pub policy: PathBuf,
    pub floor_accept: PathBuf,
    pub floor_sdk_parse: PathBuf,
    pub floor_sdk_mutate: PathBuf,
    /// The module of the last release (`runner/bench/`), measured beside the
    /// policy in the same rounds so that a regression shows as the gap
    /// between the two ratios.
    pub release: Option<PathBuf>,
    /// Total measured time per module and case (split over `rounds`).
    pub min_time: Duration,
    /// Modules are measured in turn, `rounds` times, so that drift of the
    /// machine (frequency, neighbours) hits all of them alike.
    pub rounds: u32,
    /// Only cases whose name contains this.
    pub filter: Option<String>,
}

/// What the policy does with a case, which decides its floor and targets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Route {
    Mutation,
    Move,
    Skip,
    Huge,
}

/// The floor a case is compared to once the host's work is counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Floor {
    /// Floor (b), `floors/sdk-parse`: parses, accepts.
    SdkParse,
    /// Floor (c), `floors/sdk-mutate`: parses, adds one annotation, returns the object.
    SdkMutate,
}

impl Floor {
    pub fn name(self) -> &'static str {
        match self {
            Floor::SdkParse => "sdk-parse",
            Floor::SdkMutate => "sdk-mutate",
        }
    }
}

impl Route {
    pub fn name(self) -> &'static str {
        match self {
            Route::Mutation => "mutation",
            Route::Move => "move",
            Route::Skip => "skip",
            Route::Huge => "huge",
        }
    }

    /// The target for the guest call alone, as a ratio to floor (b).
    pub fn guest_target(self) -> f64 {
        match self {
            Route::Mutation | Route::Move => 1.3,
            Route::Skip => 0.6,
            Route::Huge => 1.2,
        }
    }

    /// The target with the host's work counted (guest + host here,
    /// `kwctl bench` in `make bench-kwctl`): every row that mutates (the huge
    /// Pod too) against floor (c), a skip against floor (b).
    pub fn host_target(self) -> (Floor, f64) {
        match self {
            Route::Mutation | Route::Move | Route::Huge => (Floor::SdkMutate, 1.1),
            Route::Skip => (Floor::SdkParse, 1.0),
        }
    }
}

/// One benchmark input.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub route: Route,
    pub request: Value,
    pub settings: Value,
}

/// The requests of the issue: small Job and CronJob with a YAML proxy config
/// (both modes), the kube-injected classic Job (move), a Deployment-made Pod
/// with restartPolicy Always (skip), a ~1 MiB run-to-completion Pod.
pub fn cases() -> Result<Vec<Case>> {
    let native = json!({ "mode": "nativeSidecar" });
    let exit = json!({ "mode": "exitOnJobCompletion" });
    let classic: Value =
        serde_json::from_str(include_str!("../demo/job-kube-injected-classic.json"))
            .map_err(|e| Error::Input(format!("embedded classic Job: {e}")))?;
    let job = admission_request_for(small_job(), "CREATE");
    let cronjob = admission_request_for(small_cronjob(), "CREATE");
    let case = |name: &str, route, request: &Value, settings: &Value| Case {
        name: name.to_owned(),
        route,
        request: request.clone(),
        settings: settings.clone(),
    };
    Ok(vec![
        case("job-yaml-config/native", Route::Mutation, &job, &native),
        case("job-yaml-config/exit", Route::Mutation, &job, &exit),
        case(
            "job-yaml-config/quit",
            Route::Mutation,
            &job,
            &json!({"mode": "quitEndpoint"}),
        ),
        case(
            "cronjob-yaml-config/native",
            Route::Mutation,
            &cronjob,
            &native,
        ),
        case("cronjob-yaml-config/exit", Route::Mutation, &cronjob, &exit),
        case(
            "job-kube-injected-classic/native",
            Route::Move,
            &classic,
            &native,
        ),
        case(
            "pod-always-deployment/native",
            Route::Skip,
            &admission_request_for(deployment_pod(), "CREATE"),
            &native,
        ),
        case(
            "pod-1mib-never/native",
            Route::Huge,
            &admission_request_for(huge_pod(1 << 20), "CREATE"),
            &native,
        ),
    ])
}

/// The benchmarks' Job and CronJob: a proxy config as users write it (YAML,
/// several keys, nested map) on a small batch pod template. The same files
/// give `make bench-server` its Job (harness/load.py).
fn small_job() -> Value {
    embedded(include_str!("../bench/small-job.json"))
}

fn small_cronjob() -> Value {
    embedded(include_str!("../bench/small-cronjob.json"))
}

/// A workload embedded at build time: JSON by construction (a test reads
/// each).
fn embedded(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn env_var(i: usize, value_len: usize) -> Value {
    json!({ "name": format!("SETTING_{i:04}"), "value": "v".repeat(value_len) })
}

fn web_container(name: &str, envs: usize) -> Value {
    json!({
        "name": name,
        "image": format!("registry.example.com/shop/{name}@sha256:{}", "ab12".repeat(16)),
        "ports": [{ "name": "http", "containerPort": 8080, "protocol": "TCP" }],
        "env": (0..envs).map(|i| env_var(i, 24)).collect::<Vec<_>>(),
        "resources": {
            "requests": { "cpu": "100m", "memory": "128Mi" },
            "limits": { "cpu": "1", "memory": "512Mi" }
        },
        "readinessProbe": { "httpGet": { "path": "/ready", "port": 8080 }, "periodSeconds": 5 },
        "livenessProbe": { "httpGet": { "path": "/live", "port": 8080 }, "periodSeconds": 10 },
        "volumeMounts": [
            { "name": "config", "mountPath": "/etc/shop" },
            { "name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true }
        ],
        "securityContext": { "runAsNonRoot": true, "allowPrivilegeEscalation": false,
                             "capabilities": { "drop": ["ALL"] } },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
    })
}

/// A Pod as a ReplicaSet controller creates it (about 5 KB): the common case
/// in a cluster, which the policy must let through at the lowest cost.
fn deployment_pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "frontend-7d4b9c8f6d-",
            "namespace": "shop",
            "labels": { "app": "frontend", "pod-template-hash": "7d4b9c8f6d", "version": "v3" },
            "annotations": { "kubectl.kubernetes.io/restartedAt": "2026-11-02T10:00:00Z",
                             "prometheus.io/scrape": "true", "prometheus.io/port": "9090" },
            "ownerReferences": [{ "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "frontend-7d4b9c8f6d", "uid": "5f0c1e2a-9a51-4f57-8d2e-3f3b0f5b1c11",
                "controller": true, "blockOwnerDeletion": true }],
            "managedFields": [{ "manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "v1", "time": "2026-11-02T10:00:01Z", "fieldsType": "FieldsV1",
                "fieldsV1": { "f:metadata": { "f:generateName": {}, "f:labels": { ".": {},
                    "f:app": {}, "f:pod-template-hash": {}, "f:version": {} } },
                    "f:spec": { "f:containers": { "k:{\"name\":\"frontend\"}": { ".": {} } } } } }]
        },
        "spec": {
            "restartPolicy": "Always",
            "serviceAccountName": "frontend",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "containers": [web_container("frontend", 12), web_container("metrics-exporter", 4)],
            "volumes": [
                { "name": "config", "configMap": { "name": "frontend-config" } },
                { "name": "kube-api-access", "projected": { "sources": [
                    { "serviceAccountToken": { "expirationSeconds": 3607, "path": "token" } },
                    { "configMap": { "name": "kube-root-ca.crt",
                        "items": [{ "key": "ca.crt", "path": "ca.crt" }] } } ] } }
            ],
            "affinity": { "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100, "podAffinityTerm": { "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": { "matchLabels": { "app": "frontend" } } } }] } },
            "tolerations": [
                { "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 },
                { "key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 }
            ]
        }
    })
}

/// A run-to-completion Pod of about `target` bytes of JSON: many containers
/// with large environments, and many large annotations.
fn huge_pod(target: usize) -> Value {
    let containers: Vec<Value> = (0..40)
        .map(|i| {
            let mut c = web_container(&format!("worker-{i:02}"), 0);
            c["env"] = Value::Array((0..60).map(|j| env_var(j, 200)).collect());
            c
        })
        .collect();
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "bulk-import", "namespace": "data", "annotations": {} },
        "spec": { "restartPolicy": "Never", "containers": containers }
    });
    // Fill up to the target with annotations of 1 KiB each (measured once,
    // then sized: serializing 1 MiB per annotation would be slow).
    let base = serde_json::to_vec(&pod).map_or(target, |v| v.len());
    let entry = |i: usize| (format!("example.com/blob-{i:04}"), "x".repeat(1024));
    let (key, value) = entry(0);
    let per_entry = key.len() + value.len() + 6; // quotes, colon, comma
    let count = target.saturating_sub(base) / per_entry;
    for i in 0..count {
        let (key, value) = entry(i);
        pod["metadata"]["annotations"][key] = Value::String(value);
    }
    pod
}

/// Median, 99th percentile, and how many calls they come from.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub median: Duration,
    pub p99: Duration,
    pub calls: usize,
}

fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort_unstable();
    let at = |q: f64| {
        let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(index).copied().unwrap_or_default()
    };
    Stats {
        median: at(0.5),
        p99: at(0.99),
        calls: samples.len(),
    }
}

/// The times of one `validate` as policy-server makes it.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// Host, before the call: the request as a JSON value, the payload.
    before: Duration,
    /// `WapcHost::call` alone.
    guest: Duration,
    /// Host, after the call: the answer parsed, the patch computed and
    /// encoded, everything of this request freed.
    after: Duration,
}

impl Call {
    fn total(&self) -> Duration {
        self.before + self.guest + self.after
    }
}

/// One `validate` as policy-evaluator 0.30's waPC runtime makes it (what
/// policy-server and `kwctl bench` pay per request), timed in three parts.
fn policy_server_validate(policy: &Policy, request: &Value, settings: &Value) -> Result<Call> {
    let start = Instant::now();
    let (before, guest) = {
        // policy-server turns its typed AdmissionRequest into a JSON value
        // (to find `object`) and then into the payload; the runner's request
        // is a value already, so `to_value` is the same deep copy. Without
        // serde_json's `preserve_order` (kwctl 1.31 has it off, as here) the
        // payload's members come out in alphabetical order at every level.
        let request_value =
            serde_json::to_value(request).map_err(|e| Error::Input(e.to_string()))?;
        let payload = serde_json::to_string(&json!({ "request": request, "settings": settings }))
            .map_err(|e| Error::Input(e.to_string()))?;
        let call = Instant::now();
        let raw = policy.call("validate", payload.as_bytes())?;
        let guest = call.elapsed();
        let answer: ValidationResponse =
            serde_json::from_slice(&raw).map_err(|e| Error::BadResponse {
                function: "validate".into(),
                message: e.to_string(),
            })?;
        std::hint::black_box(policy_server_patch(request_value.get("object"), &answer)?);
        (call - start, guest)
        // The request's copies, the payload and the answer are freed here,
        // as at the end of policy-evaluator's `validate`.
    };
    let total = start.elapsed();
    Ok(Call {
        before,
        guest,
        after: total.saturating_sub(before + guest),
    })
}

/// The patch part of policy-evaluator 0.30's
/// `AdmissionResponse::from_policy_validation_response`: the returned object
/// cloned, diffed against the request's object, the patch (when not empty)
/// serialized and base64-encoded.
fn policy_server_patch(
    object: Option<&Value>,
    answer: &ValidationResponse,
) -> Result<Option<String>> {
    let (Some(object), Some(mutated)) = (object, answer.mutated_object.clone()) else {
        return Ok(None);
    };
    let diff = json_patch::diff(object, &mutated);
    if diff.0.is_empty() {
        return Ok(None);
    }
    let text = serde_json::to_string(&diff).map_err(|e| Error::Input(e.to_string()))?;
    Ok(Some(BASE64.encode(text)))
}

/// Every call's times: guest only, guest + host, and the host's two parts.
#[derive(Debug, Default)]
struct Samples {
    guest: Vec<Duration>,
    total: Vec<Duration>,
    before: Vec<Duration>,
    after: Vec<Duration>,
}

/// Statistics of a module on a case.
#[derive(Debug, Clone, Copy)]
struct Measured {
    guest: Stats,
    total: Stats,
    before: Stats,
    after: Stats,
}

impl Samples {
    fn push(&mut self, call: Call) {
        self.guest.push(call.guest);
        self.total.push(call.total());
        self.before.push(call.before);
        self.after.push(call.after);
    }

    fn extend(&mut self, other: Samples) {
        self.guest.extend(other.guest);
        self.total.extend(other.total);
        self.before.extend(other.before);
        self.after.extend(other.after);
    }

    fn stats(mut self) -> Measured {
        Measured {
            guest: stats(&mut self.guest),
            total: stats(&mut self.total),
            before: stats(&mut self.before),
            after: stats(&mut self.after),
        }
    }
}

/// Calls `validate` as policy-server does for at least `budget` and at
/// least 50 times, adding each call's times to `samples`.
fn sample(policy: &Policy, case: &Case, budget: Duration, samples: &mut Samples) -> Result<()> {
    let start = Instant::now();
    let mut n = 0;
    while n < 50 || start.elapsed() < budget {
        samples.push(policy_server_validate(
            policy,
            &case.request,
            &case.settings,
        )?);
        n += 1;
    }
    Ok(())
}

fn warm_up(policy: &Policy, case: &Case) -> Result<()> {
    let start = Instant::now();
    let mut n = 0;
    while n < 20 || start.elapsed() < Duration::from_millis(200) {
        std::hint::black_box(policy_server_validate(
            policy,
            &case.request,
            &case.settings,
        )?);
        n += 1;
    }
    Ok(())
}

struct Module {
    label: &'static str,
    path: PathBuf,
    bytes: Vec<u8>,
    policy: Policy,
}

fn load(label: &'static str, path: &Path) -> Result<Module> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let policy = Policy::from_bytes(&bytes)?;
    Ok(Module {
        label,
        path: path.to_owned(),
        bytes,
        policy,
    })
}

/// What a module did with a case, checked once before timing so each row
/// is known to exercise the path it claims to: the text, and the number of
/// patch operations.
fn outcome(policy: &Policy, case: &Case) -> Result<(String, usize)> {
    let evaluation: ModuleAnswer = policy.validate(&case.request, &case.settings)?;
    let ops = evaluation.patch.as_ref().map_or(0, |p| p.0.len());
    let mut text = if !evaluation.allowed() {
        "REJECTED".to_owned()
    } else if ops == 0 {
        "unchanged".to_owned()
    } else {
        format!("{ops} op(s)")
    };
    if !evaluation.warnings().is_empty() {
        text.push_str(&format!(", {} warning(s)", evaluation.warnings().len()));
    }
    Ok((text, ops))
}

fn accepted(module: &Module, payload: &[u8]) -> Result<()> {
    let raw = module.policy.call("validate", payload)?;
    let answer: ValidationResponse =
        serde_json::from_slice(&raw).map_err(|e| Error::BadResponse {
            function: "validate".into(),
            message: format!("{}: {e}", module.label),
        })?;
    if answer.accepted {
        Ok(())
    } else {
        Err(Error::BadResponse {
            function: "validate".into(),
            message: format!("{} rejected a benchmark request", module.label),
        })
    }
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn med_p99(s: &Stats) -> String {
    format!("{}/{}", micros(s.median), micros(s.p99))
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}

fn range(ratios: &[f64]) -> String {
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(0.0, f64::max);
    format!("{low:.2}-{high:.2}x")
}

fn kib(bytes: usize) -> String {
    format!("{bytes} B ({:.1} KiB)", bytes as f64 / 1024.0)
}

/// One case's results, printed once every case is measured.
struct Row {
    case: Case,
    payload_len: usize,
    did: String,
    /// What the last release did with the case, when it was measured.
    release_did: Option<String>,
    /// Per module, in `run`'s order.
    stats: Vec<Measured>,
    /// Per round: policy / floor (b), guest only.
    guest_rounds: Vec<f64>,
    /// Per round: policy / the case's floor, guest + host.
    host_rounds: Vec<f64>,
}

// Module order in `run` (floor (a), then the last release when given).
const POLICY: usize = 0;
const FLOOR_C: usize = 1;
const FLOOR_B: usize = 2;
const FLOOR_A: usize = 3;
const RELEASE: usize = 4;

fn floor_index(floor: Floor) -> usize {
    match floor {
        Floor::SdkMutate => FLOOR_C,
        Floor::SdkParse => FLOOR_B,
    }
}

fn measure(modules: &[&Module], case: Case, options: &Options) -> Result<Row> {
    let payload = validate_payload(&case.request, &case.settings)?;
    let (did, _) = outcome(&modules[POLICY].policy, &case)?;
    let release_did = match modules.get(RELEASE) {
        Some(release) => Some(outcome(&release.policy, &case)?.0),
        None => None,
    };
    // Floor (c) must mutate every request, or it is no floor for a mutation.
    if outcome(&modules[FLOOR_C].policy, &case)?.1 != 1 {
        return Err(Error::BadResponse {
            function: "validate".into(),
            message: format!("{} did not add one annotation", modules[FLOOR_C].label),
        });
    }
    for m in modules {
        accepted(m, &payload)?;
        warm_up(&m.policy, &case)?;
    }
    let rounds = options.rounds.max(1);
    let per_round = options.min_time / rounds;
    let floor = floor_index(case.route.host_target().0);
    let mut all: Vec<Samples> = modules.iter().map(|_| Samples::default()).collect();
    // The ratios of each round alone: their spread says how much the
    // machine moved during the measurement.
    let mut guest_rounds = Vec::new();
    let mut host_rounds = Vec::new();
    for _ in 0..rounds {
        let mut round: Vec<Samples> = modules.iter().map(|_| Samples::default()).collect();
        for (m, r) in modules.iter().zip(round.iter_mut()) {
            sample(&m.policy, &case, per_round, r)?;
        }
        let medians: Vec<(Duration, Duration)> = round
            .iter_mut()
            .map(|r| (stats(&mut r.guest).median, stats(&mut r.total).median))
            .collect();
        guest_rounds.push(ratio(medians[POLICY].0, medians[FLOOR_B].0));
        host_rounds.push(ratio(medians[POLICY].1, medians[floor].1));
        for (a, r) in all.iter_mut().zip(round) {
            a.extend(r);
        }
    }
    Ok(Row {
        case,
        payload_len: payload.len(),
        did,
        release_did,
        stats: all.into_iter().map(Samples::stats).collect(),
        guest_rounds,
        host_rounds,
    })
}

pub fn run(options: &Options, out: &mut dyn Write) -> Result<()> {
    let io = |e: std::io::Error| Error::Input(format!("cannot write the report: {e}"));
    let policy = load("policy", &options.policy)?;
    let floor_c = load("floor (c) sdk-mutate", &options.floor_sdk_mutate)?;
    let floor_b = load("floor (b) sdk-parse", &options.floor_sdk_parse)?;
    let floor_a = load("floor (a) accept", &options.floor_accept)?;
    let release = match &options.release {
        Some(path) => Some(load("last release", path)?),
        None => None,
    };
    let mut modules = vec![&policy, &floor_c, &floor_b, &floor_a];
    modules.extend(release.as_ref());
    let modules = modules.as_slice();

    writeln!(
        out,
        "policy-runner bench: wapc 2.1 + wasmtime-provider 2.19 (wasmtime 44), one process, \
         epoch interruption on (2 s timeout) as in policy-server"
    )
    .map_err(io)?;
    writeln!(
        out,
        "per module and case: warm-up >= 200 ms, then >= {} ms measured in {} interleaved rounds; \
         times in microseconds (median/p99)\n",
        options.min_time.as_millis(),
        options.rounds
    )
    .map_err(io)?;
    writeln!(out, "module sizes:").map_err(io)?;
    for &m in modules {
        writeln!(
            out,
            "  {:<20} {:<24} {}",
            m.label,
            kib(m.bytes.len()),
            m.path.display()
        )
        .map_err(io)?;
    }
    // The budget is `make size-check`'s (the Makefile's MODULE_BUDGET).
    writeln!(out).map_err(io)?;

    let mut rows = Vec::new();
    for case in cases()? {
        if let Some(filter) = &options.filter {
            if !case.name.contains(filter.as_str()) {
                continue;
            }
        }
        rows.push(measure(modules, case, options)?);
    }

    if let Some(release) = &release {
        writeln!(
            out,
            "last release: {} (runner/bench/README.md); `release` = its median and its ratio to \
             the same floor, measured in the same rounds: a policy ratio above it is a regression\n",
            release.path.display()
        )
        .map_err(io)?;
    }
    writeln!(
        out,
        "guest call only (WapcHost::call: copy in, the guest's work, copy out); \
         ratio = policy / floor (b), the guest-only targets"
    )
    .map_err(io)?;
    writeln!(
        out,
        "{:<34} {:>9} {:<22} {:>15} {:>15} {:>15} {:>13} {:>6} {:>11} {:>6}{}",
        "case",
        "req bytes",
        "policy did",
        "policy",
        "floor c mutate",
        "floor b parse",
        "floor a accept",
        "ratio",
        "per round",
        "target",
        release_header(&release),
    )
    .map_err(io)?;
    for row in &rows {
        let [p, c, b, a] = [POLICY, FLOOR_C, FLOOR_B, FLOOR_A].map(|i| &row.stats[i]);
        let r = ratio(p.guest.median, b.guest.median);
        let target = row.case.route.guest_target();
        let release = release_cells(row, |m| m.guest.median, FLOOR_B);
        writeln!(
            out,
            "{:<34} {:>9} {:<22} {:>15} {:>15} {:>15} {:>13} {:>5.2}x {:>11} {:>5.1}x {:<4}{}",
            row.case.name,
            row.payload_len,
            row.did,
            med_p99(&p.guest),
            med_p99(&c.guest),
            med_p99(&b.guest),
            med_p99(&a.guest),
            r,
            range(&row.guest_rounds),
            target,
            if r <= target { "ok" } else { "OVER" },
            release,
        )
        .map_err(io)?;
    }

    writeln!(
        out,
        "\nguest + host, as policy-server (payload built, call, answer parsed, \
         returned object diffed against the request's, patch encoded);\n\
         ratio = policy / its floor (c for a mutation, b for a skip), the targets with the host's work; \
         vs b = policy / floor (b);\n\
         host in+out = share of the policy's time (medians) the host spends before the call \
         (request copied, payload serialized) and after it (answer parsed, patch, memory freed)"
    )
    .map_err(io)?;
    writeln!(
        out,
        "{:<34} {:<8} {:>15} {:>15} {:>15} {:<10} {:>6} {:>11} {:>6} {:>8} {:>12}{}",
        "case",
        "route",
        "policy",
        "floor c mutate",
        "floor b parse",
        "floor",
        "ratio",
        "per round",
        "target",
        "vs b",
        "host in+out",
        release_header(&release),
    )
    .map_err(io)?;
    for row in &rows {
        let [p, c, b] = [POLICY, FLOOR_C, FLOOR_B].map(|i| &row.stats[i]);
        let (floor, target) = row.case.route.host_target();
        let f = &row.stats[floor_index(floor)];
        let r = ratio(p.total.median, f.total.median);
        let release = release_cells(row, |m| m.total.median, floor_index(floor));
        writeln!(
            out,
            "{:<34} {:<8} {:>15} {:>15} {:>15} {:<10} {:>5.2}x {:>11} {:>5.1}x {:<4} {:>5.2}x {:>12}{}",
            row.case.name,
            row.case.route.name(),
            med_p99(&p.total),
            med_p99(&c.total),
            med_p99(&b.total),
            floor.name(),
            r,
            range(&row.host_rounds),
            target,
            if r <= target { "ok" } else { "OVER" },
            ratio(p.total.median, b.total.median),
            format!(
                "{:.0}%+{:.0}%",
                100.0 * ratio(p.before.median, p.total.median),
                100.0 * ratio(p.after.median, p.total.median)
            ),
            release,
        )
        .map_err(io)?;
    }

    if let Some(row) = rows.iter().find(|r| r.case.route == Route::Huge) {
        let payload = validate_payload(&row.case.request, &row.case.settings)?;
        writeln!(
            out,
            "\nlinear memory after the ~1 MiB case (fresh instance, 3 calls):"
        )
        .map_err(io)?;
        for &m in modules {
            let (before, after, answer) = memory_after(&m.bytes, &payload)?;
            if answer != m.policy.call("validate", &payload)? {
                return Err(Error::BadResponse {
                    function: "validate".into(),
                    message: format!("{} answers differently under the memory probe", m.label),
                });
            }
            writeln!(
                out,
                "  {:<20} {} at start -> {} after ({} wasm pages)",
                m.label,
                mib(before),
                mib(after),
                after / 65536
            )
            .map_err(io)?;
        }
    }
    Ok(())
}

/// The header of the last release's columns, empty without one.
fn release_header(release: &Option<Module>) -> String {
    match release {
        Some(_) => format!(" | {:>15} {:>6} {:<22}", "release", "ratio", "release did"),
        None => String::new(),
    }
}

/// The last release's median, its ratio to the same floor (`floor`, an
/// index of `row.stats`) and what it did; empty when it was not measured.
fn release_cells(row: &Row, time: impl Fn(&Measured) -> Duration, floor: usize) -> String {
    let (Some(release), Some(did)) = (row.stats.get(RELEASE), &row.release_did) else {
        return String::new();
    };
    format!(
        " | {:>15} {:>5.2}x {:<22}",
        micros(time(release)),
        ratio(time(release), time(&row.stats[floor])),
        did
    )
}

/// One case as `kwctl bench` reads it, listed in `cases.json`.
#[derive(Debug, serde::Serialize)]
struct CaseFile {
    name: String,
    route: &'static str,
    /// The AdmissionRequest file, relative to the directory (`--request-path`).
    request: String,
    /// For `--settings-json`.
    settings: Value,
    /// The floor a row is compared to, and the target ratio with the host's work.
    floor: &'static str,
    target: f64,
}

/// Writes every case of [`cases`] into `dir`: one AdmissionRequest file per
/// case and `cases.json`, the list with route, settings, floor and target,
/// so `make bench-kwctl` runs exactly these requests through `kwctl bench`.
pub fn write_cases(dir: &Path) -> Result<Vec<PathBuf>> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut list = Vec::new();
    let mut written = Vec::new();
    for (i, case) in cases()?.into_iter().enumerate() {
        let file = format!("{:02}-{}.json", i + 1, case.name.replace('/', "-"));
        let path = dir.join(&file);
        let text = serde_json::to_vec(&case.request).map_err(|e| Error::Input(e.to_string()))?;
        std::fs::write(&path, text).map_err(io(&path))?;
        let (floor, target) = case.route.host_target();
        list.push(CaseFile {
            name: case.name,
            route: case.route.name(),
            request: file,
            settings: case.settings,
            floor: floor.name(),
            target,
        });
        written.push(path);
    }
    let path = dir.join("cases.json");
    let text = serde_json::to_vec_pretty(&list).map_err(|e| Error::Input(e.to_string()))?;
    std::fs::write(&path, text).map_err(io(&path))?;
    written.push(path);
    Ok(written)
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Linear memory size, in bytes, of a fresh instance before and after three
/// `validate` calls with `payload` (read on the metered engine, which owns
/// its store), and the last answer, so the caller can check the observed
/// instance behaved like the timed one.
pub fn memory_after(module: &[u8], payload: &[u8]) -> Result<(usize, usize, Vec<u8>)> {
    let policy = Policy::metered(&MeteredModule::new(module, UNBOUNDED_FUEL)?)?;
    let mut before = None;
    let mut answer = Vec::new();
    for _ in 0..3 {
        answer = policy.call("validate", payload)?;
        before = before.or_else(|| policy.last_cost().map(|c| c.memory_before_bytes()));
    }
    let after = policy.last_cost().map_or(0, |c| c.memory_bytes());
    let bytes = |b: u64| usize::try_from(b).unwrap_or(usize::MAX);
    Ok((bytes(before.unwrap_or(0)), bytes(after), answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_workloads_are_a_job_and_a_cronjob() {
        assert_eq!(small_job()["kind"], "Job");
        assert_eq!(small_cronjob()["kind"], "CronJob");
        let config =
            &small_job()["spec"]["template"]["metadata"]["annotations"]["proxy.istio.io/config"];
        assert!(config
            .as_str()
            .is_some_and(|c| c.contains("proxyMetadata:\n")));
    }

    #[test]
    fn huge_pod_is_about_one_mib() {
        let len = serde_json::to_vec(&huge_pod(1 << 20))
            .map(|v| v.len())
            .unwrap_or(0);
        assert!(
            ((1 << 20) - 2048..=(1 << 20) + 2048).contains(&len),
            "{len}"
        );
    }

    #[test]
    fn stats_pick_median_and_p99() {
        let mut v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        let s = stats(&mut v);
        assert_eq!(s.median, Duration::from_micros(51));
        assert_eq!(s.p99, Duration::from_micros(99));
    }

    fn answer(mutated: Option<Value>) -> ValidationResponse {
        ValidationResponse::accept(mutated)
    }

    #[test]
    fn host_patch_is_policy_servers() {
        let object = json!({"metadata": {"name": "a"}});
        let mutated = json!({"metadata": {"name": "a", "annotations": {"k": "v"}}});
        let patch = policy_server_patch(Some(&object), &answer(Some(mutated)))
            .ok()
            .flatten()
            .and_then(|p| BASE64.decode(p).ok())
            .and_then(|p| serde_json::from_slice::<Value>(&p).ok());
        assert_eq!(
            patch,
            Some(json!([{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}]))
        );
        let same = policy_server_patch(Some(&object), &answer(Some(object.clone())));
        assert_eq!(same.ok(), Some(None));
        let none = policy_server_patch(Some(&object), &answer(None));
        assert_eq!(none.ok(), Some(None));
    }

    #[test]
    fn mutations_go_to_the_mutating_floor_and_skips_to_the_parse_floor() {
        for case in cases().unwrap_or_default() {
            let floor = case.route.host_target().0;
            let expected = if case.route == Route::Skip {
                Floor::SdkParse
            } else {
                Floor::SdkMutate
            };
            assert_eq!(floor, expected, "{}", case.name);
        }
    }

    #[test]
    fn written_cases_are_requests_kwctl_reads() {
        let dir = std::env::temp_dir().join(format!("bench-cases-{}", std::process::id()));
        let written = write_cases(&dir).unwrap_or_default();
        let list: Vec<Value> = std::fs::read(dir.join("cases.json"))
            .ok()
            .and_then(|t| serde_json::from_slice(&t).ok())
            .unwrap_or_default();
        let count = cases().map(|c| c.len()).unwrap_or(0);
        assert_eq!(list.len(), count);
        assert_eq!(written.len(), count + 1);
        for entry in &list {
            let file = entry["request"].as_str().unwrap_or("");
            let request: Value = std::fs::read(dir.join(file))
                .ok()
                .and_then(|t| serde_json::from_slice(&t).ok())
                .unwrap_or_default();
            // kwctl needs userInfo in a bare AdmissionRequest.
            assert!(request["object"].is_object() && request["userInfo"].is_object());
            assert!(entry["settings"]["mode"].is_string() && entry["target"].is_f64());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
