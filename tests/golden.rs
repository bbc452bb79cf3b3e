//! Whole-object golden tests, as Istio's injector tests do it: each case in
//! test_data/cases/<case>/ has its input (request.json, settings.json) beside
//! the expected result (expected.json), compared whole. The directories are
//! read when the tests run, so a new case needs no rebuild; each test goes
//! through every case and names every one that fails.
//!
//! `make golden` writes every case's input (`test_data/make_cases.py`) and
//! rewrites expected.json from what the policy does now (with every other
//! golden file of the repository); review the diff.

use policy_testkit::names::{APPLIED, NATIVE, STATUS};
use policy_testkit::{check_answer, check_fixed_point, golden, payload, Order};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Cases written by hand, not by `test_data/make_cases.py`: a directory of
/// test_data/cases/ is either one the script writes (`--list`) or named
/// here. Any other is stale (a case the script no longer writes, left
/// behind with its old answer).
const HAND_WRITTEN: &[&str] = &[];

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The policy's answer to one request, sent as policy-server sends it, and
/// the same in every other order of the request's members (the API
/// server's order takes the early-skip path): what expected.json holds.
fn evaluate(request: &Value, settings: &Value) -> Result<Value, String> {
    let answer = validate(&payload(request, Some(settings), Order::PolicyServer));
    for order in [Order::ApiServer, Order::ObjectFirst] {
        let other = validate(&payload(request, Some(settings), order));
        if answer != other {
            return Err(format!("the answer differs in {order:?} order"));
        }
    }
    let answer = check_answer(&answer)?;
    Ok(json!({
        "accepted": true,
        "mutatedObject": answer.mutated,
        "warnings": answer.warnings,
    }))
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The entries of `dir` (relative to the repository) whose path `keep`
/// accepts, by name, sorted.
fn entries(dir: &str, keep: fn(&Path) -> bool) -> Vec<(String, PathBuf)> {
    let dir = root().join(dir);
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path()
        })
        .filter(|p| keep(p))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "nothing in {}", dir.display());
    found
}

fn case_dirs() -> Vec<(String, PathBuf)> {
    entries("test_data/cases", Path::is_dir)
}

