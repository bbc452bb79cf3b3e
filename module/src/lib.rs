//! The policy's wasm module: the one function a waPC host calls first,
//! `wapc_init`, registering the policy's entry points
//! (istio_job_sidecar_policy, src/lib.rs).
//!
//! The host finds `wapc_init` by its exported name, which needs
//! `#[no_mangle]`; the `unsafe_code` lint counts that attribute (two
//! crates exporting one name is undefined at link time), so it lives here,
//! alone, and the policy crate forbids unsafe code outright. Nothing else
//! is here: no code of the policy runs outside its own crate.

#![deny(unsafe_code)]

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn wapc_init() {
    use istio_job_sidecar_policy as policy;
    wapc_guest::register_function("validate", policy::validate);
    wapc_guest::register_function("validate_settings", policy::validate_settings);
    wapc_guest::register_function("protocol_version", policy::protocol_version);
}
