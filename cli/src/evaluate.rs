//! One admission request through the policy, as Kubewarden makes it: the
//! request in the API server's shape (`kube_model::admission::request`, in
//! the object's namespace), the payload in policy-server's order, the
//! policy's own `explain`, and the patch as policy-server computes it
//! (`kube_model::answer::patch`: the difference between the request's
//! object and the returned one).
//! Nothing here decides anything: the verdict, the object and the warnings
//! are the policy's; the rest only describes them.

use istio_job_sidecar_policy::decide::Skip;
use istio_job_sidecar_policy::names::{Kind, ANNOTATION_APPLIED};
use istio_job_sidecar_policy::policy::{explain, Verdict};
use kube_model::admission::{payload, Order};
use kube_model::answer::check_answer;
use serde_json::{json, Value};

/// Which request of a workload's life an evaluation stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum At {
    /// The object created as it is.
    Create,
    /// The object updated as it is (`kubectl annotate`, a no-op apply).
    Update,
    /// The next Pod its Job controller makes (`pod_from_job`), created.
    NextPods,
    /// The next Job its CronJob controller makes (`job_from_cronjob`), created.
    NextJobs,
}

impl At {
    pub fn as_str(self) -> &'static str {
        match self {
            At::Create => "create",
            At::Update => "update",
            At::NextPods => "nextPods",
            At::NextJobs => "nextJobs",
        }
    }

    /// For the table.
    pub fn label(self) -> &'static str {
        match self {
            At::Create => "create",
            At::Update => "update",
            At::NextPods => "next Pods",
            At::NextJobs => "next Jobs",
        }
    }
}

/// What the policy made of one request.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub at: At,
    pub operation: &'static str,
    /// The kind of the request's object (a Job's next Pods are Pods).
    pub kind: Kind,
    pub verdict: Verdict,
    /// How many operations the JSON Patch Kubewarden would send has.
    pub operations: usize,
    /// That patch, as compact JSON, when kept (`Want::patch`): a scan keeps
    /// only what it writes, so memory stays small per object (it grows with
    /// the number of objects, not their size).
    pub patch: Option<std::rc::Rc<str>>,
    /// The patch, one line per field of the pod template it touches.
    pub fields: Vec<std::rc::Rc<str>>,
    /// The record `istio-job-sidecar/applied` the patch writes, if any, as
    /// compact JSON, when kept (`Want::patch`).
    pub record: Option<std::rc::Rc<str>>,
    /// How the mode was applied, from that record: `move`, `wrap`, `annotation`.
    pub how: Option<&'static str>,
    pub warnings: Vec<String>,
    /// An answer that breaks what every answer of the policy must hold.
    pub broken: Option<String>,
}

impl Evaluation {
    pub fn changes(&self) -> bool {
        self.operations > 0
    }
}

/// What an evaluation keeps besides its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    pub patch: bool,
    /// The admitted object (the request's with the patch applied).
    pub admitted: bool,
}

/// The AdmissionRequest the API server sends for `object` with `operation`
/// in `namespace` (an UPDATE's old object is the object itself).
pub fn request(operation: &str, object: &Value, namespace: &str) -> Value {
    let old = (operation == "UPDATE").then_some(object);
    kube_model::admission::request(operation, object, old, namespace)
}

