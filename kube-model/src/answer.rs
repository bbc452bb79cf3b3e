//! A policy's answer as Kubewarden's engine reads it: what every answer of
//! this policy must hold, and the JSON Patch the engine sends the API
//! server (policy-evaluator: `json_patch::diff` between the request's
//! object and the object the policy returned; no patch when they are equal).

use serde_json::Value;

/// The API server asks for admission warnings of at most 120 characters.
pub const MAX_WARNING_CHARS: usize = 120;

/// A `validate` answer, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// `mutated_object`, unless null or absent.
    pub mutated: Option<Value>,
    pub warnings: Vec<String>,
}

/// Reads a `validate` answer (the SDK's `ValidationResponse`) and checks what
/// holds for every answer of this policy: it is JSON, it accepts, and each
/// warning is a string of at most `MAX_WARNING_CHARS` characters.
pub fn check_answer(raw: &[u8]) -> Result<Answer, String> {
    let answer: Value = crate::json::from_slice(raw).map_err(|e| {
        format!(
            "the answer is not JSON ({e}): {}",
            String::from_utf8_lossy(raw)
        )
    })?;
    let warnings = match &answer["warnings"] {
        Value::Null => Vec::new(),
        Value::Array(list) => list
            .iter()
            .map(|w| w.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("warnings must be strings: {answer}"))?,
        other => return Err(format!("warnings must be a list, got {other}")),
    };
    check_verdict(answer["accepted"] == Value::Bool(true), &warnings)
        .map_err(|e| format!("{e}; the answer: {answer}"))?;
    let mutated = Some(answer["mutated_object"].clone()).filter(|o| !o.is_null());
    Ok(Answer { mutated, warnings })
}

/// What holds for every answer, for callers that read it their own way:
/// accepted (a mutating helper never denies), and each warning at most
/// `MAX_WARNING_CHARS` characters.
pub fn check_verdict(accepted: bool, warnings: &[String]) -> Result<(), String> {
    if !accepted {
        return Err("rejected: a mutating helper never rejects".into());
    }
    match warnings
        .iter()
        .find(|w| w.chars().count() > MAX_WARNING_CHARS)
    {
        Some(long) => Err(format!(
            "warning over {MAX_WARNING_CHARS} characters: {long:?}"
        )),
        None => Ok(()),
    }
}

/// The patch the engine sends for an answer that returned `mutated` for the
/// request's `object`: their difference; `None` when there is none (the
/// engine then sends no patch). A request without an object (null) gets
/// none either: the engine refuses such a mutation instead.
pub fn patch(object: &Value, mutated: &Value) -> Option<json_patch::Patch> {
    if object.is_null() {
        return None;
    }
    Some(json_patch::diff(object, mutated)).filter(|p| !p.0.is_empty())
}

/// `object` with `patch` applied, as the API server applies it.
pub fn apply(object: &Value, patch: &json_patch::Patch) -> Result<Value, String> {
    let mut out = object.clone();
    json_patch::patch(&mut out, patch).map_err(|e| format!("the patch does not apply: {e}"))?;
    Ok(out)
}

/// `object` with `patch`, a JSON Patch as JSON, applied.
pub fn apply_json(object: &Value, patch: &Value) -> Result<Value, String> {
    let patch: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| format!("not a JSON Patch: {e}"))?;
    apply(object, &patch)
}

/// What differs between two JSON values, one JSON Patch operation a line.
pub fn differences(from: &Value, to: &Value) -> String {
    json_patch::diff(from, to)
        .0
        .iter()
        .map(|op| format!("    {}", serde_json::to_string(op).unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_checked() {
        let ok = br#"{"accepted":true,"mutated_object":{"a":1},"warnings":["w"]}"#;
        assert_eq!(
            check_answer(ok),
            Ok(Answer {
                mutated: Some(json!({"a": 1})),
                warnings: vec!["w".into()]
            })
        );
        let long = format!(r#"{{"accepted":true,"warnings":["{}"]}}"#, "x".repeat(121));
        for bad in [
            b"not json".to_vec(),
            br#"{"accepted":false}"#.to_vec(),
            br#"{"accepted":true,"warnings":[1]}"#.to_vec(),
            long.into_bytes(),
        ] {
            assert!(
                check_answer(&bad).is_err(),
                "{}",
                String::from_utf8_lossy(&bad)
            );
        }
    }

    #[test]
    fn the_patch_is_the_difference_or_none() {
        let object = json!({"a": 1});
        let patch = patch(&object, &json!({"a": 2})).expect("a patch");
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "replace", "path": "/a", "value": 2}])
        );
        assert_eq!(apply(&object, &patch), Ok(json!({"a": 2})));
        assert!(super::patch(&object, &object).is_none());
        assert!(super::patch(&Value::Null, &object).is_none());
    }
}
