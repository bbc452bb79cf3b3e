//! The two hops of a workload that Kubernetes' controllers make, copying
//! only what the real controllers copy:
//!
//! - CronJob -> Job: `pkg/controller/cronjob/utils.go`, `getJobFromTemplate2`:
//!   the labels and annotations of `spec.jobTemplate.metadata` (plus
//!   `batch.kubernetes.io/cronjob-scheduled-timestamp`), a name made of the
//!   CronJob's and the scheduled minute, the controller reference, and a
//!   deep copy of `spec.jobTemplate.spec`. The CronJob's own metadata is
//!   not copied.
//! - Job -> Pod: `pkg/controller/controller_utils.go`, `GetPodFromTemplate`,
//!   called by the Job controller (`pkg/controller/job/job_controller.go`):
//!   the labels, annotations and finalizers of `spec.template.metadata`, a
//!   `generateName` from the Job's name, the controller reference, a deep
//!   copy of `spec.template.spec`, the `batch.kubernetes.io/job-tracking`
//!   finalizer, and for an Indexed Job (`indexed_job_utils.go`) its
//!   completion index as annotation and label, the name prefix
//!   `<job>-<index>-`, the hostname `<job>-<index>`, and the variable
//!   `JOB_COMPLETION_INDEX` in every container and init container that
//!   has none (`addCompletionIndexEnvVariables`). The Job's own metadata
//!   is not copied.

use serde_json::{json, Map, Value};

/// The Job the CronJob controller creates for the run scheduled at
/// `minute` (minutes since the epoch).
pub fn job_from_cronjob(cronjob: &Value, minute: i64) -> Value {
    let template = &cronjob["spec"]["jobTemplate"];
    let mut annotations = copy_map(&template["metadata"]["annotations"]);
    let scheduled = rfc3339(minute);
    annotations.insert(
        "batch.kubernetes.io/cronjob-scheduled-timestamp".into(),
        Value::from(scheduled.clone()),
    );
    let name = format!(
        "{}-{minute}",
        cronjob["metadata"]["name"].as_str().unwrap_or_default()
    );
    let mut metadata = Map::new();
    let labels = copy_map(&template["metadata"]["labels"]);
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    metadata.insert("annotations".into(), Value::Object(annotations));
    metadata.insert("name".into(), Value::from(name));
    if let Some(namespace) = cronjob["metadata"].get("namespace") {
        metadata.insert("namespace".into(), namespace.clone());
    }
    metadata.insert("creationTimestamp".into(), Value::from(scheduled));
    metadata.insert(
        "ownerReferences".into(),
        json!([controller_ref(cronjob, "batch/v1", "CronJob")]),
    );
    let mut job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata});
    if !template["spec"].is_null() {
        job["spec"] = template["spec"].clone();
    }
    job
}

/// The Pod the Job controller creates for `job` (completion `index` of an
/// Indexed Job).
pub fn pod_from_job(job: &Value, index: u32) -> Value {
    let template = &job["spec"]["template"];
    let mut metadata = Map::new();
    let mut labels = copy_map(&template["metadata"]["labels"]);
    let mut annotations = copy_map(&template["metadata"]["annotations"]);
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    let indexed = job["spec"]["completionMode"] == "Indexed";
    if indexed {
        let index = Value::from(index.to_string());
        annotations.insert(INDEX_KEY.into(), index.clone());
        labels.insert(INDEX_KEY.into(), index);
    }
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let generate_name = if indexed {
        format!("{name}-{index}-")
    } else {
        format!("{name}-")
    };
    metadata.insert("generateName".into(), Value::from(generate_name));
    if let Some(namespace) = job["metadata"].get("namespace") {
        metadata.insert("namespace".into(), namespace.clone());
    }
    let mut finalizers = template["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    finalizers.push(Value::from("batch.kubernetes.io/job-tracking"));
    metadata.insert("finalizers".into(), Value::Array(finalizers));
    metadata.insert(
        "ownerReferences".into(),
        json!([controller_ref(job, "batch/v1", "Job")]),
    );
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata});
    if !template["spec"].is_null() {
        pod["spec"] = template["spec"].clone();
    }
    if indexed {
        add_completion_index(&mut pod["spec"], &format!("{name}-{index}"));
    }
    pod
}

/// The completion index of an Indexed Job's Pods: the annotation and label.
const INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";

/// What an Indexed Job's Pod spec gets: its hostname, and
/// `JOB_COMPLETION_INDEX` from the index label (`PodIndexLabel`, on by
/// default since Kubernetes 1.28) in every container that lacks it.
fn add_completion_index(spec: &mut Value, hostname: &str) {
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    spec.insert("hostname".into(), Value::from(hostname));
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut().filter(|c| c.is_object()) {
            let has = container["env"]
                .as_array()
                .is_some_and(|env| env.iter().any(|v| v["name"] == "JOB_COMPLETION_INDEX"));
            if has {
                continue;
            }
            let var = json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": format!("metadata.labels['{INDEX_KEY}']")}}});
            match container.get_mut("env").and_then(Value::as_array_mut) {
                Some(env) => env.push(var),
                None => container["env"] = json!([var]),
            }
        }
    }
}

fn copy_map(value: &Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// `minute` (since the epoch) as RFC 3339 in UTC, as Go's
/// `time.RFC3339` writes it.
fn rfc3339(minute: i64) -> String {
    crate::time::format_rfc3339(minute * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_gets_the_job_templates_metadata_only() {
        let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "c", "namespace": "n", "uid": "u", "annotations": {"own": "x"}},
            "spec": {"schedule": "@hourly", "jobTemplate": {
                "metadata": {"annotations": {"jt": "y"}, "labels": {"l": "1"}},
                "spec": {"template": {"spec": {"containers": []}}}}}});
        let job = job_from_cronjob(&cronjob, 29_420_000);
        assert_eq!(job["metadata"]["name"], "c-29420000");
        assert_eq!(job["metadata"]["annotations"]["jt"], "y");
        assert_eq!(job["metadata"]["annotations"]["own"], Value::Null);
        assert_eq!(
            job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
            "2025-12-08T13:20:00Z"
        );
        assert_eq!(job["metadata"]["labels"]["l"], "1");
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        assert_eq!(job["spec"], cronjob["spec"]["jobTemplate"]["spec"]);
    }

    #[test]
    fn a_pod_gets_the_templates_metadata_only() {
        let job = json!({"kind": "Job", "metadata": {"name": "j", "namespace": "n", "annotations": {"own": "x"}},
            "spec": {"completionMode": "Indexed", "template": {"metadata": {"annotations": {"t": "1"}}, "spec": {"containers": [{"name": "a"}]}}}});
        let pod = pod_from_job(&job, 2);
        assert_eq!(pod["metadata"]["annotations"]["t"], "1");
        assert_eq!(pod["metadata"]["annotations"]["own"], Value::Null);
        assert_eq!(
            pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
            "2"
        );
        assert_eq!(pod["metadata"]["generateName"], "j-2-");
        assert_eq!(pod["spec"]["hostname"], "j-2");
        assert_eq!(
            pod["spec"]["containers"][0]["env"],
            json!([{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}])
        );
        let plain = json!({"kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
        let pod = pod_from_job(&plain, 0);
        assert_eq!(pod["metadata"]["generateName"], "j-");
        assert_eq!(pod["spec"], plain["spec"]["template"]["spec"]);
    }
}
