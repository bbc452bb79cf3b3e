//! The policy's answers to the host, in the shapes of Kubewarden's SDK
//! (kubewarden-policy-sdk: `ValidationResponse`, `SettingsValidationResponse`,
//! `ProtocolVersion`), field for field; the tests below compare each with the
//! SDK's own. The answer to `validate` is written straight from the edit
//! tree, so the mutated object is not rebuilt as a `serde_json::Value` first.

use crate::json::Node;
use crate::warning;
use serde::Serialize;

#[derive(Serialize)]
struct ValidationResponse<'r, 'a> {
    accepted: bool,
    message: Option<&'r str>,
    code: Option<u16>,
    mutated_object: Option<&'r Node<'a>>,
    audit_annotations: Option<()>,
    warnings: Option<Vec<String>>,
}

/// Accept unchanged.
pub fn accept(warnings: &[String]) -> Vec<u8> {
    write(None, warnings, 0)
}

/// Accept with `object` as the mutated object; `size_hint` is about the
/// size of the object as JSON.
pub fn mutate(object: &Node, warnings: &[String], size_hint: usize) -> Vec<u8> {
    write(Some(object), warnings, size_hint)
}

fn write(object: Option<&Node>, warnings: &[String], size_hint: usize) -> Vec<u8> {
    let response = |mutated_object, warnings: &[String]| ValidationResponse {
        accepted: true,
        message: None,
        code: None,
        mutated_object,
        audit_annotations: None,
        warnings: (!warnings.is_empty())
            .then(|| warnings.iter().map(|w| warning::format(w)).collect()),
    };
    // One allocation for the answer: it is about the size of the request.
    let mut out = Vec::with_capacity(size_hint + 256);
    let written = serde_json::to_writer(&mut out, &response(object, warnings));
    written.map(|()| out).unwrap_or_else(|e| {
        // Only reachable if the object cannot be written back: answer
        // unchanged rather than trap.
        let why = [format!("left unchanged: {e}")];
        serde_json::to_vec(&response(None, &why)).unwrap_or_else(|_| FALLBACK.to_vec())
    })
}

/// The answer to `validate_settings`: valid without a message, or invalid
/// with `message` (the SDK's `SettingsValidationResponse`).
pub fn settings(message: Option<&str>) -> Vec<u8> {
    #[derive(Serialize)]
    struct SettingsValidationResponse<'m> {
        valid: bool,
        message: Option<&'m str>,
    }
    let response = SettingsValidationResponse {
        valid: message.is_none(),
        message,
    };
    serde_json::to_vec(&response).unwrap_or_else(|_| SETTINGS_FALLBACK.to_vec())
}

/// The answer to `protocol_version`: the SDK's `ProtocolVersion::V1`.
pub const PROTOCOL_VERSION: &[u8] = br#""v1""#;

/// Only if a message could not be written (it is a `&str`, so never).
const SETTINGS_FALLBACK: &[u8] = br#"{"valid":false,"message":"the settings could not be read"}"#;

const FALLBACK: &[u8] = br#"{"accepted":true,"message":null,"code":null,"mutated_object":null,"audit_annotations":null,"warnings":null}"#;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_matches_the_sdk() {
        let ours: serde_json::Value = serde_json::from_slice(&accept(&[])).unwrap();
        let sdk: serde_json::Value =
            serde_json::from_slice(&kubewarden_policy_sdk::accept_request().unwrap()).unwrap();
        assert_eq!(ours, sdk);
    }

    #[test]
    fn settings_answers_match_the_sdk() {
        use kubewarden_policy_sdk::settings::SettingsValidationResponse;
        for message in [None, Some("mode: unknown \"x\"")] {
            let sdk = SettingsValidationResponse {
                valid: message.is_none(),
                message: message.map(str::to_owned),
            };
            let sdk = serde_json::to_value(&sdk).unwrap();
            let ours: serde_json::Value = serde_json::from_slice(&settings(message)).unwrap();
            assert_eq!(ours, sdk);
        }
    }

    #[test]
    fn protocol_version_matches_the_sdk() {
        assert_eq!(
            kubewarden_policy_sdk::protocol_version_guest(b"").unwrap(),
            PROTOCOL_VERSION
        );
    }

    #[test]
    fn mutate_matches_the_sdk() {
        let object = json!({"kind": "Pod", "metadata": {"name": "p"}});
        let ours: serde_json::Value =
            serde_json::from_slice(&mutate(&Node::Value(object.clone()), &[], 0)).unwrap();
        let sdk: serde_json::Value =
            serde_json::from_slice(&kubewarden_policy_sdk::mutate_request(object).unwrap())
                .unwrap();
        assert_eq!(ours, sdk);
    }
}
