//! What answers admission requests for the policy, as one trait every
//! caller uses: the policy crate called natively, `policy.wasm` in
//! Kubewarden's engine (the runner), or `kwctl run`. The journeys, the
//! demo and the operator's tool's tests ask any of them the same way, and
//! get the answer the engine gives the API server: a verdict, a JSON Patch
//! (the difference between the object sent and the one returned,
//! `answer::patch`) and warnings.

use serde_json::Value;

use crate::admission::{payload, Order};
use crate::answer::{check_answer, patch};

/// What answers admission requests for the policy: the policy crate
/// natively, `policy.wasm` in Kubewarden's engine, or kwctl.
///
/// `validate_settings` is a method of its own, with a default, because
/// only some callers can ask it apart from a request: the policy crate and
/// the module can (the demo asks it to skip a mode a build does not know),
/// while a bare `validate` function has no settings check to call and
/// kwctl checks the settings inside every run, failing `admit`. Those
/// answer "valid" here and refuse in `admit`, so a caller that needs the
/// policy's own word on settings asks a policy that has one.
pub trait Policy {
    /// The answer to the AdmissionRequest `request` under `settings`, as
    /// the engine gives it to the API server. An error is a call that gave
    /// no answer (the policy failed, or answered what is no answer).
    fn admit(&mut self, request: &Value, settings: &Value) -> Result<Admitted, String>;

    /// The policy's own answer on `settings` (`validate_settings`);
    /// by default valid, for a policy that checks them only in `admit`.
    fn validate_settings(&mut self, _settings: &Value) -> Result<Settings, String> {
        Ok(Settings {
            valid: true,
            message: None,
        })
    }
}

/// An admission answer as the engine sends it to the API server.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// Whether the request is allowed (the engine refuses, whatever the
    /// policy said, a mutation of a request without an object).
    pub accepted: bool,
    /// Why, when the answer carries a message.
    pub message: Option<String>,
    /// The JSON Patch, as JSON (a list of operations, as it goes on the
    /// wire); `None` when the object is admitted unchanged.
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
}

impl Admitted {
    /// An accept with `patch` and `warnings` and no message.
    pub fn accept(patch: Option<Value>, warnings: Vec<String>) -> Admitted {
        Admitted {
            accepted: true,
            message: None,
            patch,
            warnings,
        }
    }
}

/// A policy's answer on its settings (the SDK's `SettingsValidationResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub valid: bool,
    pub message: Option<String>,
}

/// No policy at all: what the cluster does without it, every object
/// admitted unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPolicy;

impl Policy for NoPolicy {
    fn admit(&mut self, _: &Value, _: &Value) -> Result<Admitted, String> {
        Ok(Admitted::accept(None, Vec::new()))
    }
}

/// A `validate` function (the policy crate natively, or a call of
/// `policy.wasm`) answered as policy-server answers: the payload in its
/// order, the patch the difference between the request's object and the
/// returned one. An answer no answer of this policy may be (not JSON, a
/// rejection, a warning too long: `answer::check_answer`) is an error, so
/// a test built on it fails there.
pub struct Validate<F: FnMut(&[u8]) -> Vec<u8>>(pub F);

impl<F: FnMut(&[u8]) -> Vec<u8>> Policy for Validate<F> {
    fn admit(&mut self, request: &Value, settings: &Value) -> Result<Admitted, String> {
        let payload = payload(request, Some(settings), Order::PolicyServer);
        let answer = check_answer(&(self.0)(&payload))?;
        let patch = answer
            .mutated
            .and_then(|mutated| patch(&request["object"], &mutated))
            .map(|patch| serde_json::to_value(patch).map_err(|e| e.to_string()))
            .transpose()?;
        Ok(Admitted::accept(patch, answer.warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        crate::admission::request("CREATE", &json!({"kind": "Job", "a": 1}), None, "ns")
    }

    #[test]
    fn a_validate_function_is_answered_with_the_difference() {
        let mut policy = Validate(|_: &[u8]| {
            br#"{"accepted":true,"mutated_object":{"kind":"Job","a":2},"warnings":["w"]}"#.to_vec()
        });
        let admitted = policy.admit(&request(), &json!({})).expect("an answer");
        assert_eq!(
            admitted,
            Admitted::accept(
                Some(json!([{"op": "replace", "path": "/a", "value": 2}])),
                vec!["w".into()]
            )
        );
        let mut same = Validate(|_: &[u8]| {
            br#"{"accepted":true,"mutated_object":{"kind":"Job","a":1}}"#.to_vec()
        });
        assert_eq!(
            same.admit(&request(), &json!({})).expect("an answer").patch,
            None
        );
    }

    #[test]
    fn what_no_answer_may_be_is_an_error() {
        let mut rejecting = Validate(|_: &[u8]| br#"{"accepted":false}"#.to_vec());
        assert!(rejecting.admit(&request(), &json!({})).is_err());
    }

    #[test]
    fn no_policy_admits_unchanged_and_takes_any_settings() {
        let admitted = NoPolicy.admit(&request(), &json!({})).expect("an answer");
        assert_eq!(admitted, Admitted::accept(None, Vec::new()));
        assert!(
            NoPolicy
                .validate_settings(&json!({"mode": "x"}))
                .expect("an answer")
                .valid
        );
    }
}
