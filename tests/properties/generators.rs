//! The generators: whole AdmissionRequests of Jobs, CronJobs, Pods and
//! unhandled kinds built from random parts (`arb_case`), the earlier passes
//! of the policy a template may carry (`pre_pass`, `pre_pass_before_injection`,
//! `as_legacy`), Istio's own injection (`injected_by_istio`), and the hand
//! edits made since (`tamper`: the policy must not act on the record;
//! `take_off`: nothing of the recorded edit is left).

use crate::names::*;
use crate::oracle::*;
use crate::pass;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

// Each `arb_x` boxes its `arb_x_inner`: unboxed, the nested strategy and
// value-tree types of a whole request overflow a test thread's stack in an
// unoptimized build.

/// Any JSON value, small: what an unknown (future) field may hold.
pub fn arb_json() -> BoxedStrategy<Value> {
    arb_json_inner().boxed()
}

pub fn arb_json_inner() -> impl Strategy<Value = Value> {
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
pub fn arb_unknown() -> BoxedStrategy<Map<String, Value>> {
    arb_unknown_inner().boxed()
}

pub fn arb_unknown_inner() -> impl Strategy<Value = Map<String, Value>> {
    btree_map("x[A-Za-z0-9]{0,6}", arb_json(), 0..2).prop_map(|m| m.into_iter().collect())
}

pub fn with_unknown(mut object: Map<String, Value>, unknown: Map<String, Value>) -> Value {
    for (k, v) in unknown {
        object.entry(k).or_insert(v);
    }
    Value::Object(object)
}

pub fn arb_string_list() -> BoxedStrategy<Value> {
    arb_string_list_inner().boxed()
}

pub fn arb_string_list_inner() -> impl Strategy<Value = Value> {
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

pub fn arb_app_name() -> BoxedStrategy<String> {
    arb_app_name_inner().boxed()
}

pub fn arb_app_name_inner() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("app".to_owned()),
        Just("worker".to_owned()),
        Just("hello".to_owned()),
        Just("db-migrate".to_owned()),
        "[a-z][a-z0-9-]{0,8}[a-z0-9]",
    ]
}

/// A container (without its name: names are given afterwards, unique).
pub fn arb_container_body(init: bool) -> BoxedStrategy<Map<String, Value>> {
    arb_container_body_inner(init).boxed()
}

/// A command this policy wrapped before (an older script, another URL):
/// what a later pass must bring up to date or, with several app
/// containers, take off again.
pub fn arb_command() -> BoxedStrategy<Value> {
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
pub fn arb_probe_check() -> BoxedStrategy<(&'static str, Value)> {
    prop_oneof![
        3 => ("/[a-z]{0,8}", 1..65535i32)
            .prop_map(|(path, port)| ("httpGet", json!({"path": path, "port": port}))),
        1 => Just(("exec", json!({"command": ["pilot-agent", "wait"]}))),
        1 => (1..65535i32).prop_map(|port| ("tcpSocket", json!({"port": port}))),
    ]
    .boxed()
}

pub fn arb_container_body_inner(init: bool) -> impl Strategy<Value = Map<String, Value>> {
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

pub fn named(name: String, mut body: Map<String, Value>) -> Value {
    // The name first, as kubectl writes it; order does not matter to JSON.
    let mut c = Map::new();
    c.insert("name".into(), Value::from(name));
    c.append(&mut body);
    Value::Object(c)
}

/// Where Istio's proxy is in the spec, and what the status annotation says.
#[derive(Debug, Clone)]
pub struct Spec {
    pub containers: Vec<Value>,
    pub init_containers: Option<Vec<Value>>,
    pub restart_policy: Option<String>,
    /// `hostNetwork`: Istio never injects a pod on the host's network.
    pub host_network: Option<bool>,
    pub unknown: Map<String, Value>,
}

pub fn arb_spec() -> BoxedStrategy<Spec> {
    arb_spec_inner().boxed()
}

pub fn arb_spec_inner() -> impl Strategy<Value = Spec> {
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
        // a proxy injected natively, mostly a native sidecar indeed
        prop::option::weighted(
            0.25,
            (
                prop::sample::select(SIDECARS.to_vec()),
                any::<prop::sample::Index>(),
                arb_container_body(true),
                prop::bool::weighted(0.75),
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
        prop::option::weighted(0.1, prop_oneof![3 => Just(true), 1 => Just(false)]),
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
                host_network,
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
                let native_name = native
                    .as_ref()
                    .map(|(name, _, _, _)| unique(name.to_string()));
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
                if let (Some((_, at, mut body, always)), Some(name)) = (native, native_name) {
                    if always {
                        body.insert("restartPolicy".into(), json!("Always"));
                    }
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
                    host_network,
                    unknown,
                }
            },
        )
}

impl Spec {
    pub fn to_value(&self, null_init: bool) -> Value {
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
        if let Some(host) = self.host_network {
            m.insert("hostNetwork".into(), json!(host));
        }
        with_unknown(m, self.unknown.clone())
    }
}

/// A proxy config: the mapping it means and the text a user wrote.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// `None` when the text is not a YAML mapping (then it must be left alone).
    pub mapping: Option<serde_yaml::Mapping>,
    pub text: String,
}

pub fn arb_config_value() -> BoxedStrategy<serde_json::Value> {
    arb_config_value_inner().boxed()
}

pub fn arb_config_value_inner() -> impl Strategy<Value = serde_json::Value> {
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
            Just("café ☕".to_owned()),
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
pub fn arb_config_key() -> BoxedStrategy<String> {
    arb_config_key_inner().boxed()
}

pub fn arb_config_key_inner() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("holdApplicationUntilProxyStarts".to_owned()),
        Just("concurrency".to_owned()),
        Just("drainDuration".to_owned()),
        Just("proxyMetadata".to_owned()),
        Just("tracing".to_owned()),
        "[a-z][a-zA-Z0-9]{0,12}",
    ]
}

