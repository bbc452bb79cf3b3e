//! Invariants of the policy, property-tested over generated Jobs, CronJobs,
//! Pods and unhandled kinds (issue 4).
//!
//! Every case is a whole AdmissionRequest built from random parts: container
//! lists with random names (the sidecar names included, unique as Kubernetes
//! requires), init containers (istio-init, istio-validation, a native proxy),
//! random annotations and labels (every Istio key the policy reads, and the
//! policy's own), injection status in classic, native, CNI and broken form,
//! on the pod template or on a CronJob's jobTemplate, proxy configs in YAML
//! block, YAML flow and JSON form, unknown fields at every level of the
//! object, random operations and every value of every setting.
//!
//! The properties:
//! 1. `only_the_modes_parts_change`: the input and output objects, each with
//!    the parts the applied mode may change removed (`strip`), are equal;
//!    when no mode applies (`expected_mode` is None) nothing changes at all.
//!    The output still deserializes as the same kind (k8s-openapi types).
//! 2. `idempotent`: the output, sent again, is not mutated.
//! 3. `proxy_config_merge`: every key and value of an existing proxy config
//!    survives; the result parses as YAML into the same mapping plus
//!    `exitOnJobCompletion: true`.
//! 4. `containers_kept`: app containers keep order and content; a moved
//!    sidecar keeps every field (plus restartPolicy, and startupProbe only
//!    when it had none) and lands right after Istio's init containers.
//! 5. `never_changes`: Job UPDATE/DELETE/CONNECT, Pods that run forever and
//!    unhandled kinds are never mutated.
//!
//! Each runs 2,000 cases by default; `PROPTEST_CASES=50000` (or
//! `make proptest-long`) runs more. A failing case is saved by proptest in
//! `tests/properties.proptest-regressions` and replayed first on every run:
//! commit that file.

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use policy_testkit::{check_answer, check_fixed_point, payload, Answer, Order};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

// ---------------------------------------------------------------- config

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // ChaCha is proptest's default; unoptimized (as `cargo test` builds
        // it) it costs most of a case. XorShift is plenty for generation.
        rng_algorithm: RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------- names

