//! What a mode works on and what it answers: shared by every mode and by
//! the change of mode (`change.rs`).

use crate::object::Object;
use crate::record::Applied;
use crate::settings::Settings;

/// What a mode works on: the object, through the one handle it is read and
/// edited with, and the settings.
pub struct Target<'r, 't, 'a> {
    pub object: &'r mut Object<'t, 'a>,
    pub settings: &'r Settings,
    /// The trusted record on the template, if any: a mode's own, since
    /// another mode's record is undone before a mode is applied.
    pub record: Option<&'r Applied>,
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
pub struct ModeOutcome {
    /// The object changed (the record aside, which the caller writes).
    pub changed: bool,
    pub warnings: Vec<String>,
    pub record: RecordEdit,
}

impl ModeOutcome {
    pub fn unchanged() -> Self {
        ModeOutcome::default()
    }

    /// Changed, with `applied` to be recorded.
    pub fn applied(applied: Applied) -> Self {
        ModeOutcome {
            changed: true,
            warnings: Vec::new(),
            record: RecordEdit::Set(applied),
        }
    }

    /// Unchanged, and the user is told why.
    pub fn unchanged_because(message: impl Into<String>) -> Self {
        ModeOutcome {
            warnings: vec![message.into()],
            ..ModeOutcome::default()
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
