//! mode quitEndpoint — being written (issue 5).
use super::{Outcome, Target};
use crate::json::ShapeError;

pub fn apply(_target: &mut Target) -> Result<Outcome, ShapeError> {
    Ok(Outcome::warn("quitEndpoint is not available in this build"))
}
