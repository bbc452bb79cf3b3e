//! Whole-object golden tests, as Istio's injector tests do it: each case in
//! test_data/cases/<case>/ has its input (request.json, settings.json) beside
//! the expected result (expected.json), compared whole. The cases are the
//! list of `policy_testkit::cases`, each a test of its own named as its
//! directory, so `cargo test --test golden -- <case>` runs one; the checks
//! of the whole directory (no stale case) and of test_data/settings are
//! tests of their own.
//!
//! A case's committed input must be what the list builds (a second pass's
//! built from its first pass's answer, computed in the same run), and its
//! answer what expected.json says. `UPDATE_GOLDEN=1` (`make golden`, with
//! every other golden file of the repository) rewrites the inputs and
//! expected.json from what the list and the policy do now; review the diff.

use libtest_mimic::{Arguments, Failed, Trial};
use policy_testkit::cases::Cases;
use policy_testkit::names::{APPLIED, NATIVE, STATUS};
use policy_testkit::{check_answer, check_fixed_point, golden, payload, updating_golden, Order};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A check of the whole directory, or of what is not a case.
type SuiteCheck = fn(&Cases) -> Result<(), String>;

fn main() {
    let args = Arguments::from_args();
    let cases = Arc::new(Cases::all());
    let mut trials: Vec<Trial> = cases
        .names()
        .map(|name| {
            let (cases, name) = (Arc::clone(&cases), name.to_owned());
            Trial::test(name.clone(), move || Ok(check_case(&cases, &name)?))
        })
        .collect();
    let suite: [(&str, SuiteCheck); 3] = [
        ("no_stale_cases", no_stale_cases),
        ("settings_cases", |_| settings_cases()),
        ("move_matches_istio_native_injection", |_| {
            move_matches_istio_native_injection()
        }),
    ];
    for (name, check) in suite {
        let cases = Arc::clone(&cases);
        trials.push(Trial::test(name, move || {
            check(&cases).map_err(Failed::from)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

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
fn entries(dir: &str, keep: fn(&Path) -> bool) -> Result<Vec<(String, PathBuf)>, String> {
    let dir = root().join(dir);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if keep(&path) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            found.push((name, path));
        }
    }
    found.sort();
    if found.is_empty() {
        return Err(format!("nothing in {}", dir.display()));
    }
    Ok(found)
}

/// Fails with every failure, one a paragraph, and what to do.
fn report(what: &str, failures: &[String], total: usize, hint: &str) -> Result<(), String> {
    if failures.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} failing among {total} {what} ({hint}):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    ))
}

/// A committed input file is the text the list builds, or (`UPDATE_GOLDEN=1`)
/// becomes it.
fn input_file(path: &Path, built: &str) -> Result<(), String> {
    if updating_golden() {
        return std::fs::write(path, built).map_err(|e| format!("{}: {e}", path.display()));
    }
    let committed = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (a new case? `make golden` writes its input)",
            path.display()
        )
    })?;
    if committed == built {
        return Ok(());
    }
    let (committed_value, built_value) = (
        serde_json::from_str::<Value>(&committed).unwrap_or(Value::Null),
        serde_json::from_str::<Value>(built).unwrap_or(Value::Null),
    );
    Err(format!(
        "{} is not what policy_testkit::cases builds (`make golden` rewrites it; patch from the file to the list's):\n{}",
        path.display(),
        if committed_value == built_value {
            "    the same JSON, written otherwise".to_owned()
        } else {
            policy_testkit::differences(&committed_value, &built_value)
        }
    ))
}

/// One case: its committed input is what the list builds, its answer is
/// expected.json (or, `UPDATE_GOLDEN=1`, both become so) and, when a
/// mutation, a fixed point.
fn check_case(cases: &Cases, name: &str) -> Result<(), String> {
    let dir = root().join("test_data/cases").join(name);
    let inputs = cases.input(name)?;
    if updating_golden() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    input_file(&dir.join("request.json"), &inputs.request_file())?;
    input_file(&dir.join("settings.json"), &inputs.settings_file())?;
    let request = inputs.request.to_value();
    let settings = inputs.settings.to_value();
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

/// The case directories are those of the list, each with its request.json,
/// settings.json and expected.json: a directory the list does not name (a
/// case removed or renamed, left behind with its old answer) is stale and
/// fails.
fn no_stale_cases(cases: &Cases) -> Result<(), String> {
    let listed: BTreeSet<&str> = cases.names().collect();
    let dirs = entries("test_data/cases", Path::is_dir)?;
    let mut failures = Vec::new();
    for (name, dir) in &dirs {
        if !listed.contains(name.as_str()) {
            failures.push(format!(
                "{name}: policy_testkit::cases does not list it (remove the directory, or add the case to the list)"
            ));
            continue;
        }
        for file in ["request.json", "settings.json", "expected.json"] {
            if !dir.join(file).is_file() && !updating_golden() {
                failures.push(format!("{name}: no {file}"));
            }
        }
    }
    let present: BTreeSet<&str> = dirs.iter().map(|(n, _)| n.as_str()).collect();
    if !updating_golden() {
        for name in listed.difference(&present) {
            failures.push(format!("{name}: not in test_data/cases"));
        }
    }
    report(
        "directories of test_data/cases",
        &failures,
        dirs.len(),
        "`make golden` writes every case of the list",
    )
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

fn settings_cases() -> Result<(), String> {
    let files = entries("test_data/settings", |p| {
        p.extension().is_some_and(|e| e == "json")
    })?;
    let failures: Vec<String> = files
        .iter()
        .filter_map(|(name, path)| check_settings(path).err().map(|e| format!("{name}: {e}")))
        .collect();
    report(
        "settings cases",
        &failures,
        files.len(),
        "test_data/settings",
    )
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
fn move_matches_istio_native_injection() -> Result<(), String> {
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
    let answer = evaluate(&request, &json!({}))?;
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
    Ok(())
}
