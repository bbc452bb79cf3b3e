//! Every journey of `policy_testkit::journeys` through the built
//! `policy.wasm` in the engine Kubewarden uses (`host::Policy`): each hop's
//! request as policy-server sends it, the answer as policy-server gives
//! it to the API server, judged in every cluster as the native run is and
//! compared with the same golden file, `test_data/journeys/<name>.yaml`
//! (`journeys::golden_file`).

mod common;

use common::built_module;
use policy_runner::workspace_root;
use policy_testkit::journey::{check, Clusters};
use policy_testkit::journeys::{self, golden_file};

#[test]
fn every_journey_through_the_module_as_natively() {
    // The module in the engine, asked as every caller asks a policy
    // (`kube_model::policy::Policy`): the answer policy-server sends.
    let mut policy = built_module();
    let dir = workspace_root().join("test_data/journeys");
    let mut failures = Vec::new();
    for case in journeys::all() {
        let golden = golden_file(&dir, case.name);
        if let Err(e) = check(&case, &mut policy, Some(&golden), Clusters::All) {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
