//! One model of the systems around the policy, shared by the operator's
//! tool (cli/), the runner, the tests (testkit/) and the fuzz targets, so
//! that each rule has one home here. It depends on nothing of the policy
//! crate: every name, list and rule of Kubernetes, Istio and Kubewarden is
//! spelled here from their source, a second statement independent of the
//! policy's on purpose, so that the tests judge the policy by something it
//! cannot move (`tests/model_agreement.rs` compares the names both must
//! agree on):
//!
//! - `admission`: the AdmissionRequest the API server sends for an object
//!   and operation, and the `validate` payload in policy-server's order;
//! - `answer`: what every answer of the policy must hold, and the patch
//!   Kubewarden's engine makes of it (the difference between the object it
//!   sent and the one returned);
//! - `controllers`: what the CronJob and Job controllers copy down;
//! - `kube`: the API server's defaults, the Pod rules no schema states,
//!   what is stored, and comparison up to what Kubernetes drops;
//! - `json`: JSON text read as written (serde_json's `Value` reader takes
//!   one special key for something else);
//! - `go_yaml`: YAML read as Istio reads `proxy.istio.io/config` (go-yaml
//!   v2 and sigs.k8s.io/yaml's YAMLToJSON), over a parser of its own;
//! - `istio`: Istio's sidecar injector (the `sidecar` template, a custom
//!   template patching `istio-proxy`, `grpc-agent`);
//! - `policy`: the one trait that asks the policy (native, wasm or kwctl);
//! - `time`: times as Kubernetes writes them (RFC 3339);
//! - `webhook`: which requests the API server sends to the webhook
//!   Kubewarden's controller installs for a policy;
//! - `workload`: where a workload's pod template is, in Kubernetes' types.
//!
//! Nothing here decides what the policy does: that is the policy crate's.

#![forbid(unsafe_code)]

pub mod admission;
pub mod answer;
pub mod controllers;
pub mod go_yaml;
pub mod istio;
pub mod json;
pub mod kube;
pub mod policy;
pub mod time;
pub mod webhook;
pub mod workload;
