//! Hostile input at the wasm level: `./policy.wasm` through the
//! same engine Kubewarden uses, on payloads built to break it.
//!
//! For each: the call must return (never a trap or a guest error), with an
//! accept that is either unchanged with a warning that says why, or (for
//! inputs that are odd but well-formed, like a 3 MiB object) the ordinary
//! answer. `validate_settings` must answer `valid: false` with a message for
//! every wrongly typed setting, and `validate` must then accept unchanged
//! with a warning. Elapsed time and, for the big inputs, the guest's linear
//! memory (read on a fresh instance of the runner's metered engine)
//! are printed; there are no timing assertions.
//!
//! The record `istio-job-sidecar/applied` gets its own (the last
//! four tests): 1 MiB records of each form, 10,000-deep JSON, an
//! exitOnJobCompletion record whose inserted text occurs up to 100,000
//! times in the config, a move record whose `from` is no 32-bit index, a
//! quitEndpoint record naming a container 10,000 containers are named; each
//! under every other mode and `disabled`, with the warning that says which
//! record was left as it is.
//!
//! `cargo test --profile host-test -p policy-runner --test hostile -- --nocapture`
//! (after `make policy.wasm`) prints the table.

mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use policy_runner::metered::{MeteredModule, UNBOUNDED_FUEL};
use policy_runner::{ModuleAnswer, Policy, ValidationResponse};
use policy_testkit::names::{APPLIED, MODE, PROXY_CONFIG, STATUS};
use serde_json::{json, Value};

/// `policy.wasm` (checked fresh by `common`), as bytes for extra instances.
fn module_bytes() -> Vec<u8> {
    std::fs::read(common::built_module_path()).expect("policy.wasm reads")
}

fn load() -> Policy {
    common::built_module()
}

/// What one hostile call came to.
struct Outcome {
    response: ValidationResponse,
    elapsed: Duration,
    /// Guest linear memory after the call (fresh instance), when measured.
    memory: Option<usize>,
    /// The answer is deeper than a host's `serde_json::Value` reads.
    too_deep: bool,
}

impl Outcome {
    fn warnings(&self) -> Vec<String> {
        self.response.warnings.clone().unwrap_or_default()
    }
    fn mutated(&self) -> bool {
        self.response.mutated_object.is_some()
    }
    fn summary(&self) -> String {
        let verdict = if self.mutated() {
            "accept, mutated"
        } else {
            "accept, unchanged"
        };
        let warning = self
            .warnings()
            .first()
            .map(|w| format!("; warning: {w}"))
            .unwrap_or_default();
        let deep = if self.too_deep {
            " (answer deeper than serde_json::Value's 128 levels)"
        } else {
            ""
        };
        format!("{verdict}{deep}{warning}")
    }
}

/// The answer, read without building the mutated object: a host's
/// `serde_json::Value` stops at 128 levels, the guest's own reader does not
/// build what it skips, so an answer may be deeper than a Value can be.
#[derive(serde::Deserialize)]
struct Lenient {
    accepted: bool,
    #[serde(default)]
    mutated_object: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
}

/// `validate` with raw bytes; a trap or guest error fails the test with the
/// engine's message.
fn call(policy: &Policy, name: &str, payload: &[u8]) -> Outcome {
    let start = Instant::now();
    let raw = policy
        .call("validate", payload)
        .unwrap_or_else(|e| panic!("{name}: the call failed (trap or guest error): {e}"));
    let elapsed = start.elapsed();
    let (response, too_deep) = match serde_json::from_slice::<ValidationResponse>(&raw) {
        Ok(response) => (response, false),
        Err(e) => {
            let lenient: Lenient = serde_json::from_slice(&raw).unwrap_or_else(|e2| {
                panic!("{name}: the answer is not a ValidationResponse: {e}; {e2}")
            });
            let response = ValidationResponse {
                accepted: lenient.accepted,
                message: None,
                code: None,
                // Present, but not readable as a Value: kept as a marker.
                mutated_object: lenient.mutated_object.map(|_| Value::Null),
                audit_annotations: None,
                warnings: lenient.warnings,
            };
            (response, true)
        }
    };
    let warnings = response.warnings.as_deref().unwrap_or_default();
    policy_testkit::check_verdict(response.accepted, warnings)
        .unwrap_or_else(|e| panic!("{name}: {e} ({:?})", response.message));
    Outcome {
        response,
        elapsed,
        memory: None,
        too_deep,
    }
}

/// `policy.wasm` compiled once on the metered engine, whose store it owns
/// and so reads the guest's linear memory; fuel unbounded.
fn metered_module() -> &'static MeteredModule {
    static MODULE: OnceLock<MeteredModule> = OnceLock::new();
    MODULE.get_or_init(|| MeteredModule::new(&module_bytes(), UNBOUNDED_FUEL).expect("compiles"))
}

