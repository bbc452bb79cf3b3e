//! The reader's rules, each row beside the upstream file it comes from:
//! go-yaml v2 is go.yaml.in/yaml/v2 v2.4.4 (github.com/yaml/go-yaml, tag
//! v2.4.4), sigs.k8s.io/yaml is v1.6.0 (what Istio 1.29.0 to 1.31.0-rc.0
//! require).

use super::*;
use rstest::rstest;
use serde_json::json;

const ROOMY: Budget = Budget {
    nodes: 1_000_000,
    depth: 1_000,
};

fn read(text: &str) -> Result<Value, Error> {
    to_json(text, ROOMY)
}

/// sigs.k8s.io/yaml yaml_test.go `TestYAMLToJSON` (v1.6.0), rows as they
/// are there; go-yaml v2 decode_test.go `unmarshalTests` (v2.4.4) into an
/// `interface{}`.
#[rstest]
// yaml_test.go TestYAMLToJSON
#[case("t: a\n", json!({"t": "a"}))]
#[case("t: null\n", json!({"t": null}))]
#[case("t: True\n", json!({"t": true}))]
#[case("t: no\n", json!({"t": false}))]
#[case("t: 9007199254740993\n", json!({"t": 9007199254740993u64}))]
#[case("t: 1000000000000000000000000000000000000\n", json!({"t": 1e36}))]
#[case("t: ", json!({"t": null}))]
#[case("True: a", json!({"true": "a"}))]
#[case("no: a", json!({"false": "a"}))]
#[case("1: a", json!({"1": "a"}))]
#[case("1.2: a", json!({"1.2": "a"}))]
#[case("1000000000000000000000000000000000000: a", json!({"1e+36": "a"}))]
#[case("1e+36: a", json!({"1e+36": "a"}))]
#[case("\"1e+36\": a\n", json!({"1e+36": "a"}))]
#[case("- t: a\n- t:\n    b: 1\n    c: 2\n", json!([{"t": "a"}, {"t": {"b": 1, "c": 2}}]))]
#[case("[{t: a}, {t: {b: 1, c: 2}}]", json!([{"t": "a"}, {"t": {"b": 1, "c": 2}}]))]
#[case("a: !!binary gIGC", json!({"a": "\u{fffd}\u{fffd}\u{fffd}"}))]
// yaml_test.go TestUnmarshal "decode duplicate into string map": later wins
#[case("a: test\nb: test\na: test2", json!({"a": "test2", "b": "test"}))]
// decode_test.go unmarshalTests
#[case("v: 0b10", json!({"v": 2}))]
#[case("v: 0xA", json!({"v": 10}))]
#[case("v: .1", json!({"v": 0.1}))]
#[case("v: -.1", json!({"v": -0.1}))]
#[case("canonical: 6.8523e+5", json!({"canonical": 685230}))]
#[case("expo: 685.230_15e+03", json!({"expo": 685230.15}))]
#[case("fixed: 685_230.15", json!({"fixed": 685230.15}))]
#[case("canonical: y", json!({"canonical": true}))]
#[case("answer: NO", json!({"answer": false}))]
#[case("option: on", json!({"option": true}))]
#[case("decimal: +685_230", json!({"decimal": 685230}))]
#[case("octal: 02472256", json!({"octal": 685230}))]
#[case("hexa: 0x_0A_74_AE", json!({"hexa": 685230}))]
#[case("bin: -0b101010", json!({"bin": -42}))]
#[case("bin: -0b1000000000000000000000000000000000000000000000000000000000000000", json!({"bin": i64::MIN}))]
#[case("empty:", json!({"empty": null}))]
#[case("canonical: ~", json!({"canonical": null}))]
#[case("seq: [A,B,C,]", json!({"seq": ["A", "B", "C"]}))]
#[case("seq: [A,1,C]", json!({"seq": ["A", 1, "C"]}))]
#[case("First occurrence: &anchor Foo\nSecond occurrence: *anchor\nOverride anchor: &anchor Bar\nReuse anchor: *anchor\n",
    json!({"First occurrence": "Foo", "Second occurrence": "Foo", "Override anchor": "Bar", "Reuse anchor": "Bar"}))]
