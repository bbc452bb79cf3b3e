//! The names the policy reacts to: the kinds it handles and the annotation
//! and label names it reads and writes. Every other module reads these;
//! this one reads none of them, so the request reader, the workload reader,
//! the decision table and the modes depend on it and never on each other in
//! a circle.

pub const ANNOTATION_MODE: &str = "istio-job-sidecar/mode";
/// The mode a Job or CronJob asked for on its own metadata, carried by the
/// policy onto the pod template: the only metadata the controllers copy
/// to the Jobs and Pods they make. Written by the policy alone.
pub const ANNOTATION_OWNER_MODE: &str = "istio-job-sidecar/owner-mode";
/// The record of what the policy applied to a pod template (`record.rs`).
pub const ANNOTATION_APPLIED: &str = "istio-job-sidecar/applied";
/// The quitEndpoint mark of earlier versions, read as a record.
pub const ANNOTATION_QUIT_WRAPPED: &str = "istio-job-sidecar/quit-wrapped";
pub const ANNOTATION_STATUS: &str = "sidecar.istio.io/status";
pub const ANNOTATION_NATIVE_SIDECAR: &str = "sidecar.istio.io/nativeSidecar";
/// The injection templates Istio renders for the Pod, comma-separated
/// (`sidecar` when absent, unless the mesh sets `defaultTemplates`).
pub const ANNOTATION_INJECT_TEMPLATES: &str = "inject.istio.io/templates";
pub const ANNOTATION_PROXY_CONFIG: &str = "proxy.istio.io/config";
/// The most one metadata's annotations may total, keys and values: the API
/// server refuses a larger object (apimachinery `TotalAnnotationSizeLimitB`,
/// checked on a pod template's annotations too), after the mutating
/// webhooks have seen it.
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;
/// The key exitOnJobCompletion merges into `proxy.istio.io/config`.
pub const EXIT_ON_JOB_COMPLETION: &str = "exitOnJobCompletion";
/// pilot-agent's status port for this pod, when not the mesh default.
pub const ANNOTATION_STATUS_PORT: &str = "status.sidecar.istio.io/port";
/// Both a label (preferred by Istio) and a legacy annotation.
pub const INJECT: &str = "sidecar.istio.io/inject";
/// Namespaces Istio's injector never injects, whatever their labels say
/// (`pkg/kube/inject/initializer.go`, `IgnoredNamespaces`, which
/// `webhook.go`'s `inject` passes to `injectRequired`: checked there right
/// after `hostNetwork`, before the Pod's own word). kube-model states the
/// same list from Istio's source; `tests/model_agreement.rs` holds the two
/// together.
pub const NEVER_INJECTED_NAMESPACES: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Job,
    CronJob,
    Pod,
}

impl Kind {
    /// The kinds this policy handles, by the request's group and kind.
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Kind> {
        match (group, kind) {
            ("batch", "Job") => Some(Kind::Job),
            ("batch", "CronJob") => Some(Kind::CronJob),
            ("", "Pod") => Some(Kind::Pod),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
            Kind::Pod => "Pod",
        }
    }

    /// Path from the object to its pod template (`{metadata, spec}`).
    pub fn template_path(self) -> &'static [&'static str] {
        match self {
            Kind::Job => &["spec", "template"],
            Kind::CronJob => &["spec", "jobTemplate", "spec", "template"],
            Kind::Pod => &[],
        }
    }
}
