//! The owner's mode carried down: the mode a Job or CronJob asked for on
//! its own metadata goes onto its pod template as
//! `istio-job-sidecar/owner-mode`, the only metadata every Job and Pod made
//! from it carries (docs/facts.md, "The journey of a workload"; docs/modes.md,
//! "The per-workload annotation"). The policy alone writes it.

use crate::decide::{Plan, Skip};
use crate::json::{Node, ShapeError};
use crate::names::ANNOTATION_OWNER_MODE;
use crate::object::Object;
use crate::settings::Settings;
use crate::workload::{OwnerMode, Workload};

/// What `istio-job-sidecar/owner-mode` must become under `plan`: `None`
/// when it stays as it is; `Some(None)` when it goes. A pod Istio will not
/// inject needs none, and a workload's word not honoured is not carried.
pub fn wanted(view: &Workload, plan: &Plan, settings: &Settings) -> Option<Option<String>> {
    match plan {
        Plan::Skip(Skip::InjectionOff) => None,
        _ if !settings.workload_override => None,
        _ => view.owner_mode_edit().map(|edit| match edit {
            OwnerMode::Set(value) => Some(value.to_owned()),
            OwnerMode::Remove => None,
        }),
    }
}

/// Set (or, for `None`, remove) `istio-job-sidecar/owner-mode` on the pod
/// template.
pub fn carry(object: &mut Object, value: Option<String>) -> Result<(), ShapeError> {
    match value {
        Some(value) => object.set_annotation(ANNOTATION_OWNER_MODE, Node::from_string(value)),
        None => object
            .remove_annotations(&[ANNOTATION_OWNER_MODE])
            .map(|_| ()),
    }
}
