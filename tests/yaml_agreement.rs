//! The workspace's YAML reader (`kube_yaml`, used by the module and the
//! CLI) against kube-model's own statement of Istio's reading
//! (`go_yaml`: sigs.k8s.io/yaml's YAMLToJSON over go-yaml v2, another
//! parser, written apart from the shared reader), on the corpus
//! (`test_data/yaml/`) and on generated configs of the shapes users write.
//! A rule the two state differently fails here, whichever is wrong.
//!
//! The shared reader may refuse a text Istio reads (it never guesses, and
//! the module then leaves the annotation as it came, with a warning): on
//! the corpus only the cases `REFUSED` names, each with why; on generated
//! configs any refusal is allowed, the merge judged below says what the
//! module makes of it. It may never read a value Istio would not read, nor
//! read a text Istio refuses.
//!
//! Then the module's `exitOnJobCompletion` merge, called natively, judged
//! by the model's reading: what Istio reads after the edit is the user's
//! mapping plus `exitOnJobCompletion: true` and nothing else, or the
//! annotation is left as it came, with a warning that says why; where
//! Istio reads a `exitOnJobCompletion` of the user's own (`false` too, or
//! from a merge key), it stands and the annotation is left as it came
//! (docs/modes.md).

use kube_yaml::Budget;
use policy_testkit::go_yaml::{self, as_istio_reads};
use policy_testkit::{admission, check_answer, payload, Order};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

/// Room for every case: the comparison is of the rules, not of the budget
/// (a refusal for size is allowed below all the same).
const BUDGET: Budget = Budget {
    nodes: 1_000_000,
    depth: 10_000,
};

/// Corpus cases Istio reads and the shared reader refuses on purpose
/// (fail-safe: the module then leaves the annotation as it came, with a
/// warning). Any other refusal of a corpus case fails.
const REFUSED: &[(&str, &str)] = &[
    (
        "users: U+2028 ends a line",
        "a YAML 1.1 line break, content to saphyr-parser's YAML 1.2",
    ),
    (
        "users: U+0085 ends a comment",
        "a YAML 1.1 line break, content to saphyr-parser's YAML 1.2",
    ),
    (
        "users: tab after colon",
        "saphyr-parser wants a space after a mapping's `:`",
    ),
    (
        "users: tab in flow",
        "saphyr-parser wants a space after a mapping's `:`",
    ),
];

/// How the two readings of a text compare.
#[derive(Debug)]
enum Compared {
    Same,
    /// Istio reads a value; the shared reader refuses the text.
    Refused(kube_yaml::Error),
    Differ(String),
}

fn compare(text: &str) -> Compared {
    let model = go_yaml::yaml_to_json(text);
    let shared = kube_yaml::to_json(text, BUDGET);
    match (&model, shared) {
        (Ok(m), Ok(s)) if as_istio_reads(m) == as_istio_reads(&s) => Compared::Same,
        (Err(_), Err(_)) => Compared::Same,
        (Ok(_), Err(e)) => Compared::Refused(e),
        (model, shared) => Compared::Differ(format!(
            "{text:?}\n  Istio (kube-model) {model:?}\n  kube_yaml          {shared:?}"
        )),
    }
}

