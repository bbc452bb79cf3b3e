//! The policy's YAML reader (src/yaml.rs) against serde_yaml 0.9, whose
//! `from_str::<Value>` it stands in for: the same tree for every text that
//! reads, the same message for every text that does not. serde_yaml is the
//! oracle here only (a dev-dependency), so this test is what holds the two
//! together.

use istio_job_sidecar_policy::yaml;
use proptest::prelude::*;

/// serde_yaml's answer in the reader's terms, converted field by field.
fn oracle(text: &str) -> Result<yaml::Value, String> {
    serde_yaml::from_str::<serde_yaml::Value>(text)
        .map(|v| convert(&v))
        .map_err(|e| e.to_string())
}

fn convert(v: &serde_yaml::Value) -> yaml::Value {
    use serde_yaml::Value as S;
    match v {
        S::Null => yaml::Value::Null,
        S::Bool(b) => yaml::Value::Bool(*b),
        S::Number(n) => yaml::Value::Number(if let Some(u) = n.as_u64() {
            yaml::Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            yaml::Number::NegInt(i)
        } else {
            yaml::Number::Float(n.as_f64().expect("a float"))
        }),
        S::String(s) => yaml::Value::String(s.clone()),
        S::Sequence(items) => yaml::Value::Sequence(items.iter().map(convert).collect()),
        S::Mapping(m) => {
            let converted: yaml::Mapping =
                m.iter().map(|(k, v)| (convert(k), convert(v))).collect();
            assert_eq!(
                converted.len(),
                m.len(),
                "keys serde_yaml holds apart are one here"
            );
            yaml::Value::Mapping(converted)
        }
        S::Tagged(t) => yaml::Value::Tagged(Box::new(yaml::Tagged {
            tag: yaml::Tag(t.tag.to_string()),
            value: convert(&t.value),
        })),
    }
}

fn check(text: &str) {
    let ours = yaml::from_str(text).map_err(|e| e.to_string());
    assert_eq!(ours, oracle(text), "{text:?}");
}

