//! sigs.k8s.io/yaml v1.6.0 `convertToJSONableObject` (yaml.go, with no
//! JSON target, as `YAMLToJSON` calls it) and `encoding/json`'s `Marshal`
//! of what it returns.

use super::decode::Go;
use super::Error;
use serde_json::{Map, Number, Value};

pub(super) fn to_json(value: Go) -> Result<Value, Error> {
    Ok(match value {
        Go::Nil => Value::Null,
        Go::Bool(b) => Value::Bool(b),
        Go::Int(i) => Value::from(i),
        Go::Uint(u) => Value::from(u),
        // `floatEncoder`: NaN and the infinities are "unsupported value".
        Go::Float(f) if !f.is_finite() => {
            return Err(Error::Json(format!("unsupported value: {f}")))
        }
        Go::Float(f) => Value::Number(float_number(f)),
        Go::Str(bytes) => Value::String(go_json_string(&bytes)),
        Go::Seq(items) => Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?),
        Go::Map(entries) => {
            let mut object = Map::new();
            for (key, value) in entries {
                let key = key_string(&key)?;
                let value = to_json(value)?;
                // Go's map has both entries; which one `json.Marshal` writes
                // last under the one key depends on its iteration order.
                if object.insert(key.clone(), value).is_some() {
                    return Err(Error::Undetermined(format!(
                        "two keys are written \"{key}\""
                    )));
                }
            }
            Value::Object(object)
        }
    })
}

/// The key's string: a string as it is, an int in decimal, a float as
/// `strconv.FormatFloat(k, 'g', -1, 32)` (with `.inf`, `-.inf`, `.nan`),
/// a bool `true`/`false`; any other key (nil, a uint64) is refused.
fn key_string(key: &Go) -> Result<String, Error> {
    match key {
        Go::Str(bytes) => Ok(go_json_string(bytes)),
        Go::Int(i) => Ok(i.to_string()),
        Go::Float(f) => Ok(format_g32(*f)),
        Go::Bool(b) => Ok(b.to_string()),
        Go::Nil => Err(Error::Json("unsupported map key of type: <nil>".into())),
        other => Err(Error::Json(format!("unsupported map key: {other:?}"))),
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` as sigs.k8s.io/yaml writes a float
/// key: `f` rounded to float32, its shortest digits, `%e` form when the
/// exponent is below -4 or at least 6 (`eprec` of the shortest form is 6),
/// the exponent signed and at least two digits.
fn format_g32(f: f64) -> String {
    let f = f as f32;
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // Rust's `{:e}` gives the shortest digits that read back as this f32.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if f == 0.0 {
        return format!("{sign}0");
    }
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.abs());
    }
    // `%f` with the shortest digits.
    let point = exp + 1;
    if point <= 0 {
        format!(
            "{sign}0.{}{digits}",
            "0".repeat(point.unsigned_abs() as usize)
        )
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// A finite float64 as the number `encoding/json` writes and a reader reads
/// back: shortest digits; with no fraction and below 1e21 that text is an
/// integer, read as one where it fits 64 bits.
pub(super) fn float_number(f: f64) -> Number {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f >= i64::MIN as f64 && f < i64::MAX as f64 {
            return Number::from(f as i64);
        }
        if f >= 0.0 && f < u64::MAX as f64 {
            return Number::from(f as u64);
        }
    }
    Number::from_f64(f).unwrap_or_else(|| Number::from(0))
}

/// A Go string as `encoding/json` writes it: each byte that is not part of
/// valid UTF-8 becomes U+FFFD, one for each byte.
fn go_json_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                out.push_str(valid);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push('\u{fffd}');
                rest = &after[1..];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_as_go_writes_them() {
        for (f, text) in [
            (1.2, "1.2"),
            (1e36, "1e+36"),
            (0.1, "0.1"),
            (1.23456789, "1.2345679"),
            (1000.0, "1000"),
            (1e7, "1e+07"),
            (1234567.0, "1.234567e+06"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e300, ".inf"),
        ] {
            assert_eq!(format_g32(f), text, "{f}");
        }
    }

    #[test]
    fn invalid_bytes_become_one_replacement_each() {
        assert_eq!(go_json_string(b"a\x80\x81b"), "a\u{fffd}\u{fffd}b");
        assert_eq!(go_json_string(b"\xe2\x82"), "\u{fffd}\u{fffd}");
    }
}