// decode_test.go: "a: 2015-02-24T18:19:39Z" into interface{} stays a string
#[case("a: 2015-02-24T18:19:39Z", json!({"a": "2015-02-24T18:19:39Z"}))]
#[case("a: !!timestamp 2015-01-01", json!({"a": "2015-01-01"}))]
// decode.go `unmarshal` of the first document only (yaml.go `unmarshal`)
#[case("a: 1\n---\nb: 2\n", json!({"a": 1}))]
#[case("", json!(null))]
#[case("# only a comment\n", json!(null))]
fn upstream_tables(#[case] text: &str, #[case] expected: Value) {
    assert_eq!(read(text), Ok(expected), "{text:?}");
}

/// decode_test.go `mergeTests` (from yaml.org/type/merge.html): every
/// mapping below reads as `{x: 1, y: 2, r: 10, label: center/big}`.
#[test]
fn merge_keys_as_decode_test_merges_them() {
    let text = r#"
anchors:
  list:
    - &CENTER { "x": 1, "y": 2 }
    - &LEFT   { "x": 0, "y": 2 }
    - &BIG    { "r": 10 }
    - &SMALL  { "r": 1 }
plain:
  "x": 1
  "y": 2
  "r": 10
  label: center/big
mergeOne:
  << : *CENTER
  "r": 10
  label: center/big
mergeMultiple:
  << : [ *CENTER, *BIG ]
  label: center/big
override:
  << : [ *BIG, *LEFT, *SMALL ]
  "x": 1
  label: center/big
shortTag:
  !!merge "<<" : [ *CENTER, *BIG ]
  label: center/big
longTag:
  !<tag:yaml.org,2002:merge> "<<" : [ *CENTER, *BIG ]
  label: center/big
inlineMap:
  << : {"x": 1, "y": 2, "r": 10}
  label: center/big
inlineSequenceMap:
  << : [ *CENTER, {"r": 10} ]
  label: center/big
"#;
    let value = read(text).unwrap();
    let want = json!({"x": 1, "y": 2, "r": 10, "label": "center/big"});
    for name in [
        "plain",
        "mergeOne",
        "mergeMultiple",
        "override",
        "shortTag",
        "longTag",
        "inlineMap",
        "inlineSequenceMap",
    ] {
        assert_eq!(value[name], want, "{name}");
    }
}

/// decode.go `mapping`: a merge sets its entries where `<<` is written, so
/// it overrides keys before it and later keys override it; the first of a
/// list wins. `isMerge`: a quoted `"<<"` or an alias to `<<` is a key.
#[rstest]
#[case("a: 1\n<<: {a: 2, b: 2}\n", json!({"a": 2, "b": 2}))]
#[case("<<: {a: 2, b: 2}\na: 1\n", json!({"a": 1, "b": 2}))]
#[case("<<: [{a: 1}, {a: 2, b: 2}]\n", json!({"a": 1, "b": 2}))]
#[case("\"<<\": {a: 1}\n", json!({"<<": {"a": 1}}))]
#[case("k: &k <<\n*k : {a: 1}\n", json!({"k": "<<", "<<": {"a": 1}}))]
#[case("x: {<<: &l [{a: 1}]}\nz: *l\n", json!({"x": {"a": 1}, "z": [{"a": 1}]}))]
#[case("v: <<\n", json!({"v": "<<"}))]
fn merge_keys_where_written(#[case] text: &str, #[case] expected: Value) {
    assert_eq!(read(text), Ok(expected), "{text:?}");
}