/// Fails with every failure, one case a paragraph, and what to do.
fn report(what: &str, failures: &[String], total: usize, hint: &str) {
    assert!(
        failures.is_empty(),
        "{} failing among {total} {what} ({hint}):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// One case: its answer is expected.json (or, `UPDATE_GOLDEN=1`, becomes
/// it) and, when a mutation, a fixed point.
fn check_case(dir: &Path) -> Result<(), String> {
    let request = read_json(&dir.join("request.json"))?;
    let settings = read_json(&dir.join("settings.json"))?;
    let actual = evaluate(&request, &settings)?;
    golden(&dir.join("expected.json"), &actual)?;
    if actual["mutatedObject"].is_null() {
        return Ok(());
    }
    let mutated = &actual["mutatedObject"];
    check_fixed_point(
        validate,
        &request,
        Some(&settings),
        mutated,
        Order::PolicyServer,
    )
}

/// Every case with its inputs is answered as its expected.json says
/// (no_stale_cases reports a directory without them).
#[test]
fn golden_cases() {
    let cases = case_dirs();
    let with_inputs: Vec<_> = cases
        .iter()
        .filter(|(_, d)| d.join("request.json").is_file() && d.join("settings.json").is_file())
        .collect();
    let failures: Vec<String> = with_inputs
        .iter()
        .filter_map(|(name, dir)| {
            let checked = std::panic::catch_unwind(|| check_case(dir))
                .unwrap_or_else(|_| Err("panicked (above)".into()));
            checked.err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    report(
        "cases",
        &failures,
        with_inputs.len(),
        "run `make golden` and review the diff if the policy changed on purpose",
    );
}

/// The case directories are those `test_data/make_cases.py` writes and the
/// hand-written ones (`HAND_WRITTEN`), each with its request.json and
/// settings.json: an expected.json left without its input, or a case the
/// script no longer writes, is stale and fails.
#[test]
fn no_stale_cases() {
    let script = root().join("test_data/make_cases.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg("--list")
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e} (python3 with PyYAML)", script.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} --list: {stderr}",
        script.display()
    );
    let written: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let mut failures = Vec::new();
    for name in HAND_WRITTEN.iter().filter(|n| written.contains(**n)) {
        failures.push(format!(
            "{name}: listed as hand-written, but make_cases.py writes it"
        ));
    }
    let cases = case_dirs();
    let present: BTreeSet<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    for name in written
        .iter()
        .map(String::as_str)
        .chain(HAND_WRITTEN.iter().copied())
    {
        if !present.contains(name) {
            failures.push(format!(
                "{name}: not in test_data/cases (run `make golden`)"
            ));
        }
    }
    for (name, dir) in &cases {
        if !written.contains(name) && !HAND_WRITTEN.contains(&name.as_str()) {
            failures.push(format!(
                "{name}: make_cases.py does not write it, nor is it in HAND_WRITTEN"
            ));
        }
        for input in ["request.json", "settings.json"] {
            if !dir.join(input).is_file() {
                failures.push(format!("{name}: no {input}"));
            }
        }
    }
    report(
        "directories of test_data/cases",
        &failures,
        cases.len(),
        "`make golden` writes what make_cases.py lists; remove a directory it no longer lists",
    );
}

/// Each test_data/settings/*.json: a settings payload, whether it is
/// valid, and a part of the message.
fn check_settings(path: &Path) -> Result<(), String> {
    let case = read_json(path)?;
    let payload = serde_json::to_vec(&case["settings"]).unwrap();
    let response = istio_job_sidecar_policy::validate_settings(&payload)
        .map_err(|e| format!("validate_settings: {e:?}"))?;
    let response: Value = serde_json::from_slice(&response).map_err(|e| e.to_string())?;
    if response["valid"] != case["valid"] {
        return Err(format!(
            "valid: {} where {}",
            response["valid"], case["valid"]
        ));
    }
    if let Some(message) = case["message"].as_str() {
        let got = response["message"].as_str().unwrap_or_default();
        if !got.contains(message) {
            return Err(format!("{got:?} lacks {message:?}"));
        }
    }
    Ok(())
}

#[test]
fn settings_cases() {
    let files = entries("test_data/settings", |p| {
        p.extension().is_some_and(|e| e == "json")
    });
    let failures: Vec<String> = files
        .iter()
        .filter_map(|(name, path)| check_settings(path).err().map(|e| format!("{name}: {e}")))
        .collect();
    report(
        "settings cases",
        &failures,
        files.len(),
        "test_data/settings",
    );
}

/// The move reproduces Istio's own native injection of the same Job
/// (fixtures/istio-job-kube-injected-*.yaml), compared whole: the proxy's
/// place, `restartPolicy`, startup probe, `preStop` drain hook and the
/// status annotation. Only the key order of YAML does not count, and what
/// Istio does not write: the policy's own record, which must hold the
/// status as Istio wrote it before the move, and the
/// `sidecar.istio.io/nativeSidecar: "true"` the move writes so that a
/// re-injection keeps the native form (Istio renders natively here from
/// its mesh flag), recorded as the move's.
#[test]
fn move_matches_istio_native_injection() {
    let fixture = |name: &str| -> Value {
        let path = root().join("test_data/fixtures").join(name);
        let text = std::fs::read_to_string(path).unwrap();
        let doc = text.split("\n---").next().unwrap();
        serde_yaml::from_str(doc).unwrap()
    };
    let classic = fixture("istio-job-kube-injected-classic.yaml");
    let native = fixture("istio-job-kube-injected-native.yaml");
    let request = json!({
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "operation": "CREATE",
        "object": classic,
    });
    let answer = evaluate(&request, &json!({})).unwrap_or_else(|e| panic!("{e}"));
    let mut moved = answer["mutatedObject"].clone();
    let annotations = moved["spec"]["template"]["metadata"]["annotations"]
        .as_object_mut()
        .unwrap();
    let record = annotations.remove(APPLIED).unwrap();
    let record: Value = serde_json::from_str(record.as_str().unwrap()).unwrap();
    assert_eq!(record["mode"], "nativeSidecar");
    assert_eq!(annotations.remove(NATIVE), Some(json!("true")));
    assert_eq!(record["annotation"], NATIVE);
    assert_eq!(
        record["status"],
        classic["spec"]["template"]["metadata"]["annotations"][STATUS]
    );
    assert_eq!(moved, native);
}
