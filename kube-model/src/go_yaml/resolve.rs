//! resolve.go of go-yaml v2 (v2.4.0, unchanged to go.yaml.in/yaml/v2
//! v2.4.4): what a scalar's text and tag resolve to, with the `strconv`
//! readings it calls (Go 1.13+ `ParseInt`/`ParseUint` with base 0,
//! `ParseFloat`), each written out here.

use super::decode::Go;

pub(super) const STR: &str = "tag:yaml.org,2002:str";
pub(super) const BOOL: &str = "tag:yaml.org,2002:bool";
pub(super) const INT: &str = "tag:yaml.org,2002:int";
pub(super) const FLOAT: &str = "tag:yaml.org,2002:float";
pub(super) const NULL: &str = "tag:yaml.org,2002:null";
pub(super) const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";
pub(super) const BINARY: &str = "tag:yaml.org,2002:binary";
pub(super) const MERGE: &str = "tag:yaml.org,2002:merge";

/// `resolveMapList`: the words YAML 1.1 gives a value, exactly these
/// spellings (`yEs` is a string).
fn resolve_map(text: &str) -> Option<(&'static str, Go)> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            (BOOL, Go::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            (BOOL, Go::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => (NULL, Go::Nil),
        ".nan" | ".NaN" | ".NAN" => (FLOAT, Go::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => (FLOAT, Go::Float(f64::INFINITY)),
        "-.inf" | "-.Inf" | "-.INF" => (FLOAT, Go::Float(f64::NEG_INFINITY)),
        "<<" => (MERGE, Go::Str("<<".into())),
        _ => return None,
    })
}

/// `resolveTable`: the hint the first byte gives.
fn hint(first: u8) -> u8 {
    match first {
        b'+' | b'-' => b'S',
        b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        _ => 0,
    }
}

/// `resolvableTag`.
fn resolvable(tag: &str) -> bool {
    matches!(tag, "" | STR | BOOL | INT | FLOAT | NULL | TIMESTAMP)
}

/// `shortTag`.
fn short(tag: &str) -> String {
    match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_owned(),
    }
}

/// `resolve(tag, in)`: the resolved tag and value, or go-yaml's "cannot
/// decode" failure when an explicit tag and the text disagree.
pub(super) fn resolve(tag: &str, text: &str) -> Result<(String, Go), String> {
    if !resolvable(tag) {
        return Ok((tag.to_owned(), Go::Str(text.as_bytes().to_vec())));
    }
    let (rtag, out) = resolve_implicit(tag, text);
    // The deferred check: an explicit tag must be what the text resolves
    // to, but that an int is a float where `!!float` asks.
    if tag.is_empty() || tag == rtag || tag == STR || tag == BINARY {
        return Ok((rtag.to_owned(), out));
    }
    if tag == FLOAT && rtag == INT {
        if let Go::Int(v) = out {
            return Ok((FLOAT.to_owned(), Go::Float(v as f64)));
        }
    }
    Err(format!(
        "cannot decode {} `{}` as a {}",
        short(rtag),
        text,
        short(tag)
    ))
}

fn resolve_implicit(tag: &str, text: &str) -> (&'static str, Go) {
    let hint = text.as_bytes().first().map_or(b'N', |&b| hint(b));
    if hint != 0 && tag != STR && tag != BINARY {
        if let Some(found) = resolve_map(text) {
            return found;
        }
        match hint {
            b'.' => {
                if let Some(f) = parse_float(text) {
                    return (FLOAT, Go::Float(f));
                }
            }
            b'D' | b'S' => {
                // Only an untagged or `!!timestamp` text is tried as a
                // timestamp; into an `interface{}` it stays its text.
                if (tag.is_empty() || tag == TIMESTAMP) && is_timestamp(text) {
                    return (TIMESTAMP, Go::Str(text.as_bytes().to_vec()));
                }
                let plain: String = text.chars().filter(|&c| c != '_').collect();
                if let Some(v) = parse_int(&plain) {
                    return (INT, Go::Int(v));
                }
                if let Some(v) = parse_uint(&plain) {
                    return (INT, Go::Uint(v));
                }
                if yaml_style_float(&plain) {
                    if let Some(f) = parse_float(&plain) {
                        return (FLOAT, Go::Float(f));
                    }
                }
                // The explicit `0b`/`-0b` branches that follow in
                // resolve.go read what `ParseInt` and `ParseUint` with base
                // 0 have already refused, so they add nothing.
            }
            _ => {}
        }
    }
    (STR, Go::Str(text.as_bytes().to_vec()))
}

/// `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`,
/// which is the shape of a decimal float literal of Go: digits with at most
/// one `.` among them, then an optional exponent.
fn yaml_style_float(s: &str) -> bool {
    decimal_float(s)
}

