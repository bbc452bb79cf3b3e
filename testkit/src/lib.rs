//! Shared by every test of the policy: the golden, property and fuzz
//! regression tests of the policy crate, the fuzz targets, and the
//! wasm-level tests of the runner, which call the same checks on the
//! native policy or on `policy.wasm`. The models of the systems around the
//! policy (the AdmissionRequest and its payload, the engine's patch, the
//! controllers, the API server, Istio's injector) are kube-model's, shared
//! with the operator's tool; they are re-exported here.
//!
//! - `check_fixed_point`: the policy's output, sent again, is not mutated.
//! - `golden`: compare with, or (`UPDATE_GOLDEN=1`) rewrite, a golden file.
//! - `require_tools`, `tool_missing`: whether a test whose tool is missing
//!   fails (`REQUIRE_TOOLS=1`) or reports itself skipped.
//! - `names`: the annotation and label names, from the policy crate.
//! - `laws`: the laws of a change of mode, checked on passes of the policy
//!   (golden, generated or fuzzed); `mode_change`: where a pass says its
//!   mode and what a user edits between passes, for the generated and the
//!   fuzzed scenarios alike.
//! - `journey`, `journeys`: a workload followed from CronJob to the Pod the
//!   kubelet runs, through the controllers (`controllers`), the API server
//!   (`kube`) and Istio's injector (`istio`), and the journeys every build
//!   is held to.

#![forbid(unsafe_code)]

pub mod cases;
pub mod journey;
pub mod journeys;
pub mod laws;
pub mod mode_change;
pub mod names;

// The models and the engine's steps live in kube-model, shared with the
// operator's tool and the runner; the tests reach them from here too.
pub use kube_model::admission::{payload, Order};
pub use kube_model::answer::{check_answer, check_verdict, differences, Answer, MAX_WARNING_CHARS};
pub use kube_model::{admission, controllers, go_yaml, istio, json, kube, workload};

use serde_json::Value;
use std::path::Path;

/// The policy's own output is a fixed point: `mutated`, sent again as the
/// object of the same request, is accepted without a mutation. `validate`
/// runs the policy on a payload (natively or through `policy.wasm`).
pub fn check_fixed_point(
    validate: impl Fn(&[u8]) -> Vec<u8>,
    request: &Value,
    settings: Option<&Value>,
    mutated: &Value,
    order: Order,
) -> Result<(), String> {
    let mut again = request.clone();
    again["object"] = mutated.clone();
    let answer = check_answer(&validate(&payload(&again, settings, order)))?;
    match answer.mutated {
        None => Ok(()),
        Some(second) => Err(format!(
            "not a fixed point: a second run changed the object again:\n{}",
            differences(mutated, &second)
        )),
    }
}

/// Whether golden files are being rewritten (`UPDATE_GOLDEN=1`, as
/// `make golden` sets it) rather than compared.
pub fn updating_golden() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file at `path`, or rewrites the file
/// when `updating_golden()`. The error lists what differs, as JSON Patch
/// operations from the file to `actual`.
pub fn golden(path: &Path, actual: &Value) -> Result<(), String> {
    if updating_golden() {
        let text = serde_json::to_string_pretty(actual).unwrap_or_default() + "\n";
        return std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (run `make golden` and review the diff)",
            path.display()
        )
    })?;
    let expected: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if &expected == actual {
        Ok(())
    } else {
        Err(format!(
            "{} differs from the policy's result (patch from the file to the result):\n{}",
            path.display(),
            differences(&expected, actual)
        ))
    }
}

/// Whether a test that needs a tool the machine lacks (kubectl, a shell,
/// an HTTP client) fails rather than skips: `REQUIRE_TOOLS=1`, as CI
/// (`.ci/run`) and the bats files read it, so that a run with every tool
/// installed cannot pass by skipping. Any other value, or none, skips.
pub fn require_tools() -> bool {
    std::env::var_os("REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// A test cannot run for want of a tool (or of the version it needs):
/// `why` says what is missing and how to install it. With
/// `REQUIRE_TOOLS=1` the test fails here, with `why`; otherwise this
/// returns and the caller reports itself skipped in its own words (its
/// `skipped:` or `SKIPPED:` line) and returns.
#[track_caller]
pub fn tool_missing(why: impl std::fmt::Display) {
    assert!(
        !require_tools(),
        "REQUIRE_TOOLS=1, so a missing tool fails the test: {why}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_second_mutation_is_not_a_fixed_point() {
        let request = json!({"kind": {}, "object": {}});
        let mutating = |_: &[u8]| br#"{"accepted":true,"mutated_object":{"b":2}}"#.to_vec();
        let accepting = |_: &[u8]| br#"{"accepted":true}"#.to_vec();
        let mutated = json!({"b": 1});
        assert!(
            check_fixed_point(mutating, &request, None, &mutated, Order::PolicyServer).is_err()
        );
        assert!(
            check_fixed_point(accepting, &request, None, &mutated, Order::PolicyServer).is_ok()
        );
    }
}
