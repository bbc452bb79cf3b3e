//! The object: its size, its nesting, thousands of items, huge annotations.

use crate::budget::*;
use policy_testkit::names::{APPLIED, MODE, PROXY_CONFIG, STATUS};
use serde_json::{json, Value};

// --- the object ----------------------------------------------------------
/// The object's size the API server stores at most (etcd's default request
/// limit, 1.5 MiB); the API server takes requests of up to 3 MiB, and
/// policy-server bodies of up to 2 MiB (axum's default body limit).
const OBJECT_LIMIT: usize = 1536 * 1024;

/// What may come in thousands in a pod.
const COUNTED: [&str; 4] = [
    "containers",
    "initContainers",
    "env entries",
    "command and args items",
];

/// A kube-injected Job with `count` of `kind`.
fn counted(kind: &str, count: usize) -> Value {
    let mut object = injected_job(app_and_proxy(), json!({}));
    let spec = &mut object["spec"]["template"]["spec"];
    match kind {
        "containers" => {
            if let Some(list) = spec["containers"].as_array_mut() {
                list.extend((0..count).map(|i| {
                    json!({"name": format!("app-{i}"), "image": "busybox", "command": ["/bin/true"]})
                }));
            }
        }
        "initContainers" => {
            spec["initContainers"] = many(
                count,
                |i| json!({"name": format!("init-{i}"), "image": "busybox", "command": ["/bin/true"]}),
            );
        }
        "env entries" => {
            spec["containers"][0]["env"] = many(
                count,
                |i| json!({"name": format!("VAR_{i}"), "value": format!("value {i}")}),
            );
        }
        _ => {
            spec["containers"][0]["command"] = many(count, |i| json!(format!("--arg-{i}")));
            spec["containers"][0]["args"] = many(count, |i| json!(format!("value-{i}")));
        }
    }
    object
}

/// The object shapes: `(name, object)`, each compared with `ordinary_job`
/// of its size.
fn object_shapes() -> Vec<(String, Value)> {
    // The largest object etcd stores, as 2,000 containers with long scripts.
    let script = "x".repeat(OBJECT_LIMIT / 2_000 - 100);
    let mut shapes = vec![(
        "1.5 MiB request".to_owned(),
        injected_job(
            many(
                2_000,
                |i| json!({"name": format!("c{i}"), "image": "busybox", "command": ["/bin/sh", "-c", script]}),
            ),
            json!({}),
        ),
    )];
    for count in [1_000, 10_000] {
        for kind in COUNTED {
            shapes.push((format!("{count} {kind}"), counted(kind, count)));
        }
    }
    // Counts at policy-server's body limit (2 MiB): tens of thousands of
    // containers; a command of 650,000 empty strings, more than Linux
    // starts a process with (argv in 2 MiB, 9 bytes an item at least), and
    // one of 230,000, just under that.
    for kind in ["containers", "initContainers"] {
        shapes.push((format!("30000 {kind}"), counted(kind, 30_000)));
    }
    for count in [650_000, 230_000] {
        let mut object = injected_job(app_and_proxy(), json!({}));
        object["spec"]["template"]["spec"]["containers"][0]["command"] = json!(vec![""; count]);
        shapes.push((format!("a command of {count} empty strings"), object));
    }
    // A huge sidecar.istio.io/status (its lists of thousands of names), a
    // huge record: both at the annotations' limit.
    let names: Vec<String> = (0..20_000).map(|i| format!("c{i:05}")).collect();
    let status = json!({"initContainers": ["istio-init"], "containers": names, "volumes": ["istio-envoy"], "imagePullSecrets": null, "revision": "default"}).to_string();
    let status: String = status.chars().take(ANNOTATIONS_LIMIT - 2048).collect();
    let mut object = injected_job(app_and_proxy(), json!({}));
    object["spec"]["template"]["metadata"]["annotations"][STATUS] = json!(status);
    shapes.push(("sidecar.istio.io/status at 255 KiB".to_owned(), object));
    let record = format!(
        r#"{{"mode":"quitEndpoint","container":"{}"}}"#,
        "a".repeat(ANNOTATIONS_LIMIT - 2048)
    );
    shapes.push((
        "record at 255 KiB".to_owned(),
        injected_job(app_and_proxy(), json!({APPLIED: record})),
    ));
    shapes
}

