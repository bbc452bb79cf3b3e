//! The light view of a request, read in one pass over the payload.
//!
//! Only `request.kind`, `request.operation`, `settings` and the parts of
//! `request.object` a decision or a mode needs are looked at; the object is
//! expanded along the paths of its kind (`workload::shape`) and everything
//! else stays raw, borrowed from the payload. When the kind and operation
//! already say "nothing to do" (they come before the object in what
//! policy-server sends), the object is only scanned, never built.

use crate::decide;
use crate::json::{Expand, Key, Node};
use crate::workload::{self, Kind};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

pub const ANNOTATION_MODE: &str = "istio-job-sidecar/mode";
pub const ANNOTATION_QUIT_WRAPPED: &str = "istio-job-sidecar/quit-wrapped";
pub const ANNOTATION_STATUS: &str = "sidecar.istio.io/status";
pub const ANNOTATION_NATIVE_SIDECAR: &str = "sidecar.istio.io/nativeSidecar";
pub const ANNOTATION_PROXY_CONFIG: &str = "proxy.istio.io/config";
/// Both a label (preferred by Istio) and a legacy annotation.
pub const INJECT: &str = "sidecar.istio.io/inject";

/// What `validate` needs of its payload `{"request": ..., "settings": ...}`.
#[derive(Debug, Default)]
pub struct Request<'a> {
    /// `request.kind` when it is a kind this policy handles.
    pub kind: Option<Kind>,
    pub operation: Option<Cow<'a, str>>,
    /// `request.object`, expanded for its kind; `None` when absent, null, or
    /// not read because kind and operation already decided.
    pub object: Option<Node<'a>>,
    pub settings: Option<&'a RawValue>,
}

impl<'a> Request<'a> {
    /// Read a payload. An error is a payload that is not JSON or not shaped
    /// like an admission request at its top levels.
    pub fn parse(text: &'a str) -> Result<Request<'a>, serde_json::Error> {
        let mut request = Request::default();
        let mut de = serde_json::Deserializer::from_str(text);
        PayloadSeed(&mut request).deserialize(&mut de)?;
        de.end()?;
        Ok(request)
    }
}

#[derive(Deserialize)]
struct GroupKind<'a> {
    #[serde(default, borrow)]
    group: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Cow<'a, str>,
}

/// The top level: `request` and `settings`; anything else is skipped.
struct PayloadSeed<'r, 'a>(&'r mut Request<'a>);

impl<'de, 'r> DeserializeSeed<'de> for PayloadSeed<'r, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'r> Visitor<'de> for PayloadSeed<'r, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with request and settings")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "request" => map.next_value_seed(RequestSeed(&mut *self.0))?,
                "settings" => self.0.settings = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The AdmissionRequest: kind, operation and object.
struct RequestSeed<'r, 'a>(&'r mut Request<'a>);

impl<'de, 'r> DeserializeSeed<'de> for RequestSeed<'r, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'r> Visitor<'de> for RequestSeed<'r, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an admission request object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let request = self.0;
        // Until `kind` is read, the object is expanded for any handled kind.
        let mut kind_seen = false;
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "kind" => {
                    let gk: Option<GroupKind> = map.next_value()?;
                    request.kind = gk.and_then(|gk| Kind::from_group_kind(&gk.group, &gk.kind));
                    kind_seen = true;
                }
                "operation" => {
                    request.operation = map.next_value::<Option<Key>>()?.map(|Key(k)| k);
                }
                "object" => {
                    let wanted = match (kind_seen, request.kind) {
                        (false, _) => Some(workload::shape(None)),
                        (true, None) => None,
                        (true, Some(kind)) => {
                            let operation = request.operation.as_deref();
                            let skip = operation.and_then(|op| decide::by_operation(kind, op));
                            skip.is_none().then(|| workload::shape(Some(kind)))
                        }
                    };
                    request.object = match wanted {
                        Some(shape) => {
                            Some(map.next_value_seed(Expand(shape))?).filter(|node| !node.is_null())
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                            None
                        }
                    };
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
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
    pub quit_wrapped: Option<Cow<'a, str>>,
    pub status: Option<Cow<'a, str>>,
    pub native_sidecar: Option<Cow<'a, str>>,
    pub proxy_config: Option<Cow<'a, str>>,
    pub inject: Option<Cow<'a, str>>,
}

impl<'a> Annotations<'a> {
    /// The field for annotation `key`, if it is one decisions read.
    pub fn field(&mut self, key: &str) -> Option<&mut Option<Cow<'a, str>>> {
        Some(match key {
            ANNOTATION_MODE => &mut self.mode,
            ANNOTATION_QUIT_WRAPPED => &mut self.quit_wrapped,
            ANNOTATION_STATUS => &mut self.status,
            ANNOTATION_NATIVE_SIDECAR => &mut self.native_sidecar,
            ANNOTATION_PROXY_CONFIG => &mut self.proxy_config,
            INJECT => &mut self.inject,
            _ => return None,
        })
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Labels<'a> {
    pub inject: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodSpec<'a> {
    pub restart_policy: Option<Cow<'a, str>>,
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
