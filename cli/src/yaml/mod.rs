//! YAML read as kubectl reads it, and edited so that every reader reads the
//! edit as meant.
//!
//! - `load`: a document's tree with where and how each node is written,
//!   and its JSON as kubectl has it (go-yaml v2's YAML 1.1 scalars, merge
//!   keys expanded, a byte-order mark skipped); a `List` item by item.
//! - `resolve`: what a plain scalar means to kubectl, and when a string may
//!   be written plain for go-yaml v2, YAML 1.1 and YAML 1.2 readers alike.
//! - `emit`: the smallest changed nodes written anew in place, the rest of
//!   the document kept byte for byte.
//!
//! The events come from `saphyr-parser`, a YAML 1.2 parser that passes the
//! yaml-test-suite and gives each event its position; the rest is here
//! because no crate reads YAML as kubectl does (serde_yaml and saphyr read
//! YAML 1.2 scalars: `on` is a string to them, a boolean to kubectl) nor
//! writes a document back with only its changed nodes replaced.

pub mod emit;
pub mod load;
pub mod resolve;

pub use emit::{apply, edit, Place, Replacement};
pub use load::{for_each_item, parse, shape, Error, Node, NodeRef, Shape};