#[test]
fn huge_objects() {
    let mut failures = Vec::new();
    for (name, object) in object_shapes() {
        let size = size_of(&object);
        for mode in ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"] {
            let settings = json!({"mode": mode});
            let hostile = measure(&payload(&request(object.clone()), &settings));
            let benign = measure(&payload(&request(ordinary_job(size)), &settings));
            failures.extend(judge(
                &format!("{name}, {mode}"),
                size,
                &hostile,
                &benign,
                ITEMS,
            ));
        }
    }
    assert_all(failures);
}

/// Annotations the policy reads, each alone past what an object's
/// annotations may total (the API server refuses the object after the
/// webhooks): 1.8 MiB, in a body under policy-server's 2 MiB. Each costs
/// at most what the same text costs where the policy never reads it (an
/// annotation of another name), and is named in a warning.
#[test]
fn annotations_past_the_limit_are_not_read() {
    let size = 1800 << 10;
    let names: Vec<String> = (0..size / 10).map(|i| format!("c{i:07}")).collect();
    let status =
        json!({"initContainers": ["istio-init"], "containers": names, "revision": "default"});
    let inserted = "exitOnJobCompletion: true\n".repeat(size / 26);
    let record = json!({"mode": "exitOnJobCompletion", "inserted": inserted}).to_string();
    let config: String = (0..size / 30)
        .map(|i| format!("k{i:06}: \"some value\"\n"))
        .collect();
    let shapes = [
        (STATUS, status.to_string()),
        (APPLIED, record),
        (PROXY_CONFIG, config),
        (MODE, "exitOnJobCompletion".repeat(size / 19)),
    ];
    let mut failures = Vec::new();
    for (key, text) in shapes {
        for mode in ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"] {
            let settings = json!({"mode": mode});
            let annotated = |key: &str| {
                let object = injected_job(app_and_proxy(), json!({key: text}));
                payload(&request(object), &settings)
            };
            let hostile = measure(&annotated(key));
            let benign = measure(&annotated("example.com/notes"));
            let name = format!("{key} of {} KiB, {mode}", text.len() >> 10);
            failures.extend(judge(&name, text.len(), &hostile, &benign, PAST_LIMIT));
            let warned = hostile
                .answer
                .as_ref()
                .ok()
                .and_then(|a| a.warnings.as_ref());
            if !warned.is_some_and(|w| w.iter().any(|w| w.contains(key) && w.contains("too large")))
            {
                failures.push(format!(
                    "{name}: no warning naming it: {}",
                    hostile.summary()
                ));
            }
        }
    }
    assert_all(failures);
}

#[test]
fn counts_grow_linearly() {
    // Ten times the items, at most twelve times the work: no work per pair.
    let mut failures = Vec::new();
    for kind in COUNTED {
        for mode in ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"] {
            let settings = json!({"mode": mode});
            let small = measure(&payload(&request(counted(kind, 1_000)), &settings));
            let large = measure(&payload(&request(counted(kind, 10_000)), &settings));
            if large.cost.fuel > 12 * small.cost.fuel {
                failures.push(format!(
                    "{kind}, {mode}: {} instructions for 10,000, {} for 1,000",
                    large.cost.fuel, small.cost.fuel
                ));
            }
        }
    }
    assert_all(failures);
}

/// `[[[…]]]` `depth` deep, as raw JSON text (a `serde_json::Value` that
/// deep could not be dropped on a test thread's stack).
fn deep_json(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn deep_json_nesting_of_the_object() {
    // policy-server reads the AdmissionReview with serde_json (128 levels
    // at most) and refuses deeper bodies before any policy runs; the
    // module holds its own bound all the same.
    let settings = json!({"mode": "nativeSidecar"});
    let mut failures = Vec::new();
    for depth in [1_000, 10_000, 100_000] {
        let marker = "\"DEEP\"";
        let mut object = injected_job(app_and_proxy(), json!({}));
        object["spec"]["template"]["spec"]["containers"][0]["env"] =
            json!([{"name": "DEEP", "valueFrom": "DEEP"}]);
        let text = String::from_utf8(payload(&request(object), &settings)).expect("UTF-8");
        // The second marker is the value of `valueFrom`.
        let at = text.rfind(marker).expect("marker");
        let hostile = format!(
            "{}{}{}",
            &text[..at],
            deep_json(depth),
            &text[at + marker.len()..]
        );
        let benign_payload = payload(&request(ordinary_job(hostile.len())), &settings);
        let hostile = measure(hostile.as_bytes());
        let benign = measure(&benign_payload);
        failures.extend(judge(
            &format!("object nested {depth} deep"),
            benign_payload.len(),
            &hostile,
            &benign,
            ITEMS,
        ));
    }
    assert_all(failures);
}
