//! The shared corpus (test_data/yaml/, see its README): each case's text
//! read by this crate gives the JSON sigs.k8s.io/yaml's `YAMLToJSON` gives,
//! or fails where it fails. Where this reader refuses a text Istio reads,
//! the refusal must be one of its stated ones (lib.rs): the YAML 1.1 line
//! breaks a YAML 1.2 parser reads as content, and a tab after `:`, which
//! saphyr-parser refuses.

use kube_yaml::{to_json, Budget, ErrorKind};
use serde_json::Value;
use std::path::Path;

const FILES: [&str; 4] = ["go-yaml-v2", "sigs-k8s-yaml", "istio", "users"];

/// Numbers as the text `encoding/json` writes: an integral float is the
/// integer it prints.
fn as_go_writes(v: &Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e19 => {
                if f < 0.0 {
                    Value::from(f as i64)
                } else {
                    Value::from(f as u64)
                }
            }
            _ => v.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(as_go_writes).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), as_go_writes(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn stated_refusal(text: &str) -> bool {
    text.contains(['\u{85}', '\u{2028}', '\u{2029}']) || text.contains(":\t")
}

#[test]
fn the_corpus_reads_as_istio_reads_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_data/yaml");
    let budget = Budget {
        nodes: 1_000_000,
        depth: 1_000,
    };
    let (mut read, mut wrong) = (0, Vec::new());
    for file in FILES {
        let text = std::fs::read_to_string(dir.join(format!("{file}.json"))).unwrap();
        let corpus: Value = serde_json::from_str(&text).unwrap();
        for case in corpus["cases"].as_array().unwrap() {
            let name = format!("{file}: {}", case["name"]);
            let yaml = case["yaml"].as_str().unwrap();
            let got = to_json(yaml, budget);
            read += 1;
            match (case.get("json"), got) {
                (Some(want), Ok(got)) if as_go_writes(want) == as_go_writes(&got) => {}
                (Some(want), Ok(got)) => wrong.push(format!("{name}: {got} for {want}")),
                (Some(_), Err(e)) if e.kind == ErrorKind::Syntax && stated_refusal(yaml) => {}
                (Some(want), Err(e)) => wrong.push(format!("{name}: refused ({e}) for {want}")),
                (None, Err(_)) => {}
                (None, Ok(got)) => wrong.push(format!("{name}: {got} where YAMLToJSON fails")),
            }
        }
    }
    assert!(read > 100, "{read} cases");
    assert!(
        wrong.is_empty(),
        "{} of {read}:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
