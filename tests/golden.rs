//! Whole-object golden tests, as Istio's injector tests do it: each case in
//! test_data/cases/<case>/ has its input (request.json, settings.json) beside
//! the expected result (expected.json), compared whole.
//!
//! `UPDATE_GOLDEN=1 cargo test --test golden` (or `make golden`) rewrites
//! expected.json from what the policy does now; review the diff.

use rstest::rstest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The policy's answer to one request: what expected.json holds.
fn evaluate(request: &Value, settings: &Value) -> Value {
    let payload = serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap();
    let response = istio_job_sidecar_policy::validate(&payload).expect("validate never errors");
    let response: Value = serde_json::from_slice(&response).expect("response is JSON");
    json!({
        "accepted": response["accepted"],
        "mutatedObject": response["mutated_object"],
        "warnings": response["warnings"].as_array().cloned().unwrap_or_default(),
    })
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[rstest]
fn golden(#[files("test_data/cases/*/request.json")] request_path: PathBuf) {
    let dir = request_path.parent().unwrap();
    let request = read_json(&request_path);
    let settings = read_json(&dir.join("settings.json"));
    let actual = evaluate(&request, &settings);
    let expected_path = dir.join("expected.json");

    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&expected_path, pretty(&actual)).unwrap();
    } else {
        assert!(
            expected_path.exists(),
            "{} is missing: run `make golden` and review it",
            expected_path.display()
        );
        let expected = read_json(&expected_path);
        assert!(
            actual == expected,
            "{} differs from the policy's result:\n{}",
            expected_path.display(),
            pretty(&actual)
        );
    }

    // The policy never rejects, and its own output is a fixed point.
    assert_eq!(actual["accepted"], json!(true));
    if let Some(mutated) = actual["mutatedObject"].as_object() {
        let mut again = request.clone();
        again["object"] = Value::Object(mutated.clone());
        let second = evaluate(&again, &settings);
        assert_eq!(
            second["mutatedObject"],
            Value::Null,
            "{}: a second run changed the output again",
            dir.display()
        );
    }
}

#[rstest]
fn settings_cases(#[files("test_data/settings/*.json")] path: PathBuf) {
    let case = read_json(&path);
    let payload = serde_json::to_vec(&case["settings"]).unwrap();
    let response = istio_job_sidecar_policy::validate_settings(&payload).unwrap();
    let response: Value = serde_json::from_slice(&response).unwrap();
    assert_eq!(response["valid"], case["valid"], "{}", path.display());
    if let Some(message) = case["message"].as_str() {
        let got = response["message"].as_str().unwrap_or_default();
        assert!(
            got.contains(message),
            "{}: {got:?} lacks {message:?}",
            path.display()
        );
    }
}

/// The move reproduces Istio's own native injection of the same Job
/// (fixtures/istio-job-kube-injected-*.yaml), compared whole: the proxy's
/// place, `restartPolicy`, startup probe, `preStop` drain hook and the
/// status annotation. Only the key order of YAML does not count.
#[test]
fn move_matches_istio_native_injection() {
    let fixture = |name: &str| -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("test_data/fixtures")
            .join(name);
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
    let moved = evaluate(&request, &json!({}))["mutatedObject"].clone();
    assert_eq!(moved, native);
}