/// As `call`, and also on a fresh metered instance to read the guest's
/// linear memory after the call (it only grows, so it is the peak).
fn call_measured(policy: &Policy, name: &str, payload: &[u8]) -> Outcome {
    let mut outcome = call(policy, name, payload);
    let fresh = Policy::metered(metered_module()).expect("instantiates");
    let _ = call(&fresh, name, payload);
    let cost = fresh.last_cost();
    outcome.memory = cost.map(|c| c.memory_bytes() as usize);
    report_memory(
        name,
        cost.map(|c| c.memory_before_bytes() as usize),
        outcome.memory,
    );
    outcome
}

fn report_memory(name: &str, before: Option<usize>, after: Option<usize>) {
    let mib =
        |b: Option<usize>| b.map_or("?".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0));
    eprintln!(
        "  {name}: guest memory {} at instantiation, {} after the call",
        mib(before),
        mib(after)
    );
}

fn report(name: &str, size: usize, o: &Outcome) {
    let memory = o
        .memory
        .map(|m| format!(", memory {:.1} MiB", m as f64 / 1048576.0))
        .unwrap_or_default();
    eprintln!(
        "| {name} | {:.1} KiB | {:.2} ms{memory} | {} |",
        size as f64 / 1024.0,
        o.elapsed.as_secs_f64() * 1000.0,
        o.summary()
    );
}

/// As policy-server sends it (members in alphabetical order).
fn payload(request: &Value, settings: &Value) -> Vec<u8> {
    policy_testkit::payload(request, Some(settings), policy_testkit::Order::PolicyServer)
}

fn request(kind: &str, object: Value) -> Value {
    let (group, version) = match kind {
        "Pod" => ("", "v1"),
        _ => ("batch", "v1"),
    };
    json!({
        "uid": "hostile",
        "kind": {"group": group, "version": version, "kind": kind},
        "operation": "CREATE",
        "object": object,
    })
}

const CLASSIC_STATUS: &str = r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"default"}"#;

/// A kube-injected (classic) Job: every mode has something to do.
fn job(containers: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "hostile"},
        "spec": {"template": {
            "metadata": {"annotations": {STATUS: CLASSIC_STATUS}},
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [{"name": "istio-init", "image": "proxyv2"}],
                "containers": containers,
            }
        }}
    })
}