const STATUS: &str = "sidecar.istio.io/status";
const NATIVE: &str = "sidecar.istio.io/nativeSidecar";
const PROXY_CONFIG: &str = "proxy.istio.io/config";
const INJECT: &str = "sidecar.istio.io/inject";
const MODE: &str = "istio-job-sidecar/mode";
const QUIT_WRAPPED: &str = "istio-job-sidecar/quit-wrapped";
const STATUS_PORT: &str = "status.sidecar.istio.io/port";
const EXIT_KEY: &str = "exitOnJobCompletion";
/// What the README says the quitEndpoint wrapper puts before the original
/// command: the shell, the script the module embeds, its `$0`, then the URL
/// and `always` / `on-success`.
const QUIT_SHELL: [&str; 2] = ["/bin/sh", "-c"];
const QUIT_NAME: &str = "istio-job-sidecar-quit";
const DEFAULT_QUIT_URL: &str = "http://127.0.0.1:15020/quitquitquit";
const QUIT_SCRIPT: &str = include_str!("../src/modes/quit_wrapper.sh");
const SIDECARS: [&str; 2] = ["istio-proxy", "envoy"];
const ISTIO_INITS: [&str; 2] = ["istio-init", "istio-validation"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Job,
    CronJob,
    Pod,
    /// Anything else: never touched.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Native,
    Exit,
    Quit,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        match s {
            "nativeSidecar" => Some(Mode::Native),
            "exitOnJobCompletion" => Some(Mode::Exit),
            "quitEndpoint" => Some(Mode::Quit),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------- generators
//
// Each `arb_x` boxes its `arb_x_inner`: unboxed, the nested strategy and
// value-tree types of a whole request overflow a test thread's stack in an
// unoptimized build.

/// Any JSON value, small: what an unknown (future) field may hold.
fn arb_json() -> BoxedStrategy<Value> {
    arb_json_inner().boxed()
}

fn arb_json_inner() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map("[a-zA-Z$@./ -]{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// 0-2 unknown members (their names start with `x`, which no Kubernetes
/// field does), to splice into an object.
fn arb_unknown() -> BoxedStrategy<Map<String, Value>> {
    arb_unknown_inner().boxed()
}

fn arb_unknown_inner() -> impl Strategy<Value = Map<String, Value>> {
    btree_map("x[A-Za-z0-9]{0,6}", arb_json(), 0..2).prop_map(|m| m.into_iter().collect())
}

fn with_unknown(mut object: Map<String, Value>, unknown: Map<String, Value>) -> Value {
    for (k, v) in unknown {
        object.entry(k).or_insert(v);
    }
    Value::Object(object)
}

fn arb_string_list() -> BoxedStrategy<Value> {
    arb_string_list_inner().boxed()
}

fn arb_string_list_inner() -> impl Strategy<Value = Value> {
    // Spaces, quotes, `$`, `$(VAR)`, newlines, backslashes: anything.
    vec(
        prop_oneof![
            ".{0,10}",
            Just("$(POD_NAME)".to_owned()),
            Just("a b\n'c'\"d\\".to_owned())
        ],
        0..4,
    )
    .prop_map(|l| json!(l))
}

fn arb_app_name() -> BoxedStrategy<String> {
    arb_app_name_inner().boxed()
}

fn arb_app_name_inner() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("app".to_owned()),
        Just("worker".to_owned()),
        Just("hello".to_owned()),
        Just("db-migrate".to_owned()),
        "[a-z][a-z0-9-]{0,8}[a-z0-9]",
    ]
}

/// A container (without its name: names are given afterwards, unique).
fn arb_container_body(init: bool) -> BoxedStrategy<Map<String, Value>> {
    arb_container_body_inner(init).boxed()
}

/// A command this policy wrapped before (an older script, another URL):
/// what a later pass must bring up to date or, with several app
/// containers, take off again.
fn arb_command() -> BoxedStrategy<Value> {
    prop_oneof![
        9 => arb_string_list(),
        1 => (arb_string_list(), prop_oneof![Just("always"), Just("on-success")]).prop_map(
            |(original, when)| {
                let mut c = json!([QUIT_SHELL[0], QUIT_SHELL[1], "# an older wrapper", QUIT_NAME,
                                   "http://localhost:15020/quitquitquit", when]);
                c.as_array_mut().unwrap().extend(original.as_array().unwrap().iter().cloned());
                c
            }
        ),
    ]
    .boxed()
}

/// A probe handler, as Istio writes them and as others might.
fn arb_probe_check() -> BoxedStrategy<(&'static str, Value)> {
    prop_oneof![
        3 => ("/[a-z]{0,8}", 1..65535i32)
            .prop_map(|(path, port)| ("httpGet", json!({"path": path, "port": port}))),
        1 => Just(("exec", json!({"command": ["pilot-agent", "wait"]}))),
        1 => (1..65535i32).prop_map(|port| ("tcpSocket", json!({"port": port}))),
    ]
    .boxed()
}

fn arb_container_body_inner(init: bool) -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::of("[a-z./:0-9-]{1,20}"),
        prop::option::weighted(0.6, arb_command()),
        prop::option::weighted(0.4, arb_string_list()),
        prop::option::weighted(
            0.3,
            vec(("[A-Z_]{1,8}", ".{0,8}"), 0..3).prop_map(|env| {
                json!(env
                    .into_iter()
                    .map(|(n, v)| json!({"name": n, "value": v}))
                    .collect::<Vec<_>>())
            }),
        ),
        prop::option::weighted(
            0.2,
            (1..65535i32).prop_map(|p| json!([{"containerPort": p}])),
        ),
        prop::option::weighted(
            if init { 0.4 } else { 0.1 },
            prop_oneof![Just("Always"), Just("OnFailure")],
        ),
        prop::option::weighted(
            0.2,
            ("/[a-z]{0,8}", 1..65535i32)
                .prop_map(|(path, port)| json!({"httpGet": {"path": path, "port": port}})),
        ),
        prop::option::weighted(0.3, Just(json!({"requests": {"cpu": "100m"}}))),
        prop::option::weighted(
            0.5,
            (arb_probe_check(), 1..20i32)
                .prop_map(|((h, check), period)| json!({h: check, "periodSeconds": period})),
        ),
        prop::option::weighted(
            0.2,
            Just(json!({"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}})),
        ),
        arb_unknown(),
    )
        .prop_map(
            |(
                image,
                command,
                args,
                env,
                ports,
                restart,
                probe,
                resources,
                readiness,
                lifecycle,
                unknown,
            )| {
                let mut c = Map::new();
                let mut put = |k: &str, v: Option<Value>| {
                    if let Some(v) = v {
                        c.insert(k.to_owned(), v);
                    }
                };
                put("image", image.map(Value::from));
                put("command", command);
                put("args", args);
                put("env", env);
                put("ports", ports);
                put("restartPolicy", restart.map(Value::from));
                put("startupProbe", probe);
                put("resources", resources);
                put("readinessProbe", readiness);
                put("lifecycle", lifecycle);
                match with_unknown(c, unknown) {
                    Value::Object(m) => m,
                    _ => unreachable!(),
                }
            },
        )
}

fn named(name: String, mut body: Map<String, Value>) -> Value {
    // The name first, as kubectl writes it; order does not matter to JSON.
    let mut c = Map::new();
    c.insert("name".into(), Value::from(name));
    c.append(&mut body);
    Value::Object(c)
}

/// Where Istio's proxy is in the spec, and what the status annotation says.
#[derive(Debug, Clone)]
struct Spec {
    containers: Vec<Value>,
    init_containers: Option<Vec<Value>>,
    restart_policy: Option<String>,
    unknown: Map<String, Value>,
}

fn arb_spec() -> BoxedStrategy<Spec> {
    arb_spec_inner().boxed()
}

fn arb_spec_inner() -> impl Strategy<Value = Spec> {
    (
        // One app container most often (the only shape quitEndpoint wraps).
        prop_oneof![
            2 => vec((arb_app_name(), arb_container_body(false)), 1..2),
            1 => vec((arb_app_name(), arb_container_body(false)), 0..4),
        ],
        // sidecars in `containers`: none, istio-proxy, envoy, both; at an index
        prop_oneof![
            3 => Just(vec![]),
            4 => Just(vec![SIDECARS[0]]),
            1 => Just(vec![SIDECARS[1]]),
            1 => Just(vec![SIDECARS[0], SIDECARS[1]]),
        ],
        vec((any::<prop::sample::Index>(), arb_container_body(false)), 2),
        // init containers: Istio's, others, maybe a native proxy
        prop_oneof![
            Just(vec![]),
            Just(vec![ISTIO_INITS[0]]),
            Just(vec![ISTIO_INITS[1]])
        ],
        vec((arb_app_name(), arb_container_body(true)), 0..3),
        prop::option::weighted(
            0.15,
            (
                prop::sample::select(SIDECARS.to_vec()),
                any::<prop::sample::Index>(),
                arb_container_body(true),
            ),
        ),
        // initContainers: absent, null, or the list
        0..3u8,
        prop::option::weighted(
            0.9,
            prop_oneof![
                4 => Just("Never".to_owned()),
                3 => Just("OnFailure".to_owned()),
                2 => Just("Always".to_owned()),
                1 => "[a-zA-Z]{0,8}",
            ],
        ),
        arb_unknown(),
    )
        .prop_map(
            |(
                apps,
                sidecars,
                sidecar_bodies,
                istio_inits,
                inits,
                native,
                init_shape,
                rp,
                unknown,
            )| {
                let mut used = BTreeSet::new();
                let mut unique = |name: String| -> String {
                    let mut candidate = name.clone();
                    let mut n = 1;
                    while !used.insert(candidate.clone()) {
                        candidate = format!("{name}-{n}");
                        n += 1;
                    }
                    candidate
                };
                // Sidecar names first so they keep their exact name.
                let sidecar_containers: Vec<(usize, Value)> = sidecars
                    .iter()
                    .zip(sidecar_bodies)
                    .map(|(name, (at, body))| {
                        (
                            at.index(apps.len() + 1),
                            named(unique(name.to_string()), body),
                        )
                    })
                    .collect();
                let native_name = native.as_ref().map(|(name, _, _)| unique(name.to_string()));
                let istio_inits: Vec<String> =
                    istio_inits.iter().map(|n| unique(n.to_string())).collect();
                let mut containers: Vec<Value> = apps
                    .into_iter()
                    .map(|(name, body)| named(unique(name), body))
                    .collect();
                for (at, c) in sidecar_containers {
                    let at = at.min(containers.len());
                    containers.insert(at, c);
                }
                let mut init: Vec<Value> = istio_inits
                    .into_iter()
                    .map(|n| json!({"name": n, "image": "docker.io/istio/proxyv2:1.27.0"}))
                    .collect();
                init.extend(
                    inits
                        .into_iter()
                        .map(|(name, body)| named(unique(name), body)),
                );
                if let (Some((_, at, body)), Some(name)) = (native, native_name) {
                    let at = at.index(init.len() + 1);
                    init.insert(at, named(name, body));
                }
                let init_containers = match init_shape {
                    0 if init.is_empty() => None,
                    1 if init.is_empty() => Some(Vec::new()),
                    _ => Some(init),
                };
                Spec {
                    containers,
                    init_containers,
                    restart_policy: rp,
                    unknown,
                }
            },
        )
}

impl Spec {
    fn to_value(&self, null_init: bool) -> Value {
        let mut m = Map::new();
        m.insert("containers".into(), json!(self.containers));
        match &self.init_containers {
            Some(l) => {
                m.insert("initContainers".into(), json!(l));
            }
            None if null_init => {
                m.insert("initContainers".into(), Value::Null);
            }
            None => {}
        }
        if let Some(rp) = &self.restart_policy {
            m.insert("restartPolicy".into(), json!(rp));
        }
        with_unknown(m, self.unknown.clone())
    }
}

/// A proxy config: the mapping it means and the text a user wrote.
#[derive(Debug, Clone)]
struct ProxyConfig {
    /// `None` when the text is not a YAML mapping (then it must be left alone).
    mapping: Option<serde_yaml::Mapping>,
    text: String,
}

fn arb_config_value() -> BoxedStrategy<serde_json::Value> {
    arb_config_value_inner().boxed()
}

fn arb_config_value_inner() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        (-100000i64..100000).prop_map(Value::from),
        Just(Value::Null),
        // Strings that YAML could misread when written carelessly.
        prop_oneof![
            "[a-zA-Z0-9 ._/-]{0,12}",
            Just("}".to_owned()),
            Just("a: b".to_owned()),
            Just("# not a comment".to_owned()),
            Just("true".to_owned()),
            Just("0x1F".to_owned()),
            Just("{x}, [y]".to_owned()),
            Just("two\nlines".to_owned()),
            Just("'quoted' \"twice\"".to_owned()),
            Just("exitOnJobCompletion: true".to_owned()),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(Value::Array),
            btree_map("[A-Z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Keys of a ProxyConfig: real ones, and anything identifier-like.
fn arb_config_key() -> BoxedStrategy<String> {
    arb_config_key_inner().boxed()
}

fn arb_config_key_inner() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("holdApplicationUntilProxyStarts".to_owned()),
        Just("concurrency".to_owned()),
        Just("drainDuration".to_owned()),
        Just("proxyMetadata".to_owned()),
        Just("tracing".to_owned()),
        "[a-z][a-zA-Z0-9]{0,12}",
    ]
}

fn yaml_flow(v: &Value) -> String {
    // JSON is YAML flow; write keys plain (they are identifiers) to get the
    // form people type: `{ holdApplicationUntilProxyStarts: true }`.
    match v {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}: {}", serde_json::to_string(v).unwrap()))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        other => serde_json::to_string(other).unwrap(),
    }
}

fn arb_proxy_config() -> BoxedStrategy<ProxyConfig> {
    arb_proxy_config_inner().boxed()
}

fn arb_proxy_config_inner() -> impl Strategy<Value = ProxyConfig> {
    let mapping = btree_map(arb_config_key(), arb_config_value(), 0..5);
    let well_formed = (
        mapping,
        // the key itself, sometimes already there
        prop::option::weighted(0.1, any::<bool>()),
        0..7u8,
        prop::option::weighted(0.2, Just("# team-a\n")),
        any::<bool>(),
    )
        .prop_map(|(m, exit, form, comment, trailing_newline)| {
            let mut object: Map<String, Value> = m.into_iter().collect();
            if let Some(exit) = exit {
                object.insert(EXIT_KEY.into(), Value::Bool(exit));
            }
            let value = Value::Object(object);
            let block = || {
                if value.as_object().is_some_and(|m| m.is_empty()) {
                    String::new()
                } else {
                    serde_yaml::to_string(&value).unwrap()
                }
            };
            let mut text = match form {
                // YAML block, as serde_yaml writes it
                0 | 1 => block(),
                // YAML block, indented (as it sits in a `|` literal)
                2 => block()
                    .lines()
                    .map(|l| format!("  {l}\n"))
                    .collect::<String>(),
                // YAML block after a document start
                3 => format!("---\n{}", block()),
                // YAML flow
                4 => yaml_flow(&value),
                // JSON, compact and pretty
                5 => serde_json::to_string(&value).unwrap(),
                _ => serde_json::to_string_pretty(&value).unwrap(),
            };
            if !trailing_newline {
                while text.ends_with('\n') {
                    text.pop();
                }
            } else if !text.ends_with('\n') {
                text.push('\n');
            }
            if form < 4 {
                if let Some(c) = comment {
                    text = format!("{c}{text}");
                }
            }
            let mapping = match serde_yaml::to_value(&value).unwrap() {
                serde_yaml::Value::Mapping(m) => m,
                _ => unreachable!(),
            };
            ProxyConfig {
                mapping: Some(mapping),
                text,
            }
        });
    let not_a_mapping = prop_oneof![
        Just("true"),
        Just("- a\n- b"),
        Just("{\"a\": "),
        Just("a: 1\na: 2"),
        Just("a: 1\n b: 2"),
    ]
    .prop_map(|t| ProxyConfig {
        mapping: None,
        text: t.to_owned(),
    });
    prop_oneof![9 => well_formed, 1 => not_a_mapping]
}

fn arb_status() -> BoxedStrategy<String> {
    arb_status_inner().boxed()
}

fn arb_status_inner() -> impl Strategy<Value = String> {
    (
        prop::sample::select(SIDECARS.to_vec()),
        prop::sample::select(ISTIO_INITS.to_vec()),
        0..5u8,
    )
        .prop_map(|(proxy, init, form)| match form {
            // classic, as istioctl kube-inject writes it
            0 | 1 => format!(
                r#"{{"initContainers":["{init}"],"containers":["{proxy}"],"volumes":["workload-socket","istio-envoy"],"imagePullSecrets":null,"revision":"default"}}"#
            ),
            // native
            2 => format!(
                r#"{{"initContainers":["{init}","{proxy}"],"containers":null,"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"default"}}"#
            ),
            // no init container listed
            3 => format!(r#"{{"containers":["{proxy}"],"revision":"canary"}}"#),
            // broken
            _ => "{not json".to_owned(),
        })
}

/// Annotations of one metadata: every key the policy reads, sometimes, and
/// random others.
fn arb_annotations(with_status: bool) -> BoxedStrategy<Map<String, Value>> {
    arb_annotations_inner(with_status).boxed()
}

fn arb_annotations_inner(with_status: bool) -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::weighted(
            0.25,
            prop_oneof![
                Just("nativeSidecar"),
                Just("exitOnJobCompletion"),
                Just("quitEndpoint"),
                Just("disabled"),
                Just("bogus"),
                Just(""),
            ],
        ),
        prop::option::weighted(0.15, prop_oneof![Just("true"), Just("false")]),
        prop::option::weighted(0.4, arb_proxy_config()),
        prop::option::weighted(
            0.15,
            prop_oneof![Just("true"), Just("false"), Just(""), Just("No"), Just("y")],
        ),
        if with_status {
            prop::option::weighted(0.5, arb_status()).boxed()
        } else {
            Just(None).boxed()
        },
        prop::option::weighted(0.05, Just("app")),
        prop::option::weighted(0.1, prop_oneof![Just("15120"), Just("0"), Just("x")]),
        btree_map(
            prop_oneof!["[a-z./-]{1,20}", Just("istio.io/rev".to_owned())],
            ".{0,16}",
            0..3,
        ),
    )
        .prop_map(
            |(mode, native, config, inject, status, wrapped, port, random)| {
                let mut m: Map<String, Value> = random
                    .into_iter()
                    .map(|(k, v)| (k, Value::from(v)))
                    .collect();
                let mut put = |k: &str, v: Option<String>| {
                    if let Some(v) = v {
                        m.insert(k.to_owned(), Value::from(v));
                    }
                };
                put(MODE, mode.map(str::to_owned));
                put(NATIVE, native.map(str::to_owned));
                put(PROXY_CONFIG, config.map(|c| c.text));
                put(INJECT, inject.map(str::to_owned));
                put(STATUS, status);
                put(QUIT_WRAPPED, wrapped.map(str::to_owned));
                put(STATUS_PORT, port.map(str::to_owned));
                m
            },
        )
}

