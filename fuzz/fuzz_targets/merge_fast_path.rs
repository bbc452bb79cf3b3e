//! Differential: the exitOnJobCompletion merge without a YAML parser
//! (`merge_fast`) answers, wherever it answers at all, exactly as the
//! YAML-verified path (`merge_verified`) does.

#![forbid(unsafe_code)]
#![no_main]

use fuzz_harness::{check_merge, ConfigText};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: ConfigText| {
    check_merge(&input.text());
});
