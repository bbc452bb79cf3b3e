//! Every case in `test_data/` through the built `policy.wasm`, via the same
//! engine Kubewarden uses. A missing or stale module fails, never skips.
//!
//! Requests go in as policy-server sends them; the checks (verdict,
//! warnings, fixed point, golden file) are policy-testkit's, the ones the
//! native tests make. `UPDATE_GOLDEN=1 cargo test -p policy-runner --test
//! wasm_cases` rewrites each `expected.json` from what the module actually
//! does; review the diff.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::built_module;
use policy_runner::{load_request, workspace_root, ModuleAnswer};
use policy_testkit::{check_fixed_point, check_verdict, golden, Order};
use serde_json::{json, Value};

fn read_json(path: &Path) -> Value {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    entries
}

/// The comparable result: what expected.json holds.
fn observed(evaluation: &ModuleAnswer) -> Value {
    let mutated = match &evaluation.patch {
        Some(_) => evaluation
            .patched_object()
            .expect("the patch applies to the request object"),
        None => Value::Null,
    };
    json!({
        "accepted": evaluation.allowed(),
        "mutatedObject": mutated,
        "warnings": evaluation.warnings(),
    })
}

#[test]
fn every_case_matches_its_golden_file_and_is_idempotent() {
    let policy = built_module();
    let cases_dir = workspace_root().join("test_data/cases");
    let cases: Vec<PathBuf> = sorted_entries(&cases_dir)
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    assert!(!cases.is_empty(), "no cases in {}", cases_dir.display());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let request =
            load_request(&case.join("request.json")).unwrap_or_else(|e| panic!("{name}: {e}"));
        let settings = read_json(&case.join("settings.json"));
        if let Err(e) = policy.check_settings(&settings) {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        let evaluation = match policy.validate(&request, &settings) {
            Ok(evaluation) => evaluation,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if let Err(e) = check_verdict(evaluation.allowed(), evaluation.warnings()) {
            failures.push(format!("{name}: {e}"));
        }
        // The answer is the same in the API server's order (kind and
        // operation first: the early-skip path).
        let in_order = |order| {
            let payload = policy_testkit::payload(&request, Some(&settings), order);
            policy.call("validate", &payload).map_err(|e| e.to_string())
        };
        if in_order(Order::ApiServer) != in_order(Order::PolicyServer) {
            failures.push(format!(
                "{name}: the answer depends on the order of the request's members"
            ));
        }
        let actual = observed(&evaluation);
        if let Err(e) = golden(&case.join("expected.json"), &actual) {
            failures.push(format!("{name}: {e}"));
        }
        // Applying the policy to its own output (as patched by the host)
        // must change nothing more.
        if evaluation.patch.is_some() {
            let validate = |payload: &[u8]| {
                policy
                    .call("validate", payload)
                    .unwrap_or_else(|e| panic!("{name}: second pass: {e}"))
            };
            let mutated = &actual["mutatedObject"];
            if let Err(e) = check_fixed_point(
                validate,
                &request,
                Some(&settings),
                mutated,
                Order::PolicyServer,
            ) {
                failures.push(format!("{name}: {e}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_settings_case_gets_the_expected_verdict_and_message() {
    let policy = built_module();
    let dir = workspace_root().join("test_data/settings");
    let files: Vec<PathBuf> = sorted_entries(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(!files.is_empty(), "no settings cases in {}", dir.display());
    let mut failures = Vec::new();
    for file in &files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let case = read_json(file);
        let valid = case["valid"]
            .as_bool()
            .unwrap_or_else(|| panic!("{name}: `valid` must be a boolean"));
        let answer = match policy.validate_settings(&case["settings"]) {
            Ok(answer) => answer,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if answer.valid != valid {
            failures.push(format!(
                "{name}: expected valid={valid}, the module says valid={} ({:?})",
                answer.valid, answer.message
            ));
            continue;
        }
        let want = case.get("message").and_then(Value::as_str);
        let got = answer.message.as_deref().filter(|m| !m.is_empty());
        let ok = match (want, got) {
            (Some(want), Some(got)) => got.contains(want),
            (Some(_), None) => false,
            // Valid settings carry no message; for invalid ones without an
            // expected substring, any message will do.
            (None, got) => !valid || got.is_none(),
        };
        if !ok {
            failures.push(format!(
                "{name}: expected message containing {want:?}, got {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} settings cases failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
