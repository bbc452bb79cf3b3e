//! Inputs the fuzzers (fuzz/, RELIABILITY.md) once broke, replayed in every
//! `cargo test` with the checks the fuzz targets make:
//! - fuzz/regressions/validate/*: `validate` payloads (a crash of
//!   validate_structured is stored as the payload it built, so it replays
//!   without the fuzz crate): an accept, JSON, warnings of at most 120
//!   characters, and a mutated object that a second run leaves alone;
//! - fuzz/regressions/validate_settings/*: `validate_settings` payloads:
//!   always a SettingsValidationResponse.

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

fn mutated(answer: &[u8], what: &Path) -> Option<Value> {
    let answer: Value = serde_json::from_slice(answer)
        .unwrap_or_else(|e| panic!("{}: answer is not JSON: {e}", what.display()));
    assert_eq!(answer["accepted"], Value::Bool(true), "{}", what.display());
    for w in answer["warnings"].as_array().into_iter().flatten() {
        let w = w.as_str().unwrap();
        assert!(w.chars().count() <= 120, "{}: {w:?}", what.display());
    }
    answer
        .get("mutated_object")
        .filter(|o| !o.is_null())
        .cloned()
}

#[test]
fn validate_regressions() {
    for path in files("fuzz/regressions/validate") {
        let payload = std::fs::read(&path).unwrap();
        let answer = istio_job_sidecar_policy::validate(&payload).unwrap();
        let Some(object) = mutated(&answer, &path) else {
            continue;
        };
        let mut again: Value = serde_json::from_slice(&payload).unwrap();
        again["request"]["object"] = object;
        let answer = istio_job_sidecar_policy::validate(&serde_json::to_vec(&again).unwrap());
        assert_eq!(
            mutated(&answer.unwrap(), &path),
            None,
            "{}: not idempotent",
            path.display()
        );
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