fn corpus() -> Vec<go_yaml::Case> {
    go_yaml::corpus(&Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/yaml"))
        .expect("the corpus")
}

#[test]
fn the_shared_reader_reads_the_corpus_as_istio_does() {
    let cases = corpus();
    let mut wrong = Vec::new();
    let mut refused = Vec::new();
    for case in &cases {
        match compare(&case.yaml) {
            Compared::Same => {}
            Compared::Refused(e) => {
                refused.push(case.name.as_str());
                if !REFUSED.iter().any(|(name, _)| *name == case.name) {
                    wrong.push(format!(
                        "{}: Istio reads it, kube_yaml refuses it: {e}",
                        case.name
                    ));
                }
            }
            Compared::Differ(d) => wrong.push(format!("{}: {d}", case.name)),
        }
    }
    for (name, why) in REFUSED {
        if !refused.contains(name) {
            wrong.push(format!("{name}: listed as refused ({why}), but kube_yaml reads it as Istio does: take it off the list"));
        }
    }
    assert_eq!(
        wrong,
        Vec::<String>::new(),
        "differences among {} cases",
        cases.len()
    );
}

// ---------------------------------------------------------------- generated

/// Keys: ProxyConfig's fields, and keys YAML 1.1 reads as something else.
const KEYS: &[&str] = &[
    "holdApplicationUntilProxyStarts",
    "terminationDrainDuration",
    "concurrency",
    "discoveryAddress",
    "exitOnJobCompletion",
    "proxyMetadata",
    "proxyStatsMatcher",
    "tracing",
    "sampling",
    "ISTIO_META_DNS_CAPTURE",
    "inclusionRegexps",
    "yes",
    "on",
    "n",
    "1",
    "010",
    "0x1F",
    "1.5",
    "\"on\"",
    "'key with spaces'",
    "~",
];

/// Scalars: YAML 1.1 words, the forms of numbers go-yaml reads, quoting.
const SCALARS: &[&str] = &[
    "true",
    "false",
    "yes",
    "Yes",
    "YES",
    "no",
    "NO",
    "on",
    "On",
    "ON",
    "off",
    "OFF",
    "y",
    "Y",
    "n",
    "N",
    "yEs",
    "oN",
    "True",
    "FALSE",
    "~",
    "null",
    "Null",
    "NULL",
    "",
    "0",
    "-0",
    "010",
    "08",
    "0o17",
    "0x1F",
    "0b101",
    "+12",
    "-7",
    "1_000",
    "1__0",
    "_1",
    "1e3",
    "1E-2",
    ".5",
    "-.5",
    "1.",
    "6.8523e+5",
    "685_230.15",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1e400",
    ".inf",
    "-.Inf",
    ".nan",
    "2015-01-01",
    "2015-02-24T18:19:39Z",
    "5s",
    "1m30s",
    "10.0.0.1:15012",
    "'yes'",
    "\"on\"",
    "'010'",
    "\"1e3\"",
    "'it''s'",
    "\"a\\tb\"",
    "!!str yes",
    "!!str 010",
    "!!int 0x10",
    "!!float 1",
    "!!bool on",
    "!!null ''",
    "! yes",
    "!!binary aGk=",
    ".*outlier_detection.*",
    "zipkin.istio-system:9411",
    "a b  c",
    "- x",
    "'<<'",
    "<<",
];

#[derive(Debug, Clone)]
enum Node {
    Scalar(usize),
    Map(Vec<Entry>),
    Seq(Vec<Node>),
    /// An alias of the n-th anchor met so far (a scalar when there is none).
    Alias(usize),
}

#[derive(Debug, Clone)]
enum Entry {
    Pair {
        key: usize,
        value: Node,
        anchor: bool,
        flow: bool,
    },
    /// `<<: ` an alias, a flow mapping, or a list of those.
    Merge {
        alias: Option<usize>,
        inline: Vec<(usize, usize)>,
        list: bool,
    },
    /// A comment line.
    Comment,
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        6 => (0..SCALARS.len()).prop_map(Node::Scalar),
        1 => (0..4usize).prop_map(Node::Alias),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(entry(inner.clone()), 0..4).prop_map(Node::Map),
            prop::collection::vec(inner, 0..4).prop_map(Node::Seq),
        ]
    })
}

