//! policy-runner: an embedded waPC host that runs a Kubewarden policy module
//! the way Kubewarden's policy-server and `kwctl run` do, built on the same
//! engine (`wapc` 2.1, `wasmtime-provider` 2.19 = wasmtime 44, as Kubewarden
//! 1.35's kwctl and policy-server; `json-patch` 4 for the patch). The CLI (`run`, `demo`, `bench`) and the wasm-level tests
//! use this library. The module in the engine (`host::Policy`) and the
//! policy crate linked natively (`native::NativePolicy`) answer as
//! `kube_model::policy::Policy`, the one trait every caller of a policy
//! uses; `ModuleAnswer` is the runner's fuller record of one call (the
//! guest's own answer and logs), for `run` and `bench`.
//!
//! Features: `engine` (default) is the wasm engine and everything that needs
//! it (`host`, `bench`, `memory`, the CLI); `native` (default) links the
//! policy crate itself (`native`). Without `engine`, what is left (the
//! admission response and patch, the demo's text, the summaries) builds in
//! seconds: `policy-demo` (`make demo`) uses it that way.
//!
//! No unsafe code: a guest's linear memory is read on the metered engine
//! (`metered`), which owns its `Store`, instead of through a custom
//! `MemoryCreator` on wasmtime-provider's engine.

#![forbid(unsafe_code)]

pub mod admission;
#[cfg(feature = "engine")]
pub mod bench;
pub mod demo;
mod error;
#[cfg(feature = "engine")]
pub mod host;
#[cfg(feature = "engine")]
pub mod metered;
#[cfg(feature = "native")]
pub mod native;
pub mod node_lists;
pub mod protocol;
pub mod summary;

pub use admission::{load_request, AdmissionResponse, ModuleAnswer};
pub use error::{Error, Result};
#[cfg(feature = "engine")]
pub use host::Policy;
pub use protocol::{GuestLog, SettingsValidation, ValidationResponse};

use std::path::{Path, PathBuf};

use kube_model::policy::Admitted;

/// The workspace root (where `policy.wasm` and `test_data/` are), found from
/// this crate's manifest directory at build time.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// What the engine gives the API server for `evaluation`, as
/// `kube_model::policy::Policy` answers: the verdict, message and warnings
/// of the AdmissionResponse (`ModuleAnswer::admission_response`), and its
/// patch as JSON.
pub fn admitted(evaluation: &ModuleAnswer) -> Result<Admitted> {
    let response = evaluation.admission_response()?;
    let patch = match (&response.patch, &evaluation.patch) {
        (Some(_), Some(patch)) => {
            Some(serde_json::to_value(patch).map_err(|e| Error::Input(e.to_string()))?)
        }
        _ => None,
    };
    Ok(Admitted {
        accepted: response.allowed,
        message: response.status.and_then(|status| status.message),
        patch,
        warnings: response.warnings.unwrap_or_default(),
    })
}

/// `kube_model::policy::Policy` for a type with the runner's `validate`
/// and `validate_settings` (the module in the engine, the policy linked
/// natively): the answer the engine gives the API server (`admitted`) and
/// the policy's own settings answer. A macro, as a blanket impl of another
/// crate's trait is not allowed.
#[cfg(any(feature = "engine", feature = "native"))]
macro_rules! answers_as_policy {
    ($policy:ty) => {
        impl kube_model::policy::Policy for $policy {
            fn admit(
                &mut self,
                request: &serde_json::Value,
                settings: &serde_json::Value,
            ) -> std::result::Result<kube_model::policy::Admitted, String> {
                let evaluation =
                    <$policy>::validate(self, request, settings).map_err(|e| e.to_string())?;
                crate::admitted(&evaluation).map_err(|e| e.to_string())
            }

            fn validate_settings(
                &mut self,
                settings: &serde_json::Value,
            ) -> std::result::Result<kube_model::policy::Settings, String> {
                <$policy>::validate_settings(self, settings)
                    .map(crate::settings_answer)
                    .map_err(|e| e.to_string())
            }
        }
    };
}
#[cfg(any(feature = "engine", feature = "native"))]
pub(crate) use answers_as_policy;

/// The policy's `validate_settings` answer, as `kube_model::policy::Policy`
/// gives it.
#[cfg(any(feature = "engine", feature = "native"))]
pub(crate) fn settings_answer(answer: SettingsValidation) -> kube_model::policy::Settings {
    kube_model::policy::Settings {
        valid: answer.valid,
        message: answer.message,
    }
}
