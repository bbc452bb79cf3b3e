//! The journeys of `policy_testkit::journeys` through `kwctl run`: every
//! hop an admission request of its own, answered by kwctl running the
//! annotated module as Kubewarden runs it, its base64 JSON Patch applied.
//! Each journey is judged as the native run is and compared with the same
//! golden file, `test_data/journeys/<name>.yaml` (`journeys::golden_file`),
//! then made and judged again with the other webhook order (Kubewarden up
//! to 1.37.1 and since 1.37.2).
//!
//! `--pods DIR` writes, for each journey as written with the policy crate
//! called natively, `DIR/<name>.json`: `{"pods": [...]}`, every Pod of its
//! runs whole (the golden files abbreviate what Istio rendered), for the
//! check of Kubernetes' schemas (`make schema-tests`).
//!
//! ```text
//! journey --kwctl kwctl --module annotated-policy.wasm [--jobs 4] [NAME...]
//! journey --pods DIR
//! journey --list
//! ```
//!
//! Prints one TAP line per journey; exits 1 when one fails. kwctl spends
//! most of a run's second waiting (it cannot fetch the Sigstore trust root
//! here), so journeys run side by side, each one's hops in order.

#![forbid(unsafe_code)]

use kube_model::policy::{Admitted, Policy};
use policy_testkit::journey::{check, travel, Clusters, Journey, Validate};
use policy_testkit::journeys::{self, golden_file};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct Kwctl {
    kwctl: PathBuf,
    module: PathBuf,
    scratch: PathBuf,
    runs: usize,
}

impl Policy for Kwctl {
    fn admit(&mut self, request: &Value, settings: &Value) -> Result<Admitted, String> {
        self.runs += 1;
        let path = self.scratch.join(format!("request-{}.json", self.runs));
        std::fs::write(&path, request.to_string()).map_err(|e| e.to_string())?;
        let output = Command::new(&self.kwctl)
            .arg("run")
            .arg("--request-path")
            .arg(&path)
            .arg("--settings-json")
            .arg(settings.to_string())
            .arg(&self.module)
            .env("RUST_BACKTRACE", "0")
            .output()
            .map_err(|e| format!("{}: {e}", self.kwctl.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.contains("\"allowed\""))
            .ok_or_else(|| {
                format!(
                    "kwctl gave no AdmissionResponse (exit {}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                )
            })?;
        let response: Value =
            serde_json::from_str(line).map_err(|e| format!("kwctl's response: {e}: {line}"))?;
        if response["uid"] != request["uid"] {
            return Err(format!("the response does not echo the uid: {line}"));
        }
        let warnings: Vec<String> = response["warnings"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let patch = match response["patch"].as_str() {
            None => None,
            Some(encoded) => {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|e| format!("patch not base64: {e}"))?;
                Some(serde_json::from_slice(&bytes).map_err(|e| format!("patch not JSON: {e}"))?)
            }
        };
        Ok(Admitted {
            accepted: response["allowed"] == true,
            message: response["status"]["message"].as_str().map(str::to_owned),
            patch,
            warnings,
        })
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut kwctl, mut module, mut jobs, mut names) = (None, None, 4, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--kwctl" => kwctl = args.next().map(PathBuf::from),
            "--module" => module = args.next().map(PathBuf::from),
            "--jobs" => jobs = args.next().and_then(|n| n.parse().ok()).unwrap_or(jobs),
            "--pods" => {
                let Some(dir) = args.next() else {
                    eprintln!("usage: journey --pods DIR");
                    std::process::exit(2);
                };
                if let Err(e) = write_pods(Path::new(&dir)) {
                    eprintln!("journey --pods: {e}");
                    std::process::exit(1);
                }
                return;
            }
            "--list" => {
                journeys::all().iter().for_each(|c| println!("{}", c.name));
                return;
            }
            name => names.push(name.to_owned()),
        }
    }
    let (Some(kwctl), Some(module)) = (kwctl, module) else {
        eprintln!(
            "usage: journey --kwctl PATH --module annotated-policy.wasm [--jobs N] [NAME...]"
        );
        std::process::exit(2);
    };
    let cases: Vec<Journey> = journeys::all()
        .into_iter()
        .filter(|c| names.is_empty() || names.iter().any(|n| n == c.name))
        .collect();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_data/journeys");
    let scratch = std::env::temp_dir().join(format!("journey-{}", std::process::id()));
    let next = AtomicUsize::new(0);
    let results = Mutex::new(vec![None; cases.len()]);
    std::thread::scope(|scope| {
        for worker in 0..jobs.max(1) {
            let (cases, next, results, kwctl, module) = (&cases, &next, &results, &kwctl, &module);
            let scratch = scratch.join(worker.to_string());
            let golden_dir = &golden_dir;
            scope.spawn(move || {
                let _ = std::fs::create_dir_all(&scratch);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let mut policy = Kwctl {
                        kwctl: kwctl.clone(),
                        module: module.clone(),
                        scratch: scratch.clone(),
                        runs: 0,
                    };
                    let path = golden_file(golden_dir, case.name);
                    let outcome =
                        check(case, &mut policy, Some(&path), Clusters::BothWebhookOrders);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] =
                        Some((outcome, policy.runs));
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    println!("1..{}", cases.len());
    let mut failed = 0;
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    for (i, (case, result)) in cases.iter().zip(results).enumerate() {
        match result {
            Some((Ok(()), runs)) => println!("ok {} {} ({runs} kwctl runs)", i + 1, case.name),
            Some((Err(e), _)) => {
                failed += 1;
                println!("not ok {} {}", i + 1, case.name);
                for line in e.lines() {
                    println!("# {line}");
                }
            }
            None => {
                failed += 1;
                println!("not ok {} {} (not run)", i + 1, case.name);
            }
        }
    }
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Every journey's Pods, whole, made with the policy crate called natively.
fn write_pods(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for case in journeys::all() {
        let validate =
            |payload: &[u8]| istio_job_sidecar_policy::validate(payload).unwrap_or_default();
        let trip =
            travel(&case, &mut Validate(validate)).map_err(|e| format!("{}: {e}", case.name))?;
        let path = dir.join(format!("{}.json", case.name));
        let text = serde_json::json!({"pods": trip.pods}).to_string();
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