/// `strconv.ParseUint(s, 0, 64)`, `s` free of underscores: a `0x`, `0o`,
/// `0b` prefix (either case, with at least one character after it) or a
/// leading `0` (octal), else decimal; no sign.
fn parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (radix, digits) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &s[2..]),
            Some(b'o') if b.len() >= 3 => (8, &s[2..]),
            Some(b'x') if b.len() >= 3 => (16, &s[2..]),
            _ => (8, &s[1..]),
        }
    } else {
        (10, s)
    };
    if digits.is_empty() {
        // "0" alone: the octal prefix with no digits after it is zero.
        return (radix == 8 && s == "0").then_some(0);
    }
    if !digits.bytes().all(|c| (c as char).is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `strconv.ParseInt(s, 0, 64)`: an optional sign, then `ParseUint`'s
/// digits, within the range of an int64.
fn parse_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let magnitude = parse_uint(rest)?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseFloat(s, 64)` for the decimal texts resolve.go hands it (a
/// `.` first, or a `yamlStyleFloat`): underscores only between digits
/// (`underscoreOK`), and a text beyond the float64 range an error (Go
/// returns ±Inf with `ErrRange`, which resolve.go takes as no float), while
/// one below the smallest float reads as zero.
fn parse_float(s: &str) -> Option<f64> {
    if !underscore_ok(s) {
        return None;
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if !decimal_float(&plain) {
        return None;
    }
    let f: f64 = plain.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Go's decimal float literal: sign, digits with at most one `.` and at
/// least one digit, then an optional exponent with digits.
fn decimal_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let (mut digits, mut dot) = (0, false);
    while let Some(&c) = b.get(i) {
        if c.is_ascii_digit() {
            digits += 1;
        } else if c == b'.' && !dot {
            dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == b.len()
}

/// `strconv.underscoreOK`: each `_` between two digits (a base prefix
/// counting as a digit).
fn underscore_ok(s: &str) -> bool {
    let mut b = s.as_bytes();
    if matches!(b.first(), Some(b'+' | b'-')) {
        b = &b[1..];
    }
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || hex && c.is_ascii_hexdigit() {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// `parseTimestamp`: four digits and a `-`, then one of
/// `allowedTimestampFormats` as Go's `time.Parse` reads it:
/// `2006-1-2T15:4:5.999999999Z07:00` (`T` or `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`; the month, day, hour,
/// minute and second one or two digits and in range.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut p = Cursor { b, i: 5 };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = p.number(1, 12) else {
        return false;
    };
    if !p.eat(b'-') {
        return false;
    }
    let Some(day) = p.number(1, 31) else {
        return false;
    };
    if day > days_in(month, year) {
        return false;
    }
    if p.done() {
        return true;
    }
    let zoned = match b[p.i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    p.i += 1;
    if p.number(0, 23).is_none()
        || !p.eat(b':')
        || p.number(0, 59).is_none()
        || !p.eat(b':')
        || p.number(0, 59).is_none()
    {
        return false;
    }
    // `.999999999`: an optional fraction of one or more digits.
    if p.eat(b'.') {
        let start = p.i;
        while p.b.get(p.i).is_some_and(u8::is_ascii_digit) {
            p.i += 1;
        }
        if p.i == start {
            return false;
        }
    }
    if !zoned {
        return p.done();
    }
    // `Z07:00`: `Z`, or a sign and hh:mm.
    if p.eat(b'Z') {
        return p.done();
    }
    if !(p.eat(b'+') || p.eat(b'-')) {
        return false;
    }
    let two = |p: &mut Cursor, max: u32| {
        let d = p.b.get(p.i..p.i + 2)?;
        if !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        p.i += 2;
        let v = u32::from(d[0] - b'0') * 10 + u32::from(d[1] - b'0');
        (v <= max).then_some(v)
    };
    two(&mut p, 23).is_some() && p.eat(b':') && two(&mut p, 59).is_some() && p.done()
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    /// One or two digits, within `min..=max`.
    fn number(&mut self, min: u32, max: u32) -> Option<u32> {
        let start = self.i;
        while self.i < self.b.len() && self.i - start < 2 && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        let v: u32 = std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .parse()
            .ok()?;
        (min..=max).contains(&v).then_some(v)
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strconv_readings() {
        assert_eq!(parse_int("010"), Some(8));
        assert_eq!(parse_int("0o10"), Some(8));
        assert_eq!(parse_int("0B11"), Some(3));
        assert_eq!(parse_int("08"), None);
        assert_eq!(parse_int("0x"), None);
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int("9223372036854775808"), None);
        assert_eq!(parse_uint("9223372036854775808"), Some(1 << 63));
        assert_eq!(parse_float("1e400"), None);
        assert_eq!(parse_float("1e-400"), Some(0.0));
        assert_eq!(parse_float(".5_0"), Some(0.5));
        assert_eq!(parse_float("._5"), None);
        assert!(yaml_style_float("1."));
        assert!(!yaml_style_float("."));
    }

    #[test]
    fn timestamps() {
        for yes in [
            "2015-01-01",
            "2015-2-3T3:4:5Z",
            "2015-02-24t18:19:39.12+01:00",
            "2015-02-24 18:19:39",
        ] {
            assert!(is_timestamp(yes), "{yes}");
        }
        for no in [
            "2015-13-01",
            "2015-02-30",
            "2015-01-01T",
            "2015-01-01 18:19:39Z",
            "15-01-01",
        ] {
            assert!(!is_timestamp(no), "{no}");
        }
    }
}
