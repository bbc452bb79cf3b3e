//! The cost of hostile input, counted: each hostile shape at its sizes,
//! beside a benign request of the same size, through `policy.wasm` on the
//! runner's metered engine (`policy_runner::metered`): wasmtime fuel
//! (WebAssembly instructions executed) and the guest's linear memory after
//! the call, on a fresh instance per call as policy-server rehydrates one
//! per evaluation. Counts, not time: the same on every machine and run.
//!
//! The budget (docs/performance.md, "The cost of hostile input", says how
//! the figures were chosen):
//! - every call answers (no trap, no guest error) with an accept;
//! - fuel at most a ratio of the benign request's of the same size (`TEXT`
//!   for the proxy config beside an ordinary config, `ITEMS` for an object
//!   of many items beside one grown by ordinary env entries), and at most
//!   `FUEL_CAP` instructions: 600 million, 0.2 s (a tenth of policy-server's
//!   2 s default timeout) at 3 billion instructions a second, about the
//!   slowest rate docs/performance.md measured on idle cores;
//! - linear memory at most a ratio of the benign request's, and at most
//!   `MEMORY_CAP`, 64 MiB: a quarter of the 256 MiB Kubewarden 1.38 allows
//!   a policy.
//!
//! A call that exceeds `FUEL_LIMIT` (twice the cap) is stopped there by the
//! engine and reported as over budget, so a regression fails in about a
//! second instead of running for a minute.
//!
//! `cargo test --profile host-test -p policy-runner --test cost -- --nocapture --test-threads 1`
//! (after `make policy.wasm`) prints the table docs/performance.md quotes.

#[path = "../common/mod.rs"]
mod common;

mod budget;
mod config;
mod engine;
mod nodes;
mod objects;
mod settings;
