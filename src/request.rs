//! The light view of a request: only the fields decisions need, borrowed from
//! the payload. Everything else is skipped by the parser without being built,
//! so the common answer (a Pod that runs forever, a Job update) costs a scan.

use serde::de::{value::MapAccessDeserializer, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

/// A struct view that accepts only a JSON object. Serde's derived structs
/// also accept an array of field values, which would read
/// `"annotations": ["a", "b"]` as if it named the fields in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Obj<T>(pub T);

impl<T> Obj<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Obj<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        deserializer.deserialize_map(V(PhantomData))
    }
}

/// What Kubewarden's policy-server sends to `validate`.
#[derive(Deserialize, Debug)]
pub struct Payload<'a> {
    #[serde(borrow)]
    pub request: Obj<Request<'a>>,
    #[serde(default, borrow)]
    pub settings: Option<&'a RawValue>,
}

/// The part of an AdmissionRequest the policy reads.
#[derive(Deserialize, Debug)]
pub struct Request<'a> {
    #[serde(default, borrow)]
    pub kind: Option<Obj<GroupVersionKind<'a>>>,
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
    pub annotations: Option<Obj<Annotations<'a>>>,
    #[serde(default, borrow)]
    pub labels: Option<Obj<Labels<'a>>>,
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
    pub containers: Option<Vec<Obj<Container<'a>>>>,
    #[serde(default, borrow)]
    pub init_containers: Option<Vec<Obj<Container<'a>>>>,
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
    pub metadata: Option<Obj<Meta<'a>>>,
    #[serde(default, borrow)]
    pub spec: Option<Obj<PodSpec<'a>>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct JobSpec<'a> {
    #[serde(default, borrow)]
    pub template: Option<Obj<PodTemplate<'a>>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct Job<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Obj<Meta<'a>>>,
    #[serde(default, borrow)]
    pub spec: Option<Obj<JobSpec<'a>>>,
}

/// `spec.jobTemplate` of a CronJob: metadata (where `istioctl kube-inject`
/// writes the injection status) and the Job spec.
#[derive(Deserialize, Debug, Default)]
pub struct JobTemplate<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Obj<Meta<'a>>>,
    #[serde(default, borrow)]
    pub spec: Option<Obj<JobSpec<'a>>>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec<'a> {
    #[serde(default, borrow)]
    pub job_template: Option<Obj<JobTemplate<'a>>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct CronJob<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Obj<Meta<'a>>>,
    #[serde(default, borrow)]
    pub spec: Option<Obj<CronJobSpec<'a>>>,
}

/// A Pod: its own metadata and spec are the "template".
#[derive(Deserialize, Debug, Default)]
pub struct Pod<'a> {
    #[serde(default, borrow)]
    pub metadata: Option<Obj<Meta<'a>>>,
    #[serde(default, borrow)]
    pub spec: Option<Obj<PodSpec<'a>>>,
}
