//! The three ways to make the sidecar stop, one file each. A mode edits the
//! JSON of the object in place, touching only its own fields, says whether
//! it changed anything and what the record should say of it; each file also
//! knows how to take its own edit back (`undo`).

pub mod exit_on_completion;
pub mod native_sidecar;
pub mod quit_endpoint;

use crate::json::{Node, ShapeError};
use crate::record::Applied;
use crate::settings::{Mode, Settings};
use crate::view::Kind;
use crate::workload::Workload;

/// What a mode works on: the view it decides from and the object it edits.
pub struct Target<'t, 'a> {
    pub kind: Kind,
    pub workload: &'t Workload<'a>,
    pub object: &'t mut Node<'a>,
    pub settings: &'t Settings,
    /// The trusted record on the template, if any: a mode's own, since
    /// another mode's record is undone before a mode is applied.
    pub record: Option<&'t Applied>,
}

/// What a pass should leave in the record.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum RecordEdit {
    /// As it is: nothing new was applied.
    #[default]
    Keep,
    /// This, replacing what was there.
    Set(Applied),
    /// None: the mode took its own edit off.
    Remove,
}

/// What a mode did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The object changed (the record aside, which the caller writes).
    pub changed: bool,
    pub warnings: Vec<String>,
    pub record: RecordEdit,
}

impl Outcome {
    pub fn unchanged() -> Self {
        Outcome::default()
    }

    /// Changed, with `applied` to be recorded.
    pub fn applied(applied: Applied) -> Self {
        Outcome {
            changed: true,
            warnings: Vec::new(),
            record: RecordEdit::Set(applied),
        }
    }

    /// Unchanged, and the user is told why.
    pub fn unchanged_because(message: impl Into<String>) -> Self {
        Outcome {
            warnings: vec![message.into()],
            ..Outcome::default()
        }
    }
}

/// What undoing an earlier edit came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undone {
    /// Taken back (`changed` when the object had to change: an edit the
    /// user already took off leaves nothing to do).
    Done { changed: bool },
    /// Left as it is: the object no longer holds the edit the record
    /// describes, so undoing it could break what is there now.
    Refused(String),
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

/// Take back the edit `applied` describes (the record itself is the
/// caller's). A `ShapeError` as for `apply`.
pub fn undo(applied: &Applied, target: &mut Target) -> Result<Undone, ShapeError> {
    match applied {
        Applied::NativeAnnotation => native_sidecar::undo_annotation(target),
        Applied::NativeMove(moved) => native_sidecar::undo_move(moved, target),
        Applied::ExitOnJobCompletion { inserted, created } => {
            exit_on_completion::undo(inserted, *created, target)
        }
        Applied::QuitEndpoint { container } => quit_endpoint::undo(container, target),
    }
}
