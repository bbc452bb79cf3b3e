//! Benchmark floor (b): what every SDK-based policy pays before it decides
//! anything: parse the whole payload into the SDK's `ValidationRequest`
//! (typed admission request, object kept as a `serde_json::Value`), then accept.

// No unsafe code; the lint also counts `#[no_mangle]`, allowed on the one
// function the waPC host calls the module by.
#![deny(unsafe_code)]

use guest::prelude::*;
use kubewarden_policy_sdk::{
    accept_request, protocol_version_guest, request::ValidationRequest,
    settings::SettingsValidationResponse, wapc_guest as guest,
};

#[allow(unsafe_code)] // the waPC host finds `wapc_init` by this name
#[no_mangle]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    let request: ValidationRequest<serde_json::Value> = ValidationRequest::new(payload)?;
    // Keep the parse from being optimized away.
    std::hint::black_box(&request);
    accept_request()
}

fn validate_settings(_payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&SettingsValidationResponse {
        valid: true,
        message: None,
    })?)
}
