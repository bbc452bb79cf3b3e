//! Shared by every test of the policy: the golden, property and fuzz
//! regression tests of the policy crate, the fuzz targets, and the
//! wasm-level tests of the runner, which call the same checks on the
//! native policy or on `policy.wasm`.
//!
//! - `payload`: the `validate` payload with the request's members in the
//!   order policy-server writes them (alphabetical), in the API server's
//!   own order (`kind` and `operation` before `object`), or object first.
//! - `check_answer`: what holds for every answer of this policy: JSON,
//!   accepted (a mutating helper never denies), warnings of at most 120
//!   characters.
//! - `check_fixed_point`: the policy's output, sent again, is not mutated.
//! - `golden`: compare with, or (`UPDATE_GOLDEN=1`) rewrite, a golden file.
//! - `names`: the annotation and label names, from the policy crate.
//! - `laws`: the laws of a change of mode, checked on passes of the policy
//!   (golden, generated or fuzzed).
//! - `journey`, `journeys`: a workload followed from CronJob to the Pod the
//!   kubelet runs, through the controllers (`controllers`), the API server
//!   (`kube`) and Istio's injector (`istio`), and the journeys every build
//!   is held to.

pub mod cases;
pub mod controllers;
pub mod istio;
pub mod journey;
pub mod journeys;
pub mod kube;
pub mod laws;
pub mod names;

use serde_json::{Map, Value};
use std::path::Path;

/// The API server asks for admission warnings of at most 120 characters.
pub const MAX_WARNING_CHARS: usize = 120;

/// The members of an AdmissionRequest in the API server's order (the
/// fields of `admission/v1.AdmissionRequest`, as Go writes them).
const API_SERVER_ORDER: [&str; 15] = [
    "uid",
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "object",
    "oldObject",
    "dryRun",
    "options",
];

/// The order of a request's members in a payload. The policy reads the
/// payload in one pass and may skip the object of a request whose kind and
/// operation it has already seen, so each order takes another path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// As policy-server and kwctl write it: policy-evaluator turns the
    /// request into a `serde_json::Value` (`json!`), whose maps are sorted
    /// (no `preserve_order` in their build), so every object's members come
    /// in alphabetical order: `kind`, then `object`, then `operation`
    /// (docs/facts.md, "policy-server and kwctl").
    PolicyServer,
    /// The API server's own order: `kind` and `operation` before `object`,
    /// so the policy may decide before it reads the object.
    ApiServer,
    /// `object` first: the policy reads the object before it knows what it is.
    ObjectFirst,
}

impl Order {
    pub const ALL: [Order; 3] = [Order::PolicyServer, Order::ApiServer, Order::ObjectFirst];
}

/// The `validate` payload `{"request": ..., "settings": ...}` with the
/// request's members in `order` (members the API server does not write come
/// after the ones it does). `settings` `None` leaves the key out.
pub fn payload(request: &Value, settings: Option<&Value>, order: Order) -> Vec<u8> {
    let mut out = br#"{"request":"#.to_vec();
    match (order, request.as_object()) {
        (Order::PolicyServer, _) | (_, None) => write_sorted(&mut out, request),
        (_, Some(members)) => write_ordered(&mut out, members, order),
    }
    if let Some(settings) = settings {
        out.extend_from_slice(br#","settings":"#);
        write_sorted(&mut out, settings);
    }
    out.push(b'}');
    out
}

/// `value` with the members of every object in alphabetical order, as a
/// `serde_json::Value` without `preserve_order` writes it (written by hand,
/// so a feature some other crate turns on cannot change it).
fn write_sorted(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(members) => {
            let mut keys: Vec<&String> = members.keys().collect();
            keys.sort();
            write_members(out, members, keys);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_sorted(out, item);
            }
            out.push(b']');
        }
        leaf => out.extend(to_vec(leaf)),
    }
}

fn write_ordered(out: &mut Vec<u8>, members: &Map<String, Value>, order: Order) {
    let rank = |key: &str| match (order, key) {
        (Order::ObjectFirst, "object") => 0,
        _ => API_SERVER_ORDER
            .iter()
            .position(|k| *k == key)
            .map_or(API_SERVER_ORDER.len() + 1, |i| i + 1),
    };
    let mut keys: Vec<&String> = members.keys().collect();
    keys.sort_by_key(|k| rank(k));
    write_members(out, members, keys);
}

