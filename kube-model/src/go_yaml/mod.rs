//! YAML read as Istio reads `proxy.istio.io/config`: a second statement of
//! that reading, written from the Go source and sharing nothing with the
//! policy or with the workspace's YAML reader (`kube-yaml`), so that a
//! wrong rule in either fails the test that compares them
//! (`tests/yaml_agreement.rs`) instead of moving both.
//!
//! Istio (`pkg/config/mesh/mesh.go` `MergeProxyConfig`, through
//! `pkg/util/protomarshal` `ApplyYAML`, 1.29 and 1.30 alike) turns the text
//! into JSON with `sigs.k8s.io/yaml` v1.6.0 `YAMLToJSON` and reads that JSON
//! with protobuf's JSON reader. `YAMLToJSON` is:
//!
//! 1. go-yaml v2 (`go.yaml.in/yaml/v2` v2.4.3/v2.4.4, the code of
//!    `gopkg.in/yaml.v2` v2.4.0) `Unmarshal` into an `interface{}`: its
//!    libyaml port parses the first document into a node tree (`tree`,
//!    decode.go's `parser`), its decoder resolves each plain scalar with
//!    YAML 1.1's table (`resolve`, resolve.go) and builds Go maps, slices
//!    and scalars (`decode`, decode.go's `decoder`: merge keys, later
//!    duplicate keys winning, the alias budget);
//! 2. `convertToJSONableObject` (yaml.go) turning map keys into strings,
//!    then `encoding/json`'s `Marshal` (`convert`).
//!
//! The parser here is libyaml-safer, a translation of libyaml to Rust
//! (go-yaml v2's scanner and parser are a translation of the same libyaml
//! to Go), not the saphyr-parser the workspace's reader uses.
//!
//! The answer is the JSON value protobuf reads: numbers as the text
//! `encoding/json` writes them, read back (`as_istio_reads`), so float
//! 1000 and integer 1000 are one number, as they are to Istio.

mod convert;
mod decode;
mod resolve;
mod tree;

use serde_json::{Number, Value};

/// Why `YAMLToJSON` fails, or why its answer is not one JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// go-yaml's parser or decoder refuses the text (a syntax error, an
    /// unknown anchor, a merge of no mapping, excessive aliasing, ...).
    Yaml(String),
    /// `convertToJSONableObject` or `json.Marshal` refuses the value (a
    /// null or uint64 key, NaN or an infinity).
    Json(String),
    /// Two keys of one mapping become the same JSON key (`1` and `"1"`):
    /// which value Istio keeps depends on Go's map order, so it is not
    /// determined.
    Undetermined(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Error::Yaml(m) => write!(f, "yaml: {m}"),
            Error::Json(m) => write!(f, "json: {m}"),
            Error::Undetermined(m) => write!(f, "undetermined: {m}"),
        }
    }
}

/// `yaml.YAMLToJSON(text)` of sigs.k8s.io/yaml v1.6.0, as the JSON value
/// its output reads as (`as_istio_reads`).
pub fn yaml_to_json(text: &str) -> Result<Value, Error> {
    let tree = tree::parse(text)?;
    decode::on_stack_for(&tree, || convert::to_json(decode::decode_tree(&tree)?))
}

/// `value` with every number as `encoding/json` writes it and a JSON reader
/// reads that text back: a float with no fraction below 1e21 is written as
/// an integer (`floatEncoder`), so it reads as one where it fits 64 bits.
/// Two readings are the same to Istio when their `as_istio_reads` are equal.
pub fn as_istio_reads(value: &Value) -> Value {
    match value {
        Value::Number(n) => Value::Number(go_number(n)),
        Value::Array(items) => Value::Array(items.iter().map(as_istio_reads).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), as_istio_reads(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn go_number(n: &Number) -> Number {
    match n.as_f64() {
        Some(f) if !n.is_i64() && !n.is_u64() => convert::float_number(f),
        _ => n.clone(),
    }
}

/// One case of the corpus (`test_data/yaml/`): a text and what
/// `YAMLToJSON` gives for it (`None`: it fails).
#[derive(Debug, Clone)]
pub struct Case {
    /// `file: name`.
    pub name: String,
    pub yaml: String,
    pub json: Option<Value>,
}

/// The corpus's cases, every `*.json` file of `dir` in name order (see
/// `test_data/yaml/README.md`).
pub fn corpus(dir: &std::path::Path) -> Result<Vec<Case>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let doc = crate::json::from_slice(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        for case in doc["cases"].as_array().into_iter().flatten() {
            let (Some(name), Some(yaml)) = (case["name"].as_str(), case["yaml"].as_str()) else {
                return Err(format!("{}: a case without a name or yaml", file.display()));
            };
            let json = match case.get("error") {
                Some(Value::Bool(true)) => None,
                _ => Some(
                    case.get("json")
                        .cloned()
                        .ok_or(format!("{stem}: {name}: no json"))?,
                ),
            };
            cases.push(Case {
                name: format!("{stem}: {name}"),
                yaml: yaml.to_owned(),
                json,
            });
        }
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_read_to_go_yamls_depth_and_refused_beyond() {
        // Building, comparing and dropping 10,000 levels of `Value` recurses.
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(nesting)
            .expect("a thread")
            .join()
            .expect("nesting");
    }

    fn nesting() {
        let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let mut expected = Value::from(1);
        for _ in 0..10_000 {
            expected = Value::Array(vec![expected]);
        }
        assert_eq!(yaml_to_json(&nested(10_000)), Ok(expected));
        assert!(
            matches!(yaml_to_json(&nested(10_001)), Err(Error::Yaml(m)) if m.contains("max depth"))
        );
        // Block sequences, one indent each (go-yaml's `limit_test.go` shape).
        let block = |depth: usize| format!("{}1", "- ".repeat(depth));
        assert!(yaml_to_json(&block(10_000)).is_ok());
        assert!(
            matches!(yaml_to_json(&block(10_001)), Err(Error::Yaml(m)) if m.contains("max depth"))
        );
    }
}
