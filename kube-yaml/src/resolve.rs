//! What a scalar means to go-yaml v2, and whether a string can be written
//! plain so that every reader reads it back as that string.
//!
//! Kubernetes and Istio turn YAML into JSON with sigs.k8s.io/yaml v1.6.0
//! (Istio 1.29.0, 1.30.0 and 1.31.0-rc.0 go.mod), that is
//! go.yaml.in/yaml/v2 v2.4.x (go-yaml v2, YAML 1.1 rules): a plain `on`,
//! `y` or `NO` is a boolean, `1_000` and `0x1F` are integers, `010` is
//! octal, `1e5` is a float, and a date stays a string. A YAML 1.2 reader
//! (serde_yaml, saphyr, go-yaml v3) reads `on` and `1_000` as strings,
//! PyYAML (YAML 1.1) reads `1:20` as 80 and `._1` as a float: a string is
//! written plain only when no reader can take it for anything else.

use serde_json::{Number, Value};

/// A scalar as go-yaml v2 decodes it into an `interface{}`: `nil`, `bool`,
/// `int`/`int64`, `uint64`, `float64` or `string`.
#[derive(Debug, Clone, PartialEq)]
pub enum Plain {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
}

/// go-yaml v2's `resolve` (resolve.go, v2.4.4) for an untagged plain
/// scalar: the words of `resolveMapList` (looked up only when the first
/// byte's `resolveTable` hint is `yYnNtTfFoO~`, `+-0-9` or `.`, so `<<` is
/// a string here), then by hint: `.` is `strconv.ParseFloat`; a sign or a
/// digit is, on the text without its `_`, `ParseInt(s, 0, 64)`, then
/// `ParseUint`, then `ParseFloat` where `yamlStyleFloat` matches. A
/// timestamp (tried first) is decoded into an `interface{}` as its text, a
/// string, like everything else that fails.
pub fn resolve_plain(s: &str) -> Plain {
    let Some(first) = s.bytes().next() else {
        return Plain::Null;
    };
    if !matches!(
        first,
        b'y' | b'Y'
            | b'n'
            | b'N'
            | b't'
            | b'T'
            | b'f'
            | b'F'
            | b'o'
            | b'O'
            | b'~'
            | b'+'
            | b'-'
            | b'0'..=b'9' | b'.'
    ) {
        return Plain::Str;
    }
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            return Plain::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            return Plain::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => return Plain::Null,
        ".nan" | ".NaN" | ".NAN" => return Plain::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Plain::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Plain::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match first {
        b'.' => go_float(s).map_or(Plain::Str, Plain::Float),
        b'+' | b'-' | b'0'..=b'9' => {
            let plain: String = s.chars().filter(|c| *c != '_').collect();
            if let Some(i) = go_int(&plain) {
                return Plain::Int(i);
            }
            if let Some(u) = go_uint(&plain) {
                return Plain::Uint(u);
            }
            if yaml_style_float(&plain) {
                if let Some(f) = go_float(&plain) {
                    return Plain::Float(f);
                }
            }
            Plain::Str
        }
        _ => Plain::Str,
    }
}

/// The digits of Go's `strconv.ParseInt(s, 0, 64)` / `ParseUint`: the base
/// from the prefix (`0x`, `0o`, `0b` in either case, followed by at least
/// one more byte; else a leading `0` for octal).
fn go_digits(s: &str) -> Option<(u32, &str)> {
    let lower = |i: usize| s.as_bytes().get(i).map(u8::to_ascii_lowercase);
    let (base, digits) = match (lower(0), lower(1)) {
        (Some(b'0'), Some(b'x')) if s.len() >= 3 => (16, &s[2..]),
        (Some(b'0'), Some(b'o')) if s.len() >= 3 => (8, &s[2..]),
        (Some(b'0'), Some(b'b')) if s.len() >= 3 => (2, &s[2..]),
        (Some(b'0'), Some(_)) => (8, &s[1..]),
        _ => (10, s),
    };
    let valid = !digits.is_empty() && digits.chars().all(|c| c.is_digit(base));
    valid.then_some((base, digits))
}

fn go_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (base, digits) = go_digits(rest)?;
    let magnitude = i128::from(u64::from_str_radix(digits, base).ok()?);
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).ok()
}

fn go_uint(s: &str) -> Option<u64> {
    let (base, digits) = go_digits(s)?;
    u64::from_str_radix(digits, base).ok()
}