/// The request for `object` with `operation` (an UPDATE's old object is the
/// object itself), answered by the policy under `settings`; and the object
/// the admitted request carries (the patch applied), when it changed.
pub fn evaluate(
    at: At,
    kind: Kind,
    object: &Value,
    operation: &'static str,
    namespace: &str,
    settings: &Value,
    want: Want,
) -> (Evaluation, Option<Value>) {
    let request = request(operation, object, namespace);
    let explained = explain(&payload(&request, Some(settings), Order::PolicyServer));
    let mut evaluation = Evaluation {
        at,
        operation,
        kind,
        verdict: explained.verdict,
        operations: 0,
        patch: None,
        fields: Vec::new(),
        record: None,
        how: None,
        warnings: Vec::new(),
        broken: None,
    };
    let answer = match check_answer(&explained.response) {
        Ok(answer) => answer,
        Err(why) => {
            evaluation.broken = Some(why);
            return (evaluation, None);
        }
    };
    evaluation.warnings = answer.warnings;
    let Some(mutated) = answer.mutated else {
        return (evaluation, None);
    };
    let Some(patch) = kube_model::answer::patch(object, &mutated) else {
        return (evaluation, None);
    };
    evaluation.fields = describe(kind, object, &patch)
        .into_iter()
        .map(Into::into)
        .collect();
    let record = written_record(kind, object, &mutated);
    evaluation.how = record.as_ref().and_then(|r| {
        [
            ("moved", "move"),
            ("container", "wrap"),
            ("annotation", "annotation"),
        ]
        .into_iter()
        .find(|(key, _)| r.get(*key).is_some())
        .map(|(_, how)| how)
    });
    evaluation.operations = patch.0.len();
    if want.patch {
        evaluation.record = record
            .and_then(|r| serde_json::to_string(&r).ok())
            .map(Into::into);
        evaluation.patch = serde_json::to_string(&patch).ok().map(Into::into);
    }
    if !want.admitted {
        return (evaluation, None);
    }
    // The admitted object is the request's with the patch applied, as the
    // API server applies it.
    match kube_model::answer::apply(object, &patch) {
        Ok(admitted) => (evaluation, Some(admitted)),
        Err(why) => {
            evaluation.broken = Some(why);
            (evaluation, None)
        }
    }
}

/// The record the policy wrote (or rewrote) on the pod template.
fn written_record(kind: Kind, before: &Value, after: &Value) -> Option<Value> {
    let read = |object: &Value| {
        template(kind, object)["metadata"]["annotations"][ANNOTATION_APPLIED]
            .as_str()
            .map(str::to_owned)
    };
    let written = read(after)?;
    if read(before).as_deref() == Some(written.as_str()) {
        return None;
    }
    Some(serde_json::from_str(&written).unwrap_or(Value::String(written)))
}

fn template(kind: Kind, object: &Value) -> &Value {
    kind.template_path().iter().fold(object, |v, key| &v[*key])
}

/// A stable name for a verdict, for machines.
pub fn verdict_json(verdict: &Verdict) -> Value {
    match verdict {
        Verdict::NotHandled => json!({"kind": "notHandled"}),
        Verdict::NotUnderstood => json!({"kind": "notUnderstood"}),
        Verdict::Skip(skip) => json!({"kind": "skip", "reason": skip_reason(*skip).0}),
        Verdict::Apply(mode) => json!({"kind": "apply", "mode": mode.as_str()}),
    }
}

/// A skip's name for machines, and in words.
pub fn skip_reason(skip: Skip) -> (&'static str, &'static str) {
    match skip {
        Skip::JobNotCreate => ("jobNotCreate", "Job template immutable"),
        Skip::Operation => ("operation", "operation not handled"),
        Skip::LongRunningPod => ("longRunningPod", "long-running Pod"),
        Skip::Disabled => ("disabled", "disabled by istio-job-sidecar/mode"),
        Skip::InjectionOff => ("injectionOff", "Istio injection off"),
        Skip::NativeUnsafe => ("nativeUnsafe", "nativeSidecar unsafe, no fallbackMode"),
        Skip::Oversized => ("oversized", "an annotation past the API server's limit"),
    }
}

/// The evaluation in a few words: the mode applied and how (from the
/// verdict and the record written), or why it is left alone.
pub fn summary(e: &Evaluation) -> String {
    if let Some(why) = &e.broken {
        return format!("policy answer broken: {why}");
    }
    // Counted in fields, as listed: one patch operation may add several.
    let changes = match e.fields.len() {
        1 => "1 change".to_owned(),
        n => format!("{n} changes"),
    };
    match e.verdict {
        Verdict::Apply(mode) if e.changes() => {
            let how = e.how.map(|h| format!(" ({h})")).unwrap_or_default();
            format!("{}{how}: {changes}", mode.as_str())
        }
        Verdict::Apply(mode) if e.warnings.is_empty() => {
            format!("{}: nothing to change", mode.as_str())
        }
        Verdict::Apply(mode) => format!("{}: not applied", mode.as_str()),
        Verdict::Skip(skip) if e.changes() => format!("{}: {changes}", skip_reason(skip).1),
        Verdict::Skip(skip) => format!("left alone: {}", skip_reason(skip).1),
        Verdict::NotHandled => "not handled".into(),
        Verdict::NotUnderstood => "not understood".into(),
    }
}

