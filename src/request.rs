//! The light view of a request, read in one pass over the payload.
//!
//! Only `request.kind`, `request.operation`, `request.namespace`,
//! `settings` and the parts of
//! `request.object` a decision or a mode needs are looked at; the object is
//! expanded along the paths of its kind (`workload::expansion`) and everything
//! else stays raw, borrowed from the payload. When the kind and operation,
//! read before the object, already say "nothing to do", the object is only
//! scanned, never built: which pairs those are is the caller's rule
//! (`MaySkip`), not this reader's. policy-server writes the members in
//! alphabetical order (`kind`, `object`, `operation`), so there the kind is
//! known first; other hosts write the API server's order, with the
//! operation before the object too.

use crate::json::{Expand, Key, Node};
use crate::names::Kind;
use crate::workload;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The caller's rule: `true` for a kind and operation whose object need
/// not be read at all.
pub type MaySkip<'s> = &'s dyn Fn(Kind, &str) -> bool;

/// What `validate` needs of its payload `{"request": ..., "settings": ...}`.
#[derive(Debug, Default)]
pub struct Request<'a> {
    /// `request.kind` when it is a kind this policy handles.
    pub kind: Option<Kind>,
    pub operation: Option<Cow<'a, str>>,
    /// `request.namespace`: the namespace of a namespaced object.
    pub namespace: Option<Cow<'a, str>>,
    /// `request.object`, expanded for its kind; `None` when absent, null, or
    /// not read because kind and operation already decided.
    pub object: Option<Node<'a>>,
    pub settings: Option<&'a RawValue>,
}

impl<'a> Request<'a> {
    /// Read a payload. An error is a payload that is not JSON or not shaped
    /// like an admission request at its top levels.
    pub fn parse(text: &'a str, skip: MaySkip) -> Result<Request<'a>, serde_json::Error> {
        let mut request = Request::default();
        let mut de = serde_json::Deserializer::from_str(text);
        PayloadSeed(&mut request, skip).deserialize(&mut de)?;
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
struct PayloadSeed<'r, 'a, 's>(&'r mut Request<'a>, MaySkip<'s>);

impl<'de> DeserializeSeed<'de> for PayloadSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PayloadSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with request and settings")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "request" => map.next_value_seed(RequestSeed(&mut *self.0, self.1))?,
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
struct RequestSeed<'r, 'a, 's>(&'r mut Request<'a>, MaySkip<'s>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an admission request object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let RequestSeed(request, skip) = self;
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
                "namespace" => {
                    request.namespace = map.next_value::<Option<Key>>()?.map(|Key(k)| k);
                }
                "object" => {
                    let wanted = match (kind_seen, request.kind) {
                        (false, _) => Some(workload::expansion(None)),
                        (true, None) => None,
                        (true, Some(kind)) => {
                            let operation = request.operation.as_deref();
                            let skipped = operation.is_some_and(|op| skip(kind, op));
                            (!skipped).then(|| workload::expansion(Some(kind)))
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