pub fn yaml_flow(v: &Value) -> String {
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

pub fn arb_proxy_config() -> BoxedStrategy<ProxyConfig> {
    arb_proxy_config_inner().boxed()
}

pub fn arb_proxy_config_inner() -> impl Strategy<Value = ProxyConfig> {
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
        // A null key, which sigs.k8s.io/yaml cannot make a JSON key (a
        // repeated key is no error to Istio: the later one wins).
        Just("~: 1\na: 2"),
        Just("a: 1\n b: 2"),
    ]
    .prop_map(|t| ProxyConfig {
        mapping: None,
        text: t.to_owned(),
    });
    prop_oneof![9 => well_formed, 1 => not_a_mapping]
}

pub fn arb_status() -> BoxedStrategy<String> {
    arb_status_inner().boxed()
}

pub fn arb_status_inner() -> impl Strategy<Value = String> {
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

/// What the inserted text of an exitOnJobCompletion record may be, in each
/// form the merge writes.
pub const EXIT_INSERTS: [&str; 5] = [
    "\nexitOnJobCompletion: true",
    "exitOnJobCompletion: true",
    "exitOnJobCompletion: true\n",
    "  exitOnJobCompletion: true\n",
    ", \"exitOnJobCompletion\": true",
];

/// Inserted texts a hand may write (the reader takes any string).
pub const EXIT_INSERTS_BY_HAND: [&str; 6] = [
    "",
    "true",
    "é",
    "\n",
    "a: 1",
    "exitOnJobCompletion: true # é",
];

/// Records this policy does not write, or no longer reads as its own: not
/// JSON, not an object, no or an unknown mode, missing or mistyped
/// members, unknown members, a member the move never adds.
pub const UNREADABLE: [&str; 22] = [
    "",
    r#"{"mode":"quitEndpoint","container":"app","container":"app"}"#,
    r#"{"mode":"quitEndpoint","mode":"quitEndpoint","container":"app"}"#,
    r#"{"mode":null,"container":"app"}"#,
    "quitEndpoint",
    "{",
    r#"["quitEndpoint"]"#,
    r#"{"container":"app"}"#,
    r#"{"mode":"sidecarOff"}"#,
    r#"{"mode":1}"#,
    r#"{"mode":"quitEndpoint"}"#,
    r#"{"mode":"quitEndpoint","container":1}"#,
    r#"{"mode":"quitEndpoint","container":"app","command":["x"]}"#,
    r#"{"mode":"nativeSidecar","annotation":"x"}"#,
    r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","moved":"istio-proxy"}"#,
    r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":-1}"#,
    r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"added":["image"]}"#,
    r#"{"mode":"exitOnJobCompletion","created":true}"#,
    r#"{"mode":"exitOnJobCompletion","inserted":"exitOnJobCompletion: true","created":"yes"}"#,
    r#"{"mode":"nativeSidecar"}"#,
    r#"{"mode":"nativeSidecar","annotation":"x","moved":"istio-proxy","from":1}"#,
    r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","status":"{}"}"#,
];

