//! What the policy reads of a request: the kinds it handles, the annotation
//! and label names it reacts to, and the plain types a decision is made
//! from. Every other module reads these; this one reads none of them, so
//! the request reader, the workload reader, the decision table and the modes
//! depend on it and never on each other in a circle.

use std::borrow::Cow;

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
pub const ANNOTATION_PROXY_CONFIG: &str = "proxy.istio.io/config";
/// The key exitOnJobCompletion merges into `proxy.istio.io/config`.
pub const EXIT_ON_JOB_COMPLETION: &str = "exitOnJobCompletion";
/// pilot-agent's status port for this pod, when not the mesh default.
pub const ANNOTATION_STATUS_PORT: &str = "status.sidecar.istio.io/port";
/// Both a label (preferred by Istio) and a legacy annotation.
pub const INJECT: &str = "sidecar.istio.io/inject";
/// Namespaces Istio's injector never injects, whatever their labels say
/// (`pkg/kube/inject/initializer.go`, `IgnoredNamespaces`, checked first
/// by `injectRequired`).
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

/// The annotations and labels decisions read; all others are skipped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Meta<'a> {
    pub annotations: Option<Annotations<'a>>,
    pub labels: Option<Labels<'a>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Annotations<'a> {
    pub mode: Option<Cow<'a, str>>,
    pub owner_mode: Option<Cow<'a, str>>,
    pub applied: Option<Cow<'a, str>>,
    pub quit_wrapped: Option<Cow<'a, str>>,
    pub status: Option<Cow<'a, str>>,
    pub native_sidecar: Option<Cow<'a, str>>,
    pub proxy_config: Option<Cow<'a, str>>,
    pub status_port: Option<Cow<'a, str>>,
    pub inject: Option<Cow<'a, str>>,
}

impl<'a> Annotations<'a> {
    /// The field for annotation `key`, if it is one decisions read.
    pub fn field(&mut self, key: &str) -> Option<&mut Option<Cow<'a, str>>> {
        Some(match key {
            ANNOTATION_MODE => &mut self.mode,
            ANNOTATION_OWNER_MODE => &mut self.owner_mode,
            ANNOTATION_APPLIED => &mut self.applied,
            ANNOTATION_QUIT_WRAPPED => &mut self.quit_wrapped,
            ANNOTATION_STATUS => &mut self.status,
            ANNOTATION_NATIVE_SIDECAR => &mut self.native_sidecar,
            ANNOTATION_PROXY_CONFIG => &mut self.proxy_config,
            ANNOTATION_STATUS_PORT => &mut self.status_port,
            INJECT => &mut self.inject,
            _ => return None,
        })
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Labels<'a> {
    /// `sidecar.istio.io/inject`; `Some("")` when present and empty, which
    /// Istio reads differently from absent.
    pub inject: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodSpec<'a> {
    pub restart_policy: Option<Cow<'a, str>>,
    /// `hostNetwork: true`: Istio never injects such a pod.
    pub host_network: bool,
    pub containers: Option<Vec<Container<'a>>>,
    pub init_containers: Option<Vec<Container<'a>>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Container<'a> {
    pub name: Option<Cow<'a, str>>,
    pub restart_policy: Option<Cow<'a, str>>,
    /// Whether the container sets `command` (its content is read by the mode
    /// that needs it, from the object itself).
    pub has_command: bool,
}
