//! `proxy.istio.io/config`: alias bombs and nesting, through the
//! workload's override and through a forged record under each mode.

use crate::budget::*;
use policy_testkit::names::{APPLIED, MODE, PROXY_CONFIG};
use serde_json::{json, Value};

/// A text read by the policy (the proxy config) beside an ordinary config
/// of its size. The reader builds at most one node a byte of text (plus a
/// fixed allowance for aliases) before it gives up; an ordinary config
/// builds about one node every 20 bytes, and a node replayed from an alias
/// costs less than a parsed one: a bomb stopped at that budget costs about
/// 8 times the ordinary parse and 4.4 times its memory (measured). More
/// than 10 and 5 would mean nodes built past one a byte, or work per node
/// that grows with the text.
const TEXT: Ratio = Ratio {
    fuel: 10,
    memory: 5,
};

/// A Job: `job_annotations` on the Job, `template_annotations` on its pod
/// template, one app container.
fn job(job_annotations: Value, template_annotations: Value, containers: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "cost", "namespace": "default", "annotations": job_annotations},
        "spec": {"template": {
            "metadata": {"annotations": template_annotations},
            "spec": {"restartPolicy": "Never", "containers": containers}
        }}
    })
}

fn app() -> Value {
    json!([{"name": "app", "image": "registry.example/app:1", "command": ["/bin/app", "--once"]}])
}

// --- proxy.istio.io/config ----------------------------------------------

/// A config of about `size` bytes as users write them: a block mapping,
/// `proxyMetadata` entries of plain scalars.
fn benign_config(size: usize) -> String {
    let mut text = String::from("holdApplicationUntilProxyStarts: true\nproxyMetadata:\n");
    let mut i = 0;
    while text.len() + 48 < size {
        text.push_str(&format!(
            "  KEY_{i:06}: \"value {i:06} of the proxy's metadata\"\n"
        ));
        i += 1;
    }
    text
}

/// `a: &a [1,1,…]` then `b: [*a,*a,…]`, about `size` bytes: each alias
/// replays the anchored list, k×m nodes from k+m items.
fn alias_bomb(size: usize) -> String {
    let half = size / 2;
    let ones = vec!["1"; half / 2].join(",");
    let aliases = vec!["*a"; half / 3].join(",");
    format!("a: &a [{ones}]\nb: [{aliases}]\n")
}

/// `a: ` then `depth` `[` and as many `]`.
fn nesting(depth: usize) -> String {
    format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth))
}

/// The cluster's modes (`mode` of the settings); `disabled` is a
/// workload's own word (`istio-job-sidecar/mode`), the undo alone.
const MODES: [(&str, Option<&str>); 4] = [
    ("nativeSidecar", None),
    ("exitOnJobCompletion", None),
    ("quitEndpoint", None),
    ("nativeSidecar", Some("disabled")),
];

/// The record an exitOnJobCompletion pass leaves: read back (the undo)
/// under any other mode.
const EXIT_RECORD: &str =
    r#"{"mode":"exitOnJobCompletion","inserted":"\nexitOnJobCompletion: true"}"#;

/// The config shapes of the issue at their sizes: alias bombs of 8, 16,
/// 32 KiB and at the annotations' limit, nesting of 10,000 and 100,000.
fn config_shapes() -> Vec<(String, String)> {
    let mut shapes = Vec::new();
    for size in [8 << 10, 16 << 10, 32 << 10, ANNOTATIONS_LIMIT - 1024] {
        shapes.push((format!("alias bomb {} KiB", size >> 10), alias_bomb(size)));
    }
    for depth in [10_000, 100_000] {
        shapes.push((format!("nesting {depth}"), nesting(depth)));
    }
    shapes
}

/// A Job asking for exitOnJobCompletion itself (the workload's override,
/// honoured by default) with `config` as its proxy config, under the
/// cluster's nativeSidecar.
fn override_payload(config: &str) -> Vec<u8> {
    let object = job(
        json!({MODE: "exitOnJobCompletion"}),
        json!({PROXY_CONFIG: config}),
        app(),
    );
    payload(&request(object), &json!({"mode": "nativeSidecar"}))
}

/// A Job whose template carries a forged exitOnJobCompletion record beside
/// `config` (the inserted text at its end, where a merge puts it), under
/// the cluster's `mode`, and the Job's own `asks` when it has one.
fn record_payload(config: &str, (mode, asks): (&str, Option<&str>)) -> Vec<u8> {
    let config = format!("{config}exitOnJobCompletion: true\n");
    let job_annotations = asks.map_or_else(|| json!({}), |asks| json!({MODE: asks}));
    let object = job(
        job_annotations,
        json!({PROXY_CONFIG: config, APPLIED: EXIT_RECORD}),
        app(),
    );
    payload(&request(object), &json!({"mode": mode}))
}

/// `judge`, and the warning that the config was not read.
fn judge_unread(
    name: &str,
    size: usize,
    hostile: &Measured,
    benign: &Measured,
    ratio: Ratio,
) -> Vec<String> {
    let mut wrong: Vec<String> = judge(name, size, hostile, benign, ratio)
        .into_iter()
        .collect();
    wrong.extend(unread_says_so(name, hostile));
    wrong
}

