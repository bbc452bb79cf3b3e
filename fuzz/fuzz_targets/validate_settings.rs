//! `validate_settings` on arbitrary bytes: always a SettingsValidationResponse,
//! and `validate` agrees with it on which settings are invalid.

#![forbid(unsafe_code)]
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::check_settings(data);
});
