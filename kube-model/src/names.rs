//! The names the models read, from the policy crate: spelled once.

pub use istio_job_sidecar_policy::names::ANNOTATION_NATIVE_SIDECAR as NATIVE;
pub use istio_job_sidecar_policy::names::ANNOTATION_PROXY_CONFIG as PROXY_CONFIG;
pub use istio_job_sidecar_policy::names::ANNOTATION_STATUS as STATUS;
pub use istio_job_sidecar_policy::names::INJECT;
pub use istio_job_sidecar_policy::names::NEVER_INJECTED_NAMESPACES;
