//! `Json`, a JSON value whose objects keep their members in the order they
//! were made (the order the inputs are written in), and the ways the cases
//! build and edit one: members read and set by index, values made from
//! strings and numbers, `obj` and `strs`, and the conversions to and from
//! `serde_json::Value`.

use serde_json::Value;
use std::ops::{Index, IndexMut};

/// A JSON value whose objects keep their members in the order they were
/// made: a member set anew goes last, one set again keeps its place, one
/// removed closes the gap (as Python's dict, which wrote these files first).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

static NULL: Json = Json::Null;

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes member `key` out, the others keeping their order.
    pub fn remove(&mut self, key: &str) -> Option<Json> {
        let Json::Obj(members) = self else {
            return None;
        };
        let at = members.iter().position(|(k, _)| k == key)?;
        Some(members.remove(at).1)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of an array.
    pub fn items(&mut self) -> &mut Vec<Json> {
        match self {
            Json::Arr(items) => items,
            other => panic!("not an array: {other:?}"),
        }
    }

    /// The same value as `serde_json` holds it (what the policy is sent).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::Float(f) => Value::from(*f),
            Json::Str(s) => Value::from(s.as_str()),
            Json::Arr(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Obj(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// `value` with its members in the order `serde_json` holds them (the
    /// order `expected.json` is written in).
    pub fn from_value(value: &Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Json::Int(i),
                None => Json::Float(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Arr(items.iter().map(Json::from_value).collect()),
            Value::Object(members) => Json::Obj(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }
}

impl Index<&str> for Json {
    type Output = Json;
    fn index(&self, key: &str) -> &Json {
        self.get(key).unwrap_or(&NULL)
    }
}

/// Setting a member: a null becomes an object, a missing member is added
/// last (as null until set).
impl IndexMut<&str> for Json {
    fn index_mut(&mut self, key: &str) -> &mut Json {
        if *self == Json::Null {
            *self = Json::Obj(Vec::new());
        }
        let Json::Obj(members) = self else {
            panic!("not an object: {self:?}");
        };
        let at = match members.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                members.push((key.to_owned(), Json::Null));
                members.len() - 1
            }
        };
        &mut members[at].1
    }
}

impl Index<usize> for Json {
    type Output = Json;
    fn index(&self, i: usize) -> &Json {
        match self {
            Json::Arr(items) => items.get(i).unwrap_or(&NULL),
            _ => &NULL,
        }
    }
}

impl IndexMut<usize> for Json {
    fn index_mut(&mut self, i: usize) -> &mut Json {
        &mut self.items()[i]
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_owned())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

impl From<i64> for Json {
    fn from(i: i64) -> Json {
        Json::Int(i)
    }
}

impl From<Option<&str>> for Json {
    fn from(s: Option<&str>) -> Json {
        s.map_or(Json::Null, Json::from)
    }
}

/// An object of `members`, in that order.
pub(super) fn obj<const N: usize>(members: [(&str, Json); N]) -> Json {
    Json::Obj(members.map(|(k, v)| (k.to_owned(), v)).into())
}

pub(super) fn strs(items: &[&str]) -> Json {
    Json::Arr(items.iter().map(|s| Json::from(*s)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_set_again_keeps_its_place() {
        let mut value = Json::parse(r#"{"b": 1, "a": 2}"#);
        value["b"] = 3.into();
        value["c"]["d"] = "e".into();
        value.remove("a");
        assert_eq!(value.to_compact(), r#"{"b":3,"c":{"d":"e"}}"#);
    }
}