/// The fields of the pod template a patch touches, one line each:
/// `+` added, `-` removed, `~` replaced; containers by name.
pub fn describe(kind: Kind, object: &Value, patch: &json_patch::Patch) -> Vec<String> {
    let prefix = kind.template_path();
    // The template as each operation finds it (names of containers that
    // move), the operations applied one by one below the template.
    let mut current = template(kind, object).clone();
    let mut lines: Vec<String> = Vec::new();
    for op in &patch.0 {
        let mut value = serde_json::to_value(op).unwrap_or_default();
        let path = value["path"].as_str().unwrap_or_default();
        let tokens: Vec<String> = path
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        let (symbol, added) = match value["op"].as_str() {
            Some("add") => ("+", Some(&value["value"])),
            Some("remove") => ("-", None),
            _ => ("~", Some(&value["value"])),
        };
        let inside = tokens.len() >= prefix.len() && tokens.iter().zip(prefix).all(|(t, p)| t == p);
        let described = if inside {
            let rel: Vec<&str> = tokens[prefix.len()..].iter().map(String::as_str).collect();
            describe_in_template(symbol, &rel, added, &current)
        } else {
            vec![format!("{symbol} {}", tokens.join("."))]
        };
        for line in described {
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        if inside {
            let below: String = path
                .split('/')
                .skip(1 + prefix.len())
                .map(|t| format!("/{t}"))
                .collect();
            value["path"] = Value::from(below);
            if let Ok(op) = serde_json::from_value::<json_patch::PatchOperation>(value) {
                let _ = json_patch::patch(&mut current, &json_patch::Patch(vec![op]));
            }
        }
    }
    lines
}

fn describe_in_template(
    symbol: &str,
    rel: &[&str],
    value: Option<&Value>,
    template: &Value,
) -> Vec<String> {
    let keys = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let names = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|c| c["name"].as_str().unwrap_or("?").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let singular = |list: &str| {
        if list == "initContainers" {
            "initContainer"
        } else {
            "container"
        }
    };
    match rel {
        ["metadata"] if symbol == "+" => {
            let meta = value.cloned().unwrap_or_default();
            let mut out = Vec::new();
            for (map, what) in [("annotations", "annotation"), ("labels", "label")] {
                for key in keys(meta.get(map)) {
                    out.push(format!("+ {what} {key}"));
                }
            }
            out
        }
        ["metadata", map @ ("annotations" | "labels")] if symbol == "+" => {
            let what = if *map == "labels" {
                "label"
            } else {
                "annotation"
            };
            keys(value)
                .into_iter()
                .map(|k| format!("+ {what} {k}"))
                .collect()
        }
        ["metadata", map @ ("annotations" | "labels"), key, ..] => {
            let what = if *map == "labels" {
                "label"
            } else {
                "annotation"
            };
            vec![format!("{symbol} {what} {key}")]
        }
        ["spec", list @ ("containers" | "initContainers")] => {
            let listed = if symbol == "-" {
                names(Some(&template["spec"][*list]))
            } else {
                names(value)
            };
            listed
                .into_iter()
                .map(|n| format!("{symbol} {} {n}", singular(list)))
                .collect()
        }
        ["spec", list @ ("containers" | "initContainers"), index, rest @ ..] => {
            let name = match (symbol, rest.is_empty(), value) {
                ("+", true, Some(v)) => v["name"].as_str().map(str::to_owned),
                _ => index.parse::<usize>().ok().and_then(|i| {
                    template["spec"][*list][i]["name"]
                        .as_str()
                        .map(str::to_owned)
                }),
            };
            let name = name.unwrap_or_else(|| format!("#{index}"));
            match rest.first() {
                None => vec![format!("{symbol} {} {name}", singular(list))],
                Some(field) => vec![format!("~ {} {name}: {field}", singular(list))],
            }
        }
        [] => vec![format!("{symbol} pod template")],
        other => vec![format!("{symbol} {}", other.join("."))],
    }
}
