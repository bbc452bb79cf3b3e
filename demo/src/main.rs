//! `make demo`: the policy on a sample CronJob and on Istio's kube-injected
//! Job, in each mode, with the JSONPatch Kubewarden would send. The policy
//! crate is linked natively, so nothing but it and the runner's text is
//! built; `policy-runner demo --wasm policy.wasm` (`make demo-wasm`) prints
//! the same from the module in the engine, and the runner's tests check that.

#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

use policy_runner::native::NativePolicy;
use policy_runner::{demo, Error, Result};

fn main() -> ExitCode {
    match run(&mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(out: &mut dyn Write) -> Result<()> {
    let mut policy = NativePolicy;
    writeln!(
        out,
        "policy-demo: the policy runs natively here (the same Rust code policy.wasm is built from, \
         called directly; waPC protocol {}). `make test` runs policy.wasm itself in Kubewarden's \
         wasm engine; `make demo-wasm` prints this demo from it.",
        policy.protocol_version()?
    )
    .map_err(|e| Error::Input(format!("cannot write the demo: {e}")))?;
    demo::run(&mut policy, out)
}
