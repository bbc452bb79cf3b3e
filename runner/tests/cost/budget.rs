//! What every cost test shares: the metered module, one measured call,
//! the budget and the requests it is judged on.

use std::sync::OnceLock;

use policy_runner::metered::{CallCost, MeteredModule};
use policy_runner::{Policy, ValidationResponse};
use policy_testkit::names::STATUS;
use serde_json::{json, Value};

/// At most this many instructions per call.
pub const FUEL_CAP: u64 = 600_000_000;
/// At most this much linear memory after the call.
pub const MEMORY_CAP: u64 = 64 << 20;

/// How much more than the benign request of its size a hostile one may
/// cost: a ratio of fuel and one of linear memory.
#[derive(Clone, Copy)]
pub struct Ratio {
    pub fuel: u64,
    pub memory: u64,
}

/// Many small items (containers, env entries, names) beside an object of
/// its size grown by ordinary env entries: each item is parsed, named and
/// compared, which costs up to about ten times what reading its bytes
/// costs; more would be work per pair of items (`counts_grow_linearly`
/// checks that separately).
pub const ITEMS: Ratio = Ratio {
    fuel: 16,
    memory: 4,
};
/// An annotation the policy reads, alone past what the annotations may
/// total (the API server refuses the object after the webhooks, so the
/// policy sees it), beside the same text in an annotation it never reads:
/// nothing of the object is read further nor changed, and the value is
/// only unescaped where the other is skipped (1.6 to 2.3 times measured).
/// More would be a parse of it.
pub const PAST_LIMIT: Ratio = Ratio { fuel: 3, memory: 3 };
/// Where the engine stops a call: over budget whatever the ratio.
pub const FUEL_LIMIT: u64 = 2 * FUEL_CAP;

/// The annotations of an object may total 256 KiB, keys and values
/// (apimachinery's `TotalAnnotationSizeLimitB`).
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;

pub fn module() -> &'static MeteredModule {
    static MODULE: OnceLock<MeteredModule> = OnceLock::new();
    MODULE.get_or_init(|| {
        let bytes = std::fs::read(crate::common::built_module_path()).expect("policy.wasm reads");
        MeteredModule::new(&bytes, FUEL_LIMIT).expect("policy.wasm compiles")
    })
}

/// One call's answer and cost.
pub struct Measured {
    pub cost: CallCost,
    /// The guest's answer; `Err`: the call failed (trap, guest error, out
    /// of fuel) or its answer is not the protocol's.
    pub answer: Result<ValidationResponse, String>,
}

impl Measured {
    pub fn summary(&self) -> String {
        match &self.answer {
            Ok(a) => {
                let verdict = match (a.accepted, a.mutated_object.is_some()) {
                    (true, true) => "accept, mutated",
                    (true, false) => "accept, unchanged",
                    (false, _) => "REJECT",
                };
                let warning = a
                    .warnings
                    .as_deref()
                    .and_then(|w| w.first())
                    .map(|w| format!("; {}", w.chars().take(90).collect::<String>()))
                    .unwrap_or_default();
                format!("{verdict}{warning}")
            }
            Err(e) => format!("FAILED: {}", e.chars().take(160).collect::<String>()),
        }
    }
}

/// `validate` of `payload` on a fresh metered instance, the Node list
/// answered with `nodes`.
pub fn measure_with(payload: &[u8], nodes: Option<Vec<u8>>) -> Measured {
    measure_on(module(), payload, nodes)
}

/// As `measure_with`, on `module` (another fuel limit).
pub fn measure_on(module: &MeteredModule, payload: &[u8], nodes: Option<Vec<u8>>) -> Measured {
    let policy = Policy::metered(module).expect("instantiates");
    policy.set_nodes(nodes);
    let raw = policy.call("validate", payload);
    let cost = policy.last_cost().expect("a metered call has a cost");
    let answer = raw
        .map_err(|e| e.to_string())
        .and_then(|raw| read_answer(&raw));
    Measured { cost, answer }
}

/// The answer, read without building the mutated object: one that echoes
/// a deeply nested request is deeper than a `serde_json::Value` reads.
pub fn read_answer(raw: &[u8]) -> Result<ValidationResponse, String> {
    if let Ok(answer) = serde_json::from_slice::<ValidationResponse>(raw) {
        return Ok(answer);
    }
    #[derive(serde::Deserialize)]
    struct Lenient {
        accepted: bool,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        mutated_object: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        warnings: Option<Vec<String>>,
    }
    let lenient: Lenient = serde_json::from_slice(raw).map_err(|e| format!("the answer: {e}"))?;
    Ok(ValidationResponse {
        accepted: lenient.accepted,
        message: lenient.message,
        code: None,
        // There, but not readable as a Value: a marker.
        mutated_object: lenient.mutated_object.map(|_| Value::Null),
        audit_annotations: None,
        warnings: lenient.warnings,
    })
}

