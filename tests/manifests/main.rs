//! The files that travel with the module agree with each other and with the
//! crate, so they cannot drift: `metadata.yml` (what `kwctl annotate` embeds),
//! every `examples/*.yaml` ClusterAdmissionPolicy, `artifacthub-pkg.yml`,
//! `questions-ui.yml`, `CHANGELOG.md`, the Makefile's OCI repository and the
//! version in Cargo.toml; and the documents, read as CommonMark
//! (pulldown-cmark): every link of the Markdown pages lands, every pointer to
//! a section of docs/facts.md too, the README fits where it is read, and
//! DEVELOPING.md's layout table is the crate's.
//!
//! Run alone with `cargo test --test manifests`.

mod artifacthub;
mod common;
mod examples;
mod install;
mod layout;
mod links;
mod markdown;
mod metadata;
mod readme;
