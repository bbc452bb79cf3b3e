//! Admission requests in, kwctl-compatible admission responses out, and the
//! JSONPatch computed the way Kubewarden computes it.

use std::collections::BTreeMap;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use json_patch::Patch;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::protocol::{GuestLog, ValidationResponse};

/// Reads a request file, JSON or YAML: an AdmissionRequest (what
/// `kwctl run --request-path` takes), a whole AdmissionReview, or, for
/// convenience, a bare manifest (wrapped into a CREATE request).
pub fn load_request(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(json_err) => serde_yaml::from_str(&text).map_err(|yaml_err| {
            Error::Input(format!(
                "{}: neither JSON ({json_err}) nor YAML ({yaml_err})",
                path.display()
            ))
        })?,
    };
    admission_request(value).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
}

/// The AdmissionRequest inside `value`, whichever of the accepted shapes it is.
pub fn admission_request(value: Value) -> Result<Value> {
    let Value::Object(mut map) = value else {
        return Err(Error::Input("a request must be a JSON object".into()));
    };
    if map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        return match map.remove("request") {
            Some(request @ Value::Object(_)) => Ok(request),
            _ => Err(Error::Input(
                "AdmissionReview without a `request` object".into(),
            )),
        };
    }
    if map.contains_key("object") || map.contains_key("operation") || map.contains_key("uid") {
        return Ok(Value::Object(map));
    }
    if map.contains_key("apiVersion") && map.contains_key("kind") {
        return Ok(admission_request_for(Value::Object(map), "CREATE"));
    }
    Err(Error::Input(
        "expected an AdmissionRequest (with `object`), an AdmissionReview or a manifest".into(),
    ))
}

/// An AdmissionRequest as the API server sends it for `object`, in the
/// namespace its metadata names (kube-model's, as every tool writes it).
pub fn admission_request_for(object: Value, operation: &str) -> Value {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or("");
    kube_model::admission::request(operation, &object, None, namespace)
}

/// What the module answered to one `validate` call, with the patch
/// Kubewarden would send.
#[derive(Debug, Clone)]
pub struct ModuleAnswer {
    pub uid: String,
    /// `request.object` (null on DELETE).
    pub object: Value,
    /// The guest's answer, as it sent it.
    pub response: ValidationResponse,
    /// The engine's patch (`kube_model::answer::patch`); `None` when the
    /// module returned no object or the same object (Kubewarden then sends
    /// no patch).
    pub patch: Option<Patch>,
    /// What the guest logged during the call.
    pub logs: Vec<GuestLog>,
}

impl ModuleAnswer {
    pub fn new(request: &Value, response: ValidationResponse, logs: Vec<GuestLog>) -> ModuleAnswer {
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let patch = response
            .mutated_object
            .as_ref()
            .and_then(|mutated| kube_model::answer::patch(&object, mutated));
        ModuleAnswer {
            uid: request
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            object,
            response,
            patch,
            logs,
        }
    }

    /// policy-evaluator refuses a mutation when there is no incoming object.
    fn mutates_nothing(&self) -> bool {
        self.response.mutated_object.is_some() && self.object.is_null()
    }

    pub fn allowed(&self) -> bool {
        self.response.accepted && !self.mutates_nothing()
    }

    pub fn warnings(&self) -> &[String] {
        self.response.warnings.as_deref().unwrap_or(&[])
    }

    /// The request object with the patch applied: what the API server stores.
    pub fn patched_object(&self) -> Result<Value> {
        match &self.patch {
            Some(patch) => kube_model::answer::apply(&self.object, patch)
                .map_err(|e| Error::Input(format!("the computed patch: {e}"))),
            None => Ok(self.object.clone()),
        }
    }