fn entry(value: impl Strategy<Value = Node>) -> impl Strategy<Value = Entry> {
    let pair = (
        0..KEYS.len(),
        value,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(key, value, anchor, flow)| Entry::Pair {
            key,
            value,
            anchor,
            flow,
        });
    let inline = prop::collection::vec((0..KEYS.len(), 0..SCALARS.len()), 0..3);
    let merge =
        (prop::option::of(0..4usize), inline, any::<bool>()).prop_map(|(alias, inline, list)| {
            Entry::Merge {
                alias,
                inline,
                list,
            }
        });
    prop_oneof![8 => pair, 2 => merge, 1 => Just(Entry::Comment)]
}

/// The text of a generated config: block style, a value written in flow
/// style where asked, anchors `&aN` numbered in the order they are met.
struct Writer {
    out: String,
    anchors: usize,
}

impl Writer {
    fn alias(&self, n: usize) -> Option<String> {
        (self.anchors > 0).then(|| format!("*a{}", n % self.anchors))
    }

    fn anchor(&mut self) -> String {
        self.anchors += 1;
        format!("&a{} ", self.anchors - 1)
    }

    fn flow(&mut self, node: &Node) -> String {
        match node {
            Node::Scalar(s) => flow_scalar(SCALARS[*s]),
            Node::Alias(n) => self.alias(*n).unwrap_or_else(|| "x".into()),
            Node::Seq(items) => {
                let items: Vec<String> = items.iter().map(|i| self.flow(i)).collect();
                format!("[{}]", items.join(", "))
            }
            Node::Map(entries) => {
                let mut parts = Vec::new();
                for e in entries {
                    if let Entry::Pair { key, value, .. } = e {
                        let v = self.flow(value);
                        parts.push(format!("{}: {v}", KEYS[*key]));
                    }
                }
                format!("{{{}}}", parts.join(", "))
            }
        }
    }

