//! Which requests the API server sends to each example's webhook, as the
//! operator's tool decides it (`kube_model::webhook` and the tool's CEL
//! evaluation of `matchConditions`), held to the tables of
//! `test_data/selection/`: the same tables the Python harness checks against
//! its model of the API server (`harness/checks.py`, `check_table`), so the
//! two cannot disagree on a row.
//!
//! The requests are written here, from the API server's source, not by
//! kube-model's builder (`kube_model::admission::request`): the tool's
//! decision is judged on requests it had no hand in.

use istio_job_sidecar_cli::config::{Config, Sent};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn labels(row: &Value, key: &str) -> Map<String, Value> {
    row[key].as_object().cloned().unwrap_or_default()
}

/// The AdmissionRequest of a row: a Job, CronJob, Pod or Deployment (the
/// row's kind) with the labels and annotations it names, as the harness
/// builds it (`workload`).
fn request(row: &Value) -> Value {
    let kind = row["kind"].as_str().expect("a row's kind");
    let operation = row["operation"].as_str().unwrap_or("CREATE");
    let namespace = row["namespace"].as_str().unwrap_or("team-a");
    let mut pod_meta = Map::new();
    for (from, to) in [("podLabels", "labels"), ("podAnnotations", "annotations")] {
        if row[from].is_object() {
            pod_meta.insert(to.into(), row[from].clone());
        }
    }
    let mut pod_spec = json!({"containers": [{"name": "work", "image": "busybox", "command": ["sh", "-c", "true"]}]});
    match row.get("restartPolicy") {
        Some(Value::Null) => {}
        Some(policy) => pod_spec["restartPolicy"] = policy.clone(),
        None => pod_spec["restartPolicy"] = json!("Never"),
    }
    let (mut own_labels, mut own_annotations) = (labels(row, "labels"), labels(row, "annotations"));
    if kind == "Pod" {
        // A Pod's own metadata is its pod template.
        own_labels.extend(labels(row, "podLabels"));
        own_annotations.extend(labels(row, "podAnnotations"));
    }
    let mut meta = json!({"name": "work", "namespace": namespace});
    if !own_labels.is_empty() {
        meta["labels"] = Value::Object(own_labels);
    }
    if !own_annotations.is_empty() {
        meta["annotations"] = Value::Object(own_annotations);
    }
    let mut template = json!({"spec": pod_spec.clone()});
    if !pod_meta.is_empty() || row["noTemplateMetadata"] != true {
        pod_meta.insert("creationTimestamp".into(), Value::Null);
        template["metadata"] = Value::Object(pod_meta);
    }
    let object = match kind {
        "Pod" => json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}),
        "Job" => {
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": template}})
        }
        "CronJob" => {
            let mut job_template = json!({"spec": {"template": template}});
            if row["jobTemplateAnnotations"].is_object() {
                job_template["metadata"] = json!({"annotations": row["jobTemplateAnnotations"]});
            }
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
                   "spec": {"schedule": "0 2 * * *", "jobTemplate": job_template}})
        }
        "Deployment" => {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {"template": template}})
        }
        other => panic!("unknown kind {other}"),
    };
    let old = (operation == "UPDATE").then_some(&object);
    admission_request(
        operation,
        &object,
        old,
        namespace,
        row["subResource"].as_str(),
    )
}

/// The REST mapping of the kinds the tables name, as the API server serves
/// them (Kubernetes 1.33, `kubectl api-resources`): (kind, group, version,
/// resource).
const RESOURCES: [(&str, &str, &str, &str); 4] = [
    ("Pod", "", "v1", "pods"),
    ("Job", "batch", "v1", "jobs"),
    ("CronJob", "batch", "v1", "cronjobs"),
    ("Deployment", "apps", "v1", "deployments"),
];

