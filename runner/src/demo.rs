//! The demo: the policy on a sample CronJob and on Istio's kube-injected Job,
//! in each mode, showing what changed. `policy-runner demo` runs it on the
//! wasm module in the engine; `policy-demo` (`make demo`) on the policy crate
//! linked natively. Both print the same text after their first line.

use std::io::Write;

use serde_json::{json, Value};

use crate::admission::Evaluation;
use crate::error::{Error, Result};
use crate::protocol::SettingsValidation;
use crate::summary::{changed_facts, patch_lines, template_facts};

/// What the demo asks of a policy: the module in the engine (`host::Policy`,
/// feature `engine`) or the same code linked natively
/// (`native::NativePolicy`, feature `native`).
pub trait Validator {
    /// `validate_settings`: the policy's own answer.
    fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation>;
    /// `validate` on an AdmissionRequest, with the patch Kubewarden computes.
    fn validate(&self, request: &Value, settings: &Value) -> Result<Evaluation>;
}

#[cfg(feature = "engine")]
impl Validator for crate::host::Policy {
    fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        crate::host::Policy::validate_settings(self, settings)
    }

    fn validate(&self, request: &Value, settings: &Value) -> Result<Evaluation> {
        crate::host::Policy::validate(self, request, settings)
    }
}

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

pub fn run(policy: &dyn Validator, out: &mut dyn Write) -> Result<()> {
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
            let check = policy.validate_settings(&settings)?;
            if !check.valid {
                let why = check.message.unwrap_or_default();
                writeln!(
                    out,
                    "\n--- mode {mode}: not in this build of the module ({why})"
                )
                .map_err(io)?;
                continue;
            }
            let evaluation = policy.validate(&request, &settings)?;
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