fn arb_labels() -> BoxedStrategy<Map<String, Value>> {
    arb_labels_inner().boxed()
}

fn arb_labels_inner() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::weighted(
            0.15,
            prop_oneof![Just("true"), Just("false"), Just(""), Just("off")],
        ),
        btree_map("[a-z./-]{1,20}", "[a-z0-9]{0,10}", 0..3),
    )
        .prop_map(|(inject, random)| {
            let mut m: Map<String, Value> = random
                .into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect();
            if let Some(v) = inject {
                m.insert(INJECT.into(), Value::from(v));
            }
            m
        })
}

/// A metadata object: name, annotations and labels (absent, null, `{}` or
/// some), `creationTimestamp: null` as kubectl sends it, unknown members.
fn arb_metadata(with_status: bool) -> BoxedStrategy<Value> {
    arb_metadata_inner(with_status).boxed()
}

fn arb_metadata_inner(with_status: bool) -> impl Strategy<Value = Value> {
    (
        prop::option::of("[a-z][a-z0-9-]{0,10}"),
        0..4u8,
        arb_annotations(with_status),
        0..3u8,
        arb_labels(),
        any::<bool>(),
        arb_unknown(),
    )
        .prop_map(
            |(name, a_shape, annotations, l_shape, labels, ts, unknown)| {
                let mut m = Map::new();
                if let Some(n) = name {
                    m.insert("name".into(), Value::from(n));
                }
                match a_shape {
                    0 => {}
                    1 => {
                        m.insert("annotations".into(), Value::Null);
                    }
                    _ => {
                        m.insert("annotations".into(), Value::Object(annotations));
                    }
                }
                match l_shape {
                    0 => {}
                    _ => {
                        m.insert("labels".into(), Value::Object(labels));
                    }
                }
                if ts {
                    m.insert("creationTimestamp".into(), Value::Null);
                }
                with_unknown(m, unknown)
            },
        )
}

