//! Where the pod template lives in each handled kind, and what it says.
//!
//! Job: `spec.template`; CronJob: `spec.jobTemplate.spec.template`; Pod: the
//! Pod itself. For a CronJob, `istioctl kube-inject` writes the injection
//! status on `spec.jobTemplate.metadata`, not on the pod template (facts.md),
//! so that metadata is read too.

use crate::json::{Node, ShapeError};
use crate::request::{self, Annotations, Container, Meta, Obj, PodSpec};
use serde_json::value::RawValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Job,
    CronJob,
    Pod,
}

impl Kind {
    /// The kinds this policy handles, by the request's group and kind.
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

    /// Path from the object to its pod template (`{metadata, spec}`).
    pub fn template_path(self) -> &'static [&'static str] {
        match self {
            Kind::Job => &["spec", "template"],
            Kind::CronJob => &["spec", "jobTemplate", "spec", "template"],
            Kind::Pod => &[],
        }
    }
}

/// What decisions and modes read of a handled object.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Workload<'a> {
    /// The object's own metadata (Job, CronJob; for a Pod, the Pod's).
    pub object_meta: Meta<'a>,
    /// `spec.jobTemplate.metadata` of a CronJob; empty otherwise.
    pub job_template_meta: Meta<'a>,
    /// The pod template's metadata (for a Pod, the Pod's).
    pub template_meta: Meta<'a>,
    pub spec: PodSpec<'a>,
}

/// Where `sidecar.istio.io/status` was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusAt {
    Template,
    JobTemplate,
}

impl<'a> Workload<'a> {
    /// Read the object through the view of its kind. `Ok(None)` when it has
    /// no pod template; an error names the field of the wrong type.
    pub fn read(kind: Kind, object: &'a RawValue) -> Result<Option<Workload<'a>>, String> {
        let text = object.get();
        let err = |e: serde_json::Error| without_position(&e);
        let meta = |m: Option<Obj<Meta<'a>>>| m.map(Obj::into_inner).unwrap_or_default();
        let spec = |s: Option<Obj<PodSpec<'a>>>| s.map(Obj::into_inner).unwrap_or_default();
        Ok(match kind {
            Kind::Pod => {
                let pod = serde_json::from_str::<Obj<request::Pod>>(text)
                    .map_err(err)?
                    .0;
                let pod_meta = meta(pod.metadata);
                Some(Workload {
                    object_meta: pod_meta.clone(),
                    job_template_meta: Meta::default(),
                    template_meta: pod_meta,
                    spec: spec(pod.spec),
                })
            }
            Kind::Job => {
                let job = serde_json::from_str::<Obj<request::Job>>(text)
                    .map_err(err)?
                    .0;
                let template = job.spec.and_then(|s| s.0.template);
                template.map(|t| Workload {
                    object_meta: meta(job.metadata),
                    job_template_meta: Meta::default(),
                    template_meta: meta(t.0.metadata),
                    spec: spec(t.0.spec),
                })
            }
            Kind::CronJob => {
                let cron = serde_json::from_str::<Obj<request::CronJob>>(text)
                    .map_err(err)?
                    .0;
                let job_template = cron.spec.and_then(|s| s.0.job_template);
                job_template.and_then(|jt| {
                    let jt = jt.0;
                    let template = jt.spec.and_then(|s| s.0.template)?.0;
                    Some(Workload {
                        object_meta: meta(cron.metadata),
                        job_template_meta: meta(jt.metadata),
                        template_meta: meta(template.metadata),
                        spec: spec(template.spec),
                    })
                })
            }
        })
    }

    pub fn template_annotations(&self) -> Option<&Annotations<'a>> {
        self.template_meta.annotations.as_deref()
    }

    /// The per-workload mode annotation: on the template, else on the object.
    pub fn mode_annotation(&self) -> Option<&str> {
        fn mode<'m>(m: &'m Meta) -> Option<&'m str> {
            m.annotations.as_deref().and_then(|a| a.mode.as_deref())
        }
        mode(&self.template_meta).or_else(|| mode(&self.object_meta))
    }

    /// Where Istio recorded an injection, if it did.
    pub fn injection_status(&self) -> Option<(StatusAt, &str)> {
        fn status<'m>(m: &'m Meta) -> Option<&'m str> {
            m.annotations.as_deref().and_then(|a| a.status.as_deref())
        }
        status(&self.template_meta)
            .map(|s| (StatusAt::Template, s))
            .or_else(|| status(&self.job_template_meta).map(|s| (StatusAt::JobTemplate, s)))
    }

    /// Injection switched off for this pod, the way Istio's injector reads it:
    /// the label first, then the legacy annotation; any non-empty value other
    /// than y/yes/true/on means "do not inject".
    pub fn injection_disabled(&self) -> bool {
        let label = self
            .template_meta
            .labels
            .as_ref()
            .and_then(|l| l.inject.as_deref());
        let annotation = self
            .template_annotations()
            .and_then(|a| a.inject.as_deref());
        match label.filter(|v| !v.is_empty()).or(annotation) {
            None | Some("") => false,
            Some(v) => !matches!(v.to_ascii_lowercase().as_str(), "y" | "yes" | "true" | "on"),
        }
    }

    pub fn containers(&self) -> &[Obj<Container<'a>>] {
        self.spec.containers.as_deref().unwrap_or_default()
    }

    pub fn init_containers(&self) -> &[Obj<Container<'a>>] {
        self.spec.init_containers.as_deref().unwrap_or_default()
    }
}

/// The pod template of `object` in the edit tree.
pub fn template_mut<'n, 'a>(
    kind: Kind,
    object: &'n mut Node<'a>,
) -> Result<&'n mut Node<'a>, ShapeError> {
    object
        .path_mut(kind.template_path())?
        .ok_or_else(|| ShapeError(format!("{} has no pod template", kind.as_str())))
}

/// `metadata.annotations` of `owner` (a template or the jobTemplate),
/// created when absent.
pub fn annotations_mut<'n, 'a>(owner: &'n mut Node<'a>) -> Result<&'n mut Node<'a>, ShapeError> {
    owner.object_entry("metadata")?.object_entry("annotations")
}

/// A serde error without its "at line L column C": positions in the
/// object's JSON mean nothing to the user reading the warning.
pub fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}
