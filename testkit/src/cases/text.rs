//! The text of a case's files: `Json` written as the inputs always were
//! (two-space indented, or compact; every character outside printable
//! ASCII escaped) and read back with its members in the order written.

use super::json::Json;

impl Json {
    /// The JSON `text`, its members in the order written.
    pub fn parse(text: &str) -> Json {
        let mut parser = Parser {
            text: text.as_bytes(),
            at: 0,
        };
        let value = parser.value();
        parser.space();
        match value {
            Ok(value) if parser.at == text.len() => value,
            Ok(_) => panic!("more after the value at byte {}: {text}", parser.at),
            Err(e) => panic!("{e}: {text}"),
        }
    }

    /// The text of an input file: indented by two spaces, a line break at
    /// the end.
    pub fn to_file(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(0));
        out.push('\n');
        out
    }

    /// The text on one line, without spaces.
    pub fn to_compact(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, None);
        out
    }

    fn write(&self, out: &mut String, indent: Option<usize>) {
        let newline = |out: &mut String, depth: usize| {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', 2 * depth));
        };
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => out.push_str(&i.to_string()),
            Json::Float(f) => out.push_str(&float(*f)),
            Json::Str(s) => string(out, s),
            Json::Arr(items) if items.is_empty() => out.push_str("[]"),
            Json::Obj(members) if members.is_empty() => out.push_str("{}"),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if let Some(depth) = indent {
                        newline(out, depth + 1);
                    }
                    item.write(out, indent.map(|d| d + 1));
                }
                if let Some(depth) = indent {
                    newline(out, depth);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if let Some(depth) = indent {
                        newline(out, depth + 1);
                    }
                    string(out, key);
                    out.push(':');
                    if indent.is_some() {
                        out.push(' ');
                    }
                    value.write(out, indent.map(|d| d + 1));
                }
                if let Some(depth) = indent {
                    newline(out, depth);
                }
                out.push('}');
            }
        }
    }
}

/// A float as the inputs write it: the shortest text that reads back the
/// same, with `.0` when whole.
fn float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

/// A JSON string, every character outside printable ASCII escaped
/// (`\uXXXX`, in UTF-16 surrogates beyond it).
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Reads JSON text, every object's members in the order written.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.at))
    }

    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let found = self.text.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        let rest = &self.text[self.at..];
        for (word, value) in [
            ("null", Json::Null),
            ("true", Json::Bool(true)),
            ("false", Json::Bool(false)),
        ] {
            if rest.starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(value);
            }
        }
        match rest.first() {
            Some(b'"') => self.string().map(Json::Str),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return self.fail("expected , or ]");
                        }
                    }
                }
                Ok(Json::Arr(items))
            }
            Some(b'{') => {
                self.at += 1;
                let mut value = Json::Obj(Vec::new());
                if !self.eat(b'}') {
                    loop {
                        self.space();
                        let key = self.string()?;
                        if !self.eat(b':') {
                            return self.fail("expected :");
                        }
                        value[key.as_str()] = self.value()?;
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return self.fail("expected , or }");
                        }
                    }
                }
                Ok(value)
            }
            Some(b'-' | b'0'..=b'9') => {
                let len = rest
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(rest.len());
                let number = std::str::from_utf8(&rest[..len]).unwrap_or_default();
                self.at += len;
                if number.contains(['.', 'e', 'E']) {
                    number.parse().map(Json::Float).map_err(|e| e.to_string())
                } else {
                    number.parse().map(Json::Int).map_err(|e| e.to_string())
                }
            }
            _ => self.fail("expected a value"),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.text.get(self.at) != Some(&b'"') {
            return self.fail("expected a string");
        }
        self.at += 1;
        let mut units: Vec<u16> = Vec::new();
        loop {
            let rest = std::str::from_utf8(&self.text[self.at..]).map_err(|e| e.to_string())?;
            let mut chars = rest.chars();
            let c = chars.next().ok_or("an unterminated string")?;
            self.at += c.len_utf8();
            match c {
                '"' => return String::from_utf16(&units).map_err(|e| e.to_string()),
                '\\' => {
                    let escaped = chars.next().ok_or("an unterminated string")?;
                    self.at += 1;
                    let c = match escaped {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'u' => {
                            let hex = rest.get(2..6).ok_or("a short \\u escape")?;
                            self.at += 4;
                            units.push(u16::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
                            continue;
                        }
                        other => other,
                    };
                    units.extend(c.encode_utf16(&mut [0; 2]).iter());
                }
                c => units.extend(c.encode_utf16(&mut [0; 2]).iter()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_as_the_inputs_always_were() {
        let value = Json::parse(r#"{"b": [1.50, 2e3, {}], "a": "\u00fc\u2713\n", "c": []}"#);
        assert_eq!(
            value.to_file(),
            "{\n  \"b\": [\n    1.5,\n    2000.0,\n    {}\n  ],\n  \"a\": \"\\u00fc\\u2713\\n\",\n  \"c\": []\n}\n"
        );
        assert_eq!(
            value.to_compact(),
            r#"{"b":[1.5,2000.0,{}],"a":"\u00fc\u2713\n","c":[]}"#
        );
    }
}
