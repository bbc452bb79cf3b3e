//! `policy-runner bench`: time per `validate` call through waPC, for the
//! policy and two floor guests on the same requests, in one process.
//!
//! What is timed is `WapcHost::call("validate", payload)` with the payload
//! already serialized, as policy-server hands it over: the copy into the
//! guest, the guest's work, the copy back. What policy-server does with the
//! answer afterwards (parse it and, for a mutation, diff the objects into a
//! patch) is host work, not the guest's, and is left out.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::admission::{admission_request_for, Evaluation};
use crate::error::{Error, Result};
use crate::host::{validate_payload, Policy, ValidationResponse};
use crate::memory::probing_engine;

/// Where to find the three modules, and how long to measure.
#[derive(Debug, Clone)]
pub struct Options {
    pub policy: PathBuf,
    pub floor_accept: PathBuf,
    pub floor_sdk_parse: PathBuf,
    /// Total measured time per module and case (split over `rounds`).
    pub min_time: Duration,
    /// Modules are measured in turn, `rounds` times, so that drift of the
    /// machine (frequency, neighbours) hits all three alike.
    pub rounds: u32,
    /// Only cases whose name contains this.
    pub filter: Option<String>,
}

/// Which target the issue sets for a case, as a ratio to floor (b).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Route {
    Mutation,
    Move,
    Skip,
    Huge,
}

impl Route {
    fn target(self) -> f64 {
        match self {
            Route::Mutation | Route::Move => 1.3,
            Route::Skip => 0.6,
            Route::Huge => 1.2,
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

/// A proxy config as users write it: YAML, several keys, nested map.
const PROXY_CONFIG_YAML: &str = "holdApplicationUntilProxyStarts: true\n\
    terminationDrainDuration: 5s\n\
    proxyMetadata:\n  ISTIO_META_DNS_CAPTURE: \"true\"\n  ISTIO_META_DNS_AUTO_ALLOCATE: \"true\"\n";

fn batch_pod_template(name: &str) -> Value {
    json!({
        "metadata": {
            "labels": { "app": name, "team": "data" },
            "annotations": { "proxy.istio.io/config": PROXY_CONFIG_YAML }
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": name,
            "containers": [{
                "name": name,
                "image": format!("registry.example.com/data/{name}:1.4.2"),
                "command": ["/app/run", "--once", "--output=s3://reports/daily"],
                "env": [
                    { "name": "LOG_LEVEL", "value": "info" },
                    { "name": "REPORT_DAY", "value": "yesterday" },
                    { "name": "DB_HOST", "value": "postgres.data.svc.cluster.local" }
                ],
                "resources": {
                    "requests": { "cpu": "250m", "memory": "256Mi" },
                    "limits": { "memory": "512Mi" }
                }
            }]
        }
    })
}

fn small_job() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": "daily-report", "namespace": "data" },
        "spec": {
            "backoffLimit": 2,
            "ttlSecondsAfterFinished": 600,
            "template": batch_pod_template("daily-report")
        }
    })
}

fn small_cronjob() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": { "name": "nightly-report", "namespace": "data" },
        "spec": {
            "schedule": "0 2 * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {
                "metadata": { "labels": { "app": "nightly-report" } },
                "spec": { "backoffLimit": 1, "template": batch_pod_template("nightly-report") }
            }
        }
    })
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

/// Calls `validate` for at least `budget` and at least 50 times, adding
/// each call's duration to `samples`.
fn sample(
    policy: &Policy,
    payload: &[u8],
    budget: Duration,
    samples: &mut Vec<Duration>,
) -> Result<()> {
    let start = Instant::now();
    let mut n = 0;
    while n < 50 || start.elapsed() < budget {
        let t = Instant::now();
        let answer = policy.call("validate", payload)?;
        samples.push(t.elapsed());
        std::hint::black_box(answer);
        n += 1;
    }
    Ok(())
}

