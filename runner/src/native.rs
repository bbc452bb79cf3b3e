//! The policy crate linked into this program: the same Rust code that
//! `policy.wasm` is built from, called directly instead of through waPC, with
//! the patch computed as Kubewarden computes it (`admission::ModuleAnswer`).
//! It answers as the module does but is no substitute for it: the wasm-level
//! tests run the module in the engine.

use serde_json::Value;

use crate::admission::ModuleAnswer;
use crate::error::{Error, Result};
use crate::protocol::{parse_answer, validate_payload, SettingsValidation, ValidationResponse};

/// `istio_job_sidecar_policy`'s waPC functions, called natively.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativePolicy;

/// A waPC function of the policy crate (wapc-guest's `CallResult`): bytes in,
/// bytes out, or an error.
type GuestFunction =
    fn(&[u8]) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;

impl NativePolicy {
    /// What the function answers; an error it returns becomes `Error::Call`,
    /// as a guest error does in the engine.
    fn call(&self, name: &str, function: GuestFunction, payload: &[u8]) -> Result<Vec<u8>> {
        function(payload).map_err(|e| Error::Call {
            function: name.to_owned(),
            message: e.to_string(),
        })
    }

    /// `protocol_version`, as the host asks it first.
    pub fn protocol_version(&self) -> Result<String> {
        let raw = self.call(
            "protocol_version",
            istio_job_sidecar_policy::protocol_version,
            &[],
        )?;
        let value: Value = parse_answer("protocol_version", &raw)?;
        Ok(match value {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    /// `validate_settings`: the policy's own answer.
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        let payload = serde_json::to_vec(settings).map_err(|e| Error::Input(e.to_string()))?;
        let raw = self.call(
            "validate_settings",
            istio_job_sidecar_policy::validate_settings,
            &payload,
        )?;
        parse_answer("validate_settings", &raw)
    }

    /// `validate` on an AdmissionRequest, with the patch Kubewarden computes.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<ModuleAnswer> {
        let payload = validate_payload(request, settings)?;
        let raw = self.call("validate", istio_job_sidecar_policy::validate, &payload)?;
        let response: ValidationResponse = parse_answer("validate", &raw)?;
        // The policy logs nothing through the host; natively there is no host.
        Ok(ModuleAnswer::new(request, response, Vec::new()))
    }
}

/// The policy crate natively, asked as every caller asks a policy, with
/// the answer the module gives in the engine.
impl kube_model::policy::Policy for NativePolicy {
    fn admit(
        &mut self,
        request: &Value,
        settings: &Value,
    ) -> std::result::Result<kube_model::policy::Admitted, String> {
        let evaluation =
            NativePolicy::validate(self, request, settings).map_err(|e| e.to_string())?;
        crate::admitted(&evaluation).map_err(|e| e.to_string())
    }

    fn validate_settings(
        &mut self,
        settings: &Value,
    ) -> std::result::Result<kube_model::policy::Settings, String> {
        NativePolicy::validate_settings(self, settings)
            .map(crate::settings_answer)
            .map_err(|e| e.to_string())
    }
}