/// A config the policy could not read is named in a warning.
fn unread_says_so(name: &str, m: &Measured) -> Option<String> {
    let says = m.answer.as_ref().ok()?.warnings.as_ref().is_some_and(|w| {
        w.iter()
            .any(|w| w.contains("proxy.istio.io/config") && w.contains("too large"))
    });
    (!says).then(|| {
        format!(
            "{name}: no warning that the config was too large: {}",
            m.summary()
        )
    })
}

#[test]
fn proxy_config_under_the_workloads_override() {
    let mut failures = Vec::new();
    for (name, config) in config_shapes() {
        let hostile = measure(&override_payload(&config));
        let benign = measure(&override_payload(&benign_config(config.len())));
        let name = format!("{name}, exitOnJobCompletion asked by the Job");
        failures.extend(judge_unread(&name, config.len(), &hostile, &benign, TEXT));
    }
    assert_all(failures);
}

#[test]
fn proxy_config_through_a_forged_record_under_each_mode() {
    let mut failures = Vec::new();
    for (name, config) in config_shapes() {
        for mode in MODES {
            let hostile = measure(&record_payload(&config, mode));
            // The benign side reads its config whole: under the record's
            // own mode an ordinary config is proven unchanged without a
            // parse, a shortcut no hostile text can take.
            let benign = measure(&override_payload(&benign_config(config.len())));
            let name = match mode {
                (mode, None) => format!("{name}, forged record, cluster mode {mode}"),
                (mode, Some(asks)) => {
                    format!("{name}, forged record, {asks} by the Job, cluster mode {mode}")
                }
            };
            failures.extend(judge_unread(&name, config.len(), &hostile, &benign, TEXT));
        }
    }
    assert_all(failures);
}

/// Configs of 1.8 MiB, in a body under policy-server's 2 MiB: the undo's
/// worst (the inserted text on every line, so that each place it occurs
/// is a candidate), one long value holding it, an alias bomb and an
/// ordinary config, through the override and a forged record.
#[test]
fn configs_past_the_annotations_limit_are_not_read() {
    let size = 1800 << 10;
    let inserted = "exitOnJobCompletion: true";
    let lines: String = (0..size / 37)
        .map(|i| format!("k{i:06}: \"{inserted}\"\n"))
        .collect();
    let one_value = format!("k: \"{}\"\n", format!("{inserted} ").repeat(size / 26));
    let shapes = [
        ("inserted text on every line", lines),
        ("inserted text in one value", one_value),
        ("alias bomb", alias_bomb(size)),
        ("ordinary config", benign_config(size)),
    ];
    let mut failures = Vec::new();
    for (shape, config) in shapes {
        let name = format!("{shape} of {} KiB", config.len() >> 10);
        // The same text where the policy never reads it.
        let unread = |payload: Vec<u8>| {
            let text = String::from_utf8(payload).unwrap_or_default();
            measure(text.replace(PROXY_CONFIG, "example.com/notes").as_bytes())
        };
        let mut payloads = vec![(
            format!("{name}, exitOnJobCompletion asked by the Job"),
            override_payload(&config),
        )];
        for mode in MODES {
            payloads.push((
                format!("{name}, forged record, {mode:?}"),
                record_payload(&config, mode),
            ));
        }
        for (label, payload) in payloads {
            let hostile = measure(&payload);
            let benign = unread(payload);
            failures.extend(judge_unread(
                &label,
                config.len(),
                &hostile,
                &benign,
                PAST_LIMIT,
            ));
        }
    }
    assert_all(failures);
}

/// Ten times the keys, at most twelve times the work: the merge's checks
/// of duplicate keys are no scan per key, in a block mapping and in JSON.
#[test]
fn config_keys_grow_linearly() {
    let block = |n: usize| -> String { (0..n).map(|i| format!("key{i:08}: v{i}\n")).collect() };
    let json = |n: usize| {
        let keys: Vec<String> = (0..n).map(|i| format!("\"key{i:08}\": {i}")).collect();
        format!("{{{}}}", keys.join(", "))
    };
    let mut failures = Vec::new();
    for (form, text) in [
        ("block", &block as &dyn Fn(usize) -> String),
        ("JSON", &json),
    ] {
        let small = measure(&override_payload(&text(1_200)));
        let large = measure(&override_payload(&text(12_000)));
        for m in [&small, &large] {
            let merged = m
                .answer
                .as_ref()
                .ok()
                .and_then(|a| a.mutated_object.as_ref());
            if merged.is_none() {
                failures.push(format!("{form}: not merged: {}", m.summary()));
            }
        }
        if large.cost.fuel > 12 * small.cost.fuel {
            failures.push(format!(
                "{form}: {} instructions for 12,000 keys, {} for 1,200",
                large.cost.fuel, small.cost.fuel
            ));
        }
    }
    assert_all(failures);
}

#[test]
fn benign_configs_are_read_and_merged() {
    // The benign side of every comparison does the ordinary work: the
    // config is read and exitOnJobCompletion added, so a budget relative
    // to it is not relative to a shortcut.
    for size in [8 << 10, ANNOTATIONS_LIMIT - 1024] {
        let m = measure(&override_payload(&benign_config(size)));
        let answer = m.answer.as_ref().expect("answers");
        let object = answer.mutated_object.as_ref().expect("mutated");
        let config = object["spec"]["template"]["metadata"]["annotations"][PROXY_CONFIG]
            .as_str()
            .unwrap_or_default();
        assert!(
            config.contains("exitOnJobCompletion: true"),
            "{size} bytes: {}",
            m.summary()
        );
    }
}
