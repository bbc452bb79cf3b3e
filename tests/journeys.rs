//! Every journey of `policy_testkit::journeys` with the policy crate
//! called natively, in every cluster that matters to it (each webhook
//! order, mesh flag and Istio release): the journey as written has what
//! each hop changed, its warnings and each Pod compared with
//! `test_data/journeys/<name>.yaml` (`journey::golden`; `make golden`
//! rewrites them, with every other golden file: `UPDATE_GOLDEN=1` for this
//! test); in every cluster each Pod is judged and each result is a fixed
//! point. A journey of `journeys::ENDS_AS` is compared with the file of
//! the journey it must end as.

use policy_testkit::journey::golden::{golden_form, significant, text_differences};
use policy_testkit::journey::{check, travel, Clusters, Validate};
use policy_testkit::journeys::{self, golden_file, ENDS_AS};
use std::path::{Path, PathBuf};

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/journeys")
}

#[test]
fn every_journey_ends_as_the_readme_says() {
    let mut failures = Vec::new();
    for case in journeys::all() {
        let mut policy = Validate(validate);
        let golden = golden_file(&dir(), case.name);
        if let Err(e) = check(&case, &mut policy, Some(&golden), Clusters::All) {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A file of test_data/journeys/ that no journey is compared with is stale
/// (a journey renamed, removed, or made to end as another): it fails
/// rather than lingers. So does a pair of `ENDS_AS` that names no journey.
#[test]
fn every_golden_journey_has_its_journey() {
    let all = journeys::all();
    let names: Vec<&str> = all.iter().map(|c| c.name).collect();
    for (journey, ends_as) in ENDS_AS {
        assert!(
            names.contains(&journey) && names.contains(&ends_as) && !ENDS_AS.iter().any(|(j, _)| *j == ends_as),
            "ENDS_AS ({journey}, {ends_as}): both must be journeys, the second one with a file of its own"
        );
    }
    let wanted: Vec<PathBuf> = names.iter().map(|n| golden_file(&dir(), n)).collect();
    let mut stale: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && !wanted.contains(p))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    stale.sort();
    assert!(
        stale.is_empty(),
        "files of test_data/journeys/ no journey is compared with (git rm them): {stale:?}"
    );
}

/// The journeys of `ENDS_AS` end as the journey they name, hop for hop and
/// Pod for Pod (the golden form, but for its comments), whatever the files
/// say: `make golden` cannot make them part.
#[test]
fn journeys_that_must_end_alike_do() {
    let all = journeys::all();
    let form = |name: &str| {
        let case = all.iter().find(|c| c.name == name).expect("a journey");
        let trip = travel(case, &mut Validate(validate)).expect("the journey is made");
        golden_form(case, &trip).1
    };
    for (journey, ends_as) in ENDS_AS {
        let (a, b) = (form(ends_as), form(journey));
        assert!(
            significant(&a) == significant(&b),
            "{journey} does not end as {ends_as} (`-` {ends_as}, `+` {journey}):\n{}",
            text_differences(&a, &b)
        );
    }
}