/// An `istio-job-sidecar/applied` value: each readable form with random
/// members (and once with its members in another order and spaced out, as a
/// hand might write it), or an unreadable one.
pub fn arb_record() -> BoxedStrategy<String> {
    let readable = prop_oneof![
        arb_annotated().prop_map(|a| Applied::NativeAnnotation(a).text()),
        (
            prop::sample::select(SIDECARS.to_vec()),
            0..4usize,
            prop::sample::subsequence(MOVE_ADDS.to_vec(), 0..=3),
            prop::option::of(prop_oneof![Just("Never"), Just("Always")]),
            prop::option::weighted(0.5, arb_status()),
            prop::option::of(arb_annotated()),
            prop::option::weighted(0.2, 0..3usize),
        )
            .prop_map(|(container, from, added, restart_policy, status, annotation, init)| {
                Applied::NativeMove(Move {
                    container: container.to_owned(),
                    from,
                    added: added.into_iter().map(str::to_owned).collect(),
                    restart_policy: restart_policy.map(str::to_owned),
                    status,
                    init_from: init.map(|i| vec![("istio-init".to_owned(), i)]).unwrap_or_default(),
                    annotation,
                })
                .text()
            }),
        (
            prop_oneof![
                3 => prop::sample::select(EXIT_INSERTS.to_vec()),
                1 => prop::sample::select(EXIT_INSERTS_BY_HAND.to_vec()),
            ],
            any::<bool>(),
            prop::option::weighted(0.2, arb_annotated()),
        )
            .prop_map(|(inserted, created, annotation)| Applied::Exit {
                inserted: inserted.to_owned(),
                created,
                annotation,
            }
            .text()),
        (arb_app_name(), prop::option::weighted(0.2, arb_annotated()))
            .prop_map(|(container, annotation)| Applied::Quit { container, annotation }.text()),
        Just(r#"{ "container": "app", "mode": "quitEndpoint" }"#.to_owned()),
        Just(r#"{"mode":"exitOnJobCompletion","inserted":"\nexitOnJobCompletion: true","created":null}"#.to_owned()),
        Just(r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"added":null,"status":null}"#.to_owned()),
        Just(r#"{"from":0,"moved":"istio-proxy","annotation":"sidecar.istio.io/nativeSidecar","mode":"nativeSidecar"}"#.to_owned()),
        Just(r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","moved":null}"#.to_owned()),
    ];
    prop_oneof![
        7 => readable,
        3 => prop::sample::select(UNREADABLE.to_vec()).prop_map(str::to_owned),
    ]
    .boxed()
}

/// The annotation edit of a record: the annotation the policy added, or a
/// user's value it made the exact "true".
pub fn arb_annotated() -> BoxedStrategy<Annotated> {
    prop::option::weighted(0.3, prop::sample::select(NATIVE_VALUES.to_vec()))
        .prop_map(|was| Annotated {
            was: was.map(str::to_owned),
        })
        .boxed()
}

/// Values of `sidecar.istio.io/nativeSidecar` a user writes: the exact
/// ones, and those Istio's releases read differently.
pub const NATIVE_VALUES: [&str; 5] = ["True", "yes", "", "False", "1"];

/// A proxy config holding `exitOnJobCompletion: true` (and text that is not
/// ASCII), with an exitOnJobCompletion record whose inserted text was
/// edited by hand, or is the policy's own.
pub fn arb_hand_edited_exit() -> BoxedStrategy<(&'static str, String)> {
    let configs = [
        "a: é\nexitOnJobCompletion: true",
        "exitOnJobCompletion: true # é",
        "note: café ☕\nexitOnJobCompletion: true\n",
        "{\"a\": \"é\", \"exitOnJobCompletion\": true}",
    ];
    (
        prop::sample::select(configs.to_vec()),
        prop::sample::select([EXIT_INSERTS_BY_HAND, [EXIT_INSERTS[0]; 6]].concat()),
        any::<bool>(),
    )
        .prop_map(|(config, inserted, created)| {
            let record = Applied::Exit {
                inserted: inserted.to_owned(),
                created,
                annotation: None,
            };
            (config, record.text())
        })
        .boxed()
}

/// Whose metadata is generated: what the policy reads there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meta {
    /// A CronJob's (or an unhandled kind's) own: its mode, and keys the
    /// policy does not read there.
    Object,
    /// A Job's own or a CronJob's `spec.jobTemplate.metadata`: its mode and
    /// where `istioctl kube-inject` (and the CronJob controller after it)
    /// writes the injection status.
    Owner,
    /// A pod template, or a Pod's own: every key, the record and the
    /// owner's mode carried down among them.
    Template,
}

/// Annotations of one metadata: every key the policy reads, sometimes, and
/// random others.
pub fn arb_annotations(role: Meta) -> BoxedStrategy<Map<String, Value>> {
    arb_annotations_inner(role).boxed()
}

pub fn arb_annotations_inner(role: Meta) -> impl Strategy<Value = Map<String, Value>> {
    let with_status = role != Meta::Object;
    let template = role == Meta::Template;
    (
        prop::option::weighted(
            if template { 0.25 } else { 0.5 },
            prop_oneof![
                Just("nativeSidecar"),
                Just("exitOnJobCompletion"),
                Just("quitEndpoint"),
                Just("disabled"),
                Just("bogus"),
                Just(""),
            ],
        ),
        prop::option::weighted(
            0.2,
            prop_oneof![6 => Just("true"), 6 => Just("false"), 1 => Just("False")],
        ),
        prop::option::weighted(0.4, arb_proxy_config()),
        prop::option::weighted(
            0.15,
            prop_oneof![
                Just("true"),
                Just("false"),
                Just(""),
                Just("No"),
                Just("y"),
                Just("False"),
                Just("no"),
            ],
        ),
        if with_status {
            prop::option::weighted(0.5, arb_status()).boxed()
        } else {
            Just(None).boxed()
        },
        prop::option::weighted(0.2, Just("app")),
        prop::option::weighted(0.1, prop_oneof![Just("15120"), Just("0"), Just("x")]),
        btree_map(
            prop_oneof!["[a-z./-]{1,20}", Just("istio.io/rev".to_owned())],
            ".{0,16}",
            0..3,
        ),
        // A record of the policy, mostly not matching the object: refusals,
        // and undos that find nothing to take back.
        if template {
            prop::option::weighted(0.12, arb_record()).boxed()
        } else {
            Just(None).boxed()
        },
        if template {
            prop::option::weighted(0.04, arb_hand_edited_exit()).boxed()
        } else {
            Just(None).boxed()
        },
        // The owner's mode as the policy carries it down (or a stale one).
        if template {
            prop::option::weighted(
                0.2,
                prop_oneof![
                    Just("nativeSidecar"),
                    Just("exitOnJobCompletion"),
                    Just("quitEndpoint"),
                    Just("disabled"),
                    Just("bogus"),
                ],
            )
            .boxed()
        } else {
            Just(None).boxed()
        },
    )
        .prop_map(
            |(
                mode,
                native,
                config,
                inject,
                status,
                wrapped,
                port,
                random,
                record,
                by_hand,
                owner,
            )| {
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
                put(APPLIED, record);
                put(OWNER_MODE, owner.map(str::to_owned));
                if let Some((config, record)) = by_hand {
                    put(PROXY_CONFIG, Some(config.to_owned()));
                    put(APPLIED, Some(record));
                }
                m
            },
        )
}

pub fn arb_labels() -> BoxedStrategy<Map<String, Value>> {
    arb_labels_inner().boxed()
}

pub fn arb_labels_inner() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::weighted(
            0.15,
            prop_oneof![
                Just("true"),
                Just("false"),
                Just(""),
                Just("off"),
                Just("False"),
                Just("no"),
            ],
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
pub fn arb_metadata(role: Meta) -> BoxedStrategy<Value> {
    arb_metadata_inner(role).boxed()
}

pub fn arb_metadata_inner(role: Meta) -> impl Strategy<Value = Value> {
    (
        prop::option::of("[a-z][a-z0-9-]{0,10}"),
        0..4u8,
        arb_annotations(role),
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

pub fn arb_template() -> BoxedStrategy<Value> {
    arb_template_inner().boxed()
}

pub fn arb_template_inner() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            1 => Just(None),
            1 => Just(Some(json!({}))),
            6 => arb_metadata(Meta::Template).prop_map(Some),
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
pub struct Case {
    pub kind: Kind,
    pub request: Value,
    pub settings: Option<Value>,
}

pub fn gvk(kind: Kind, other: usize) -> Value {
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

pub fn arb_object(kind: Kind) -> BoxedStrategy<Value> {
    let top = |role| (arb_metadata(role), arb_unknown(), arb_unknown());
    match kind {
        Kind::Pod => (
            arb_metadata(Meta::Template),
            arb_spec(),
            any::<bool>(),
            arb_unknown(),
        )
            .prop_map(|(metadata, spec, null_init, unknown)| {
                let m = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                               "spec": spec.to_value(null_init)});
                with_unknown(m.as_object().unwrap().clone(), unknown)
            })
            .boxed(),
        Kind::Job => (top(Meta::Owner), arb_template(), arb_unknown())
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
            top(Meta::Object),
            arb_template(),
            prop_oneof![
                1 => Just(None),
                1 => Just(Some(json!({}))),
                4 => arb_metadata(Meta::Owner).prop_map(Some)
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
        Kind::Other => (top(Meta::Object), arb_template())
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

pub fn arb_settings() -> BoxedStrategy<Option<Value>> {
    arb_settings_inner().boxed()
}

pub fn arb_settings_inner() -> impl Strategy<Value = Option<Value>> {
    let some = (
        prop::option::weighted(
            0.75,
            prop_oneof![
                Just("nativeSidecar"),
                Just("exitOnJobCompletion"),
                Just("quitEndpoint"),
            ],
        ),
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

pub fn arb_operation() -> BoxedStrategy<&'static str> {
    arb_operation_inner().boxed()
}

pub fn arb_operation_inner() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        6 => Just("CREATE"),
        3 => Just("UPDATE"),
        1 => Just("DELETE"),
        1 => Just("CONNECT"),
    ]
}

pub fn arb_case_of(kinds: Vec<Kind>, ops: BoxedStrategy<&'static str>) -> BoxedStrategy<Case> {
    arb_case_of_inner(kinds, ops, 0.45).boxed()
}

/// Cases whose template never went through an earlier pass of the policy
/// (the laws make their own).
pub fn arb_case_as_written(
    kinds: Vec<Kind>,
    ops: BoxedStrategy<&'static str>,
) -> BoxedStrategy<Case> {
    arb_case_of_inner(kinds, ops, 0.0).boxed()
}

pub fn arb_case_of_inner(
    kinds: Vec<Kind>,
    ops: BoxedStrategy<&'static str>,
    earlier: f64,
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
        // An earlier pass of the policy in some mode, so that the template
        // carries the policy's own edit and its record (what the undo takes
        // back), sometimes edited by hand since (what it must refuse, or
        // what leaves nothing to take back). nativeSidecar three times as
        // often: its move is the rarest edit; quitEndpoint twice, as it
        // wraps only one app with a command; and once on the template before
        // `istioctl kube-inject` wrote the status (`pre_pass_before_injection`).
        // Injected by Istio (classic or native, the status on the template
        // or where kube-inject writes it for an owner), the way its
        // injector writes the proxy.
        prop::option::weighted(0.2, (any::<bool>(), any::<bool>())),
        if earlier > 0.0 {
            prop::option::weighted(
                earlier,
                (
                    prop_oneof![3 => Just(0usize), 1 => Just(1), 2 => Just(2), 1 => Just(3)],
                    prop::option::weighted(
                        0.55,
                        (
                            prop_oneof![1 => Just(0u8), 2 => Just(1), 2 => Just(2), 1 => Just(3), 1 => Just(4)],
                            any::<usize>(),
                        ),
                    ),
                    prop::bool::weighted(0.6),
                ),
            )
            .boxed()
        } else {
            Just(None).boxed()
        },
    )
        .prop_map(
            |((kind, object), op, settings, other, uid, unknown, injected, earlier)| {
                let mut object = object;
                if let (Some((native, on_owner)), true) = (injected, kind != Kind::Other) {
                    let sidecar = settings_of(&settings).sidecar;
                    object = injected_by_istio(kind, &object, &sidecar, native, on_owner);
                }
                if let (Some((mode, edit, other)), true) = (earlier, kind != Kind::Other) {
                    // Mostly another mode than the one the request wants:
                    // its record is the one the pass undoes.
                    let op = op.to_owned();
                    let wanted = plan_of(kind, &op, &object, &settings_of(&settings)).mode();
                    let mode = match (wanted, mode) {
                        (Some(Mode::Native), 0 | 3) if other => 2 - (uid.len() % 2),
                        (Some(Mode::Exit), 1) | (Some(Mode::Quit), 2) if other => 0,
                        _ => mode,
                    };
                    object = match MODES.get(mode).copied().flatten() {
                        Some(mode) => pre_pass(kind, &object, &settings, mode),
                        None => pre_pass_before_injection(kind, &object, &settings),
                    };
                    // As version 0.1.0 marked a wrapped container.
                    if let Some((_, pick)) = edit.filter(|(which, _)| *which == 4) {
                        object = as_legacy(kind, &object, pick).unwrap_or(object);
                    }
                    object = match edit {
                        Some((4, _)) => None,
                        Some((3, pick)) => take_off(kind, &object, pick).map(|(o, _)| o),
                        Some((which, pick)) => tamper(kind, &object, which, pick),
                        None => None,
                    }
                    .unwrap_or(object);
                }
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
            },
        )
}

pub fn arb_case() -> BoxedStrategy<Case> {
    arb_case_inner().boxed()
}

pub fn arb_case_inner() -> impl Strategy<Value = Case> {
    arb_case_of(
        vec![Kind::Job, Kind::CronJob, Kind::Pod, Kind::Pod, Kind::Other],
        arb_operation().boxed(),
    )
}

/// An earlier pass of a generated case: `object` created under `mode`, the
/// case's other settings kept and the workload's own mode annotation
/// ignored, so the template carries that mode's edit and record.
pub fn pre_pass(kind: Kind, object: &Value, settings: &Option<Value>, mode: Mode) -> Value {
    let mut s = match settings {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    s.insert("mode".into(), json!(mode.name()));
    s.insert("workloadOverride".into(), json!(false));
    // A policy that panics is the properties' to report (with a case they
    // can shrink), not the generator's.
    let settings = Value::Object(s);
    std::panic::catch_unwind(|| pass(kind, "CREATE", object, &settings).out)
        .unwrap_or_else(|_| object.clone())
}

/// Istio's proxy of `istioctl kube-inject` output (test_data/fixtures/),
/// classic (in `containers`) or native, and its init container.
fn istio_injected(native: bool) -> &'static (Value, Value) {
    static CLASSIC: std::sync::OnceLock<(Value, Value)> = std::sync::OnceLock::new();
    static NATIVE: std::sync::OnceLock<(Value, Value)> = std::sync::OnceLock::new();
    let read = |text: &str, list: &str| {
        let job: Value = serde_yaml::from_str(text.split("\n---").next().unwrap()).unwrap();
        let find = |list: &str, name: &str| {
            containers(&job, "/spec/template", list)
                .into_iter()
                .find(|c| c["name"] == name)
                .expect("Istio's fixture has its proxy and init container")
        };
        (
            find(list, "istio-proxy"),
            find("initContainers", "istio-init"),
        )
    };
    if native {
        NATIVE.get_or_init(|| {
            let text = include_str!("../../test_data/fixtures/istio-job-kube-injected-native.yaml");
            read(text, "initContainers")
        })
    } else {
        CLASSIC.get_or_init(|| {
            let text =
                include_str!("../../test_data/fixtures/istio-job-kube-injected-classic.yaml");
            read(text, "containers")
        })
    }
}

/// The workload as Istio's injector leaves it, its proxy named `sidecar`:
/// classic (the proxy last in `containers`) or native (right after
/// `istio-init` in `initContainers`), with Istio's status; on the pod
/// template, or (`on_owner`) where `istioctl kube-inject` writes it for a
/// CronJob and the CronJob controller copies it for a Job.
pub fn injected_by_istio(
    kind: Kind,
    object: &Value,
    sidecar: &str,
    native: bool,
    on_owner: bool,
) -> Value {
    let t = template_pointer(kind);
    let mut o = object.clone();
    let (proxy, init) = istio_injected(native);
    let mut proxy = proxy.clone();
    proxy["name"] = json!(sidecar);
    let Some(Value::Object(spec)) = o.pointer_mut(&format!("{t}/spec")) else {
        return o;
    };
    let list = |key: &str| -> Vec<Value> {
        let mut items = spec
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        items.retain(|c| c["name"] != json!(sidecar) && c["name"] != json!("istio-init"));
        items
    };
    let (mut apps, mut inits) = (list("containers"), list("initContainers"));
    inits.insert(0, init.clone());
    if native {
        inits.insert(1, proxy);
    } else {
        apps.push(proxy);
    }
    spec.insert("containers".into(), json!(apps));
    spec.insert("initContainers".into(), json!(inits));
    let status = if native {
        json!({"initContainers": ["istio-init", sidecar], "containers": null,
               "volumes": ["istio-envoy"], "imagePullSecrets": null, "revision": "default"})
    } else {
        json!({"initContainers": ["istio-init"], "containers": [sidecar],
               "volumes": ["istio-envoy"], "imagePullSecrets": null, "revision": "default"})
    };
    let owner = match kind {
        Kind::CronJob if on_owner => JOB_TEMPLATE,
        Kind::Job if on_owner => "",
        _ => t,
    };
    for at in [t, JOB_TEMPLATE, ""] {
        remove_annotation(&mut o, at, STATUS);
    }
    set_annotation(&mut o, owner, STATUS, &status.to_string());
    o
}

/// A quitEndpoint record rewritten as version 0.1.0 marked a wrapped
/// container, `istio-job-sidecar/quit-wrapped: <container>` (`pick` odd:
/// beside the record, which is then the one read); `None` for another
/// record.
pub fn as_legacy(kind: Kind, object: &Value, pick: usize) -> Option<Value> {
    let t = template_pointer(kind);
    let Record::Read {
        applied: Applied::Quit { container, .. },
        legacy: false,
    } = record_of(object, t)
    else {
        return None;
    };
    let mut o = object.clone();
    if pick % 2 == 0 {
        remove_annotation(&mut o, t, APPLIED);
    }
    set_annotation(&mut o, t, QUIT_WRAPPED, &container);
    Some(o)
}

/// An earlier nativeSidecar pass over the template before Istio's
/// injection status was written on it (`istioctl kube-inject` run on a
/// manifest the policy annotated): the pass asked for a native proxy by
/// annotation, and the status is back.
pub fn pre_pass_before_injection(kind: Kind, object: &Value, settings: &Option<Value>) -> Value {
    let owners = [template_pointer(kind), JOB_TEMPLATE, ""];
    let statuses: Vec<(&str, Option<String>)> = owners
        .iter()
        .map(|at| (*at, annotation(object, at, STATUS).map(str::to_owned)))
        .collect();
    let mut bare = object.clone();
    for at in owners {
        remove_annotation(&mut bare, at, STATUS);
    }
    let mut o = pre_pass(kind, &bare, settings, Mode::Native);
    for (at, status) in statuses {
        if let Some(status) = status {
            if o.pointer(at).is_some() {
                set_annotation(&mut o, at, STATUS, &status);
            }
        }
    }
    o
}

/// A hand edit, made after a pass of the policy, that leaves a record the
/// policy must not act on (docs/changing-modes.md): `which` 0 makes the
/// record unreadable (`pick` chooses how); 1 and 2 change the object where
/// the recorded edit is, so that it is there otherwise than the policy
/// left it (the wrapper emptied of its command, the wrapped container
/// there twice, the config edited where the key was or no longer a
/// mapping, the moved proxy no longer a native sidecar, renamed, beside a
/// container of its name, or its status changed), or the record so that it
/// names a text the config does not hold (which makes it unreadable).
/// `None` when there is no readable record to go against, or it records
/// the nativeSidecar annotation (whose undo never refuses: an annotation
/// the user changed is simply theirs).
pub fn tamper(kind: Kind, object: &Value, which: u8, pick: usize) -> Option<Value> {
    let t = template_pointer(kind);
    let mut o = object.clone();
    if which == 0 {
        set_annotation(&mut o, t, APPLIED, UNREADABLE[pick % UNREADABLE.len()]);
        return Some(o);
    }
    let Record::Read { applied, .. } = record_of(&o, t) else {
        return None;
    };
    match applied {
        Applied::Quit { container, .. } if pick % 2 == 0 => {
            let c = container_mut(&mut o, t, "containers", &container)?;
            let mut command = command_of(c)?;
            wrapped_original(&command)?;
            command.truncate(6);
            c["command"] = json!(command);
        }
        Applied::Quit { container, .. } => {
            let twin = container_mut(&mut o, t, "containers", &container)?.clone();
            o.pointer_mut(&format!("{t}/spec/containers"))?
                .as_array_mut()?
                .push(twin);
        }
        Applied::Exit { created, .. } if pick % 3 == 2 => {
            // The record's inserted text edited: no longer in the config.
            let by_hand = Applied::Exit {
                inserted: "é".into(),
                created,
                annotation: None,
            };
            set_annotation(&mut o, t, APPLIED, &by_hand.text());
        }
        Applied::Exit { inserted, .. } if pick % 3 == 0 => {
            let config = annotation(&o, t, PROXY_CONFIG)?.to_owned();
            let at = config.rfind(&inserted)?;
            let edited = inserted.replace(": true", ":  true");
            let config = [&config[..at], &edited, &config[at + inserted.len()..]].concat();
            set_annotation(&mut o, t, PROXY_CONFIG, &config);
        }
        Applied::Exit { .. } => {
            annotation(&o, t, PROXY_CONFIG)?;
            set_annotation(&mut o, t, PROXY_CONFIG, "[no, longer, a, mapping]");
        }
        Applied::NativeMove(m) => match pick % 3 {
            // (On a Pod a status rewritten so is Istio's re-injection.)
            1 if m.status.is_some() && kind != Kind::Pod => {
                let (at, status) = injection_status(kind, &o)?;
                set_annotation(&mut o, at, STATUS, &format!("{status} "));
            }
            0 | 1 => {
                container_mut(&mut o, t, "initContainers", &m.container)?["restartPolicy"] =
                    json!("OnFailure");
            }
            // Renamed while the status still says what the move wrote.
            _ if m.status.is_some() => {
                container_mut(&mut o, t, "initContainers", &m.container)?["name"] =
                    json!(format!("{}-renamed", m.container));
            }
            _ => {
                let twin = container_mut(&mut o, t, "initContainers", &m.container)?.clone();
                o.pointer_mut(&format!("{t}/spec/containers"))?
                    .as_array_mut()?
                    .push(twin);
            }
        },
        Applied::NativeAnnotation(_) => return None,
    }
    Some(o)
}

/// A hand edit, made after a pass of the policy, that takes the recorded
/// edit off altogether, as its owner (or an applier that owns the field)
/// would: the wrapped command replaced or removed, or the record naming a
/// container the pod no longer has; `exitOnJobCompletion` set to `false` or taken
/// out; the moved proxy out of `initContainers` with the status back as
/// it was before the move; the annotation set to the user's `"false"`.
/// Returns the object, and the same object as if the policy had never
/// recorded anything (the record gone, and what the record says it did to
/// the nativeSidecar annotation, which the undo still takes back). `None` when there is
/// no readable record, or no edit of it on the object.
pub fn take_off(kind: Kind, object: &Value, pick: usize) -> Option<(Value, Value)> {
    let t = template_pointer(kind);
    let mut o = object.clone();
    let Record::Read { applied, .. } = record_of(&o, t) else {
        return None;
    };
    // The annotation edit the record made beside its own, which the undo
    // still takes back.
    let mut annotation_back: Option<Annotated> = None;
    if !matches!(applied, Applied::NativeAnnotation(_)) && annotation(&o, t, NATIVE) == Some("true")
    {
        annotation_back = applied.annotation().cloned();
    }
    match applied {
        Applied::Quit { container, .. } if pick % 3 == 0 => {
            let c = container_mut(&mut o, t, "containers", &container)?;
            c["command"] = json!(["/bin/echo", "replaced by hand"]);
        }
        Applied::Quit { container, .. } if pick % 3 == 1 => {
            container_mut(&mut o, t, "containers", &container)?
                .as_object_mut()?
                .remove("command");
        }
        Applied::Quit { container, .. } => {
            container_mut(&mut o, t, "containers", &container)?["name"] =
                json!(format!("{container}-renamed"));
        }
        Applied::Exit {
            inserted, created, ..
        } => {
            let config = annotation(&o, t, PROXY_CONFIG)?.to_owned();
            let at = config.rfind(&inserted)?;
            let rest = [&config[..at], &config[at + inserted.len()..]].concat();
            match pick % 3 {
                0 => {
                    let edited = inserted.replace("true", "false");
                    let config = [&config[..at], &edited, &config[at + inserted.len()..]].concat();
                    set_annotation(&mut o, t, PROXY_CONFIG, &config);
                }
                1 if created && rest.trim().is_empty() => {
                    remove_annotations(&mut o, t, &[PROXY_CONFIG]);
                }
                _ => set_annotation(&mut o, t, PROXY_CONFIG, &rest),
            }
        }
        Applied::NativeMove(m) => {
            let init = o
                .pointer_mut(&format!("{t}/spec/initContainers"))?
                .as_array_mut()?;
            let at = init.iter().position(|c| c["name"] == json!(m.container))?;
            init.remove(at);
            // Written back by an applier that owns the init containers, in
            // their order before the move.
            put_istio_init_back(&mut o, t, &m.init_from);
            if let Some(before) = &m.status {
                let (at, _) = injection_status(kind, &o)?;
                set_annotation(&mut o, at, STATUS, before);
            }
        }
        Applied::NativeAnnotation(_) => {
            annotation(&o, t, NATIVE)?;
            set_annotation(&mut o, t, NATIVE, "false");
        }
    }
    let mut bare = o.clone();
    remove_annotations(&mut bare, t, &RECORD_KEYS);
    if let Some(edit) = annotation_back {
        undo_annotation(&mut bare, t, &edit);
    }
    Some((o, bare))
}
