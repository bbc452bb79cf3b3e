//! The YAML reader (kube-yaml) on any text, with a work budget per input:
//! it never panics, never spends more nodes than its budget, and what it
//! gives back is no larger than what it counted.

#![forbid(unsafe_code)]
#![no_main]

use kube_yaml::{Budget, Builder};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Nodes of a JSON value, keys included (the builder counts each key and
/// value it builds).
fn nodes(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(nodes).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(|v| 1 + nodes(v)).sum::<usize>(),
        _ => 1,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The module's budget: a node a byte, and 10,000 more for aliases.
    let budget = Budget {
        nodes: text.len() + 10_000,
        depth: 64,
    };
    let mut builder = Builder::new(budget);
    let read = kube_yaml::read_into(text, &mut builder);
    let spent = builder.spent();
    assert!(spent <= budget.nodes, "spent {spent} of {}", budget.nodes);
    if read.is_ok() {
        if let Some(value) = builder.finish() {
            assert!(nodes(&value) <= spent, "{} nodes from {spent} counted", nodes(&value));
        }
    }
});
