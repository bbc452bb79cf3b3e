//! `kubectl istio-job-sidecar`: which workloads are stuck today because of
//! the Istio sidecar, and what the policy would change in each Job, CronJob
//! and Pod, answered by the policy crate itself (`policy::explain`,
//! `validate_settings`) linked natively: the tool describes the policy's
//! answers and never decides anything of its own.
//!
//! - `input`: manifests and cluster dumps, read as a stream of objects.
//! - `config`: the settings, and which requests a policy manifest lets through
//!   (`conditions`: its CEL matchConditions).
//! - `evaluate`: one admission request through the policy, Kubewarden's patch.
//! - `stuck`: Pods whose work is done while the sidecar runs on.
//! - `nodes`: kubelets that must not run Istio's native sidecar on a Job's Pod.
//! - `scan`, `report`: every object's requests, written as a table, JSON or Markdown.
//! - `render`: manifests with the policy's edit applied (a Helm post-renderer).
//! - `end`: today's stuck Pods ended on request (`end-stuck`).
//! - `kubectl`: `kubectl get`, stopped when the cluster does not answer.
//! - `yaml`: YAML read as kubectl reads it, edited in place (render).
//! - `out`: stdout and stderr written without a panic when the reader is gone.

#![forbid(unsafe_code)]

pub mod conditions;
pub mod config;
pub mod end;
pub mod evaluate;
pub mod input;
pub mod kubectl;
pub mod mesh;
pub mod nodes;
pub mod out;
pub mod render;
pub mod report;
pub mod scan;
pub mod stuck;
pub mod yaml;
