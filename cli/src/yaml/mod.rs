//! YAML read as kubectl reads it, and edited so that every reader reads the
//! edit as meant.
//!
//! - `load`: a document's tree with where and how each node is written,
//!   and its JSON as kubectl has it: the workspace's one reader
//!   (`kube_yaml`, sigs.k8s.io/yaml over go-yaml v2), its tree half.
//! - `resolve`: what a plain scalar means to kubectl, and when a string may
//!   be written plain for go-yaml v2, YAML 1.1 and YAML 1.2 readers alike
//!   (`kube_yaml::resolve`).
//! - `emit`: the smallest changed nodes written anew in place, the rest of
//!   the document kept byte for byte (the CLI's own).

pub mod emit;
pub use kube_yaml::resolve;
pub use kube_yaml::tree as load;

pub use emit::{apply, edit, Place, Replacement};
pub use load::{for_each_item, parse, shape, Error, Node, NodeRef, Shape};
