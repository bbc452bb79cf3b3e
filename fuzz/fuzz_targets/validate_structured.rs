//! Admission requests of the handled kinds assembled from arbitrary parts
//! (see `Input`): no panic, always a JSON accept, and a mutated object sent
//! again is not mutated again.

#![forbid(unsafe_code)]
#![no_main]

use fuzz_harness::{check_structured, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: Input| {
    check_structured(&input);
});