/// decode_test.go `unmarshalErrorTests` (v2.4.4), and sigs.k8s.io/yaml's
/// "Cases that should produce errors" (yaml_test.go).
#[rstest]
#[case("a: *b\n")]
#[case("a: &a\n  b: *a\n")]
#[case("a: &x null\n<<:\n- *x\nb: &x {}\n")]
#[case("b: *a\na: &a {c: 1}")]
#[case("v: !!float 'error'")]
#[case("~: a")]
#[case("null: a")]
#[case("<<: 1\n")]
#[case("<<: [[{a: 1}]]\n")]
// decode.go `merge`: an alias to a list of mappings is no mapping
#[case("m: &m {a: 1}\nl: &l [*m]\nn: {<<: *l}\n")]
#[case("[a]: 1\n")]
#[case("a: .inf\n")]
#[case("a: !!binary '%%%'\n")]
#[case("a: !!int 1.5\n")]
#[case("a: !!timestamp yesterday\n")]
#[case("18446744073709551615: a\n")]
// Go's answer would depend on its map order: refused.
#[case("1: a\n\"1\": b\n")]
#[case("1: a\n1.0: b\n")]
fn refused(#[case] text: &str) {
    assert!(read(text).is_err(), "{text:?}: {:?}", read(text));
}

/// Keys as sigs.k8s.io/yaml writes them (yaml.go `convertToJSONableObject`:
/// `strconv.FormatFloat(f, 'g', -1, 32)`), and go-yaml's resolution of the
/// key first (resolve.go).
#[rstest]
#[case("1.5", "1.5")]
#[case("1e5", "100000")]
#[case("1e6", "1e+06")]
#[case("0.0001", "0.0001")]
#[case("0.00001", "1e-05")]
#[case("123456789.0", "1.2345679e+08")]
#[case("0.1", "0.1")]
#[case("1e300", ".inf")]
#[case("-1e300", "-.inf")]
#[case(".inf", ".inf")]
#[case(".nan", ".nan")]
#[case("-.5", "-0.5")]
#[case("0x1F", "31")]
#[case("yes", "true")]
#[case("Off", "false")]
#[case("2001-12-14", "2001-12-14")]
fn keys_as_sigs_yaml_names_them(#[case] key: &str, #[case] expected: &str) {
    let value = read(&format!("{key}: v")).unwrap();
    assert_eq!(value, json!({ expected: "v" }), "{key}");
}

/// Values as `json.Marshal` writes the float64 and a JSON reader reads it.
#[test]
fn floats_as_json_reads_them() {
    assert_eq!(read("a: 1e5").unwrap()["a"], json!(100000));
    assert_eq!(
        read("a: 1e20").unwrap()["a"],
        json!(100000000000000000000.0)
    );
    assert_eq!(
        read("a: -0.0").unwrap()["a"],
        serde_json::from_str::<Value>("-0").unwrap()
    );
    assert_eq!(read("a: !!float 3").unwrap()["a"], json!(3));
    assert_eq!(read("a: 1.5").unwrap()["a"], json!(1.5));
}

/// Characters: go-yaml v2's reader refuses control characters
/// (readerc.go); its line breaks NEL, LS, PS (yamlprivateh.go
/// `is_break`) are content to a YAML 1.2 parser: refused.
#[rstest]
#[case("a: \u{1}")]
#[case("a: \u{7f}")]
#[case("a: 1 # x\u{2028}b: 2")]
#[case("a: 1\u{85}b: 2")]
#[case("a: 1\u{2029}")]
fn characters_go_yaml_reads_otherwise(#[case] text: &str) {
    assert_eq!(read(text).map_err(|e| e.kind), Err(ErrorKind::Syntax));
}

/// The budget counts nodes built: every scalar, collection, alias replay
/// and anchored copy.
#[rstest]
#[case("a", 1)]
#[case("[a, b]", 3)]
#[case("{a: 1, b: [x]}", 6)]
// &a: 3 nodes built, 3 kept as the anchor's copy, 3 replayed by *a
#[case("[&a [x, y], *a]", 1 + 3 + 3 + 3)]
#[case("<<: {a: 1}", 1 + 1 + 3)]
fn nodes_are_counted(#[case] text: &str, #[case] nodes: usize) {
    let exact = Budget { nodes, depth: 10 };
    assert!(to_json(text, exact).is_ok(), "{text:?} within {nodes}");
    let less = Budget {
        nodes: nodes - 1,
        depth: 10,
    };
    assert_eq!(
        to_json(text, less).map_err(|e| e.kind),
        Err(ErrorKind::TooLarge)
    );
}

