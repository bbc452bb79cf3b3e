//! `nodeVersionCheck`: the Node list at cluster scale, in the shapes
//! policy-server sends it (`policy_runner::node_lists` says which and
//! where that is read).
//!
//! The list is the cluster's, not a tenant's, but every request the check
//! applies to reads it again. Its budget is per byte of list: reading it
//! costs at most `FUEL_PER_BYTE` instructions a byte and at most twice
//! its size in linear memory beyond the two-Node request's (the host's
//! answer is copied into the guest once; a read that builds no tree of
//! the fields it skips needs little more), and a 5,000-Node list as
//! policy-server 1.33+ sends it stays under the request's `FUEL_CAP`.

use crate::budget::*;
use policy_runner::node_lists::{self, Shape};
use serde_json::json;

/// Instructions a byte of Node list may cost: the typed read of name and
/// kubelet version costs 20 to 23 (serde_json scanning the members it
/// skips); the tree it replaced cost about 60.
const FUEL_PER_BYTE: u64 = 30;

#[test]
fn node_list_at_scale() {
    // The Job names no node: every Node's kubelet is read.
    let settings =
        json!({"mode": "nativeSidecar", "nodeVersionCheck": true, "fallbackMode": "quitEndpoint"});
    let request = payload(
        &request(injected_job(app_and_proxy(), json!({}))),
        &settings,
    );
    let two = measure_with(&request, Some(node_lists::list(2, Shape::Pruned)));
    eprintln!(
        "| 2 Nodes | | {:.1} M | {:.1} MiB | {} |",
        two.cost.fuel as f64 / 1e6,
        mib(two.cost.memory_bytes()),
        two.summary()
    );
    let mut failures = Vec::new();
    for count in [10, 1_000, 5_000] {
        for shape in Shape::ALL {
            let list = node_lists::list(count, shape);
            let size = list.len() as u64;
            // Room to measure past the budget, so a failure says by how much.
            let limit = module().with_fuel(2 * FUEL_PER_BYTE * size + FUEL_LIMIT);
            let m = measure_on(&limit, &request, Some(list));
            let name = format!("{count} Nodes, {}", shape.describe());
            eprintln!(
                "| {name} | {:.1} MiB | {:.1} M | {:.1} MiB | {} |",
                mib(size),
                m.cost.fuel as f64 / 1e6,
                mib(m.cost.memory_bytes()),
                m.summary()
            );
            // The fallback is taken, naming the one old Node, the last.
            let old = node_lists::name(count - 1);
            let warned = m
                .answer
                .as_ref()
                .ok()
                .and_then(|a| a.warnings.as_ref())
                .is_some_and(|w| w.iter().any(|w| w.contains(&old)));
            if !warned {
                failures.push(format!("{name}: {}", m.summary()));
                continue;
            }
            let fuel = m.cost.fuel.saturating_sub(two.cost.fuel);
            let memory = m
                .cost
                .memory_bytes()
                .saturating_sub(two.cost.memory_bytes());
            let over_cap = shape == Shape::Pruned && m.cost.fuel > FUEL_CAP;
            if fuel > FUEL_PER_BYTE * size || memory > 2 * size + (1 << 20) || over_cap {
                failures.push(format!(
                    "{name}: {} instructions ({:.0} a byte), {:.1} MiB of linear memory, for a {:.1} MiB list",
                    m.cost.fuel,
                    fuel as f64 / size as f64,
                    mib(m.cost.memory_bytes()),
                    mib(size)
                ));
            }
        }
    }
    assert_all(failures);
}
