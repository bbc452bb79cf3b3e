//! The demo: the policy on a sample CronJob and on Istio's kube-injected Job,
//! in each mode, showing what changed. `policy-runner demo` runs it on the
//! wasm module in the engine; `policy-demo` (`make demo`) on the policy crate
//! linked natively. Both print the same text after their first line: the
//! demo asks either as every caller asks a policy
//! (`kube_model::policy::Policy`), its settings too, so that a mode a build
//! of the module does not know is reported and skipped.

use std::io::Write;

use kube_model::policy::{Admitted, Policy};
use serde_json::{json, Value};

use crate::admission::ModuleAnswer;
use crate::error::{Error, Result};
use crate::protocol::ValidationResponse;
use crate::summary::{changed_facts, patch_lines, template_facts};

/// A demo request, embedded so the demo needs no file outside the binary.
pub struct Sample {
    pub title: &'static str,
    pub what: &'static str,
    pub request: &'static str,
}

pub const SAMPLES: [Sample; 2] = [
    Sample {
        title: "CronJob `hellocron` (Istio's sample, not injected yet)",
        what: "Istio injects only Pods: at the CronJob's CREATE the policy prepares its pod \
               template, whichever of Kubewarden's and Istio's webhooks runs first at Pod \
               CREATE, so that the sidecar Istio adds to each Pod stops when the job is done.",
        request: include_str!("../demo/cronjob.json"),
    },
    Sample {
        title: "Job `pi` after `istioctl kube-inject` (classic: istio-proxy in containers)",
        what: "The proxy is already there as a regular container, so the Job would never \
               complete; the policy has to fix the template it is given.",
        request: include_str!("../demo/job-kube-injected-classic.json"),
    },
];

/// Every mode the policy may know; modes the module rejects in
/// `validate_settings` are reported and skipped.
pub const MODES: [&str; 3] = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"];

pub fn run(policy: &mut dyn Policy, out: &mut dyn Write) -> Result<()> {
    let io = |e: std::io::Error| Error::Input(format!("cannot write the demo: {e}"));
    writeln!(
        out,
        "Kubewarden sends the API server a JSONPatch: the difference between the object \
         submitted and the object the policy returns. For each sample and mode below: \
         the patch operations, then the pod-template fields that changed."
    )
    .map_err(io)?;
    for sample in &SAMPLES {
        let request: Value = serde_json::from_str(sample.request)
            .map_err(|e| Error::Input(format!("demo request {}: {e}", sample.title)))?;
        writeln!(out, "\n=== {} ===", sample.title).map_err(io)?;
        writeln!(out, "{}", sample.what).map_err(io)?;
        writeln!(out, "  as submitted:").map_err(io)?;
        for (label, value) in template_facts(&request["object"], false) {
            writeln!(out, "    {label}: {value}").map_err(io)?;
        }
        for mode in MODES {
            let settings = json!({ "mode": mode });
            let check = policy.validate_settings(&settings).map_err(Error::Input)?;
            if !check.valid {
                let why = check.message.unwrap_or_default();
                writeln!(
                    out,
                    "\n--- mode {mode}: not in this build of the module ({why})"
                )
                .map_err(io)?;
                continue;
            }
            let admitted = policy.admit(&request, &settings).map_err(Error::Input)?;
            let evaluation = record(&request, admitted)?;
            let verdict = if evaluation.allowed() {
                "accepted"
            } else {
                "REJECTED"
            };
            let ops = patch_lines(&evaluation);
            writeln!(
                out,
                "\n--- mode {mode}: {verdict}, {} patch operation(s)",
                ops.len()
            )
            .map_err(io)?;
            for warning in evaluation.warnings() {
                writeln!(out, "  warning: {warning}").map_err(io)?;
            }
            for op in &ops {
                writeln!(out, "  {op}").map_err(io)?;
            }
            if ops.is_empty() {
                continue;
            }
            writeln!(out, "  what changed in the pod template:").map_err(io)?;
            let after = evaluation.patched_object()?;
            for line in changed_facts(&evaluation.object, &after) {
                writeln!(out, "    {line}").map_err(io)?;
            }
        }
    }
    Ok(())
}

/// The runner's record of an answer (`ModuleAnswer`), for the summary's
/// patch lines and the patched object: the request's object, the verdict,
/// message and warnings, and the patch the engine sends.
fn record(request: &Value, admitted: Admitted) -> Result<ModuleAnswer> {
    let patch = admitted
        .patch
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| Error::Input(format!("the answer's patch is no JSON Patch: {e}")))?;
    Ok(ModuleAnswer {
        uid: request["uid"].as_str().unwrap_or("").to_owned(),
        object: request.get("object").cloned().unwrap_or(Value::Null),
        response: ValidationResponse {
            accepted: admitted.accepted,
            message: admitted.message,
            warnings: Some(admitted.warnings),
            // The patch is the engine's already: no returned object to
            // compute it from again.
            ..ValidationResponse::accept(None)
        },
        patch,
        logs: Vec::new(),
    })
}