pub fn measure(payload: &[u8]) -> Measured {
    measure_with(payload, None)
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// Prints a row of the table; returns what is wrong with `hostile` beside
/// `benign` (both `size` bytes of input), if anything.
pub fn judge(
    name: &str,
    size: usize,
    hostile: &Measured,
    benign: &Measured,
    ratio: Ratio,
) -> Option<String> {
    eprintln!(
        "| {name} | {:.1} KiB | {:.1} M | {:.1} MiB | {:.1} M | {:.1} MiB | {} |",
        size as f64 / 1024.0,
        hostile.cost.fuel as f64 / 1e6,
        mib(hostile.cost.memory_bytes()),
        benign.cost.fuel as f64 / 1e6,
        mib(benign.cost.memory_bytes()),
        hostile.summary()
    );
    let mut wrong = Vec::new();
    if let Err(e) = &benign.answer {
        wrong.push(format!("the benign request failed: {e}"));
    }
    match &hostile.answer {
        Err(e) => wrong.push(format!("no answer: {e}")),
        Ok(a) if !a.accepted => wrong.push(format!("rejected: {:?}", a.message)),
        Ok(_) => {}
    }
    let fuel = hostile.cost.fuel;
    if hostile.cost.out_of_fuel || fuel > FUEL_CAP {
        wrong.push(format!("{fuel} instructions, over the cap of {FUEL_CAP}"));
    }
    if fuel > ratio.fuel * benign.cost.fuel {
        wrong.push(format!(
            "{fuel} instructions, over {} x the benign request's {}",
            ratio.fuel, benign.cost.fuel
        ));
    }
    let memory = hostile.cost.memory_bytes();
    if memory > MEMORY_CAP {
        wrong.push(format!(
            "{:.1} MiB of linear memory, over the cap of {:.0} MiB",
            mib(memory),
            mib(MEMORY_CAP)
        ));
    }
    if memory > ratio.memory * benign.cost.memory_bytes() {
        wrong.push(format!(
            "{:.1} MiB of linear memory, over {} x the benign request's {:.1} MiB",
            mib(memory),
            ratio.memory,
            mib(benign.cost.memory_bytes())
        ));
    }
    (!wrong.is_empty()).then(|| format!("{name}: {}", wrong.join("; ")))
}

pub fn assert_all(failures: Vec<String>) {
    assert!(failures.is_empty(), "over budget:\n{}", failures.join("\n"));
}

/// As policy-server sends it (members in alphabetical order).
pub fn payload(request: &Value, settings: &Value) -> Vec<u8> {
    policy_testkit::payload(request, Some(settings), policy_testkit::Order::PolicyServer)
}

pub fn request(object: Value) -> Value {
    json!({
        "uid": "cost",
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
        "operation": "CREATE",
        "namespace": "default",
        "object": object,
    })
}

/// A kube-injected Job (every mode has something to do) of about `size`
/// bytes of JSON, grown the way real pods grow: its app's environment,
/// ordinary `name`/`value` entries. The benign request of that size.
pub fn ordinary_job(size: usize) -> Value {
    let mut object = injected_job(app_and_proxy(), json!({}));
    let entry = |i: usize| json!({"name": format!("SETTING_{i:06}"), "value": format!("the value of setting {i}")});
    let each = size_of(&entry(0)) + 1;
    let count = size.saturating_sub(size_of(&object)) / each;
    object["spec"]["template"]["spec"]["containers"][0]["env"] = many(count, entry);
    object
}

pub const CLASSIC_STATUS: &str = r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"default"}"#;

pub fn injected_job(containers: Value, extra_annotations: Value) -> Value {
    let mut annotations = json!({STATUS: CLASSIC_STATUS});
    if let (Some(a), Some(extra)) = (annotations.as_object_mut(), extra_annotations.as_object()) {
        a.extend(extra.clone());
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "cost", "namespace": "default"},
        "spec": {"template": {
            "metadata": {"annotations": annotations},
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [{"name": "istio-init", "image": "proxyv2"}],
                "containers": containers,
            }
        }}
    })
}

pub fn app_and_proxy() -> Value {
    json!([
        {"name": "app", "image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]},
        {"name": "istio-proxy", "image": "proxyv2", "args": ["proxy", "sidecar"]}
    ])
}

pub fn size_of(object: &Value) -> usize {
    serde_json::to_vec(object).map_or(0, |b| b.len())
}

/// `count` containers (or init containers, env entries, args) filling
/// about `size` bytes.
pub fn many(count: usize, item: impl Fn(usize) -> Value) -> Value {
    Value::Array((0..count).map(item).collect())
}