/// An object with its members in the order of `keys`, their values sorted.
fn write_members(out: &mut Vec<u8>, members: &Map<String, Value>, keys: Vec<&String>) {
    out.push(b'{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(to_vec(&Value::String(key.clone())));
        out.push(b':');
        write_sorted(out, &members[key.as_str()]);
    }
    out.push(b'}');
}

fn to_vec(value: &Value) -> Vec<u8> {
    // A Value always serializes.
    serde_json::to_vec(value).unwrap_or_default()
}

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
    let answer: Value = serde_json::from_slice(raw).map_err(|e| {
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

/// The policy's own output is a fixed point: `mutated`, sent again as the
/// object of the same request, is accepted without a mutation. `validate`
/// runs the policy on a payload (natively or through `policy.wasm`).
pub fn check_fixed_point(
    validate: impl Fn(&[u8]) -> Vec<u8>,
    request: &Value,
    settings: Option<&Value>,
    mutated: &Value,
    order: Order,
) -> Result<(), String> {
    let mut again = request.clone();
    again["object"] = mutated.clone();
    let answer = check_answer(&validate(&payload(&again, settings, order)))?;
    match answer.mutated {
        None => Ok(()),
        Some(second) => Err(format!(
            "not a fixed point: a second run changed the object again:\n{}",
            differences(mutated, &second)
        )),
    }
}

/// Whether golden files are being rewritten (`UPDATE_GOLDEN=1`, as
/// `make golden` sets it) rather than compared.
pub fn updating_golden() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file at `path`, or rewrites the file
/// when `updating_golden()`. The error lists what differs, as JSON Patch
/// operations from the file to `actual`.
pub fn golden(path: &Path, actual: &Value) -> Result<(), String> {
    if updating_golden() {
        let text = serde_json::to_string_pretty(actual).unwrap_or_default() + "\n";
        return std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (run `make golden` and review the diff)",
            path.display()
        )
    })?;
    let expected: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if &expected == actual {
        Ok(())
    } else {
        Err(format!(
            "{} differs from the policy's result (patch from the file to the result):\n{}",
            path.display(),
            differences(&expected, actual)
        ))
    }
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

    fn request() -> Value {
        json!({"object": {"a": 1}, "userInfo": {}, "operation": "CREATE", "kind": {"kind": "Job"}, "uid": "u", "x": 1})
    }

    #[test]
    fn policy_server_order_is_alphabetical_at_every_level() {
        let text = String::from_utf8(payload(
            &request(),
            Some(&json!({"z": 1, "a": 2})),
            Order::PolicyServer,
        ))
        .unwrap();
        assert_eq!(
            text,
            r#"{"request":{"kind":{"kind":"Job"},"object":{"a":1},"operation":"CREATE","uid":"u","userInfo":{},"x":1},"settings":{"a":2,"z":1}}"#
        );
    }

    #[test]
    fn api_server_order_puts_kind_and_operation_before_the_object() {
        let text =
            String::from_utf8(payload(&request(), Some(&json!({})), Order::ApiServer)).unwrap();
        assert_eq!(
            text,
            r#"{"request":{"uid":"u","kind":{"kind":"Job"},"operation":"CREATE","userInfo":{},"object":{"a":1},"x":1},"settings":{}}"#
        );
    }

    #[test]
    fn object_first_puts_the_object_first() {
        let text = String::from_utf8(payload(&request(), None, Order::ObjectFirst)).unwrap();
        assert_eq!(
            text,
            r#"{"request":{"object":{"a":1},"uid":"u","kind":{"kind":"Job"},"operation":"CREATE","userInfo":{},"x":1}}"#
        );
    }

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
    fn a_second_mutation_is_not_a_fixed_point() {
        let request = json!({"kind": {}, "object": {}});
        let mutating = |_: &[u8]| br#"{"accepted":true,"mutated_object":{"b":2}}"#.to_vec();
        let accepting = |_: &[u8]| br#"{"accepted":true}"#.to_vec();
        let mutated = json!({"b": 1});
        assert!(
            check_fixed_point(mutating, &request, None, &mutated, Order::PolicyServer).is_err()
        );
        assert!(
            check_fixed_point(accepting, &request, None, &mutated, Order::PolicyServer).is_ok()
        );
    }
}
