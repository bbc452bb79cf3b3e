//! The light view of a request: only the fields decisions need, borrowed from
//! the payload. Everything else is skipped by the parser without being built,
//! so the common answer (a Pod that runs forever, a Job update) costs a scan.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// What Kubewarden's policy-server sends to `validate`.
#[derive(Deserialize, Debug)]
pub struct Payload<'a> {
    #[serde(borrow)]
    pub request: Request<'a>,
    #[serde(default, borrow)]
    pub settings: Option<&'a RawValue>,
}

/// The part of an AdmissionRequest the policy reads.
#[derive(Deserialize, Debug)]
pub struct Request<'a> {
    #[serde(default, borrow)]
    pub kind: Option<GroupVersionKind<'a>>,
    #[serde(default, borrow)]
    pub operation: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub object: Option<&'a RawValue>,
}

#[derive(Deserialize, Debug, Default)]
pub struct GroupVersionKind<'a> {
    #[serde(default, borrow)]
    pub group: Cow<'a, str>,
    #[serde(default, borrow)]
    pub kind: Cow<'a, str>,
}

/// The annotations and labels decisions read; all others are skipped.
#[derive(Deserialize, Debug, Default, Clone, PartialEq, Eq)]
pub struct Meta<'a> {
    #[serde(default, borrow)]
    pub annotations: Option<Annotations<'a>>,
    #[serde(default, borrow)]
    pub labels: Option<Labels<'a>>,
}

pub const ANNOTATION_MODE: &str = "istio-job-sidecar/mode";
pub const ANNOTATION_QUIT_WRAPPED: &str = "istio-job-sidecar/quit-wrapped";
pub const ANNOTATION_STATUS: &str = "sidecar.istio.io/status";
pub const ANNOTATION_NATIVE_SIDECAR: &str = "sidecar.istio.io/nativeSidecar";
pub const ANNOTATION_PROXY_CONFIG: &str = "proxy.istio.io/config";
/// Both a label (preferred by Istio) and a legacy annotation.
pub const INJECT: &str = "sidecar.istio.io/inject";

#[derive(Deserialize, Debug, Default, Clone, PartialEq, Eq)]
pub struct Annotations<'a> {
    #[serde(rename = "istio-job-sidecar/mode", default, borrow)]
    pub mode: Option<Cow<'a, str>>,
    #[serde(rename = "istio-job-sidecar/quit-wrapped", default, borrow)]
    pub quit_wrapped: Option<Cow<'a, str>>,
    #[serde(rename = "sidecar.istio.io/status", default, borrow)]
    pub status: Option<Cow<'a, str>>,
    #[serde(rename = "sidecar.istio.io/nativeSidecar", default, borrow)]
    pub native_sidecar: Option<Cow<'a, str>>,
    #[serde(rename = "proxy.istio.io/config", default, borrow)]
    pub proxy_config: Option<Cow<'a, str>>,
    #[serde(rename = "sidecar.istio.io/inject", default, borrow)]
    pub inject: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq, Eq)]
pub struct Labels<'a> {
    #[serde(rename = "sidecar.istio.io/inject", default, borrow)]
    pub inject: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec<'a> {
    #[serde(default, borrow)]
    pub restart_policy: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub containers: Option<Vec<Container<'a>>>,
    #[serde(default, borrow)]
    pub init_containers: Option<Vec<Container<'a>>>,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Container<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub restart_policy: Option<Cow<'a, str>>,
    /// Whether the container sets `command` (its content is read by the mode
    /// that needs it, from the object itself).
    #[serde(default)]
    pub command: Option<serde::de::IgnoredAny>,
}

/// `{metadata, spec}` of a pod template (or of a Pod).
#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
pub struct PodTemplate<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Meta<'a>>,
    #[serde(default, borrow)]
    pub spec: Option<PodSpec<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct JobSpec<'a> {
    #[serde(default, borrow)]
    pub template: Option<PodTemplate<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct Job<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Meta<'a>>,
    #[serde(default, borrow)]
    pub spec: Option<JobSpec<'a>>,
}

/// `spec.jobTemplate` of a CronJob: metadata (where `istioctl kube-inject`
/// writes the injection status) and the Job spec.
#[derive(Deserialize, Debug, Default)]
pub struct JobTemplate<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Meta<'a>>,
    #[serde(default, borrow)]
    pub spec: Option<JobSpec<'a>>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec<'a> {
    #[serde(default, borrow)]
    pub job_template: Option<JobTemplate<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct CronJob<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Meta<'a>>,
    #[serde(default, borrow)]
    pub spec: Option<CronJobSpec<'a>>,
}

/// A Pod: its own metadata and spec are the "template".
#[derive(Deserialize, Debug, Default)]
pub struct Pod<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Meta<'a>>,
    #[serde(default, borrow)]
    pub spec: Option<PodSpec<'a>>,
}
