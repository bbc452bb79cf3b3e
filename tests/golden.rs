//! Whole-object golden tests, as Istio's injector tests do it: each case in
//! test_data/cases/<case>/ has its input (request.json, settings.json) beside
//! the expected result (expected.json), compared whole.
//!
//! `make golden` (`UPDATE_GOLDEN=1 cargo test --test golden`) rewrites
//! expected.json from what the policy does now; review the diff.

use policy_testkit::names::{APPLIED, NATIVE, STATUS};
use policy_testkit::{check_answer, check_fixed_point, golden, payload, Order};
use rstest::rstest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

/// The policy's answer to one request, sent as policy-server sends it, and
/// the same in every other order of the request's members (the API
/// server's order takes the early-skip path): what expected.json holds.
fn evaluate(request: &Value, settings: &Value) -> Value {
    let answer = validate(&payload(request, Some(settings), Order::PolicyServer));
    for order in [Order::ApiServer, Order::ObjectFirst] {
        let other = validate(&payload(request, Some(settings), order));
        assert!(answer == other, "the answer differs in {order:?} order");
    }
    let answer = check_answer(&answer).unwrap_or_else(|e| panic!("{e}"));
    json!({
        "accepted": true,
        "mutatedObject": answer.mutated,
        "warnings": answer.warnings,
    })
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[rstest]
fn golden_case(#[files("test_data/cases/*/request.json")] request_path: PathBuf) {
    let dir = request_path.parent().unwrap();
    let request = read_json(&request_path);
    let settings = read_json(&dir.join("settings.json"));
    let actual = evaluate(&request, &settings);
    golden(&dir.join("expected.json"), &actual).unwrap_or_else(|e| panic!("{e}"));
    if !actual["mutatedObject"].is_null() {
        check_fixed_point(
            validate,
            &request,
            Some(&settings),
            &actual["mutatedObject"],
            Order::PolicyServer,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
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
/// status annotation. Only the key order of YAML does not count, and what
/// Istio does not write: the policy's own record, which must hold the
/// status as Istio wrote it before the move, and the
/// `sidecar.istio.io/nativeSidecar: "true"` the move writes so that a
/// re-injection keeps the native form (Istio renders natively here from
/// its mesh flag), recorded as the move's.
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
    let mut moved = evaluate(&request, &json!({}))["mutatedObject"].clone();
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

/// The cases above are the directories seen when this file was compiled
/// (rstest's `#[files]`): a directory added since has no expected.json
/// until this file is compiled again and `make golden` runs.
#[test]
fn every_case_has_its_expected_file() {
    if policy_testkit::updating_golden() {
        return; // being written now
    }
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/cases");
    let mut missing: Vec<String> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("request.json").is_file() && !d.join("expected.json").is_file())
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "cases without expected.json: {missing:?} (touch tests/golden.rs, then make golden)"
    );
}
