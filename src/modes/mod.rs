//! The three ways to make the sidecar stop, one file each. A mode edits the
//! JSON of the object in place, touching only its own fields, and says
//! whether it changed anything.

pub mod exit_on_completion;
pub mod native_sidecar;
pub mod quit_endpoint;

use crate::json::{Node, ShapeError};
use crate::settings::{Mode, Settings};
use crate::view::Kind;
use crate::workload::Workload;

/// What a mode works on: the view it decides from and the object it edits.
pub struct Target<'t, 'a> {
    pub kind: Kind,
    pub workload: &'t Workload<'a>,
    pub object: &'t mut Node<'a>,
    pub settings: &'t Settings,
}

/// What a mode did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub changed: bool,
    pub warnings: Vec<String>,
}

impl Outcome {
    pub fn unchanged() -> Self {
        Outcome::default()
    }

    pub fn changed() -> Self {
        Outcome {
            changed: true,
            warnings: Vec::new(),
        }
    }

    /// Unchanged, and the user is told why.
    pub fn unchanged_because(message: impl Into<String>) -> Self {
        Outcome {
            changed: false,
            warnings: vec![message.into()],
        }
    }
}

/// Apply `mode` to the target. A `ShapeError` means the object is not shaped
/// as the view promised; the caller then answers unchanged with a warning.
pub fn apply(mode: Mode, target: &mut Target) -> Result<Outcome, ShapeError> {
    match mode {
        Mode::NativeSidecar => native_sidecar::apply(target),
        Mode::ExitOnJobCompletion => exit_on_completion::apply(target),
        Mode::QuitEndpoint => quit_endpoint::apply(target),
    }
}
