//! Every journey of `policy_testkit::journeys` with the policy crate
//! called natively, in every cluster that matters to it (each webhook
//! order, mesh flag and Istio release): the journey as written has each
//! hop's patch and warnings and each Pod compared whole with
//! `test_data/journeys/<name>.json` (`make golden` rewrites them, with
//! every other golden file: `UPDATE_GOLDEN=1` for this test); in every
//! cluster each Pod is judged and each result is a fixed point.

use policy_testkit::journey::{check, Clusters, Validate};
use policy_testkit::journeys;
use std::path::Path;

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

#[test]
fn every_journey_ends_as_the_readme_says() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/journeys");
    let mut failures = Vec::new();
    for case in journeys::all() {
        let mut policy = Validate(validate);
        let golden = dir.join(format!("{}.json", case.name));
        if let Err(e) = check(&case, &mut policy, Some(&golden), Clusters::All) {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A golden file no journey writes is stale (a journey renamed or
/// removed): it fails rather than lingers.
#[test]
fn every_golden_journey_has_its_journey() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/journeys");
    let names: Vec<String> = journeys::all()
        .iter()
        .map(|c| format!("{}.json", c.name))
        .collect();
    let mut stale: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".json") && !names.contains(f))
        .collect();
    stale.sort();
    assert!(
        stale.is_empty(),
        "golden journeys no journey writes: {stale:?}"
    );
}
