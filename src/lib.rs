//! Kubewarden policy: the Istio sidecar of Jobs, CronJobs and run-to-completion
//! Pods ends when the work is done. This file holds the waPC entry points
//! (the module, module/, exports them to the host); `policy::evaluate` is
//! where a request is answered.

#![forbid(unsafe_code)]

pub mod decide;
pub mod host;
pub mod json;
pub mod modes;
pub mod names;
pub mod native_gate;
pub mod object;
pub mod policy;
pub mod record;
pub mod request;
pub mod response;
pub mod settings;
pub mod warning;
pub mod workload;

use wapc_guest::CallResult;

/// Never an error: every request, however malformed, gets an accept (with a
/// warning when something was off). A mutating helper must not deny pods.
pub fn validate(payload: &[u8]) -> CallResult {
    Ok(policy::evaluate(payload))
}

/// Always a `SettingsValidationResponse`, so kwctl and policy-server show our
/// message rather than a deserialization error.
pub fn validate_settings(payload: &[u8]) -> CallResult {
    let message = settings::Settings::from_json(payload).err();
    Ok(response::settings(message.as_deref()))
}

/// The waPC protocol the policy speaks: Kubewarden's `v1`.
pub fn protocol_version(_payload: &[u8]) -> CallResult {
    Ok(response::PROTOCOL_VERSION.to_vec())
}
