//! `validate` on arbitrary bytes: no panic, always a JSON accept.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    istio_job_sidecar_policy_fuzz::check_raw(data);
});