    fn map(&mut self, entries: &[Entry], indent: usize) {
        let pad = " ".repeat(indent);
        if entries.is_empty() {
            self.out.push_str(&format!("{pad}{{}}\n"));
        }
        for e in entries {
            match e {
                Entry::Comment => self.out.push_str(&format!("{pad}# a comment: yes\n")),
                Entry::Merge {
                    alias,
                    inline,
                    list,
                } => {
                    let inline = format!(
                        "{{{}}}",
                        inline
                            .iter()
                            .map(|(k, v)| format!("{}: {}", KEYS[*k], flow_scalar(SCALARS[*v])))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    let alias = alias.and_then(|a| self.alias(a));
                    let value = match (alias, list) {
                        (Some(a), true) => format!("[{a}, {inline}]"),
                        (Some(a), false) => a,
                        (None, _) => inline,
                    };
                    self.out.push_str(&format!("{pad}<<: {value}\n"));
                }
                Entry::Pair {
                    key,
                    value,
                    anchor,
                    flow,
                } => {
                    let key = KEYS[*key];
                    // An alias carries no anchor of its own.
                    let anchor = if *anchor && !matches!(value, Node::Alias(_)) {
                        self.anchor()
                    } else {
                        String::new()
                    };
                    match value {
                        Node::Map(inner) if !flow && !inner.is_empty() => {
                            self.out
                                .push_str(&format!("{pad}{key}: {}\n", anchor.trim_end()));
                            self.map(inner, indent + 2);
                        }
                        Node::Seq(items) if !flow && !items.is_empty() => {
                            self.out
                                .push_str(&format!("{pad}{key}: {}\n", anchor.trim_end()));
                            for item in items {
                                let v = self.flow(item);
                                self.out.push_str(&format!("{pad}  - {v}\n"));
                            }
                        }
                        Node::Alias(_) => {
                            let v = self.flow(value);
                            self.out.push_str(&format!("{pad}{key}: {v}\n"));
                        }
                        _ => {
                            let v = self.flow(value);
                            self.out.push_str(&format!("{pad}{key}: {anchor}{v}\n"));
                        }
                    }
                }
            }
        }
    }
}

/// A scalar inside flow context: a plain one with a flow indicator is
/// quoted (a plain scalar may not hold `,` `[` `]` `{` `}` there).
fn flow_scalar(s: &str) -> String {
    if s.is_empty() || s.starts_with('-') && s.len() > 1 && s.as_bytes()[1] == b' ' {
        return format!("'{s}'");
    }
    s.to_owned()
}

fn config() -> impl Strategy<Value = String> {
    (prop::collection::vec(entry(node()), 0..8), any::<bool>()).prop_map(|(entries, flow)| {
        let mut w = Writer {
            out: String::new(),
            anchors: 0,
        };
        if flow {
            let text = w.flow(&Node::Map(entries));
            return text;
        }
        w.map(&entries, 0);
        w.out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn generated_configs_are_read_as_istio_reads_them(text in config()) {
        if let Compared::Differ(d) = compare(&text) {
            prop_assert!(false, "{}", d);
        }
    }

    #[test]
    fn generated_configs_get_exit_on_job_completion_and_nothing_else(text in config()) {
        if let Err(e) = judge_merge(&text) {
            prop_assert!(false, "{}", e);
        }
    }
}

// ------------------------------------------------- the module's merge, judged

const PROXY_CONFIG: &str = "proxy.istio.io/config";
const KEY: &str = "exitOnJobCompletion";

fn validate(payload: &[u8]) -> Vec<u8> {
    istio_job_sidecar_policy::validate(payload).expect("validate never errors")
}

/// The policy in `exitOnJobCompletion` mode on a Job whose pod template
/// carries `text`, judged by what Istio reads before and after.
fn judge_merge(text: &str) -> Result<(), String> {
    let Ok(Value::Object(before)) = go_yaml::yaml_to_json(text) else {
        // Only a config Istio reads as a mapping has a merge to judge.
        return Ok(());
    };
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"template": {
            "metadata": {"annotations": {PROXY_CONFIG: text}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]},
        }},
    });
    let request = admission::request("CREATE", &job, None, "default");
    let settings = json!({"mode": "exitOnJobCompletion"});
    let answer = check_answer(&validate(&payload(
        &request,
        Some(&settings),
        Order::PolicyServer,
    )))?;
    let after = answer
        .mutated
        .as_ref()
        .map(|m| &m["spec"]["template"]["metadata"]["annotations"][PROXY_CONFIG])
        .and_then(Value::as_str)
        .unwrap_or(text);
    let mut expected = before.clone();
    expected.insert(KEY.into(), Value::Bool(true));
    let expected = as_istio_reads(&Value::Object(expected));
    if after != text {
        if before.contains_key(KEY) {
            return Err(format!(
                "{text:?} has the user's own {KEY} (to Istio: {}), yet became {after:?}",
                before[KEY]
            ));
        }
        return match go_yaml::yaml_to_json(after) {
            Ok(read) if as_istio_reads(&read) == expected => Ok(()),
            read => Err(format!(
                "{text:?} became {after:?}\n  Istio reads  {read:?}\n  not          {expected}"
            )),
        };
    }
    if before.contains_key(KEY) {
        // The user's own `exitOnJobCompletion`, as Istio reads it, stands.
        return Ok(());
    }
    if answer
        .warnings
        .iter()
        .any(|w| w.contains(PROXY_CONFIG) && w.contains("unchanged"))
    {
        return Ok(());
    }
    Err(format!(
        "{text:?} left unchanged without a warning that says why: {:?}",
        answer.warnings
    ))
}

#[test]
fn the_merge_of_every_corpus_mapping_is_what_istio_should_read() {
    let mut wrong = Vec::new();
    let mut judged = 0;
    for case in corpus() {
        if !matches!(case.json, Some(Value::Object(_))) {
            continue;
        }
        judged += 1;
        if let Err(e) = judge_merge(&case.yaml) {
            wrong.push(format!("{}: {e}", case.name));
        }
    }
    assert!(judged > 150, "corpus mappings judged: {judged}");
    assert!(
        wrong.is_empty(),
        "{} of {judged} mappings:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
