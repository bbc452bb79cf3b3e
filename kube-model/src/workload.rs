//! Where a workload's pod template is, as Kubernetes' API types place it
//! (k8s.io/api `batch/v1/types.go`: `JobSpec.Template`, a
//! `PodTemplateSpec`; `CronJobSpec.JobTemplate`, a `JobTemplateSpec` whose
//! `Spec` is a `JobSpec`; a Pod is its own), for every tool and test that
//! reads or writes one. The policy keeps its own statement of the same
//! paths; `tests/model_agreement.rs` compares the two.

use serde_json::Value;

/// The kinds whose pod template the tools and tests reach: Job and
/// CronJob (group `batch`) and Pod (the core group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Job,
    CronJob,
    Pod,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Job, Kind::CronJob, Kind::Pod];

    /// The kind of a request's `kind` (group and kind; the version does
    /// not move the template).
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Kind> {
        match (group, kind) {
            ("batch", "Job") => Some(Kind::Job),
            ("batch", "CronJob") => Some(Kind::CronJob),
            ("", "Pod") => Some(Kind::Pod),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
            Kind::Pod => "Pod",
        }
    }

    /// The path from the object to its pod template (`{metadata, spec}`).
    pub fn template_path(self) -> &'static [&'static str] {
        match self {
            Kind::Job => &["spec", "template"],
            Kind::CronJob => &["spec", "jobTemplate", "spec", "template"],
            Kind::Pod => &[],
        }
    }
}

/// The kind of `object` among `Kind`'s, by its `kind`.
pub fn kind_of(object: &Value) -> Option<Kind> {
    let group = match object["kind"].as_str()? {
        "Job" | "CronJob" => "batch",
        _ => "",
    };
    Kind::from_group_kind(group, object["kind"].as_str()?)
}

/// The pod template of a Job or CronJob; a Pod (or any other object) is
/// its own.
pub fn pod_template(object: &Value) -> &Value {
    match kind_of(object) {
        Some(kind) => kind.template_path().iter().fold(object, |v, key| &v[*key]),
        None => object,
    }
}

/// `pod_template`, to write: members on the way that are missing (or null)
/// become objects.
pub fn pod_template_mut(object: &mut Value) -> &mut Value {
    match kind_of(object) {
        Some(kind) => kind
            .template_path()
            .iter()
            .fold(object, |v, key| &mut v[*key]),
        None => object,
    }
}

/// The pod template of `kind` as a JSON Pointer (`""` for a Pod).
pub fn template_pointer(kind: Kind) -> String {
    kind.template_path()
        .iter()
        .map(|key| format!("/{key}"))
        .collect()
}

/// The pod template's spec as the API server names a field in its errors
/// (`spec.template.spec`; `spec` for a Pod).
pub fn template_spec_field(kind: Kind) -> String {
    let mut path: Vec<&str> = kind.template_path().to_vec();
    path.push("spec");
    path.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_template_is_where_the_policy_reads_it() {
        let cronjob =
            json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"a": 1}}}}});
        assert_eq!(pod_template(&cronjob), &json!({"a": 1}));
        assert_eq!(
            template_pointer(Kind::CronJob),
            "/spec/jobTemplate/spec/template"
        );
        assert_eq!(template_pointer(Kind::Pod), "");
        assert_eq!(template_spec_field(Kind::Job), "spec.template.spec");
        assert_eq!(template_spec_field(Kind::Pod), "spec");
        let mut job = json!({"kind": "Job"});
        pod_template_mut(&mut job)["metadata"] = json!({});
        assert_eq!(
            job,
            json!({"kind": "Job", "spec": {"template": {"metadata": {}}}})
        );
        let deployment = json!({"kind": "Deployment"});
        assert_eq!(pod_template(&deployment), &deployment);
    }
}
