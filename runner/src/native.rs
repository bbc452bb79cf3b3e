//! The policy crate linked into this program: the same Rust code that
//! `policy.wasm` is built from, called directly instead of through waPC, with
//! the patch computed as Kubewarden computes it (`admission::ModuleAnswer`).
//! It answers as the module does but is no substitute for it: the wasm-level
//! tests run the module in the engine.

use serde_json::Value;

use crate::admission::ModuleAnswer;
use crate::error::{Error, Result};
use crate::protocol::{calls, SettingsValidation};

/// `istio_job_sidecar_policy`'s waPC functions, called natively.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativePolicy;

/// A waPC function of the policy crate (wapc-guest's `CallResult`): bytes in,
/// bytes out, or an error.
type GuestFunction =
    fn(&[u8]) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;

impl NativePolicy {
    /// What the policy crate's waPC function `name` answers; an error it
    /// returns becomes `Error::Call`, as a guest error does in the engine,
    /// and so does a function the policy does not export.
    pub fn call(&self, name: &str, payload: &[u8]) -> Result<Vec<u8>> {
        let function: GuestFunction = match name {
            "protocol_version" => istio_job_sidecar_policy::protocol_version,
            "validate_settings" => istio_job_sidecar_policy::validate_settings,
            "validate" => istio_job_sidecar_policy::validate,
            _ => |_: &[u8]| Err("no such function".into()),
        };
        function(payload).map_err(|e| Error::Call {
            function: name.to_owned(),
            message: e.to_string(),
        })
    }

    /// Answer the policy's list of the cluster's Nodes on this thread with
    /// `list` (the JSON of a `v1` List, as Kubewarden's host gives a
    /// context-aware policy); `None`: no cluster context.
    pub fn set_nodes(&self, list: Option<Vec<u8>>) {
        let host: Option<istio_job_sidecar_policy::host::NativeHost> = list.map(|list| {
            let nodes = std::sync::Mutex::new(Some(list));
            std::rc::Rc::new(
                move |binding: &str, namespace: &str, operation: &str, payload: &[u8]| match (
                    binding, namespace, operation,
                ) {
                    ("kubewarden", "kubernetes", "list_resources_all") => {
                        crate::protocol::node_list(&nodes, payload)
                    }
                    _ => Err(format!(
                        "no host capability {binding}/{namespace}/{operation}"
                    )),
                },
            ) as istio_job_sidecar_policy::host::NativeHost
        });
        istio_job_sidecar_policy::host::set_native(host);
    }

    /// `protocol_version`, as the host asks it first.
    pub fn protocol_version(&self) -> Result<String> {
        calls::protocol_version(|f, p| self.call(f, p))
    }

    /// `validate_settings`: the policy's own answer.
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        calls::validate_settings(|f, p| self.call(f, p), settings)
    }

    /// `validate` on an AdmissionRequest, with the patch Kubewarden computes.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<ModuleAnswer> {
        let response = calls::validate(|f, p| self.call(f, p), request, settings)?;
        // The policy logs nothing through the host; natively there is no host.
        Ok(ModuleAnswer::new(request, response, Vec::new()))
    }
}

// The policy crate natively, asked as every caller asks a policy, with the
// answer the module gives in the engine.
crate::answers_as_policy!(NativePolicy);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_the_policy_does_not_export_is_a_call_error() {
        match NativePolicy.call("validate_raw", b"{}") {
            Err(Error::Call { function, message }) => {
                assert_eq!(
                    (function.as_str(), message.as_str()),
                    ("validate_raw", "no such function")
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(NativePolicy.protocol_version().is_ok());
    }
}
