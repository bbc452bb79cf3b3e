//! The laws of a change of mode on generated workloads (see
//! `fuzz/harness/src/mode_change.rs`): for modes A and B, A(A(x)) is not mutated,
//! B(A(x)) == B(x) and disabled(A(x)) == disabled(x), every answer an
//! accept with warnings of at most 120 characters.

#![forbid(unsafe_code)]
#![no_main]

use fuzz_harness::{check_scenario, ModeChange};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: ModeChange| {
    check_scenario(&input.scenario());
});
