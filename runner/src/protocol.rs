//! What a Kubewarden policy answers, as the guest serializes it, and the
//! payload the host sends: shared by the wasm engine (`host`) and the policy
//! linked natively (`native`), so neither needs the other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The SDK's `ValidationResponse`, as the guest serializes it. Kept as our own
/// type so the host does not pull the SDK (and k8s-openapi) in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

impl ValidationResponse {
    /// An accept, returning `mutated_object` when given.
    pub fn accept(mutated_object: Option<Value>) -> Self {
        ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object,
            audit_annotations: None,
            warnings: None,
        }
    }
}

/// The SDK's `SettingsValidationResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsValidation {
    pub valid: bool,
    #[serde(default)]
    pub message: Option<String>,
}

/// One host call the guest made to log something
/// (binding `kubewarden`, namespace `tracing`, operation `log`).
#[derive(Debug, Clone, PartialEq)]
pub struct GuestLog {
    pub level: String,
    pub message: String,
    /// The whole event as the guest sent it (JSON when it parses).
    pub raw: Value,
}

impl GuestLog {
    pub fn from_payload(payload: &[u8]) -> GuestLog {
        let raw = serde_json::from_slice::<Value>(payload)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(payload).into_owned()));
        let field = |name: &str| raw.get(name).and_then(Value::as_str).map(str::to_owned);
        GuestLog {
            level: field("level").unwrap_or_else(|| "info".to_owned()),
            message: field("message")
                .or_else(|| field("msg"))
                .unwrap_or_else(|| match &raw {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }),
            raw: raw.clone(),
        }
    }
}

/// The `validate` payload as policy-server and kwctl write it: from a
/// `serde_json::Value`, so every object's members in alphabetical order
/// (kube-model, shared with the policy's own tests and the operator's tool).
pub fn validate_payload(request: &Value, settings: &Value) -> Result<Vec<u8>> {
    Ok(kube_model::admission::payload(
        request,
        Some(settings),
        kube_model::admission::Order::PolicyServer,
    ))
}

/// A function's answer read as the protocol's JSON; anything else is
/// `Error::BadResponse` with the start of what was answered.
pub fn parse_answer<T: serde::de::DeserializeOwned>(function: &str, raw: &[u8]) -> Result<T> {
    serde_json::from_slice(raw).map_err(|e| Error::BadResponse {
        function: function.to_owned(),
        message: format!("{e}; the module answered: {}", preview(raw)),
    })
}

/// Kubewarden's calls of a policy, written once over a raw waPC call
/// (`call`: the function's name and payload in, its answer out, a guest
/// error as `Error::Call`), for the module in the engine (`host`) and the
/// policy linked natively (`native`) alike.
pub(crate) mod calls {
    use super::*;

    /// `protocol_version`: Kubewarden calls it first to know how to talk.
    pub fn protocol_version(call: impl FnOnce(&str, &[u8]) -> Result<Vec<u8>>) -> Result<String> {
        let raw = call("protocol_version", &[])?;
        Ok(match parse_answer("protocol_version", &raw)? {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    /// `validate_settings` with the settings as JSON: the policy's own answer.
    pub fn validate_settings(
        call: impl FnOnce(&str, &[u8]) -> Result<Vec<u8>>,
        settings: &Value,
    ) -> Result<SettingsValidation> {
        let payload = serde_json::to_vec(settings).map_err(|e| Error::Input(e.to_string()))?;
        parse_answer("validate_settings", &call("validate_settings", &payload)?)
    }

    /// `validate` on an AdmissionRequest (not a whole AdmissionReview), with
    /// the payload policy-server sends: `{"request": ..., "settings": ...}`.
    pub fn validate(
        call: impl FnOnce(&str, &[u8]) -> Result<Vec<u8>>,
        request: &Value,
        settings: &Value,
    ) -> Result<ValidationResponse> {
        let payload = validate_payload(request, settings)?;
        parse_answer("validate", &call("validate", &payload)?)
    }
}

fn preview(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.into_owned(),
    }
}

/// What Kubewarden's host answers a context-aware policy's
/// `list_resources_all` with, given the cluster's Node list: the list for a
/// request of `v1` `Node`, an error for any other, or when no list was
/// given (no cluster context).
pub fn node_list(
    nodes: &std::sync::Mutex<Option<Vec<u8>>>,
    request: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    let request: Value = serde_json::from_slice(request).map_err(|e| e.to_string())?;
    if request["api_version"] != "v1" || request["kind"] != "Node" {
        return Err(format!("the runner lists only v1 Nodes, not {request}"));
    }
    nodes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .ok_or_else(|| "no cluster context: the runner was given no Nodes".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_events_keep_level_and_message() {
        let log = GuestLog::from_payload(br#"{"level":"warn","message":"hi","x":1}"#);
        assert_eq!(log.level, "warn");
        assert_eq!(log.message, "hi");
        let raw = GuestLog::from_payload(b"not json");
        assert_eq!(raw.message, "not json");
    }

    #[test]
    fn answers_that_are_not_json_are_bad_responses() {
        let answer: Result<SettingsValidation> = parse_answer("validate_settings", b"oops");
        assert!(matches!(answer, Err(Error::BadResponse { .. })));
    }
}
