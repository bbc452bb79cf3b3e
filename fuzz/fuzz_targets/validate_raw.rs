//! `validate` on arbitrary bytes: no panic, always a JSON accept.

#![forbid(unsafe_code)]
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::check_raw(data);
});
