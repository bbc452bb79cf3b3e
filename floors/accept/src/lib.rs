//! Benchmark floor (a): the cheapest possible policy. It never reads its
//! payload, so timing it measures only the waPC call through the host.

// No unsafe code; the lint also counts `#[no_mangle]`, allowed on the one
// function the waPC host calls the module by.
#![deny(unsafe_code)]

use wapc_guest::prelude::*;

// The SDK's ValidationResponse for a plain accept, pre-serialized so the
// floor does no work at all beyond copying bytes back to the host.
const ACCEPT: &[u8] = br#"{"accepted":true,"message":null,"code":null,"mutated_object":null,"audit_annotations":null,"warnings":null}"#;

#[allow(unsafe_code)] // the waPC host finds `wapc_init` by this name
#[no_mangle]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version);
}

fn validate(_payload: &[u8]) -> CallResult {
    Ok(ACCEPT.to_vec())
}

fn validate_settings(_payload: &[u8]) -> CallResult {
    Ok(br#"{"valid":true,"message":null}"#.to_vec())
}

fn protocol_version(_payload: &[u8]) -> CallResult {
    Ok(br#""v1""#.to_vec())
}