fn app_and_proxy() -> Value {
    json!([
        {"name": "app", "image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]},
        {"name": "istio-proxy", "image": "proxyv2", "args": ["proxy", "sidecar"]}
    ])
}

const MODES: [&str; 3] = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"];

fn settings(mode: &str) -> Value {
    json!({"mode": mode})
}

/// An accept, unchanged, with a warning containing `says`.
fn assert_warned(name: &str, o: &Outcome, says: &str) {
    assert!(
        !o.mutated(),
        "{name}: mutated: {:?}",
        o.response.mutated_object
    );
    assert!(
        o.warnings().iter().any(|w| w.contains(says)),
        "{name}: expected a warning with {says:?}, got {:?}",
        o.warnings()
    );
}

/// The mutated object, sent again, is not mutated (the patch Kubewarden
/// would compute applies, and the result is a fixed point).
fn assert_fixed_point(policy: &Policy, name: &str, request: &Value, settings: &Value, o: &Outcome) {
    let evaluation = ModuleAnswer::new(request, o.response.clone(), Vec::new());
    let patched = evaluation
        .patched_object()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut again = request.clone();
    again["object"] = patched;
    let second = call(policy, name, &payload(&again, settings));
    assert!(!second.mutated(), "{name}: a second run mutated it again");
}

#[test]
fn truncated_and_non_utf8_payloads() {
    let policy = load();
    let whole = payload(
        &request("Job", job(app_and_proxy())),
        &settings("nativeSidecar"),
    );
    for cut in [
        1,
        2,
        whole.len() / 3,
        whole.len() / 2,
        whole.len() - 2,
        whole.len() - 1,
    ] {
        let name = format!("truncated at {cut} of {} bytes", whole.len());
        let o = call(&policy, &name, &whole[..cut]);
        report(&name, cut, &o);
        assert_warned(&name, &o, "request not understood");
    }
    let o = call(&policy, "empty payload", b"");
    report("empty payload", 0, &o);
    assert_warned("empty payload", &o, "request not understood");

    // 0xff inside a string value, and a lone continuation byte in a key.
    let mut bad = whole.clone();
    let at = bad.windows(4).position(|w| w == b"app\"").unwrap();
    bad[at] = 0xff;
    let o = call(&policy, "non-UTF-8 byte in a container name", &bad);
    report("non-UTF-8 byte in a container name", bad.len(), &o);
    assert_warned("non-UTF-8", &o, "not UTF-8");
    let o = call(&policy, "non-UTF-8 only", &[0x80, 0xfe, 0xff, 0x00]);
    assert_warned("non-UTF-8 only", &o, "not UTF-8");
    // Not JSON at all, JSON of the wrong type, a request of the wrong type.
    for (name, bytes) in [
        ("YAML instead of JSON", &b"request:\n  kind: Job\n"[..]),
        ("a JSON array", b"[1,2,3]"),
        ("a JSON string", b"\"request\""),
        ("request is a string", br#"{"request":"Job"}"#),
        ("request is an array", br#"{"request":[{"kind":"Job"}]}"#),
    ] {
        let o = call(&policy, name, bytes);
        report(name, bytes.len(), &o);
        assert_warned(name, &o, "request not understood");
    }
    // Nothing handled to look at: unchanged.
    for (name, bytes) in [
        ("no request", &br#"{"settings":{}}"#[..]),
        ("empty object", b"{}"),
        (
            "request without kind",
            br#"{"request":{"operation":"CREATE","object":{}}}"#,
        ),
    ] {
        let o = call(&policy, name, bytes);
        report(name, bytes.len(), &o);
        assert!(!o.mutated(), "{name}: mutated");
    }
}

#[test]
fn wrongly_shaped_objects() {
    let policy = load();
    let s = settings("nativeSidecar");
    // `object` of the wrong type.
    for (what, object) in [
        ("a string", json!("Job")),
        ("a number", json!(42)),
        ("an array", json!([job(app_and_proxy())])),
        ("a boolean", json!(true)),
    ] {
        let name = format!("object is {what}");
        let o = call(&policy, &name, &payload(&request("Job", object), &s));
        report(&name, 0, &o);
        assert_warned(&name, &o, "unexpected shape");
    }
    let o = call(
        &policy,
        "object is null",
        &payload(&request("Job", Value::Null), &s),
    );
    report("object is null", 0, &o);
    assert!(!o.mutated(), "null object mutated");

    // containers that are not a list.
    for (what, containers) in [
        ("an object", json!({"name": "app"})),
        ("a string", json!("app")),
        ("a number", json!(1)),
        ("a list of strings", json!(["app", "istio-proxy"])),
    ] {
        for mode in MODES {
            let name = format!("containers is {what} ({mode})");
            let o = call(
                &policy,
                &name,
                &payload(&request("Job", job(containers.clone())), &settings(mode)),
            );
            report(&name, 0, &o);
            assert_warned(&name, &o, "unexpected shape");
        }
    }
    // metadata, annotations, template of the wrong type.
    let mut broken = job(app_and_proxy());
    broken["spec"]["template"]["metadata"]["annotations"] = json!([STATUS]);
    let o = call(
        &policy,
        "annotations is a list",
        &payload(&request("Job", broken), &s),
    );
    report("annotations is a list", 0, &o);
    assert_warned("annotations is a list", &o, "unexpected shape");
    let mut broken = job(app_and_proxy());
    broken["spec"]["template"] = json!("template");
    let o = call(
        &policy,
        "template is a string",
        &payload(&request("Job", broken), &s),
    );
    report("template is a string", 0, &o);
    assert_warned("template is a string", &o, "unexpected shape");
    let mut broken = job(app_and_proxy());
    broken["spec"]["template"]["metadata"]["annotations"][STATUS] = json!(7);
    let o = call(
        &policy,
        "status annotation is a number",
        &payload(&request("Job", broken), &s),
    );
    report("status annotation is a number", 0, &o);
    assert_warned("status annotation is a number", &o, "unexpected shape");
}

#[test]
fn containers_without_names() {
    let policy = load();
    for mode in MODES {
        // A nameless app container beside the proxy; a nameless proxy.
        for (what, containers) in [
            (
                "nameless app",
                json!([{"image": "busybox", "command": ["run"]}, {"name": "istio-proxy", "image": "p"}]),
            ),
            (
                "all nameless",
                json!([{"image": "busybox", "command": ["run"]}, {"image": "p"}]),
            ),
            (
                "name null",
                json!([{"name": null, "command": ["run"]}, {"name": "istio-proxy"}]),
            ),
            ("empty container objects", json!([{}, {}])),
        ] {
            let name = format!("{what} ({mode})");
            let r = request("Job", job(containers));
            let s = settings(mode);
            let o = call(&policy, &name, &payload(&r, &s));
            report(&name, 0, &o);
            if o.mutated() {
                assert_fixed_point(&policy, &name, &r, &s, &o);
            }
        }
    }
}

fn nested_arrays(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 2);
    s.extend(std::iter::repeat_n('[', depth));
    s.extend(std::iter::repeat_n(']', depth));
    s
}

#[test]
fn deep_nesting() {
    let policy = load();
    let base = serde_json::to_string(&request("Job", job(app_and_proxy()))).unwrap();
    for depth in [100, 127, 128, 129, 1000, 100_000] {
        let deep = nested_arrays(depth);
        // In a field the policy never reads (a container's unknown field)...
        let unread = base.replacen(
            r#""image":"busybox""#,
            &format!(r#""image":"busybox","x-deep":{deep}"#),
            1,
        );
        // ...and inside the metadata the policy does read.
        let in_meta = base.replacen(
            r#""metadata":{"name":"hostile"}"#,
            &format!(r#""metadata":{{"name":"hostile","x-deep":{deep}}}"#),
            1,
        );
        let in_annotations_owner = base.replacen(
            r#""metadata":{"annotations":{"#,
            &format!(r#""metadata":{{"x-deep":{deep},"annotations":{{"#),
            1,
        );
        for (where_, request_text) in [
            ("an unread container field", unread),
            ("object metadata", in_meta),
            ("the template's metadata", in_annotations_owner),
        ] {
            for mode in MODES {
                let name = format!("{depth} nested arrays in {where_} ({mode})");
                let p = format!(r#"{{"request":{request_text},"settings":{{"mode":"{mode}"}}}}"#);
                let o = if depth == 100_000 && mode == "nativeSidecar" {
                    call_measured(&policy, &name, p.as_bytes())
                } else {
                    call(&policy, &name, p.as_bytes())
                };
                report(&name, p.len(), &o);
                // A host reading the request as a serde_json::Value (as
                // policy-server does) refuses it past 128 levels before the
                // guest is called; the guest must cope either way.
                let host_reads_it = serde_json::from_slice::<Value>(p.as_bytes()).is_ok();
                if host_reads_it && o.mutated() && !o.too_deep {
                    let request: Value =
                        serde_json::from_slice::<Value>(p.as_bytes()).unwrap()["request"].clone();
                    assert_fixed_point(&policy, &name, &request, &settings(mode), &o);
                }
                if !host_reads_it {
                    eprintln!("  (a serde_json::Value host refuses this request itself)");
                }
            }
        }
    }
}

#[test]
fn duplicate_keys() {
    let policy = load();
    let s = r#"{"mode":"nativeSidecar"}"#;
    let status = serde_json::to_string(CLASSIC_STATUS).unwrap();
    let cases = [
        (
            "duplicate containers (the last, nameless, wins)",
            format!(
                r#"{{"kind":"Job","metadata":{{"annotations":{{"sidecar.istio.io/status":{status}}}}},"spec":{{"template":{{"metadata":{{"annotations":{{"sidecar.istio.io/status":{status}}}}},"spec":{{"restartPolicy":"Never","containers":[{{"name":"app"}},{{"name":"istio-proxy"}}],"containers":[{{"image":"x"}}]}}}}}}}}"#
            ),
        ),
        (
            "duplicate annotations maps",
            format!(
                r#"{{"kind":"Job","spec":{{"template":{{"metadata":{{"annotations":{{"sidecar.istio.io/status":{status}}},"annotations":{{"a":"b"}}}},"spec":{{"restartPolicy":"Never","containers":[{{"name":"app","command":["x"]}},{{"name":"istio-proxy"}}]}}}}}}}}"#
            ),
        ),
        (
            "duplicate status annotation",
            format!(
                r#"{{"kind":"Job","spec":{{"template":{{"metadata":{{"annotations":{{"sidecar.istio.io/status":"{{}}","sidecar.istio.io/status":{status}}}}},"spec":{{"restartPolicy":"Never","containers":[{{"name":"app","command":["x"]}},{{"name":"istio-proxy"}}]}}}}}}}}"#
            ),
        ),
        (
            "duplicate spec",
            format!(
                r#"{{"kind":"Job","spec":{{"template":{{"spec":{{"restartPolicy":"Never","containers":[{{"name":"app"}}]}}}}}},"spec":{{"template":{{"metadata":{{"annotations":{{"sidecar.istio.io/status":{status}}}}},"spec":{{"restartPolicy":"Never","containers":[{{"name":"app","command":["x"]}},{{"name":"istio-proxy"}}]}}}}}}}}"#
            ),
        ),
        (
            "duplicate container name key",
            r#"{"kind":"Job","spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"istio-proxy","name":"app","command":["x"]}]}}}}"#.to_owned(),
        ),
        (
            "duplicate kind and operation in the request",
            String::new(),
        ),
    ];
    for (name, object) in cases {
        let p = if object.is_empty() {
            // The last kind (Deployment) and operation (DELETE) win: unchanged.
            let job = serde_json::to_string(&job(app_and_proxy())).unwrap();
            format!(
                r#"{{"request":{{"kind":{{"group":"batch","kind":"Job"}},"kind":{{"group":"apps","kind":"Deployment"}},"operation":"CREATE","operation":"DELETE","object":{job}}},"settings":{s}}}"#
            )
        } else {
            format!(
                r#"{{"request":{{"kind":{{"group":"batch","version":"v1","kind":"Job"}},"operation":"CREATE","object":{object}}},"settings":{s}}}"#
            )
        };
        let o = call(&policy, name, p.as_bytes());
        report(name, p.len(), &o);
        if o.mutated() {
            // Whatever it did, its own output is a fixed point.
            let request: Value = serde_json::from_str::<Value>(&p).unwrap()["request"].clone();
            assert_fixed_point(
                &policy,
                name,
                &request,
                &json!({"mode": "nativeSidecar"}),
                &o,
            );
        }
    }
}

#[test]
fn big_objects() {
    let policy = load();
    // A 3 MiB Job: a big unknown field and many env vars in the app container.
    let mut big = job(app_and_proxy());
    let env: Vec<Value> = (0..20_000)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": "x".repeat(64)}))
        .collect();
    big["spec"]["template"]["spec"]["containers"][0]["env"] = json!(env);
    big["spec"]["x-blob"] = json!("y".repeat(1536 * 1024));
    for mode in MODES {
        let r = request("Job", big.clone());
        let s = settings(mode);
        let p = payload(&r, &s);
        assert!(p.len() >= 3 * 1024 * 1024, "{} bytes", p.len());
        let name = format!("3 MiB Job ({mode})");
        let o = call_measured(&policy, &name, &p);
        report(&name, p.len(), &o);
        assert!(o.mutated(), "{name}: expected the ordinary mutation");
        assert_fixed_point(&policy, &name, &r, &s, &o);
    }

    // 10,000 containers, the proxy last.
    let mut containers: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("app-{i}"), "image": "busybox", "command": ["run"]}))
        .collect();
    containers.push(json!({"name": "istio-proxy", "image": "proxyv2"}));
    for mode in MODES {
        let r = request("Job", job(json!(containers)));
        let s = settings(mode);
        let p = payload(&r, &s);
        let name = format!("10,000 containers ({mode})");
        let o = call_measured(&policy, &name, &p);
        report(&name, p.len(), &o);
        if o.mutated() {
            assert_fixed_point(&policy, &name, &r, &s, &o);
        }
    }

    // A 1 MiB annotation value: an unrelated one, the proxy config (YAML,
    // parsed by exitOnJobCompletion) and the status (JSON, read by
    // nativeSidecar).
    let mib = 1024 * 1024;
    let long_yaml: String = (0..mib / 32)
        .map(|i| format!("key{i:08}: value-{i:012}\n"))
        .collect();
    for (what, key, value) in [
        ("unrelated annotation", "example.com/blob", "z".repeat(mib)),
        (PROXY_CONFIG, PROXY_CONFIG, long_yaml),
        (
            STATUS,
            STATUS,
            format!(
                r#"{{"initContainers":["istio-init"],"containers":["istio-proxy"],"x":"{}"}}"#,
                "s".repeat(mib)
            ),
        ),
        (MODE, MODE, "m".repeat(mib)),
    ] {
        for mode in MODES {
            let mut object = job(app_and_proxy());
            object["spec"]["template"]["metadata"]["annotations"][key] = json!(value);
            let r = request("Job", object);
            let s = settings(mode);
            let p = payload(&r, &s);
            let name = format!("1 MiB {what} ({mode})");
            let o = call_measured(&policy, &name, &p);
            report(&name, p.len(), &o);
            if o.mutated() {
                assert_fixed_point(&policy, &name, &r, &s, &o);
            }
        }
    }
}

#[test]
fn settings_of_every_wrong_type() {
    let policy = load();
    let wrong_values = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1.5),
        json!("x"),
        json!(""),
        json!([]),
        json!(["nativeSidecar"]),
        json!({}),
        json!({"mode": "nativeSidecar"}),
    ];
    let r = request("Job", job(app_and_proxy()));
    let mut tried = 0;
    for key in [
        "mode",
        "sidecarContainerName",
        "workloadOverride",
        "quitUrl",
    ] {
        for v in &wrong_values {
            let valid_for_key = match key {
                "workloadOverride" => v.is_boolean(),
                "sidecarContainerName" => v == "x",
                _ => false,
            };
            if valid_for_key {
                continue;
            }
            let s = json!({ key: v });
            let answer = policy
                .validate_settings(&s)
                .expect("validate_settings answers");
            assert!(!answer.valid, "{s} accepted as valid");
            let message = answer.message.unwrap_or_default();
            assert!(
                message.contains(key),
                "{s}: message does not name {key}: {message}"
            );
            let name = format!("settings {s}");
            let o = call(&policy, &name, &payload(&r, &s));
            assert_warned(&name, &o, "invalid settings");
            tried += 1;
        }
    }
    // The settings themselves of every wrong type.
    for s in [
        json!(true),
        json!(1),
        json!("nativeSidecar"),
        json!(["mode"]),
        json!({"unknown": 1}),
    ] {
        let answer = policy
            .validate_settings(&s)
            .expect("validate_settings answers");
        assert!(!answer.valid && answer.message.is_some(), "{s}");
        let name = format!("settings {s}");
        let o = call(&policy, &name, &payload(&r, &s));
        assert_warned(&name, &o, "invalid settings");
        tried += 1;
    }
    // validate_settings on bytes that are not JSON, or not UTF-8.
    for bytes in [
        &b""[..],
        b"{",
        b"\xff\xfe",
        b"mode: nativeSidecar",
        &[b'['; 100_000],
    ] {
        let raw = policy
            .call("validate_settings", bytes)
            .expect("validate_settings never traps");
        let answer: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(
            answer["valid"],
            json!(false),
            "{}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(20)])
        );
        assert!(answer["message"].is_string());
        tried += 1;
    }
    eprintln!("| settings of every wrong type | {tried} payloads | - | invalid with a message; validate: unchanged + warning |");
}

// ------------------------------------------------------------------ records

/// Every mode, and `disabled` (said by the workload's annotation).
const WANTED: [&str; 4] = [
    "nativeSidecar",
    "exitOnJobCompletion",
    "quitEndpoint",
    "disabled",
];

/// The request and settings that ask for `wanted` on `object` (a Job):
/// the cluster's mode, or `disabled` through the pod template's
/// `istio-job-sidecar/mode`.
fn asking(wanted: &str, mut object: Value) -> (Value, Value) {
    let s = if wanted == "disabled" {
        object["spec"]["template"]["metadata"]["annotations"][MODE] = json!("disabled");
        settings("nativeSidecar")
    } else {
        settings(wanted)
    };
    (request("Job", object), s)
}

/// A Job whose pod template also carries these annotations.
fn job_with(containers: Value, annotations: &[(&str, Value)]) -> Value {
    let mut object = job(containers);
    for (key, value) in annotations {
        object["spec"]["template"]["metadata"]["annotations"][*key] = value.clone();
    }
    object
}

/// Some warning contains `says` (mutated or not).
fn assert_warning(name: &str, o: &Outcome, says: &str) {
    assert!(
        o.warnings().iter().any(|w| w.contains(says)),
        "{name}: expected a warning with {says:?}, got {:?}",
        o.warnings()
    );
}

/// Hostile `istio-job-sidecar/applied` records: values of each form as
/// large as the annotations' limit leaves room for (250 KiB), one past it
/// (2 MiB, never read), and 10,000-deep JSON, as text and as the
/// annotation's value itself.
#[test]
fn hostile_records() {
    let policy = load();
    let big = 250 * 1024;
    let unreadable: &str = &format!("{APPLIED} unreadable");
    let kept: &str = &format!("{APPLIED}: ");
    let too_large: &str = &format!("{APPLIED} too large: ");
    // The record's edit is not on the object at all: the record goes,
    // without a warning.
    let gone = "";
    let exit_config = json!("a: 1\nexitOnJobCompletion: true");
    // What, the record, more annotations, the warning under another mode.
    type Case<'c> = (&'c str, String, Vec<(&'c str, Value)>, &'c str);
    let cases: Vec<Case> = vec![
        (
            "250 KiB record, not JSON",
            "x".repeat(big),
            vec![],
            unreadable,
        ),
        (
            "250 KiB record: quit, a 250 KiB container name",
            json!({"mode": "quitEndpoint", "container": "c".repeat(big)}).to_string(),
            vec![],
            gone,
        ),
        (
            "250 KiB record: exit, 250 KiB inserted text",
            json!({"mode": "exitOnJobCompletion",
                   "inserted": format!("\n{}exitOnJobCompletion: true", "y".repeat(big))})
            .to_string(),
            vec![(PROXY_CONFIG, exit_config.clone())],
            kept,
        ),
        (
            "250 KiB record: move, 250 KiB status",
            json!({"mode": "nativeSidecar", "moved": "istio-proxy", "from": 1,
                   "added": ["restartPolicy"], "status": "s".repeat(big)})
            .to_string(),
            vec![],
            gone,
        ),
        (
            "250 KiB record: an unknown member of 250 KiB",
            json!({"mode": "quitEndpoint", "container": "app", "x": "u".repeat(big)}).to_string(),
            vec![],
            unreadable,
        ),
        (
            "2 MiB record, past the annotations' limit",
            json!({"mode": "quitEndpoint", "container": "c".repeat(2 << 20)}).to_string(),
            vec![],
            too_large,
        ),
        (
            "record of 10,000 nested arrays",
            nested_arrays(10_000),
            vec![],
            unreadable,
        ),
        (
            "quit record with 10,000 nested arrays in a member",
            format!(
                r#"{{"mode":"quitEndpoint","container":"app","x":{}}}"#,
                nested_arrays(10_000)
            ),
            vec![],
            unreadable,
        ),
        (
            "quit record with 100 nested arrays in a member",
            format!(
                r#"{{"mode":"quitEndpoint","container":"app","x":{}}}"#,
                nested_arrays(100)
            ),
            vec![],
            unreadable,
        ),
    ];
    for (what, record, more, warning) in &cases {
        for wanted in WANTED {
            let mut annotations = vec![(APPLIED, json!(record))];
            annotations.extend(more.iter().cloned());
            let (r, s) = asking(wanted, job_with(app_and_proxy(), &annotations));
            let name = format!("{what} ({wanted})");
            let p = payload(&r, &s);
            let o = if record.len() >= big {
                call_measured(&policy, &name, &p)
            } else {
                call(&policy, &name, &p)
            };
            report(&name, p.len(), &o);
            // Under its own mode a readable record undoes nothing.
            let own_mode = warning != &unreadable
                && warning != &too_large
                && record.contains(&format!(r#""mode":"{wanted}""#));
            if warning == &gone && !own_mode {
                // The record goes without a word of its own; exitOnJobCompletion
                // still says, of the key it writes, that upstream Istio ignores it.
                let about_the_record: Vec<String> = o
                    .warnings()
                    .into_iter()
                    .filter(|w| {
                        !(wanted == "exitOnJobCompletion"
                            && w.contains("exitOnJobCompletion: upstream Istio ignores it"))
                    })
                    .collect();
                assert!(about_the_record.is_empty(), "{name}: {about_the_record:?}");
                assert!(o.mutated(), "{name}: the record stayed");
            } else if !own_mode {
                assert_warning(&name, &o, warning);
            }
            if o.mutated() {
                assert_fixed_point(&policy, &name, &r, &s, &o);
            }
        }
    }
    // The annotation's value itself 10,000 nested arrays (not a string):
    // written as text, deeper than a serde_json::Value is built.
    let r = request(
        "Job",
        job_with(app_and_proxy(), &[(APPLIED, json!("DEEP"))]),
    );
    for wanted in MODES {
        let text = String::from_utf8(payload(&r, &settings(wanted))).unwrap();
        let p = text.replacen(r#""DEEP""#, &nested_arrays(10_000), 1);
        let name = format!("record annotation is 10,000 nested arrays ({wanted})");
        let o = call(&policy, &name, p.as_bytes());
        report(&name, p.len(), &o);
        assert_warned(&name, &o, "unexpected shape");
    }
}

/// An exitOnJobCompletion record whose inserted text occurs tens of
/// thousands of times in the config, under another mode. Undo first tries
/// the last occurrence with the fast merge (no YAML parse: the text without
/// it must merge back into exactly the config, as the policy's own edit
/// does), then the YAML parser at 2 places at most, so the time is that of
/// at most 3 parses, whatever the count. Every occurrence but the real key
/// is inside a quoted value. The largest config an object can store
/// (annotations total 256 KiB) holds 7,057 lines of one each, or 10,043 in
/// one quoted value; past that limit (100,000 occurrences take 2.5 MiB, a
/// body still under the API server's 3 MiB) the config is not read and the
/// edit is kept. For comparison, a config at the limit as
/// exitOnJobCompletion itself left it, undone under the other modes.
#[test]
fn record_whose_inserted_text_repeats() {
    let policy = load();
    let inserted = "exitOnJobCompletion: true";
    let record = json!({"mode": "exitOnJobCompletion", "inserted": inserted}).to_string();
    // `k000001: "exitOnJobCompletion: true"`, 37 bytes a line.
    let lines = |n: usize| -> String {
        (0..n)
            .map(|i| format!("k{i:06}: \"{inserted}\"\n"))
            .collect()
    };
    // `k: "exitOnJobCompletion: true exitOnJobCompletion: true ..."`.
    let one_value = |n: usize| -> String {
        let mut v = String::with_capacity(n * 26 + 8);
        v.push_str("k: \"");
        for _ in 0..n {
            v.push_str(inserted);
            v.push(' ');
        }
        v.push_str("\"\n");
        v
    };
    // What fits beside the annotations' keys under their 256 KiB.
    let at_limit = 255 * 1024;
    const EDITED: Option<&str> = Some("edit kept: proxy.istio.io/config edited where");
    const TOO_LARGE: Option<&str> = Some("proxy.istio.io/config too large: ");
    let mut configs = Vec::new();
    for (body, n, what, first_kept, last_kept) in [
        (
            lines(at_limit / 37),
            at_limit / 37,
            "255 KiB config of lines",
            EDITED,
            None,
        ),
        (
            one_value(at_limit / 26),
            at_limit / 26,
            "255 KiB config, one value",
            EDITED,
            None,
        ),
        (
            one_value(100_000),
            100_000,
            "2.5 MiB config, one value",
            TOO_LARGE,
            TOO_LARGE,
        ),
    ] {
        // The real key first: the last 4 occurrences are all in values, so
        // the undo gives up ("edited where the key was added").
        let first = format!("{inserted}\n{body}");
        // The real key last: the first place tried is the right one.
        let last = format!("{body}{inserted}");
        let what = |where_| format!("{what}, {} occurrences, the key {where_}", n + 1);
        configs.push((what("first"), first, first_kept));
        configs.push((what("last"), last, last_kept));
    }
    // For comparison: plain lines, one occurrence (the key last).
    let plain: String = (0..at_limit / 37)
        .map(|i| format!("k{i:06}: value-{i:018}\n"))
        .collect();
    configs.push((
        "255 KiB config of plain lines, 1 occurrence, the key last".into(),
        format!("{plain}{inserted}"),
        None,
    ));
    for (what, config, kept) in configs {
        for wanted in ["nativeSidecar", "quitEndpoint", "disabled"] {
            let object = job_with(
                app_and_proxy(),
                &[(APPLIED, json!(record)), (PROXY_CONFIG, json!(config))],
            );
            let (r, s) = asking(wanted, object);
            let p = payload(&r, &s);
            let name = format!("{what} ({wanted})");
            let o = call_measured(&policy, &name, &p);
            report(&name, p.len(), &o);
            match kept {
                None => {
                    assert!(o.mutated(), "{name}: not undone");
                    assert!(
                        !o.warnings().iter().any(|w| w.contains(APPLIED)),
                        "{name}: {:?}",
                        o.warnings()
                    );
                }
                Some(why) => assert_warning(&name, &o, why),
            }
            if o.mutated() {
                assert_fixed_point(&policy, &name, &r, &s, &o);
            }
        }
    }
    // A config at the limit as exitOnJobCompletion itself left it: the
    // undo's fast path.
    let merged = moved_by(
        &policy,
        "exitOnJobCompletion",
        job_with(app_and_proxy(), &[(PROXY_CONFIG, json!(plain))]),
    );
    for wanted in ["nativeSidecar", "quitEndpoint", "disabled"] {
        let (r, s) = asking(wanted, merged.clone());
        let p = payload(&r, &s);
        let name = format!("255 KiB config as exitOnJobCompletion left it ({wanted})");
        let o = call_measured(&policy, &name, &p);
        report(&name, p.len(), &o);
        assert!(o.mutated(), "{name}: not undone");
        assert!(o.warnings().is_empty(), "{name}: {:?}", o.warnings());
        let out = ModuleAnswer::new(&r, o.response.clone(), Vec::new())
            .patched_object()
            .unwrap();
        assert_eq!(
            out["spec"]["template"]["metadata"]["annotations"][PROXY_CONFIG],
            json!(plain),
            "{name}: the user's config is not back byte for byte"
        );
        assert_fixed_point(&policy, &name, &r, &s, &o);
    }
    // And the merge itself (exitOnJobCompletion, no record) of the configs
    // above without the key: the fast path reads plain lines without a YAML
    // parser, quoted values go through it.
    for (what, config) in [
        ("255 KiB config of plain lines", plain),
        ("255 KiB config of lines", lines(at_limit / 37)),
    ] {
        let (r, s) = asking(
            "exitOnJobCompletion",
            job_with(app_and_proxy(), &[(PROXY_CONFIG, json!(config))]),
        );
        let name = format!("{what}, merged (exitOnJobCompletion, no record)");
        let p = payload(&r, &s);
        let o = call(&policy, &name, &p);
        report(&name, p.len(), &o);
        assert!(o.mutated(), "{name}");
    }
}

/// The object `mode` makes of `object` (a Job), its record written.
fn moved_by(policy: &Policy, mode: &str, object: Value) -> Value {
    let r = request("Job", object);
    let o = call(policy, mode, &payload(&r, &settings(mode)));
    assert!(o.mutated(), "{mode}: not mutated");
    ModuleAnswer::new(&r, o.response, Vec::new())
        .patched_object()
        .expect("the patch applies")
}

/// A move record whose `from` is no 32-bit index: u64::MAX and 2^32 are
/// refused as unreadable (as natively, since a502240; before, a native
/// build read 2^32 where the module, whose `usize` is 32 bits, did not),
/// and u32::MAX is read and puts the proxy last.
#[test]
fn move_record_with_a_huge_from() {
    let policy = load();
    let moved = moved_by(&policy, "nativeSidecar", job(app_and_proxy()));
    let record = moved["spec"]["template"]["metadata"]["annotations"][APPLIED]
        .as_str()
        .expect("the move wrote its record")
        .to_owned();
    assert!(record.contains(r#""from":1"#), "{record}");
    for (from, readable) in [
        ("18446744073709551615", false),
        ("4294967296", false),
        ("4294967295", true),
    ] {
        let mut object = moved.clone();
        object["spec"]["template"]["metadata"]["annotations"][APPLIED] =
            json!(record.replace(r#""from":1"#, &format!(r#""from":{from}"#)));
        for wanted in ["exitOnJobCompletion", "quitEndpoint", "disabled"] {
            let (r, s) = asking(wanted, object.clone());
            let p = payload(&r, &s);
            let name = format!("move record, from {from} ({wanted})");
            let o = call(&policy, &name, &p);
            report(&name, p.len(), &o);
            if readable {
                // Moved back, to the end of containers.
                let out = ModuleAnswer::new(&r, o.response.clone(), Vec::new())
                    .patched_object()
                    .unwrap();
                let containers = out["spec"]["template"]["spec"]["containers"]
                    .as_array()
                    .unwrap();
                assert_eq!(containers.last().unwrap()["name"], "istio-proxy", "{name}");
            } else {
                assert_warning(&name, &o, "unreadable (from is not an index)");
            }
            if o.mutated() {
                assert_fixed_point(&policy, &name, &r, &s, &o);
            }
        }
    }
}

/// A quitEndpoint record naming a container that 10,000 containers are
/// named: nothing is undone ("not in the pod once"), the wanted mode still
/// applies.
#[test]
fn quit_record_naming_10000_containers() {
    let policy = load();
    let mut containers: Vec<Value> = (0..10_000)
        .map(|_| json!({"name": "pi", "image": "perl", "command": ["perl", "-e", "print 1"]}))
        .collect();
    containers.push(json!({"name": "istio-proxy", "image": "proxyv2"}));
    let record = json!({"mode": "quitEndpoint", "container": "pi"}).to_string();
    for wanted in WANTED {
        let object = job_with(json!(containers), &[(APPLIED, json!(record))]);
        let (r, s) = asking(wanted, object);
        let p = payload(&r, &s);
        let name = format!("quit record naming 10,000 containers ({wanted})");
        let o = call_measured(&policy, &name, &p);
        report(&name, p.len(), &o);
        if wanted == "quitEndpoint" {
            // Its own mode: 10,000 apps are not wrapped, the record goes.
            assert_warning(&name, &o, "this pod has 10000");
        } else {
            assert_warning(
                &name,
                &o,
                "quitEndpoint edit kept: container not in the pod once",
            );
        }
        if o.mutated() {
            assert_fixed_point(&policy, &name, &r, &s, &o);
        }
    }
}
