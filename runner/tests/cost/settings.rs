//! The settings: the operator's, read on every request.
//!
//! Settings are the operator's, not a tenant's, and policy-server calls
//! `validate_settings` once when it loads the policy: invalid settings
//! stop the policy there, so `validate` only ever sees valid ones. Both
//! calls are held to the budget, each beside the ordinary request of the
//! size: `validate_settings` on large invalid settings, `validate` with
//! valid settings of the largest strings.

use crate::budget::*;
use policy_runner::{Policy, Result, ValidationResponse};
use serde_json::{json, Value};

/// The ordinary request of about `size` bytes of payload.
fn benign_of(size: usize) -> Measured {
    let object = ordinary_job(size);
    measure(&payload(
        &request(object),
        &json!({"mode": "nativeSidecar"}),
    ))
}

/// `validate_settings` of `settings` on a fresh metered instance; "accept"
/// stands for "found invalid, with a message".
fn settings_call(settings: &Value) -> (usize, Measured) {
    let bytes = serde_json::to_vec(settings).expect("serializes");
    let policy = Policy::metered(module()).expect("instantiates");
    let answer: Result<Vec<u8>> = policy.call("validate_settings", &bytes);
    let cost = policy.last_cost().expect("cost");
    let answer = answer.map_err(|e| e.to_string()).and_then(|raw| {
        let v: Value = serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
        Ok(ValidationResponse {
            accepted: v["valid"] == false && v["message"].is_string(),
            message: v["message"].as_str().map(str::to_owned),
            code: None,
            mutated_object: None,
            audit_annotations: None,
            warnings: None,
        })
    });
    (bytes.len(), Measured { cost, answer })
}

#[test]
fn huge_settings() {
    let mut failures = Vec::new();
    let (size, hostile) =
        settings_call(&json!({"mode": "nativeSidecar", "fallbackMode": "x".repeat(1 << 20)}));
    failures.extend(judge(
        "validate_settings: a 1 MiB fallbackMode",
        size,
        &hostile,
        &benign_of(size),
        ITEMS,
    ));
    let request = request(injected_job(app_and_proxy(), json!({})));
    let long = "a".repeat(1 << 20);
    for (name, settings) in [
        (
            "a 1 MiB quitUrl",
            json!({"mode": "quitEndpoint", "quitUrl": format!("http://127.0.0.1:15020/{long}")}),
        ),
        (
            "a 1 MiB sidecarContainerName",
            json!({"mode": "nativeSidecar", "sidecarContainerName": long}),
        ),
    ] {
        let hostile_payload = payload(&request, &settings);
        let hostile = measure(&hostile_payload);
        failures.extend(judge(
            &format!("validate: {name}"),
            hostile_payload.len(),
            &hostile,
            &benign_of(hostile_payload.len()),
            ITEMS,
        ));
    }
    assert_all(failures);
}

/// `mode` and `count` members no setting is named.
fn unknown_settings(count: usize) -> Value {
    let mut settings = serde_json::Map::new();
    settings.insert("mode".into(), json!("nativeSidecar"));
    for i in 0..count {
        settings.insert(format!("unknown{i}"), json!(i));
    }
    Value::Object(settings)
}

#[test]
fn settings_of_thousands_of_unknown_members() {
    // The largest settings the API server stores (a ClusterAdmissionPolicy
    // of 1.5 MiB) hold about 80,000 members.
    let mut failures = Vec::new();
    for count in [2_000, 20_000] {
        let (size, hostile) = settings_call(&unknown_settings(count));
        let name = format!("validate_settings: {count} unknown settings");
        failures.extend(judge(&name, size, &hostile, &benign_of(size), ITEMS));
    }
    assert_all(failures);
}