    /// The response `kwctl run` prints.
    pub fn admission_response(&self) -> Result<AdmissionResponse> {
        if self.mutates_nothing() {
            return Ok(AdmissionResponse {
                uid: self.uid.clone(),
                allowed: false,
                status: Some(AdmissionResponseStatus {
                    message: Some(
                        "Incoming object is null, which happens only with DELETE operations, \
                         but the policy is attempting a mutation. This is not allowed"
                            .into(),
                    ),
                    code: None,
                }),
                ..AdmissionResponse::default()
            });
        }
        let patch = match &self.patch {
            Some(patch) => Some(
                BASE64.encode(serde_json::to_vec(patch).map_err(|e| Error::Input(e.to_string()))?),
            ),
            None => None,
        };
        let r = &self.response;
        let status = (r.message.is_some() || r.code.is_some()).then(|| AdmissionResponseStatus {
            message: r.message.clone(),
            code: r.code,
        });
        Ok(AdmissionResponse {
            uid: self.uid.clone(),
            allowed: r.accepted,
            patch_type: patch.as_ref().map(|_| "JSONPatch".to_owned()),
            patch,
            status,
            audit_annotations: r.audit_annotations.clone(),
            warnings: r.warnings.clone(),
        })
    }
}

/// Kubernetes' admission/v1 AdmissionResponse, serialized as kwctl prints it
/// (policy-evaluator's field set: no `patchType`/`patch`/`status` when unset,
/// `auditAnnotations` and `warnings` always present).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Base64 of the JSONPatch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionResponseStatus>,
    pub audit_annotations: Option<BTreeMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionResponseStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(mutated: Option<Value>) -> ValidationResponse {
        ValidationResponse {
            warnings: Some(vec!["w".into()]),
            ..ValidationResponse::accept(mutated)
        }
    }

    #[test]
    fn review_manifest_and_request_shapes_are_accepted() {
        let request = json!({"uid": "u", "object": {"kind": "Pod"}});
        let review = json!({"kind": "AdmissionReview", "request": request.clone()});
        assert_eq!(admission_request(review).ok(), Some(request.clone()));
        assert_eq!(admission_request(request.clone()).ok(), Some(request));
        let wrapped = admission_request(json!({"apiVersion": "batch/v1", "kind": "Job"})).ok();
        assert_eq!(
            wrapped.as_ref().map(|r| r["resource"]["resource"].clone()),
            Some(json!("jobs"))
        );
        assert!(admission_request(json!([1])).is_err());
    }

    #[test]
    fn patch_is_the_diff_and_kwctl_shaped() {
        let request = json!({"uid": "u", "object": {"a": 1}});
        let eval = ModuleAnswer::new(&request, answer(Some(json!({"a": 2}))), vec![]);
        let response = eval.admission_response().expect("response");
        assert_eq!(response.patch_type.as_deref(), Some("JSONPatch"));
        let decoded = BASE64
            .decode(response.patch.expect("patch"))
            .expect("base64");
        let ops: Value = serde_json::from_slice(&decoded).expect("json");
        assert_eq!(ops, json!([{"op": "replace", "path": "/a", "value": 2}]));
        assert_eq!(eval.patched_object().expect("applies"), json!({"a": 2}));
        let printed = serde_json::to_value(eval.admission_response().expect("r")).expect("v");
        assert_eq!(printed["warnings"], json!(["w"]));
        assert!(printed.get("status").is_none());
    }

    #[test]
    fn same_object_means_no_patch() {
        let request = json!({"uid": "u", "object": {"a": 1}});
        let eval = ModuleAnswer::new(&request, answer(Some(json!({"a": 1}))), vec![]);
        assert!(eval.patch.is_none());
        let response = eval.admission_response().expect("response");
        assert!(response.patch.is_none() && response.patch_type.is_none());
    }

    #[test]
    fn mutation_without_object_is_refused() {
        let request = json!({"uid": "u", "operation": "DELETE", "object": null});
        let eval = ModuleAnswer::new(&request, answer(Some(json!({"a": 1}))), vec![]);
        assert!(!eval.allowed());
        assert!(!eval.admission_response().expect("response").allowed);
    }
}