fn arb_template() -> BoxedStrategy<Value> {
    arb_template_inner().boxed()
}

fn arb_template_inner() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            1 => Just(None),
            1 => Just(Some(json!({}))),
            6 => arb_metadata(true).prop_map(Some),
        ],
        arb_spec(),
        any::<bool>(),
        arb_unknown(),
    )
        .prop_map(|(metadata, spec, null_init, unknown)| {
            let mut m = Map::new();
            if let Some(meta) = metadata {
                m.insert("metadata".into(), meta);
            }
            m.insert("spec".into(), spec.to_value(null_init));
            with_unknown(m, unknown)
        })
}

#[derive(Debug, Clone)]
struct Case {
    kind: Kind,
    request: Value,
    settings: Option<Value>,
}

fn gvk(kind: Kind, other: usize) -> Value {
    let others = [
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "StatefulSet"),
        ("apps", "v1", "DaemonSet"),
        ("apps", "v1", "Job"),
        ("batch", "v1", "Pod"),
        ("", "v1", "PodTemplate"),
        ("example.com", "v1", "CronJob"),
    ];
    let (g, v, k) = match kind {
        Kind::Job => ("batch", "v1", "Job"),
        Kind::CronJob => ("batch", "v1", "CronJob"),
        Kind::Pod => ("", "v1", "Pod"),
        Kind::Other => others[other % others.len()],
    };
    json!({"group": g, "version": v, "kind": k})
}

fn arb_object(kind: Kind) -> BoxedStrategy<Value> {
    let top = (arb_metadata(false), arb_unknown(), arb_unknown());
    match kind {
        Kind::Pod => (arb_metadata(true), arb_spec(), any::<bool>(), arb_unknown())
            .prop_map(|(metadata, spec, null_init, unknown)| {
                let m = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                               "spec": spec.to_value(null_init)});
                with_unknown(m.as_object().unwrap().clone(), unknown)
            })
            .boxed(),
        Kind::Job => (top, arb_template(), arb_unknown())
            .prop_map(|((metadata, u1, u2), template, u3)| {
                let spec = with_unknown(
                    json!({"backoffLimit": 2, "template": template})
                        .as_object()
                        .unwrap()
                        .clone(),
                    u2,
                );
                let m = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                               "spec": spec, "status": with_unknown(Map::new(), u3)});
                with_unknown(m.as_object().unwrap().clone(), u1)
            })
            .boxed(),
        Kind::CronJob => (
            top,
            arb_template(),
            prop_oneof![
                Just(None),
                Just(Some(json!({}))),
                arb_metadata(true).prop_map(Some)
            ],
            arb_unknown(),
        )
            .prop_map(|((metadata, u1, u2), template, jt_meta, u3)| {
                let mut job_spec = Map::new();
                job_spec.insert("template".into(), template);
                let mut jt = Map::new();
                if let Some(meta) = jt_meta {
                    jt.insert("metadata".into(), meta);
                }
                jt.insert("spec".into(), with_unknown(job_spec, u3));
                let spec = with_unknown(
                    json!({"schedule": "*/5 * * * *", "jobTemplate": Value::Object(jt)})
                        .as_object()
                        .unwrap()
                        .clone(),
                    u2,
                );
                let m = json!({"apiVersion": "batch/v1", "kind": "CronJob",
                               "metadata": metadata, "spec": spec});
                with_unknown(m.as_object().unwrap().clone(), u1)
            })
            .boxed(),
        Kind::Other => (top, arb_template())
            .prop_map(|((metadata, u1, u2), template)| {
                let spec = with_unknown(
                    json!({"replicas": 1, "template": template})
                        .as_object()
                        .unwrap()
                        .clone(),
                    u2,
                );
                let m = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": metadata, "spec": spec});
                with_unknown(m.as_object().unwrap().clone(), u1)
            })
            .boxed(),
    }
}

fn arb_settings() -> BoxedStrategy<Option<Value>> {
    arb_settings_inner().boxed()
}

fn arb_settings_inner() -> impl Strategy<Value = Option<Value>> {
    let some = (
        prop::option::of(prop_oneof![
            Just("nativeSidecar"),
            Just("exitOnJobCompletion"),
            Just("quitEndpoint"),
        ]),
        prop::option::of(prop::sample::select(SIDECARS.to_vec())),
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![
            Just("http://127.0.0.1:15020/quitquitquit"),
            Just("http://localhost:15020/quitquitquit"),
        ]),
    )
        .prop_map(|(mode, name, over, url)| {
            let mut m = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    m.insert(k.to_owned(), v);
                }
            };
            put("mode", mode.map(Value::from));
            put("sidecarContainerName", name.map(Value::from));
            put("workloadOverride", over.map(Value::from));
            put("quitUrl", url.map(Value::from));
            Some(Value::Object(m))
        });
    prop_oneof![1 => Just(None), 1 => Just(Some(Value::Null)), 8 => some]
}

fn arb_operation() -> BoxedStrategy<&'static str> {
    arb_operation_inner().boxed()
}

fn arb_operation_inner() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        6 => Just("CREATE"),
        3 => Just("UPDATE"),
        1 => Just("DELETE"),
        1 => Just("CONNECT"),
    ]
}

fn arb_case_of(kinds: Vec<Kind>, ops: BoxedStrategy<&'static str>) -> BoxedStrategy<Case> {
    arb_case_of_inner(kinds, ops).boxed()
}

