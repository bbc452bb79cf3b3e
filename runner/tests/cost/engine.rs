//! The metered engine itself.

use crate::budget::*;
use policy_runner::Policy;
use serde_json::{json, Value};

// --- the metered engine itself -------------------------------------------

#[test]
fn the_metered_engine_answers_as_policy_servers() {
    // Every golden case, byte for byte the same answer from the metered
    // engine as from policy-server's.
    let ordinary = crate::common::built_module();
    let cases = policy_runner::workspace_root().join("test_data/cases");
    let mut compared = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&cases)
        .expect("cases")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for case in entries {
        let Ok(request) = policy_runner::load_request(&case.join("request.json")) else {
            continue;
        };
        let settings: Value = std::fs::read_to_string(case.join("settings.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!({}));
        let bytes = payload(&request, &settings);
        let expected = ordinary
            .call("validate", &bytes)
            .expect("policy-server's engine answers");
        let metered = Policy::metered(module()).expect("instantiates");
        let got = metered
            .call("validate", &bytes)
            .expect("the metered engine answers");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected),
            "{}",
            case.display()
        );
        let cost = metered.last_cost().expect("cost");
        assert!(cost.fuel > 0 && cost.pages_after >= cost.pages_before);
        compared += 1;
    }
    assert!(compared > 50, "only {compared} cases compared");
}

#[test]
fn fuel_is_deterministic_and_stops_a_call() {
    let bytes = payload(
        &request(ordinary_job(64 << 10)),
        &json!({"mode": "nativeSidecar"}),
    );
    let first = measure(&bytes);
    let second = measure(&bytes);
    assert_eq!(first.cost, second.cost);
    assert!(first.answer.is_ok(), "{}", first.summary());
    // With less fuel than it needs the call stops, as a guest error.
    let short = module().with_fuel(first.cost.fuel / 2);
    let policy = Policy::metered(&short).expect("instantiates");
    let error = policy.call("validate", &bytes).expect_err("stopped");
    assert!(error.to_string().contains("ran out of fuel"), "{error}");
    let cost = policy.last_cost().expect("cost");
    assert!(
        cost.out_of_fuel && cost.fuel == first.cost.fuel / 2,
        "{cost:?}"
    );
}
