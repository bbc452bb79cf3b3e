//! The three ways to make the sidecar stop, one file each. A mode edits the
//! JSON of the object in place, through the target's one handle, touching
//! only its own fields; says whether it changed anything and what the
//! record should say of it; and knows how to take its own edit back
//! (`undo`). `change.rs` is the change of mode: another mode's recorded
//! edit taken back, then the wanted mode applied.

pub mod change;
pub mod exit_on_completion;
pub mod native_sidecar;
pub mod one_proxy;
pub mod owner_mode;
pub mod quit_endpoint;
pub mod restarts;
pub mod target;

use crate::json::ShapeError;
use crate::record::Applied;
use crate::settings::Mode;
use target::{ModeOutcome, Target, Undone};

/// Apply `mode` to the target. A `ShapeError` means the object is not shaped
/// as the view promised; the caller then answers unchanged with a warning.
pub fn apply(mode: Mode, target: &mut Target) -> Result<ModeOutcome, ShapeError> {
    match mode {
        Mode::NativeSidecar => native_sidecar::apply(target),
        Mode::ExitOnJobCompletion => exit_on_completion::apply(target),
        Mode::QuitEndpoint => quit_endpoint::apply(target),
    }
}

/// Take back the edit `applied` describes (the record itself is the
/// caller's): the mode's own, then what it did to
/// `sidecar.istio.io/nativeSidecar`. A `ShapeError` as for `apply`.
pub fn undo(applied: &Applied, target: &mut Target) -> Result<Undone, ShapeError> {
    let undone = match applied {
        Applied::NativeAnnotation(_) => Undone::Done { changed: false },
        Applied::NativeMove(moved) => native_sidecar::undo_move(moved, target)?,
        Applied::ExitOnJobCompletion {
            inserted, created, ..
        } => exit_on_completion::undo(inserted, *created, target)?,
        Applied::QuitEndpoint { container, .. } => quit_endpoint::undo(container, target)?,
    };
    match (undone, applied.annotation()) {
        (Undone::Done { changed }, Some(edit)) => {
            let annotation = native_sidecar::undo_annotation(edit, target)?;
            Ok(Undone::Done {
                changed: changed || annotation,
            })
        }
        (undone, _) => Ok(undone),
    }
}
