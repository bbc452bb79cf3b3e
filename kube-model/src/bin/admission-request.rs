//! `admission-request`: the AdmissionRequests the API server sends
//! (`kube_model::admission::request`), for the Python harness, so that every
//! request the tests and benchmarks build comes from one builder.
//!
//! Reads a JSON list on stdin, one entry a request:
//! `{"operation": "CREATE", "object": {...}, "oldObject": {...}, "namespace": "ns"}`
//! (`oldObject` and `namespace` optional: the namespace defaults to the
//! object's own, else `""`), and writes the list of requests on stdout.

use std::io::{Read, Write};

use serde_json::Value;

fn requests(input: &str) -> Result<Vec<Value>, String> {
    let entries: Vec<Value> =
        serde_json::from_str(input).map_err(|e| format!("stdin: not a JSON list: {e}"))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let operation = entry["operation"]
                .as_str()
                .ok_or_else(|| format!("entry {i}: no operation"))?;
            let object = &entry["object"];
            if !object.is_object() {
                return Err(format!("entry {i}: no object"));
            }
            let old = Some(&entry["oldObject"]).filter(|o| o.is_object());
            let namespace = entry["namespace"]
                .as_str()
                .or_else(|| object["metadata"]["namespace"].as_str())
                .unwrap_or_default();
            Ok(kube_model::admission::request(
                operation, object, old, namespace,
            ))
        })
        .collect()
}

fn main() {
    let mut input = String::new();
    let result = std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("stdin: {e}"))
        .and_then(|_| requests(&input))
        .and_then(|list| serde_json::to_vec(&list).map_err(|e| e.to_string()));
    match result {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
                std::process::exit(1);
            }
        }
        Err(why) => {
            eprintln!("admission-request: {why}");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entry_becomes_its_request() {
        let list = requests(
            r#"[{"operation": "UPDATE", "object": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "a"}}, "oldObject": {"kind": "Job"}},
                {"operation": "CREATE", "object": {"kind": "Pod"}, "namespace": "b"}]"#,
        )
        .unwrap();
        assert_eq!(list[0]["namespace"], "a");
        assert_eq!(list[0]["options"]["kind"], "UpdateOptions");
        assert_eq!(list[0]["oldObject"]["kind"], "Job");
        assert_eq!(list[1]["namespace"], "b");
        assert!(requests(r#"[{"operation": "CREATE"}]"#).is_err());
        assert!(requests("{}").is_err());
    }
}
