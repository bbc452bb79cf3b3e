//! A lazily expanded JSON tree: why the policy does not parse the object
//! into a `serde_json::Value` (or typed structs) like most policies do.
//!
//! - Cost. Every Pod of a cluster may pass through `validate`, and objects
//!   reach 1 MiB (big environments, annotations, managed fields). A full
//!   tree costs an allocation per value to build and again to write back;
//!   here the object stays borrowed raw JSON except along the few paths a
//!   decision reads or a mode edits, expanded one level at a time, so a
//!   large object costs a scan. The skip path (a Pod that runs forever, a
//!   Job UPDATE) pays for a scan and nothing else.
//! - Nothing dropped. Kubewarden diffs the returned object against the
//!   request to make the patch, so any field the policy failed to carry
//!   back (a typed struct that predates a Kubernetes field) would become a
//!   `remove`. Raw parts are written back as they came, so unknown and future
//!   fields survive without the policy knowing them.

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// One JSON value: raw (untouched) or expanded for editing.
#[derive(Debug, Clone)]
pub enum Node<'a> {
    Raw(&'a RawValue),
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
    Array(Vec<Node<'a>>),
    /// A value the policy wrote.
    Value(Value),
}

/// Why an edit could not be made: the JSON at `path` is not what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'a> Node<'a> {
    pub fn raw(raw: &'a RawValue) -> Self {
        Node::Raw(raw)
    }

    /// A JSON string the policy writes.
    pub fn from_string(s: impl Into<String>) -> Self {
        Node::Value(Value::String(s.into()))
    }

    /// True for JSON `null` (which Kubernetes reads as "absent").
    pub fn is_null(&self) -> bool {
        match self {
            // Raw values come from serde_json without surrounding space.
            Node::Raw(raw) => raw.get() == "null",
            Node::Value(v) => v.is_null(),
            _ => false,
        }
    }

    /// The members of this object, expanding it if it is still raw.
    pub fn members_mut(&mut self) -> Result<&mut Vec<(Cow<'a, str>, Node<'a>)>, ShapeError> {
        if let Node::Raw(raw) = self {
            let Members(members) = serde_json::from_str(raw.get())
                .map_err(|_| ShapeError("expected an object".into()))?;
            *self = Node::Object(members);
        }
        if let Node::Value(Value::Object(map)) = self {
            let members = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Node::Value(v)))
                .collect();
            *self = Node::Object(members);
        }
        match self {
            Node::Object(members) => Ok(members),
            _ => Err(ShapeError("expected an object".into())),
        }
    }

    /// The items of this array, expanding it if it is still raw.
    pub fn items_mut(&mut self) -> Result<&mut Vec<Node<'a>>, ShapeError> {
        if let Node::Raw(raw) = self {
            let Items(items) = serde_json::from_str(raw.get())
                .map_err(|_| ShapeError("expected an array".into()))?;
            *self = Node::Array(items);
        }
        if let Node::Value(Value::Array(values)) = self {
            let items = std::mem::take(values)
                .into_iter()
                .map(Node::Value)
                .collect();
            *self = Node::Array(items);
        }
        match self {
            Node::Array(items) => Ok(items),
            _ => Err(ShapeError("expected an array".into())),
        }
    }

    /// How many items this array holds, counted without building them;
    /// `None` when it is no array.
    pub fn item_count(&self) -> Option<usize> {
        match self {
            Node::Raw(raw) => serde_json::from_str::<Count>(raw.get()).ok().map(|c| c.0),
            Node::Array(items) => Some(items.len()),
            Node::Value(Value::Array(values)) => Some(values.len()),
            _ => None,
        }
    }

    /// The member `key` of this object, if present and not null. With
    /// duplicate keys the last one wins, as in the API server's decoder.
    pub fn get_mut(&mut self, key: &str) -> Result<Option<&mut Node<'a>>, ShapeError> {
        let members = self.members_mut()?;
        Ok(members
            .iter_mut()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .filter(|v| !v.is_null()))
    }

    /// The member `key`, created as `{}` (or replacing a `null`) when absent.
    pub fn object_entry(&mut self, key: &str) -> Result<&mut Node<'a>, ShapeError> {
        self.entry_or(key, || Node::Object(Vec::new()))
    }

    /// The member `key`, created as `[]` (or replacing a `null`) when absent.
    pub fn array_entry(&mut self, key: &str) -> Result<&mut Node<'a>, ShapeError> {
        self.entry_or(key, || Node::Array(Vec::new()))
    }

    fn entry_or(
        &mut self,
        key: &str,
        make: impl FnOnce() -> Node<'a>,
    ) -> Result<&mut Node<'a>, ShapeError> {
        let members = self.members_mut()?;
        let index = match members.iter().rposition(|(k, _)| k == key) {
            Some(i) => {
                if members[i].1.is_null() {
                    members[i].1 = make();
                }
                i
            }
            None => {
                members.push((Cow::Owned(key.to_owned()), make()));
                members.len() - 1
            }
        };
        Ok(&mut members[index].1)
    }

    /// Set member `key` to `value`, replacing the last member of that name or
    /// appending a new one.
    pub fn set(&mut self, key: &str, value: Node<'a>) -> Result<(), ShapeError> {
        let members = self.members_mut()?;
        match members.iter_mut().rev().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => members.push((Cow::Owned(key.to_owned()), value)),
        }
        Ok(())
    }

    /// Follow `path` through objects, expanding as it goes; `None` when a
    /// member on the way is absent or null.
    pub fn path_mut(&mut self, path: &[&str]) -> Result<Option<&mut Node<'a>>, ShapeError> {
        let mut node = self;
        for key in path {
            match node.get_mut(key)? {
                Some(next) => node = next,
                None => return Ok(None),
            }
        }
        Ok(Some(node))
    }

    /// A JSON string as `Cow`, borrowed from the input when it has no escapes;
    /// `Ok(None)` for null.
    pub fn read_string(&self) -> Result<Option<Cow<'a, str>>, ShapeError> {
        let expected = || ShapeError("expected a string".into());
        match self {
            Node::Raw(raw) if raw.get() == "null" => Ok(None),
            // Most strings have no escapes: borrow them without a parser.
            Node::Raw(raw) if is_plain_string(raw.get()) => {
                let text: &'a str = raw.get();
                Ok(Some(Cow::Borrowed(&text[1..text.len() - 1])))
            }
            Node::Raw(raw) => serde_json::from_str::<Key<'a>>(raw.get())
                .map(|Key(k)| Some(k))
                .map_err(|_| expected()),
            Node::Value(Value::Null) => Ok(None),
            Node::Value(Value::String(s)) => Ok(Some(Cow::Owned(s.clone()))),
            _ => Err(expected()),
        }
    }

    /// A JSON boolean; `Ok(None)` for null.
    pub fn read_bool(&self) -> Result<Option<bool>, ShapeError> {
        match self {
            Node::Raw(raw) => match raw.get() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                "null" => Ok(None),
                _ => Err(ShapeError("expected a boolean".into())),
            },
            Node::Value(Value::Bool(b)) => Ok(Some(*b)),
            Node::Value(Value::Null) => Ok(None),
            _ => Err(ShapeError("expected a boolean".into())),
        }
    }

    /// A plain `serde_json::Value` of this node (for small parts only).
    pub fn to_value(&self) -> Result<Value, ShapeError> {
        serde_json::to_value(self).map_err(|e| ShapeError(e.to_string()))
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Raw(raw) => raw.serialize(serializer),
            Node::Value(v) => v.serialize(serializer),
            Node::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Node::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

/// Which parts of a document to expand while it is read, so the parts a
/// decision or a mode needs come out of the one pass over the payload, and
/// everything else stays raw.
#[derive(Debug)]
pub enum Expansion {
    /// Keep raw.
    Raw,
    /// An object: the named members expanded by their shape, others raw.
    Object(&'static [(&'static str, Expansion)]),
    /// An array whose items all have this shape.
    Items(&'static Expansion),
}

