//! JSON text read as written, for the judges of the policy's answers.
//!
//! With serde_json's `raw_value` feature on (the policy enables it, and
//! Cargo turns a feature on for every crate of a build that shares the
//! dependency), `serde_json::Value`'s own deserializer takes an object whose
//! first key is `$serde_json::private::RawValue` for serde_json's internal
//! encoding of an embedded raw value: it parses the member's string as JSON
//! and returns that instead of the object, or fails (`{"$serde…": ""}` is
//! "EOF while parsing"). That key is valid JSON and reaches the policy in
//! any string map a caller controls (an annotation the API server would
//! only reject after the mutating webhooks ran), so a test that read the
//! answer with `Value`'s deserializer would call valid JSON invalid, or
//! compare the wrong object. `from_slice` reads every object member by
//! member, whatever its keys.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Parses JSON text into a `Value`, every object read as the members it has.
pub fn from_slice(text: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Literal>(text).map(|Literal(v)| v)
}

/// A `Value` deserialized without `Value`'s special keys.
struct Literal(Value);

impl<'de> Deserialize<'de> for Literal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LiteralVisitor).map(Literal)
    }
}

struct LiteralVisitor;

impl<'de> Visitor<'de> for LiteralVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text has no NaN or infinity, so every parsed float is finite.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Literal(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Value, M::Error> {
        let mut members = Map::new();
        // Duplicate keys: the last one wins, as in `Value` and the API
        // server's decoder.
        while let Some((key, Literal(value))) = map.next_entry::<String, Literal>()? {
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_value_reads() {
        let text = r#"{"a":[1,-2,3.5,1e400,"s\u00e9",true,null,{}],"b":{"c":{"a":1,"a":2}}}"#;
        // 1e400 is out of f64's range: both refuse it the same way.
        assert!(from_slice(text.as_bytes()).is_err());
        assert!(serde_json::from_str::<Value>(text).is_err());
        let text = text.replace("1e400", "18446744073709551615");
        assert_eq!(
            from_slice(text.as_bytes()).unwrap(),
            serde_json::from_str::<Value>(&text).unwrap()
        );
    }

    #[test]
    fn reads_serde_json_s_raw_value_key_as_a_key() {
        let text =
            br#"{"$serde_json::private::RawValue":"","b":{"$serde_json::private::RawValue":"{}"}}"#;
        let mut expected = Map::new();
        expected.insert("$serde_json::private::RawValue".into(), json!(""));
        let mut inner = Map::new();
        inner.insert("$serde_json::private::RawValue".into(), json!("{}"));
        expected.insert("b".into(), Value::Object(inner));
        assert_eq!(from_slice(text).unwrap(), Value::Object(expected));
    }

    #[test]
    fn refuses_what_is_not_json() {
        for text in ["", "{", "[1,]", "{\"a\" 1}", "nul", "1 2"] {
            assert!(from_slice(text.as_bytes()).is_err(), "{text:?}");
        }
    }
}