fn warm_up(policy: &Policy, payload: &[u8]) -> Result<()> {
    let start = Instant::now();
    let mut n = 0;
    while n < 20 || start.elapsed() < Duration::from_millis(200) {
        std::hint::black_box(policy.call("validate", payload)?);
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
    let policy = Policy::from_bytes(&bytes, None)?;
    Ok(Module {
        label,
        path: path.to_owned(),
        bytes,
        policy,
    })
}

/// What the policy did with a case, checked once before timing so each row
/// is known to exercise the path it claims to.
fn outcome(policy: &Policy, case: &Case) -> Result<String> {
    let evaluation: Evaluation = policy.validate(&case.request, &case.settings)?;
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
    Ok(text)
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

fn kib(bytes: usize) -> String {
    format!("{bytes} B ({:.1} KiB)", bytes as f64 / 1024.0)
}

pub fn run(options: &Options, out: &mut dyn Write) -> Result<()> {
    let io = |e: std::io::Error| Error::Input(format!("cannot write the report: {e}"));
    let policy = load("policy", &options.policy)?;
    let floor_b = load("floor (b) sdk-parse", &options.floor_sdk_parse)?;
    let floor_a = load("floor (a) accept", &options.floor_accept)?;
    let modules = [&policy, &floor_b, &floor_a];

    writeln!(
        out,
        "policy-runner bench: wapc 2.1 + wasmtime-provider 2.13 (wasmtime 38), one process, \
         epoch interruption on (2 s timeout) as in policy-server"
    )
    .map_err(io)?;
    writeln!(
        out,
        "per module and case: warm-up >= 200 ms, then >= {} ms measured in {} interleaved rounds",
        options.min_time.as_millis(),
        options.rounds
    )
    .map_err(io)?;
    writeln!(
        out,
        "times are per `validate` call through waPC, in microseconds; \
         ratio = policy median / floor (b) median\n"
    )
    .map_err(io)?;
    writeln!(out, "module sizes:").map_err(io)?;
    for m in modules {
        writeln!(
            out,
            "  {:<20} {:<24} {}",
            m.label,
            kib(m.bytes.len()),
            m.path.display()
        )
        .map_err(io)?;
    }
    let verdict = if policy.bytes.len() <= 400 * 1024 {
        "ok"
    } else {
        "OVER"
    };
    writeln!(out, "  policy.wasm target <= 400 KiB: {verdict}\n").map_err(io)?;

    writeln!(
        out,
        "{:<34} {:>9} {:<16} {:>15} {:>15} {:>13} {:>6} {:>11} {:>6}",
        "case",
        "req bytes",
        "policy did",
        "policy med/p99",
        "floor b med/p99",
        "floor a med/p99",
        "ratio",
        "per round",
        "target"
    )
    .map_err(io)?;
    let rounds = options.rounds.max(1);
    let per_round = options.min_time / rounds;
    let mut huge_payload = None;
    for case in cases()? {
        if let Some(filter) = &options.filter {
            if !case.name.contains(filter.as_str()) {
                continue;
            }
        }
        let payload = validate_payload(&case.request, &case.settings)?;
        let did = outcome(&policy.policy, &case)?;
        for m in modules {
            accepted(m, &payload)?;
            warm_up(&m.policy, &payload)?;
        }
        let mut samples: [Vec<Duration>; 3] = Default::default();
        // The policy/floor (b) ratio of each round alone: their spread says
        // how much the machine moved during the measurement.
        let mut round_ratios = Vec::new();
        for _ in 0..rounds {
            let mut round: [Vec<Duration>; 3] = Default::default();
            for (m, r) in modules.iter().zip(round.iter_mut()) {
                sample(&m.policy, &payload, per_round, r)?;
            }
            let [p, b, _] = &mut round;
            round_ratios
                .push(stats(p).median.as_secs_f64() / stats(b).median.as_secs_f64().max(1e-12));
            for (all, r) in samples.iter_mut().zip(round) {
                all.extend(r);
            }
        }
        let [p, b, a] = samples.map(|mut s| stats(&mut s));
        let ratio = p.median.as_secs_f64() / b.median.as_secs_f64().max(1e-12);
        let low = round_ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = round_ratios.iter().copied().fold(0.0, f64::max);
        let target = case.route.target();
        let mark = if ratio <= target { "ok" } else { "OVER" };
        writeln!(
            out,
            "{:<34} {:>9} {:<16} {:>15} {:>15} {:>13} {:>5.2}x {:>11} {:>5.1}x {mark}",
            case.name,
            payload.len(),
            did,
            format!("{}/{}", micros(p.median), micros(p.p99)),
            format!("{}/{}", micros(b.median), micros(b.p99)),
            format!("{}/{}", micros(a.median), micros(a.p99)),
            ratio,
            format!("{low:.2}-{high:.2}x"),
            target,
        )
        .map_err(io)?;
        if case.route == Route::Huge {
            huge_payload = Some(payload);
        }
    }

    if let Some(payload) = huge_payload {
        writeln!(
            out,
            "\nlinear memory after the ~1 MiB case (fresh instance, 3 calls):"
        )
        .map_err(io)?;
        for m in [&policy, &floor_b, &floor_a] {
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

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Linear memory size of a fresh instance before and after three
/// `validate` calls with `payload` (see `memory.rs` for how it is observed),
/// and the last answer, so the caller can check the observed instance
/// behaved like the timed one.
pub fn memory_after(module: &[u8], payload: &[u8]) -> Result<(usize, usize, Vec<u8>)> {
    let (engine, probe) = probing_engine().map_err(Error::Load)?;
    let policy = Policy::from_bytes(module, Some(engine))?;
    let before = probe.last_size().unwrap_or(0);
    let mut answer = Vec::new();
    for _ in 0..3 {
        answer = policy.call("validate", payload)?;
    }
    Ok((before, probe.last_size().unwrap_or(0), answer))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