/// `admission/v1.AdmissionRequest` as the API server fills it for a
/// user's request (k8s.io/apiserver
/// `pkg/admission/plugin/webhook/request/admissionreview.go`,
/// `CreateV1AdmissionReview`): `kind`/`resource` of the object's REST
/// mapping, the same as `requestKind`/`requestResource` when nothing is
/// converted; the request's `subResource`, `name` and `namespace`; the
/// caller (the cluster's admin); `object` and `oldObject` as the operation
/// carries them; `dryRun`; the operation's options.
fn admission_request(
    operation: &str,
    object: &Value,
    old: Option<&Value>,
    namespace: &str,
    sub_resource: Option<&str>,
) -> Value {
    let kind = object["kind"].as_str().expect("a kind");
    let (_, group, version, resource) = RESOURCES
        .iter()
        .find(|(k, ..)| *k == kind)
        .unwrap_or_else(|| panic!("no REST mapping for {kind} in RESOURCES"));
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    let (sent, old_sent) = match operation {
        "CREATE" | "UPDATE" => (Some(object), old),
        "DELETE" => (None, Some(old.unwrap_or(object))),
        _ => (None, None),
    };
    let mut request = json!({
        "uid": "00000000-0000-4000-8000-000000000001",
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": object["metadata"]["name"],
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": sent,
        "dryRun": false,
    });
    if let Some(old) = old_sent {
        request["oldObject"] = old.clone();
    }
    if let Some(sub) = sub_resource {
        request["subResource"] = sub.into();
        request["requestSubResource"] = sub.into();
    }
    let options = match operation {
        "CREATE" => Some("CreateOptions"),
        "UPDATE" => Some("UpdateOptions"),
        "DELETE" => Some("DeleteOptions"),
        _ => None,
    };
    if let Some(options) = options {
        request["options"] = json!({"kind": options, "apiVersion": "meta.k8s.io/v1"});
    }
    request
}

/// The tool's verdict on a row: `sent` or `skipped`, and why.
fn verdict(config: &Config, row: &Value) -> (String, String) {
    let request = request(row);
    let namespace = request["namespace"].as_str().unwrap_or_default().to_owned();
    let namespace_labels = labels(row, "namespaceLabels");
    let mut sent = config
        .sent_for_object(&request)
        .and(config.sent_for_namespace(&namespace, Some(&namespace_labels)));
    // A cluster without matchConditions (before Kubernetes 1.28) installs
    // the webhook without them.
    if row["matchConditionsSupported"] != false {
        sent = sent.and(config.sent_for_conditions(&request));
    }
    match sent {
        Sent::Yes => ("sent".into(), "every filter matches".into()),
        Sent::No(why) => ("skipped".into(), why),
        Sent::Unknown(why) => ("unknown".into(), why),
    }
}

#[test]
fn every_selection_table_as_the_tool_decides_it() {
    let dir = root().join("test_data/selection");
    let mut tables: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("test_data/selection")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    tables.sort();
    assert!(!tables.is_empty(), "no tables in {}", dir.display());
    let (mut rows, mut failures) = (0, Vec::new());
    for table in &tables {
        let text = std::fs::read_to_string(table).expect("a table");
        let table_value: Value = serde_yaml::from_str(&text).expect("a YAML table");
        let example = root().join(table_value["example"].as_str().expect("example"));
        let config = Config::load(None, Some(example.to_str().expect("path")), "kubewarden")
            .unwrap_or_else(|e| panic!("{}: {e}", example.display()));
        let policy = config.policy.as_ref().expect("a policy manifest");
        assert_eq!(
            policy.name,
            table_value["policy"].as_str().unwrap_or_default(),
            "{}",
            table.display()
        );
        for row in table_value["rows"].as_array().expect("rows") {
            rows += 1;
            let (got, why) = verdict(&config, row);
            let want = row["expect"].as_str().unwrap_or_default();
            if got != want {
                failures.push(format!(
                    "{}: {}: {got}, expected {want} ({why})",
                    table.file_name().unwrap_or_default().to_string_lossy(),
                    row["case"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    assert!(rows > 0);
    assert!(
        failures.is_empty(),
        "{} of {rows} rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
