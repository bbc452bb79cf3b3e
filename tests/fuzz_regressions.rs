//! Inputs the fuzzers (fuzz/, RELIABILITY.md) once broke, replayed in every
//! `cargo test` with the checks the fuzz targets make:
//! - fuzz/regressions/validate/*: `validate` payloads (a crash of
//!   validate_structured is stored as the payload it built, so it replays
//!   without the fuzz crate): an accept, JSON, warnings of at most 120
//!   characters, and a mutated object that a second run leaves alone;
//! - fuzz/regressions/validate_settings/*: `validate_settings` payloads:
//!   always a SettingsValidationResponse.

use policy_testkit::{check_answer, check_fixed_point, Order};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n != "README.md" && !n.starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

#[test]
fn validate_regressions() {
    for path in files("fuzz/regressions/validate") {
        let payload = std::fs::read(&path).unwrap();
        let answer =
            check_answer(&validate(&payload)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Some(mutated) = answer.mutated else {
            continue;
        };
        let sent = policy_testkit::json::from_slice(&payload).unwrap();
        check_fixed_point(
            validate,
            &sent["request"],
            sent.get("settings"),
            &mutated,
            Order::PolicyServer,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn validate_settings_regressions() {
    for path in files("fuzz/regressions/validate_settings") {
        let payload = std::fs::read(&path).unwrap();
        let answer = istio_job_sidecar_policy::validate_settings(&payload).unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert!(answer["valid"].is_boolean(), "{}", path.display());
    }
}
