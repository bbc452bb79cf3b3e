//! A `mode_change` case, as a reader follows it:
//! `mode_change_explain <artifact | scenario.json> [--json]` prints the
//! scenario (the JSON that goes into fuzz/regressions/mode_change/; only
//! that with `--json`), every pass of the check with what it changed, and
//! which law fails, if one does.

#![forbid(unsafe_code)]

use arbitrary::{Arbitrary, Unstructured};
use fuzz_harness::{ModeChange, Scenario};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: mode_change_explain <artifact | scenario.json> [--json]");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let scenario = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) if v.get("kind").is_some() => Scenario::from_json(&v).expect("a scenario"),
        // libfuzzer-sys's `fuzz_target!(|input: ModeChange|)` decodes with
        // `arbitrary_take_rest`.
        _ => ModeChange::arbitrary_take_rest(Unstructured::new(&bytes))
            .expect("decodes")
            .scenario(),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&scenario.to_json()).unwrap()
    );
    if std::env::args().any(|a| a == "--json") {
        return;
    }
    print!("{}", scenario.explain());
    match scenario.run() {
        Ok(checked) if checked.laws => println!("== every law holds"),
        Ok(_) => println!("== every answer checked, A(A(x)) not mutated (the laws do not apply)"),
        Err(e) => println!("== FAILS: {e}"),
    }
}
