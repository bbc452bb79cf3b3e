//! Benchmark floor (c): the least a mutating SDK-based policy does. It parses
//! the payload into the SDK's `ValidationRequest` (as floor (b)), adds one
//! annotation to the object's own `metadata.annotations` (not to a pod
//! template: the cheapest place, one JSON Patch `add`) and returns the whole
//! object with `mutate_request`. Timed with the host's work on the answer
//! (policy-server clones the returned object, diffs it against the request's
//! and encodes the patch), it is the floor a mutation is compared to.

// No unsafe code; the lint also counts `#[no_mangle]`, allowed on the one
// function the waPC host calls the module by.
#![deny(unsafe_code)]

use guest::prelude::*;
use kubewarden_policy_sdk::{
    mutate_request, protocol_version_guest, request::ValidationRequest,
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
    let mut object = request.request.object;
    // Indexing a missing key (or null) as a map creates it.
    object["metadata"]["annotations"]["floor.example.com/mutated"] =
        serde_json::Value::String("true".to_owned());
    mutate_request(object)
}

fn validate_settings(_payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&SettingsValidationResponse {
        valid: true,
        message: None,
    })?)
}