/// go-yaml v2's `yamlStyleFloat` (resolve.go):
/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` on the texts go-yaml hands it: for a
/// text led by `.`, or one `yamlStyleFloat` matched, the decimal forms of
/// that pattern (Go takes `_` only after a base prefix, and `inf`/`nan`
/// only without a leading `.`); out of range is an error in Go (`None`).
fn go_float(s: &str) -> Option<f64> {
    if !yaml_style_float(s) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// A resolved scalar as JSON, as sigs.k8s.io/yaml's `json.Marshal` writes
/// it and a JSON reader reads that back: `encoding/json` refuses NaN and
/// the infinities, writes a float in `%f` form between 1e-6 and 1e21 (so
/// an integral one as digits, which reads back as an integer where it fits
/// in 64 bits) and in `%e` form outside.
pub fn plain_json(plain: &Plain, text: &str) -> Result<Value, String> {
    Ok(match *plain {
        Plain::Null => Value::Null,
        Plain::Bool(b) => Value::Bool(b),
        Plain::Int(i) => Value::from(i),
        Plain::Uint(u) => Value::from(u),
        Plain::Float(f) => float_json(f).ok_or_else(|| {
            format!("{text:?} is read as {f}, which JSON cannot hold (json.Marshal refuses it)")
        })?,
        Plain::Str => Value::String(text.to_owned()),
    })
}

fn float_json(f: f64) -> Option<Value> {
    if !f.is_finite() {
        return None;
    }
    if f == 0.0 {
        // `0` and `-0`: what a JSON reader makes of Go's digits.
        return serde_json::from_str(if f.is_sign_negative() { "-0" } else { "0" }).ok();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
            return Some(Value::from(f as u64));
        }
        if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
            return Some(Value::from(f as i64));
        }
    }
    Number::from_f64(f).map(Value::Number)
}

/// A mapping key as sigs.k8s.io/yaml names it in JSON (yaml.go,
/// `convertToJSONableObject`, v1.6.0): a string as it is, an `int` with
/// `strconv.Itoa`, a bool as `true`/`false`, a `float64` with
/// `strconv.FormatFloat(f, 'g', -1, 32)` (`+Inf`, `-Inf`, `NaN` written
/// `.inf`, `-.inf`, `.nan`); any other key (null, a `uint64` past
/// `int64`) is an error: "unsupported map key of type".
pub fn key_string(plain: &Plain, text: &str) -> Result<String, String> {
    match *plain {
        Plain::Null => Err(format!(
            "the key {text:?} is null, which sigs.k8s.io/yaml cannot make a JSON key"
        )),
        Plain::Bool(b) => Ok(b.to_string()),
        Plain::Int(i) => Ok(i.to_string()),
        Plain::Uint(_) => Err(format!(
            "the key {text:?} is a uint64, which sigs.k8s.io/yaml cannot make a JSON key"
        )),
        Plain::Float(f) => Ok(go_format_float32(f)),
        Plain::Str => Ok(text.to_owned()),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's names for
/// the infinities and NaN: the shortest digits of `float32(f)`, in `%e`
/// form (`1e+06`, two exponent digits at least) when the exponent is below
/// -4 or at least 6 (the shortest form decides with precision 6), else in
/// `%f` form.
fn go_format_float32(f: f64) -> String {
    let f = f as f32;
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    // Rust writes the shortest digits that read back as this f32.
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if f == 0.0 {
        return format!("{sign}0");
    }
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.abs());
    }
    // %f with as many decimals as the digits need.
    let point = exp + 1; // digits before the decimal point
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if (point as usize) >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{text}")
}

/// Whether `s`, written plain in block context, is read back as the string
/// `s` by go-yaml v2 (kubectl, Helm), PyYAML and every YAML 1.1 reader,
/// and YAML 1.2 readers. Conservative: anything that may look like a
/// number, a boolean, a null, a date or YAML syntax is quoted.
pub fn plain_is_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let last = s.chars().last().unwrap_or(first);
    if first.is_whitespace() || last.is_whitespace() || last == ':' {
        return false;
    }
    // Indicators, and what starts a number in any schema.
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) && !(first == '-' && safe_after_dash(s)) {
        return false;
    }
    if first == '=' || first == '<' || first == '~' || resolve_plain(s) != Plain::Str {
        return false;
    }
    if matches!(first, '+' | '-') {
        let second = s[1..].chars().next();
        if second.is_none_or(|c| c.is_ascii_digit() || c == '.' || c == '_') {
            return false;
        }
    }
    if first.is_ascii_digit() || first == '.' {
        // A number or a date in some schema (YAML 1.1 has `0b1_0`, `1:20`,
        // `1.0e+5`, `2001-12-14t21:59:43Z`; 1.2 has `0o17`); `1Gi`,
        // `100m` and `12h` are strings in all of them.
        let numeric = s
            .chars()
            .all(|c| c.is_ascii_hexdigit() || "xXoO_.:+-".contains(c));
        let date =
            s.len() >= 5 && s[..4].bytes().all(|b| b.is_ascii_digit()) && s.as_bytes()[4] == b'-';
        if numeric || date {
            return false;
        }
    }
    if s.contains(": ") || s.contains(" #") || s.contains('\t') {
        return false;
    }
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if !s
        .chars()
        .all(|c| printable(c) && !line_break(c) && c != '\u{FEFF}')
    {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let words = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "infinity",
    ];
    !words.contains(&lower.trim_start_matches(['+', '-']))
}

/// `-x` is a plain scalar; `- x` and `-` are not (`---` is refused below).
fn safe_after_dash(s: &str) -> bool {
    s[1..].chars().next().is_some_and(|c| !c.is_whitespace())
}

/// YAML's printable characters (1.1 and 1.2 agree on this set).
pub fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7E}' | '\u{85}' | '\u{A0}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Line breaks for a YAML 1.1 reader (docs/facts.md): also NEL, LS and PS.
pub fn line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    /// What kubectl 1.37 prints (`kubectl label --local -f - x=y -o json`)
    /// for `k: <text>` in a ConfigMap's data, case by case.
    #[rstest]
    #[case("y", json!(true))]
    #[case("N", json!(false))]
    #[case("yEs", json!("yEs"))]
    #[case("On", json!(true))]
    #[case("oN", json!("oN"))]
    #[case("OFF", json!(false))]
    #[case("NULL", json!(null))]
    #[case("nuLL", json!("nuLL"))]
    #[case("~", json!(null))]
    #[case("1e5", json!(100000))]
    #[case(".5", json!(0.5))]
    #[case("1_000.5", json!(1000.5))]
    #[case("inf", json!("inf"))]
    #[case("+0b101", json!(5))]
    #[case("-0x1F", json!(-31))]
    #[case("0O7", json!(7))]
    #[case("1__0", json!(10))]
    #[case("_1", json!("_1"))]
    #[case("1_", json!(1))]
    #[case("012", json!(10))]
    #[case("09", json!(9))]
    #[case("1:20", json!("1:20"))]
    #[case("2001-12-14", json!("2001-12-14"))]
    #[case("0x1p3", json!("0x1p3"))]
    #[case("1e400", json!("1e400"))]
    #[case("18446744073709551615", json!(18446744073709551615u64))]
    #[case("<<", json!("<<"))]
    #[case("=", json!("="))]
    #[case("._1", json!("._1"))]
    #[case("0.", json!(0))]
    fn plain_scalars_read_as_kubectl_reads_them(#[case] text: &str, #[case] expected: Value) {
        assert_eq!(plain_json(&resolve_plain(text), text).unwrap(), expected);
    }

    #[test]
    fn infinities_are_refused_as_kubectl_refuses_them() {
        assert!(plain_json(&resolve_plain(".inf"), ".inf").is_err());
        assert!(plain_json(&resolve_plain(".NaN"), ".NaN").is_err());
    }

    #[rstest]
    #[case("on", false)]
    #[case("Yes", false)]
    #[case("n", false)]
    #[case("1_000", false)]
    #[case("1:20", false)]
    #[case("._1", false)]
    #[case("+_1", false)]
    #[case("0o17", false)]
    #[case("2001-12-14", false)]
    #[case("-.inf", false)]
    #[case("Infinity", false)]
    #[case("", false)]
    #[case("a: b", false)]
    #[case("{\"mode\":\"x\"}", false)]
    #[case("- x", false)]
    #[case("---", false)]
    #[case("a\u{2028}b", false)]
    #[case("<<", false)]
    #[case("1e5", false)]
    #[case("10.0.0.1", false)]
    #[case("0b1_0", false)]
    #[case("2001-12-14t21:59:43.10-05:00", false)]
    #[case("15020", false)]
    #[case("1Gi", true)]
    #[case("100m", true)]
    #[case("12h", true)]
    #[case("istio-proxy", true)]
    #[case("-c", true)]
    #[case("--domain", true)]
    #[case("sidecar.istio.io/status", true)]
    #[case("http://127.0.0.1:15020/quitquitquit", true)]
    #[case("perl -Mbignum=bpi -wle print bpi(2000)", true)]
    fn a_string_is_plain_only_when_every_reader_agrees(#[case] s: &str, #[case] plain: bool) {
        assert_eq!(plain_is_safe(s), plain, "{s:?}");
        if plain {
            assert_eq!(resolve_plain(s), Plain::Str, "{s:?}");
        }
    }
}
