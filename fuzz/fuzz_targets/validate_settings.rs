//! `validate_settings` on arbitrary bytes: always a SettingsValidationResponse,
//! and `validate` agrees with it on which settings are invalid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    istio_job_sidecar_policy_fuzz::check_settings(data);
});