/// Texts chosen for each rule the reader copies, and for what a hostile
/// config may hold.
#[test]
fn agrees_on_each_rule() {
    let deep_flow = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let deep_block: String = (0..140).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let texts: Vec<&str> = vec![
        "",
        " ",
        "\n\n",
        "# c\n",
        "---\n",
        "---\n...\n",
        "...\n",
        "a: 1\n...\n",
        "a: 1\n---\nb: 2\n",
        "a: 1\n--- x\n",
        "{a: 1} ]",
        "a: [1\n",
        "a: {b\n",
        "a: 'x\n",
        "a: \"\\q\"\n",
        "\ta: 1\n",
        "a:\n\t- 1\n",
        "a: b: c\n",
        "- a\nb: c\n",
        "a: 1\na: 2\n",
        "a: 1\n'a': 2\n",
        "b:\n  a: 1\n  a: 2\n",
        "x:\n- a: 1\n  a: 2\n",
        "x: [{a: 1, a: 2}]\n",
        "{0.0: a, -0.0: b}",
        "{.nan: a, .NaN: b}",
        "{1: a, 0x1: b}",
        "{1: a, '1': b}",
        "{true: a, True: b}",
        "{~: a, null: b}",
        "{[1]: a, [1]: b}",
        "{{a: 1}: x, {a: 1}: y}",
        "{!t a: 1, !t a: 2}",
        "{!t a: 1, !!t a: 2}",
        "{1.5: a, 1.50: b}",
        "{1e300: a, 1.0e300: b}",
        "{-5: a, -0x5: b}",
        "a: !!bool yes\n",
        "a: !!bool true\n",
        "a: !!int x\n",
        "a: !!int 0x1f\n",
        "a: !!int '12'\n",
        "a: !!float x\n",
        "a: !!float 1\n",
        "a: !!null x\n",
        "a: !!null ''\n",
        "a: !!str 1\n",
        "a: !!map {b: 1}\n",
        "a: !!seq [1]\n",
        "a: !!binary aGk=\n",
        "a: !x 1\n",
        "a: !x '1'\n",
        "a: !x [1, 2]\n",
        "a: !x {b: 1}\n",
        "a: ! 1\n",
        "a: !<!x> 1\n",
        "a: !<tag:yaml.org,2002:int> 7\n",
        "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
        "%TAG !e! !y\n---\na: !e!x 1\n",
        "!x a: 1\n",
        "!!bool a: 1\n",
        "!x\n",
        "a: 444444444444444444444\n",
        "a: -444444444444444444444\n",
        "a: 4444444444444444444444444444444444444444444\n",
        "a: 18446744073709551615\n",
        "a: 18446744073709551616\n",
        "a: -9223372036854775808\n",
        "a: -9223372036854775809\n",
        "a: 0x\n",
        "a: 0x+1\n",
        "a: +0x1\n",
        "a: -0x1\n",
        "a: -0x8000000000000000\n",
        "a: 0o17\n",
        "a: 0b101\n",
        "a: -0b1\n",
        "a: ++1\n",
        "a: +-1\n",
        "a: +1\n",
        "a: 012\n",
        "a: -012\n",
        "a: 0\n",
        "a: -0\n",
        "a: 00\n",
        "a: 0.5\n",
        "a: .5\n",
        "a: 5.\n",
        "a: 1e5\n",
        "a: 1E+5\n",
        "a: 1e400\n",
        "a: inf\n",
        "a: infinity\n",
        "a: NaN\n",
        "a: nan\n",
        "a: .inf\n",
        "a: +.inf\n",
        "a: -.Inf\n",
        "a: +.nan\n",
        "a: -.nan\n",
        "a: 1_000\n",
        "a: yes\n",
        "a: Null\n",
        "a: NULL\n",
        "a: nULL\n",
        "a: ~\n",
        "a:\n",
        "a: ''\n",
        "a: \"\"\n",
        "a: |\n  x\n  y\n",
        "a: >-\n  x\n  y\n\n",
        "a: |+\n  x\n\n",
        "a: &x 1\nb: *x\n",
        "a: &x {c: 1}\nb: *x\n",
        "a: &x [1, &y 2]\nb: *y\n",
        "a: &x 1\nb: &x 2\nc: *x\n",
        "a: &x 1\nb: &x 2\nc: &y 3\nd: *x\ne: *y\n",
        "a: *x\n",
        "a: &x [*x]\n",
        "&x a: *x\n",
        "? [1]\n: a\n",
        "? {b: 1}\n: a\n",
        "? a\n",
        "<<: {a: 1}\n",
        "a: \"\\u00e9\\x41\\0\"\n",
        "a: \"\\ud800\"\n",
        "a: caf\u{e9}\n",
        "a: 1 # x\u{2028}b: 2\n",
        "a: 1\r\nb: 2\r\n",
        "a: x\u{1}y\n",
        "\u{feff}a: 1\n",
        "[1, 2]\n",
        "x\n",
        "'x'\n",
        "1\n",
        "!x {a: 1}\n",
        "*x\n",
        &deep_flow,
        &deep_block,
        &bomb,
    ];
    for text in texts {
        check(text);
    }
}

/// Pieces of YAML, joined at random: most joins do not parse, and those
/// that do cover nesting, flow and block, tags, anchors, and the scalars
/// each resolution rule names.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        "exitOnJobCompletion",
        "1",
        "-1",
        "0x1f",
        "01",
        "1.5",
        "-0.0",
        ".inf",
        ".nan",
        "true",
        "True",
        "null",
        "~",
        "'q'",
        "\"d\"",
        "\"\\t\"",
        ": ",
        ":",
        "\n",
        "\n  ",
        "\n    ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "&x ",
        "*x",
        "&y ",
        "*y",
        "!t ",
        "!!str ",
        "!!int ",
        "!!bool ",
        "!!float ",
        "!!null ",
        "!! ",
        "|\n  ",
        ">\n  ",
        "# c",
        "---\n",
        "...\n",
        "? ",
        "\t",
        " ",
        "444444444444444444444",
        "1e999",
        "+1",
        "0o7",
        "-0b1",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn agrees_on_generated_texts(pieces in prop::collection::vec(piece(), 0..24)) {
        check(&pieces.concat());
    }

    #[test]
    fn agrees_on_generated_mappings(
        entries in prop::collection::vec((piece(), piece(), prop::bool::ANY), 0..8)
    ) {
        let text: String = entries
            .iter()
            .map(|(k, v, nested)| if *nested { format!("{k}:\n  {v}: {k}\n") } else { format!("{k}: {v}\n") })
            .collect();
        check(&text);
    }
}