fn arb_case_of_inner(
    kinds: Vec<Kind>,
    ops: BoxedStrategy<&'static str>,
) -> impl Strategy<Value = Case> {
    // One strategy per kind, built once (building a strategy parses its
    // regexes; a flat_map would do that for every case).
    let objects = proptest::strategy::Union::new(
        kinds
            .into_iter()
            .map(|kind| (Just(kind), arb_object(kind)).boxed()),
    );
    (
        objects,
        ops,
        arb_settings(),
        0..7usize,
        "[0-9a-f]{8}",
        arb_unknown(),
    )
        .prop_map(|((kind, object), op, settings, other, uid, unknown)| {
            let mut request = Map::new();
            request.insert("uid".into(), Value::from(uid));
            request.insert("kind".into(), gvk(kind, other));
            request.insert("operation".into(), Value::from(op));
            request.insert("object".into(), object.clone());
            if op == "UPDATE" {
                request.insert("oldObject".into(), object);
            }
            Case {
                kind,
                request: with_unknown(request, unknown),
                settings,
            }
        })
}

fn arb_case() -> BoxedStrategy<Case> {
    arb_case_inner().boxed()
}

fn arb_case_inner() -> impl Strategy<Value = Case> {
    arb_case_of(
        vec![Kind::Job, Kind::CronJob, Kind::Pod, Kind::Pod, Kind::Other],
        arb_operation().boxed(),
    )
}

// ---------------------------------------------------------------- running

/// The policy's answer to a request sent as policy-server sends it
/// (members in alphabetical order), checked to be the very answer it gives
/// in the API server's order (kind and operation before the object: the
/// early-skip path) and with the object first (read before the kind is
/// known).
fn run(request: &Value, settings: &Option<Value>) -> Answer {
    let validate = |order| {
        let payload = payload(request, settings.as_ref(), order);
        istio_job_sidecar_policy::validate(&payload).expect("validate never errors")
    };
    let answer = validate(Order::PolicyServer);
    for order in [Order::ApiServer, Order::ObjectFirst] {
        assert_eq!(
            String::from_utf8_lossy(&answer),
            String::from_utf8_lossy(&validate(order)),
            "the answer depends on the order of the request's members ({order:?})"
        );
    }
    check_answer(&answer).unwrap_or_else(|e| panic!("{e}"))
}

/// The request object as the policy read it (through the same JSON text).
fn object_of(request: &Value) -> Value {
    let text = serde_json::to_string(&request["object"]).unwrap();
    serde_json::from_str(&text).unwrap()
}

// ---------------------------------------------------------------- oracle

struct Settings {
    mode: Mode,
    sidecar: String,
    workload_override: bool,
    quit_url: String,
}

fn settings_of(s: &Option<Value>) -> Settings {
    let s = s.clone().unwrap_or(Value::Null);
    Settings {
        mode: s["mode"]
            .as_str()
            .and_then(Mode::parse)
            .unwrap_or(Mode::Native),
        sidecar: s["sidecarContainerName"]
            .as_str()
            .unwrap_or("istio-proxy")
            .to_owned(),
        workload_override: s["workloadOverride"].as_bool().unwrap_or(true),
        quit_url: s["quitUrl"].as_str().unwrap_or(DEFAULT_QUIT_URL).to_owned(),
    }
}

fn template_pointer(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "",
        Kind::Job => "/spec/template",
        Kind::CronJob => "/spec/jobTemplate/spec/template",
        Kind::Other => "/spec/template",
    }
}

fn annotation<'v>(object: &'v Value, meta_owner: &str, key: &str) -> Option<&'v str> {
    object
        .pointer(&format!("{meta_owner}/metadata/annotations"))?
        .get(key)?
        .as_str()
}

fn label<'v>(object: &'v Value, meta_owner: &str, key: &str) -> Option<&'v str> {
    object
        .pointer(&format!("{meta_owner}/metadata/labels"))?
        .get(key)?
        .as_str()
}

/// The mode the decision table (issue 2) applies, written from the spec
/// rather than from src/decide.rs; `None` when nothing may change.
fn expected_mode(case: &Case) -> Option<Mode> {
    let op = case.request["operation"].as_str().unwrap_or_default();
    let object = object_of(&case.request);
    let t = template_pointer(case.kind);
    let handled = match case.kind {
        Kind::Job => op == "CREATE",
        Kind::CronJob => op == "CREATE" || op == "UPDATE",
        Kind::Pod => {
            op == "CREATE"
                && matches!(
                    object
                        .pointer("/spec/restartPolicy")
                        .and_then(Value::as_str),
                    Some("Never" | "OnFailure")
                )
        }
        Kind::Other => false,
    };
    if !handled {
        return None;
    }
    let settings = settings_of(&case.settings);
    let workload_annotation =
        annotation(&object, t, MODE).or_else(|| annotation(&object, "", MODE));
    let mode = match workload_annotation.filter(|_| settings.workload_override) {
        None => settings.mode,
        Some("disabled") => return None,
        Some(other) => Mode::parse(other).unwrap_or(settings.mode),
    };
    let inject = label(&object, t, INJECT)
        .filter(|v| !v.is_empty())
        .or_else(|| annotation(&object, t, INJECT));
    let injection_disabled = match inject {
        None | Some("") => false,
        Some(v) => !matches!(v.to_ascii_lowercase().as_str(), "y" | "yes" | "true" | "on"),
    };
    if injection_disabled && injected(case.kind, &object) {
        return Some(mode);
    }
    (!injection_disabled).then_some(mode)
}

fn injected(kind: Kind, object: &Value) -> bool {
    annotation(object, template_pointer(kind), STATUS).is_some()
        || (kind == Kind::CronJob && annotation(object, "/spec/jobTemplate", STATUS).is_some())
}

