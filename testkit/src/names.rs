//! The annotation and label names the policy reacts to and writes, taken
//! from the policy crate (`istio_job_sidecar_policy::names`) so that no test
//! spells one again: the golden, property, journey and fuzz tests and the
//! wasm-level tests import them from here, under the short names they read
//! best by. Only names: what the policy does with them stays each test's
//! own to say (the property oracle is written from the README, not from
//! `src/`).

/// The record of what the policy applied to a pod template.
pub use istio_job_sidecar_policy::names::ANNOTATION_APPLIED as APPLIED;
/// The mode a workload asks for, on its pod template or its own metadata.
pub use istio_job_sidecar_policy::names::ANNOTATION_MODE as MODE;
/// Istio's per-pod choice of a native (init container) proxy.
pub use istio_job_sidecar_policy::names::ANNOTATION_NATIVE_SIDECAR as NATIVE;
/// The mode a Job's or CronJob's own metadata asked for, carried down to
/// the pod template by the policy.
pub use istio_job_sidecar_policy::names::ANNOTATION_OWNER_MODE as OWNER_MODE;
/// Istio's per-pod proxy config.
pub use istio_job_sidecar_policy::names::ANNOTATION_PROXY_CONFIG as PROXY_CONFIG;
/// The quitEndpoint mark of earlier versions, read as a record.
pub use istio_job_sidecar_policy::names::ANNOTATION_QUIT_WRAPPED as QUIT_WRAPPED;
/// Istio's injection status.
pub use istio_job_sidecar_policy::names::ANNOTATION_STATUS as STATUS;
/// pilot-agent's status port, when not the mesh default.
pub use istio_job_sidecar_policy::names::ANNOTATION_STATUS_PORT as STATUS_PORT;
/// The key exitOnJobCompletion merges into `proxy.istio.io/config`.
pub use istio_job_sidecar_policy::names::EXIT_ON_JOB_COMPLETION as EXIT_KEY;
/// Istio's injection switch: a label (read first, even empty) and a legacy
/// annotation.
pub use istio_job_sidecar_policy::names::INJECT;

/// The record, and its form in earlier versions.
pub const RECORD_KEYS: [&str; 2] = [APPLIED, QUIT_WRAPPED];