/// Reads one value, expanded as `Expansion` says. A value of another type than
/// the shape expects is kept as a `Node::Value`: readers then report the
/// shape error, and such an object is never written back.
#[derive(Clone, Copy)]
pub struct Expand(pub &'static Expansion);

impl<'de> DeserializeSeed<'de> for Expand {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        match self.0 {
            Expansion::Raw => <&'de RawValue>::deserialize(deserializer).map(Node::Raw),
            expansion => deserializer.deserialize_any(ExpandVisitor(expansion)),
        }
    }
}

struct ExpandVisitor(&'static Expansion);

impl<'de> Visitor<'de> for ExpandVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Node<'de>, M::Error> {
        let children: &[(&str, Expansion)] = match self.0 {
            Expansion::Object(children) => children,
            _ => &[],
        };
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(Key(k)) = map.next_key()? {
            let value = match children.iter().find(|(name, _)| *name == k) {
                Some((_, shape)) => map.next_value_seed(Expand(shape))?,
                None => Node::Raw(map.next_value()?),
            };
            members.push((k, value));
        }
        Ok(Node::Object(members))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let item = match self.0 {
            Expansion::Items(item) => item,
            _ => &Expansion::Raw,
        };
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(8));
        while let Some(node) = seq.next_element_seed(Expand(item))? {
            items.push(node);
        }
        Ok(Node::Array(items))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Value(Value::Null))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node<'de>, E> {
        Ok(Node::Value(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(Node::Value(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node<'de>, E> {
        Ok(Node::Value(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node<'de>, E> {
        Ok(Node::Value(v.into()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node<'de>, E> {
        Ok(Node::Value(Value::String(v.to_owned())))
    }
}

/// A raw JSON string with no escapes (raw values are valid JSON, so a
/// leading quote and no backslash mean its content is the text between).
fn is_plain_string(raw: &str) -> bool {
    raw.len() >= 2 && raw.starts_with('"') && !raw.contains('\\')
}

/// One level of an object: keys (borrowed when they have no escapes) and
/// raw values, in document order, duplicates kept.
struct Members<'a>(Vec<(Cow<'a, str>, Node<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(k)) = map.next_key()? {
                    let v: &'de RawValue = map.next_value()?;
                    members.push((k, Node::Raw(v)));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(V(std::marker::PhantomData))
    }
}

/// One level of an array, as raw items.
struct Items<'a>(Vec<Node<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Items<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Items<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(8));
                while let Some(v) = seq.next_element::<&'de RawValue>()? {
                    items.push(Node::Raw(v));
                }
                Ok(Items(items))
            }
        }
        deserializer.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// The number of items of a JSON array, each skipped as it is read.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A key, borrowed from the input when it has no escapes.
pub struct Key<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(s: &str) -> &RawValue {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn untouched_parts_keep_their_bytes() {
        let text = r#"{"a": 1.50, "b": {"x": [1, 2]}, "c": {"y": "\u00e9"}}"#;
        let mut node = Node::raw(parse(text));
        node.object_entry("c")
            .unwrap()
            .set("z", Node::from_string("new"))
            .unwrap();
        let out = serde_json::to_string(&node).unwrap();
        assert_eq!(
            out,
            r#"{"a":1.50,"b":{"x": [1, 2]},"c":{"y":"\u00e9","z":"new"}}"#
        );
    }

    #[test]
    fn null_members_are_absent_and_replaced() {
        let mut node = Node::raw(parse(r#"{"metadata": null}"#));
        assert!(node.get_mut("metadata").unwrap().is_none());
        node.object_entry("metadata")
            .unwrap()
            .set("k", Node::from_string("v"))
            .unwrap();
        assert_eq!(node.to_value().unwrap(), json!({"metadata": {"k": "v"}}));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let mut node = Node::raw(parse(r#"{"a": {"n": 1}, "a": {"n": 2}}"#));
        node.object_entry("a")
            .unwrap()
            .set("m", Node::from_string("x"))
            .unwrap();
        assert_eq!(
            serde_json::to_string(&node).unwrap(),
            r#"{"a":{"n": 1},"a":{"n":2,"m":"x"}}"#
        );
    }

    #[test]
    fn wrong_shapes_are_errors_not_panics() {
        let mut node = Node::raw(parse(r#"{"a": "text", "b": [1]}"#));
        assert!(node.object_entry("a").unwrap().members_mut().is_err());
        assert!(node.object_entry("b").unwrap().members_mut().is_err());
        assert!(node.array_entry("a").unwrap().items_mut().is_err());
        assert!(node.path_mut(&["a", "x"]).is_err());
    }

    #[test]
    fn arrays_edit_in_place() {
        let mut node = Node::raw(parse(r#"{"l": [{"n": 1}, {"n": 2}, {"n": 3}]}"#));
        let items = node.array_entry("l").unwrap().items_mut().unwrap();
        let moved = items.remove(1);
        node.array_entry("m")
            .unwrap()
            .items_mut()
            .unwrap()
            .push(moved);
        assert_eq!(
            node.to_value().unwrap(),
            json!({"l": [{"n": 1}, {"n": 3}], "m": [{"n": 2}]})
        );
    }
}