fn containers(object: &Value, t: &str, list: &str) -> Vec<Value> {
    object
        .pointer(&format!("{t}/spec/{list}"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The proxy Istio itself injects in native form: its `startupProbe` and
/// `lifecycle`, from `istioctl kube-inject` (test_data/fixtures/).
fn istio_native_proxy() -> &'static Value {
    static PROXY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    PROXY.get_or_init(|| {
        let text = include_str!("../test_data/fixtures/istio-job-kube-injected-native.yaml");
        let job: Value = serde_yaml::from_str(text.split("\n---").next().unwrap()).unwrap();
        containers(&job, "/spec/template", "initContainers")
            .into_iter()
            .find(|c| c["name"] == "istio-proxy")
            .expect("the fixture has a native istio-proxy")
    })
}

/// pilot-agent's status port for this pod: its annotation, else Istio's default.
fn status_port(kind: Kind, object: &Value) -> u16 {
    let t = template_pointer(kind);
    let on_job_template = (kind == Kind::CronJob)
        .then(|| annotation(object, "/spec/jobTemplate", STATUS_PORT))
        .flatten();
    annotation(object, t, STATUS_PORT)
        .or(on_job_template)
        .and_then(|p| p.parse().ok())
        .unwrap_or(15020)
}

/// The sidecar as Istio would have injected it in native form: what it had,
/// `restartPolicy: Always`, and, where it has none, Istio's startup probe
/// on what its readiness probe checks and Istio's drain hook on the pod's
/// status port (README, "The move compared with Istio's own native
/// injection").
fn made_native(sidecar: &Value, status_port: u16) -> Value {
    let istio = istio_native_proxy();
    let mut moved = sidecar.clone();
    moved["restartPolicy"] = json!("Always");
    let absent = |key: &str| sidecar.get(key).is_none_or(Value::is_null);
    if absent("startupProbe") {
        let check = ["exec", "httpGet", "tcpSocket", "grpc"]
            .into_iter()
            .find_map(|h| Some((h, sidecar["readinessProbe"].get(h)?.clone())));
        if let Some((handler, check)) = check {
            let mut probe = istio["startupProbe"].clone();
            let probe_map = probe.as_object_mut().unwrap();
            probe_map.remove("httpGet");
            probe_map.insert(handler.into(), check);
            moved["startupProbe"] = probe;
        }
    }
    if absent("lifecycle") && status_port != 0 {
        let hook = serde_json::to_string(&istio["lifecycle"])
            .unwrap()
            .replace("--debug-port=15020", &format!("--debug-port={status_port}"));
        moved["lifecycle"] = serde_json::from_str(&hook).unwrap();
    }
    moved
}

/// What quitEndpoint leaves of the containers and of the quit-wrapped
/// annotation, from the README (not from src/).
struct QuitExpectation {
    containers: Vec<Value>,
    /// The annotation's value afterwards (`None`: absent).
    annotation: Option<String>,
}

fn quit_expectation(case: &Case) -> QuitExpectation {
    let object = object_of(&case.request);
    let t = template_pointer(case.kind);
    let settings = settings_of(&case.settings);
    let mut out = containers(&object, t, "containers");
    let annotation_now = annotation(&object, t, QUIT_WRAPPED).map(str::to_owned);
    let unchanged = |containers| QuitExpectation {
        containers,
        annotation: annotation_now.clone(),
    };
    let native = containers(&object, t, "initContainers")
        .iter()
        .any(|c| c["name"] == json!(settings.sidecar) && c["restartPolicy"] == "Always");
    if native {
        return unchanged(out);
    }
    let apps: Vec<usize> = (0..out.len())
        .filter(|&i| out[i]["name"] != json!(settings.sidecar))
        .collect();
    let command = |c: &Value| -> Vec<String> {
        serde_json::from_value(c["command"].clone()).unwrap_or_default()
    };
    let original = |command: &[String]| -> Option<Vec<String>> {
        let ours = command.len() >= 6
            && command[0] == QUIT_SHELL[0]
            && command[1] == QUIT_SHELL[1]
            && command[3] == QUIT_NAME;
        ours.then(|| command[6..].to_vec())
    };
    match apps[..] {
        [one] => {
            let command = command(&out[one]);
            if command.is_empty() {
                return unchanged(out);
            }
            let restart = object.pointer(&format!("{t}/spec/restartPolicy"));
            let when = if restart == Some(&json!("OnFailure")) {
                "on-success"
            } else {
                "always"
            };
            let mut wrapped: Vec<String> = [QUIT_SHELL[0], QUIT_SHELL[1], QUIT_SCRIPT, QUIT_NAME]
                .iter()
                .map(|s| s.to_string())
                .collect();
            wrapped.push(settings.quit_url.clone());
            wrapped.push(when.to_owned());
            wrapped.extend(original(&command).unwrap_or(command));
            out[one]["command"] = json!(wrapped);
            QuitExpectation {
                annotation: Some(out[one]["name"].as_str().unwrap_or_default().to_owned()),
                containers: out,
            }
        }
        [] => unchanged(out),
        _ => {
            for &i in &apps {
                if let Some(original) = original(&command(&out[i])) {
                    out[i]["command"] = json!(original);
                }
            }
            QuitExpectation {
                containers: out,
                annotation: None,
            }
        }
    }
}

/// Whether the policy must change this request, where the spec says so
/// without running a mode's algorithm; `None` where it cannot tell (a
/// proxy config in a form that may not extend in place).
fn change_due(case: &Case) -> Option<bool> {
    let Some(mode) = expected_mode(case) else {
        return Some(false);
    };
    let object = object_of(&case.request);
    let t = template_pointer(case.kind);
    match mode {
        Mode::Native if !injected(case.kind, &object) => {
            Some(annotation(&object, t, NATIVE).is_none())
        }
        Mode::Native => {
            let sidecar = json!(settings_of(&case.settings).sidecar);
            let list = containers(&object, t, "containers");
            let proxies = list.iter().filter(|c| c["name"] == sidecar).count();
            Some(proxies == 1 && list.len() > 1)
        }
        Mode::Exit => match annotation(&object, t, PROXY_CONFIG).map(serde_yaml::from_str) {
            None => Some(true),
            Some(Ok(serde_yaml::Value::Mapping(m))) if m.contains_key(EXIT_KEY) => Some(false),
            Some(Ok(serde_yaml::Value::Mapping(_) | serde_yaml::Value::Null)) => None,
            Some(_) => Some(false),
        },
        Mode::Quit => {
            let expected = quit_expectation(case);
            Some(
                expected.containers != containers(&object, t, "containers")
                    || expected.annotation.as_deref() != annotation(&object, t, QUIT_WRAPPED),
            )
        }
    }
}

// ---------------------------------------------------------------- the parts a mode may change

fn remove_annotation(object: &mut Value, meta_owner: &str, key: &str) {
    if let Some(Value::Object(a)) =
        object.pointer_mut(&format!("{meta_owner}/metadata/annotations"))
    {
        a.remove(key);
    }
}

/// `null`, `{}` and absent mean the same to Kubernetes for the members a
/// mode may create (annotations, metadata, initContainers); the comparison
/// reads them alike.
fn normalize_created(object: &mut Value, meta_owner: &str) {
    if let Some(Value::Object(owner)) = object.pointer_mut(meta_owner) {
        if let Some(Value::Object(meta)) = owner.get_mut("metadata") {
            if meta
                .get("annotations")
                .is_some_and(|a| a.is_null() || a.as_object().is_some_and(Map::is_empty))
            {
                meta.remove("annotations");
            }
        }
        if owner
            .get("metadata")
            .is_some_and(|m| m.is_null() || m.as_object().is_some_and(Map::is_empty))
        {
            owner.remove("metadata");
        }
        if let Some(Value::Object(spec)) = owner.get_mut("spec") {
            if spec
                .get("initContainers")
                .is_some_and(|l| l.is_null() || l.as_array().is_some_and(Vec::is_empty))
            {
                spec.remove("initContainers");
            }
        }
    }
}

/// `object` without the parts `mode` may change (and nothing else):
/// - nativeSidecar: on the pod template the annotations
///   `sidecar.istio.io/nativeSidecar` and `sidecar.istio.io/status`, on a
///   CronJob's jobTemplate the status annotation, and the container named
///   `sidecarContainerName` in `containers` and `initContainers`;
/// - exitOnJobCompletion: the template's `proxy.istio.io/config`;
/// - quitEndpoint: the template's `istio-job-sidecar/quit-wrapped` and the
///   `command` of the entries of `containers` (never their `args`).
fn strip(kind: Kind, mode: Option<Mode>, sidecar: &str, object: &Value) -> Value {
    let mut o = object.clone();
    let t = template_pointer(kind);
    match mode {
        None => return o,
        Some(Mode::Native) => {
            remove_annotation(&mut o, t, NATIVE);
            remove_annotation(&mut o, t, STATUS);
            if kind == Kind::CronJob {
                remove_annotation(&mut o, "/spec/jobTemplate", STATUS);
            }
            for list in ["containers", "initContainers"] {
                if let Some(Value::Array(l)) = o.pointer_mut(&format!("{t}/spec/{list}")) {
                    l.retain(|c| c["name"] != json!(sidecar));
                }
            }
        }
        Some(Mode::Exit) => remove_annotation(&mut o, t, PROXY_CONFIG),
        Some(Mode::Quit) => {
            remove_annotation(&mut o, t, QUIT_WRAPPED);
            if let Some(Value::Array(l)) = o.pointer_mut(&format!("{t}/spec/containers")) {
                for c in l.iter_mut().filter_map(Value::as_object_mut) {
                    c.remove("command");
                }
            }
        }
    }
    normalize_created(&mut o, t);
    if kind == Kind::CronJob {
        normalize_created(&mut o, "/spec/jobTemplate");
    }
    o
}

/// The output still reads as the same kind through Kubernetes' own types.
fn same_kind(kind: Kind, input: &Value, output: &Value) -> Result<(), String> {
    fn check<T: serde::de::DeserializeOwned>(input: &Value, output: &Value) -> Result<(), String> {
        serde_json::from_value::<T>(input.clone())
            .map_err(|e| format!("generator made an invalid input: {e}"))?;
        serde_json::from_value::<T>(output.clone())
            .map(|_| ())
            .map_err(|e| format!("output no longer deserializes: {e}"))
    }
    match kind {
        Kind::Job => check::<Job>(input, output),
        Kind::CronJob => check::<CronJob>(input, output),
        Kind::Pod => check::<Pod>(input, output),
        Kind::Other => Ok(()),
    }
}

fn diff_message(a: &Value, b: &Value) -> String {
    format!(
        "input (stripped):\n{}\noutput (stripped):\n{}",
        serde_json::to_string_pretty(a).unwrap(),
        serde_json::to_string_pretty(b).unwrap()
    )
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(config())]

    /// (1) Nothing outside the parts the applied mode may change differs,
    /// and when no mode applies nothing differs at all.
    #[test]
    fn only_the_modes_parts_change(case in arb_case()) {
        let response = run(&case.request, &case.settings);
        let input = object_of(&case.request);
        let mode = expected_mode(&case);
        if let Some(due) = change_due(&case) {
            prop_assert_eq!(
                response.mutated.is_some(), due,
                "mutated must be {} (mode {:?}); warnings: {:?}", due, mode, response.warnings
            );
        }
        let Some(output) = response.mutated else {
            return Ok(());
        };
        prop_assert!(mode.is_some(), "mutated although no mode applies: {:?}", response.warnings);
        let sidecar = settings_of(&case.settings).sidecar;
        let a = strip(case.kind, mode, &sidecar, &input);
        let b = strip(case.kind, mode, &sidecar, &output);
        prop_assert!(a == b, "{}", diff_message(&a, &b));
        prop_assert!(output != input, "mutated_object equal to the input");
        if let Err(e) = same_kind(case.kind, &input, &output) {
            prop_assert!(false, "{}", e);
        }
    }

    /// (2) The policy's output is a fixed point, in every order of the
    /// request's members.
    #[test]
    fn idempotent(case in arb_case()) {
        let first = run(&case.request, &case.settings);
        let Some(output) = first.mutated else {
            return Ok(());
        };
        let validate = |p: &[u8]| istio_job_sidecar_policy::validate(p).expect("validate never errors");
        for order in Order::ALL {
            if let Err(e) = check_fixed_point(validate, &case.request, case.settings.as_ref(), &output, order) {
                prop_assert!(false, "{:?}: {}", order, e);
            }
        }
    }

    /// (3) exitOnJobCompletion keeps every key and value of the user's
    /// config and adds only `exitOnJobCompletion: true`.
    #[test]
    fn proxy_config_merge(
        case in arb_case_of(vec![Kind::Job, Kind::CronJob, Kind::Pod], Just("CREATE").boxed()),
        config in arb_proxy_config(),
        present in any::<bool>(),
        name in prop::option::of(prop::sample::select(SIDECARS.to_vec())),
    ) {
        // Force the mode and a handled shape; keep everything else random.
        let mut case = case;
        let mut settings = json!({"mode": "exitOnJobCompletion", "workloadOverride": false});
        if let Some(name) = name {
            settings["sidecarContainerName"] = json!(name);
        }
        case.settings = Some(settings);
        let t = template_pointer(case.kind);
        let object = case.request["object"].as_object_mut().unwrap();
        let mut object = Value::Object(std::mem::take(object));
        if case.kind == Kind::Pod {
            object["spec"]["restartPolicy"] = json!("Never");
        }
        remove_annotation(&mut object, t, INJECT);
        if let Some(Value::Object(l)) = object.pointer_mut(&format!("{t}/metadata/labels")) {
            l.remove(INJECT);
        }
        let template = object.pointer_mut(t).unwrap().as_object_mut().unwrap();
        let meta = template.entry("metadata").or_insert(json!({}));
        if meta.is_null() {
            *meta = json!({});
        }
        let annotations = meta.as_object_mut().unwrap().entry("annotations").or_insert(json!({}));
        if annotations.is_null() {
            *annotations = json!({});
        }
        let annotations = annotations.as_object_mut().unwrap();
        if present {
            annotations.insert(PROXY_CONFIG.into(), json!(config.text));
        } else {
            annotations.remove(PROXY_CONFIG);
        }
        case.request["object"] = object;

        let input = object_of(&case.request);
        let response = run(&case.request, &case.settings);
        let out_config = response
            .mutated
            .as_ref()
            .and_then(|o| annotation(o, t, PROXY_CONFIG).map(str::to_owned));
        if !present {
            prop_assert_eq!(out_config.as_deref(), Some("exitOnJobCompletion: true"));
            return Ok(());
        }
        match &config.mapping {
            None => {
                prop_assert!(response.mutated.is_none());
                prop_assert!(
                    response.warnings.iter().any(|w| w.contains(PROXY_CONFIG)),
                    "no warning for an unusable config: {:?}", response.warnings
                );
            }
            Some(m) if m.contains_key(EXIT_KEY) => {
                // The user's word stands, whatever its value.
                prop_assert!(response.mutated.is_none(), "{:?}", out_config);
            }
            Some(m) => {
                let Some(text) = out_config else {
                    prop_assert!(false, "well-formed config {:?} not merged: {:?}",
                        config.text, response.warnings);
                    unreachable!()
                };
                let reread: serde_yaml::Value = serde_yaml::from_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text:?} does not parse: {e}")))?;
                let mut expected = m.clone();
                expected.insert(serde_yaml::Value::from(EXIT_KEY), serde_yaml::Value::Bool(true));
                prop_assert_eq!(&reread, &serde_yaml::Value::Mapping(expected),
                    "merged {:?} into {:?}", config.text, text);
                // The user's text is kept as a prefix-ish: every original
                // line is still there, in order.
                let kept: Vec<&str> = config.text.lines().collect();
                let now: Vec<&str> = text.lines().collect();
                let mut it = now.iter();
                for line in kept.iter().filter(|l| !l.trim().is_empty()) {
                    let in_flow = line.contains('}');
                    prop_assert!(in_flow || it.any(|n| n == line),
                        "line {:?} of the user's config lost in {:?}", line, text);
                }
                // Everything else: the only change.
                let a = strip(case.kind, Some(Mode::Exit), "istio-proxy", &input);
                let b = strip(case.kind, Some(Mode::Exit), "istio-proxy", response.mutated.as_ref().unwrap());
                prop_assert!(a == b, "{}", diff_message(&a, &b));
            }
        }
    }

    /// (4) App containers keep their order and content; the moved sidecar
    /// keeps every field; other init containers keep theirs.
    #[test]
    fn containers_kept(
        case in arb_case_of(vec![Kind::Job, Kind::CronJob, Kind::Pod], Just("CREATE").boxed()),
        mode in prop::sample::select(vec!["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"]),
    ) {
        let mut case = case;
        // Every mode as often as the others (the workload's annotation may
        // still pick another).
        let mut settings = match case.settings.take() {
            Some(Value::Object(m)) => Value::Object(m),
            _ => json!({}),
        };
        settings["mode"] = json!(mode);
        case.settings = Some(settings);
        if case.kind == Kind::Pod {
            case.request["object"]["spec"]["restartPolicy"] = json!("Never");
        }
        let mode = expected_mode(&case);
        let settings = settings_of(&case.settings);
        let input = object_of(&case.request);
        let response = run(&case.request, &case.settings);
        let output = response.mutated.clone().unwrap_or_else(|| input.clone());
        let t = template_pointer(case.kind);
        let list = |o: &Value, key: &str| containers(o, t, key);
        let (in_c, in_i) = (list(&input, "containers"), list(&input, "initContainers"));
        let (out_c, out_i) = (list(&output, "containers"), list(&output, "initContainers"));
        let is_sidecar = |c: &Value| c["name"] == json!(settings.sidecar);
        match mode {
            Some(Mode::Native) => {
                let at = in_c.iter().position(is_sidecar);
                let should_move = injected(case.kind, &input) && at.is_some() && in_c.len() > 1;
                if !should_move {
                    prop_assert_eq!(&out_c, &in_c);
                    prop_assert_eq!(&out_i, &in_i);
                    return Ok(());
                }
                let at = at.unwrap();
                let mut apps = in_c.clone();
                let sidecar = apps.remove(at);
                prop_assert_eq!(&out_c, &apps, "app containers changed");
                let after_istio = in_i
                    .iter()
                    .rposition(|c| ISTIO_INITS.iter().any(|n| c["name"] == json!(n)))
                    .map_or(0, |i| i + 1);
                // Compared with what Istio itself writes (its fixture), not
                // with the policy's own output.
                let moved = made_native(&sidecar, status_port(case.kind, &input));
                let mut expected_init = in_i.clone();
                expected_init.insert(after_istio, moved);
                prop_assert_eq!(&out_i, &expected_init, "init containers not as expected");
                // The status annotation no longer lists it as a container.
                let status_at = if annotation(&input, t, STATUS).is_some() { t } else { "/spec/jobTemplate" };
                if let Some(status) = annotation(&output, status_at, STATUS) {
                    if let Ok(status) = serde_json::from_str::<Value>(status) {
                        prop_assert!(!status["containers"].as_array().is_some_and(|l| l.contains(&json!(settings.sidecar))),
                            "status still lists the sidecar as a container: {}", status);
                    }
                }
            }
            Some(Mode::Exit) => {
                prop_assert_eq!(&out_c, &in_c);
                prop_assert_eq!(&out_i, &in_i);
            }
            Some(Mode::Quit) => {
                // The single app's command is the wrapper's prefix followed
                // by its original argv; args and every other field kept.
                let expected = quit_expectation(&case);
                prop_assert_eq!(&out_c, &expected.containers, "containers not as the README says");
                prop_assert_eq!(
                    annotation(&output, t, QUIT_WRAPPED), expected.annotation.as_deref(),
                    "{} not as the README says", QUIT_WRAPPED
                );
                prop_assert_eq!(&out_i, &in_i, "init containers are never touched");
            }
            None => prop_assert!(response.mutated.is_none()),
        }
        // nativeSidecar, not injected yet: the annotation asks Istio for it,
        // unless the user already said either way.
        if mode == Some(Mode::Native) && !injected(case.kind, &input) {
            let user = annotation(&input, t, NATIVE);
            let now = annotation(&output, t, NATIVE);
            match user {
                Some(v) => prop_assert_eq!(now, Some(v)),
                None => prop_assert_eq!(now, Some("true")),
            }
        }
    }

    /// (5) Job UPDATE (and other non-CREATE operations), Pods that run
    /// forever and unhandled kinds never change, whatever else they carry.
    #[test]
    fn never_changes(
        case in prop_oneof![
            arb_case_of(vec![Kind::Job], prop_oneof![Just("UPDATE"), Just("DELETE"), Just("CONNECT")].boxed()),
            arb_case_of(vec![Kind::Pod], arb_operation().boxed()).prop_map(|mut c| {
                c.request["object"]["spec"]["restartPolicy"] = json!("Always");
                c
            }),
            arb_case_of(vec![Kind::Pod], arb_operation().boxed()).prop_map(|mut c| {
                c.request["object"]["spec"].as_object_mut().unwrap().remove("restartPolicy");
                c
            }),
            arb_case_of(vec![Kind::Other], arb_operation().boxed()),
        ]
    ) {
        prop_assert_eq!(expected_mode(&case), None);
        let response = run(&case.request, &case.settings);
        prop_assert!(response.mutated.is_none(), "changed: {:?}", response.mutated);
    }
}