/// An alias bomb stops where the budget is, whatever it would expand to.
#[test]
fn an_alias_bomb_is_stopped_at_the_budget() {
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for (i, name) in ["b", "c", "d", "e", "f", "g", "h", "i", "j"]
        .iter()
        .enumerate()
    {
        let prev = ["a", "b", "c", "d", "e", "f", "g", "h", "i"][i];
        let row = vec![format!("*{prev}"); 10].join(", ");
        bomb.push_str(&format!("{name}: &{name} [{row}]\n"));
    }
    let budget = Budget {
        nodes: 50_000,
        depth: 64,
    };
    let err = to_json(&bomb, budget).unwrap_err();
    assert_eq!(err.kind, ErrorKind::TooLarge);
}

/// Depth is refused as the events come: the builder sees no more than
/// `depth` collections open, and stops at the next start.
#[test]
fn depth_is_refused_as_the_events_come() {
    let budget = Budget {
        nodes: 1_000,
        depth: 3,
    };
    let mut b = Builder::new(budget);
    for _ in 0..3 {
        b.event(Event::SeqStart(0), 1).unwrap();
    }
    let err = b.event(Event::SeqStart(0), 1).unwrap_err();
    assert_eq!(err.kind, ErrorKind::TooLarge);
    assert_eq!(b.spent(), 3);
    // Block nesting (no flow limit in the parser) and flow nesting (the
    // parser's own, at 255) both stop early.
    let block = "- ".repeat(100_000) + "x";
    assert_eq!(
        to_json(
            &block,
            Budget {
                nodes: 1 << 20,
                depth: 64
            }
        )
        .map_err(|e| e.kind),
        Err(ErrorKind::TooLarge)
    );
    let flow = format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(
        to_json(
            &flow,
            Budget {
                nodes: 1 << 20,
                depth: 64
            }
        )
        .map_err(|e| e.kind),
        Err(ErrorKind::TooLarge)
    );
}

/// The tree's JSON is the lean path's.
#[rstest]
#[case("a: &a {x: 1}\nb:\n  <<: *a\n  y: 2\nc: [*a]\n")]
#[case("k: &k <<\n*k : {a: 1}\n")]
#[case("y: 1\nt: !!binary aGVsbG8=\n")]
fn the_tree_reads_as_the_lean_path(#[case] text: &str) {
    let (_, tree) = tree::parse(text).unwrap().unwrap();
    assert_eq!(Ok(tree), read(text));
}

/// scannerc.go `yaml_parser_scan_to_next_token`: a tab before a token in a
/// line's indentation is an error; inside a block or quoted scalar it is
/// content (decode_test.go "literal block scalar" has one).
#[rstest]
#[case("\ta: 1\n", None)]
#[case("a:\n\tb: 1\n", None)]
#[case("a: |\n  x\n\tb: 1\n", None)]
#[case("a: |\n  x\n  \ty\n", Some(json!({"a": "x\n\ty\n"})))]
// go-yaml reads "x y"; saphyr-parser refuses the tab: refused, not misread.
#[case("a: \"x\n\ty\"\n", None)]
fn tabs_in_indentation(#[case] text: &str, #[case] expected: Option<Value>) {
    match expected {
        Some(v) => assert_eq!(read(text), Ok(v), "{text:?}"),
        None => assert_eq!(
            read(text).map_err(|e| e.kind),
            Err(ErrorKind::Syntax),
            "{text:?}"
        ),
    }
}

/// The tree (the CLI's) recurses per level: it stops at its own depth,
/// before the stack does, on block and flow nesting alike.
#[test]
fn the_tree_stops_deep_nesting() {
    for text in [
        "- ".repeat(100_000) + "x",
        format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000)),
    ] {
        let err = tree::parse(&text).unwrap_err();
        assert_eq!(err.kind, ErrorKind::TooLarge, "{err:?}");
    }
}