/// The generators reach every branch that matters; if they stop doing so
/// (a refactor narrowing them), the properties above would pass vacuously.
#[test]
fn generators_reach_the_interesting_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_case();
    let (mut mutated, mut moved, mut merged, mut wrapped, mut skipped) = (0, 0, 0, 0, 0);
    for _ in 0..2000 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let mode = expected_mode(&case);
        let response = run(&case.request, &case.settings);
        match (&response.mutated, mode) {
            (Some(out), Some(Mode::Native)) => {
                mutated += 1;
                let t = template_pointer(case.kind);
                if out.pointer(&format!("{t}/spec/initContainers"))
                    != object_of(&case.request).pointer(&format!("{t}/spec/initContainers"))
                {
                    moved += 1;
                }
            }
            (Some(_), Some(Mode::Exit)) => {
                mutated += 1;
                merged += 1;
            }
            (Some(_), Some(Mode::Quit)) => {
                mutated += 1;
                wrapped += 1;
            }
            (Some(_), _) => mutated += 1,
            (None, _) => skipped += 1,
        }
    }
    eprintln!(
        "of 2000 generated cases: {mutated} mutated ({moved} sidecar moves, \
         {merged} config merges, {wrapped} commands wrapped), {skipped} unchanged"
    );
    assert!(mutated > 300 && moved > 30 && merged > 50 && wrapped > 10 && skipped > 300);
}
