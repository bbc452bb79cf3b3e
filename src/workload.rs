//! Where the pod template lives in each handled kind, and what it says.
//!
//! Job: `spec.template`; CronJob: `spec.jobTemplate.spec.template`; Pod: the
//! Pod itself. For a CronJob, `istioctl kube-inject` writes the injection
//! status on `spec.jobTemplate.metadata`, not on the pod template, and the
//! CronJob controller copies that metadata onto each Job's own metadata
//! (docs/facts.md, "The journey of a workload"): so the status is read there
//! too, on the CronJob and on the Job.

use crate::json::{Expansion, Node, ShapeError};
use crate::names::{
    Kind, ANNOTATIONS_LIMIT, ANNOTATION_APPLIED, ANNOTATION_INJECT_TEMPLATES, ANNOTATION_MODE,
    ANNOTATION_NATIVE_SIDECAR, ANNOTATION_OWNER_MODE, ANNOTATION_PROXY_CONFIG,
    ANNOTATION_QUIT_WRAPPED, ANNOTATION_STATUS, ANNOTATION_STATUS_PORT, INJECT,
};
use crate::record::Record;
use std::borrow::Cow;

/// The annotations and labels decisions read of a metadata; all others are
/// skipped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Meta<'a> {
    pub annotations: Option<Annotations<'a>>,
    pub labels: Option<Labels<'a>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Annotations<'a> {
    pub mode: Option<Cow<'a, str>>,
    pub owner_mode: Option<Cow<'a, str>>,
    pub applied: Option<Cow<'a, str>>,
    pub quit_wrapped: Option<Cow<'a, str>>,
    pub status: Option<Cow<'a, str>>,
    pub native_sidecar: Option<Cow<'a, str>>,
    pub inject_templates: Option<Cow<'a, str>>,
    pub proxy_config: Option<Cow<'a, str>>,
    pub status_port: Option<Cow<'a, str>>,
    pub inject: Option<Cow<'a, str>>,
}

impl<'a> Annotations<'a> {
    /// The field for annotation `key`, if it is one decisions read.
    pub fn field(&mut self, key: &str) -> Option<&mut Option<Cow<'a, str>>> {
        Some(match key {
            ANNOTATION_MODE => &mut self.mode,
            ANNOTATION_OWNER_MODE => &mut self.owner_mode,
            ANNOTATION_APPLIED => &mut self.applied,
            ANNOTATION_QUIT_WRAPPED => &mut self.quit_wrapped,
            ANNOTATION_STATUS => &mut self.status,
            ANNOTATION_NATIVE_SIDECAR => &mut self.native_sidecar,
            ANNOTATION_INJECT_TEMPLATES => &mut self.inject_templates,
            ANNOTATION_PROXY_CONFIG => &mut self.proxy_config,
            ANNOTATION_STATUS_PORT => &mut self.status_port,
            INJECT => &mut self.inject,
            _ => return None,
        })
    }

    /// An annotation read here that alone, key and value, is past what
    /// the annotations may total: its key and its value's length.
    pub fn oversized(&self) -> Option<(&'static str, usize)> {
        let Annotations {
            mode,
            owner_mode,
            applied,
            quit_wrapped,
            status,
            native_sidecar,
            inject_templates,
            proxy_config,
            status_port,
            inject,
        } = self;
        [
            (ANNOTATION_MODE, mode),
            (ANNOTATION_OWNER_MODE, owner_mode),
            (ANNOTATION_APPLIED, applied),
            (ANNOTATION_QUIT_WRAPPED, quit_wrapped),
            (ANNOTATION_STATUS, status),
            (ANNOTATION_NATIVE_SIDECAR, native_sidecar),
            (ANNOTATION_INJECT_TEMPLATES, inject_templates),
            (ANNOTATION_PROXY_CONFIG, proxy_config),
            (ANNOTATION_STATUS_PORT, status_port),
            (INJECT, inject),
        ]
        .into_iter()
        .find_map(|(key, value)| {
            let len = value.as_deref()?.len();
            (key.len().saturating_add(len) > ANNOTATIONS_LIMIT).then_some((key, len))
        })
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Labels<'a> {
    /// `sidecar.istio.io/inject`; `Some("")` when present and empty, which
    /// Istio reads differently from absent.
    pub inject: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodSpec<'a> {
    pub restart_policy: Option<Cow<'a, str>>,
    /// `hostNetwork: true`: Istio never injects such a pod.
    pub host_network: bool,
    pub containers: Option<Vec<Container<'a>>>,
    pub init_containers: Option<Vec<Container<'a>>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Container<'a> {
    pub name: Option<Cow<'a, str>>,
    pub restart_policy: Option<Cow<'a, str>>,
    /// Whether the container sets `command` (its content is read by the mode
    /// that needs it, from the object itself).
    pub has_command: bool,
}

/// What decisions and modes read of a handled object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload<'a> {
    pub kind: Kind,
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
    /// A CronJob's `spec.jobTemplate.metadata`.
    JobTemplate,
    /// A Job's own `metadata` (a Job made from a kube-injected CronJob).
    Object,
}

/// What `istio-job-sidecar/owner-mode` on the pod template must become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerMode<'w> {
    Set(&'w str),
    Remove,
}

const META: Expansion = Expansion::Object(&[
    ("annotations", Expansion::Object(&[])),
    ("labels", Expansion::Object(&[])),
]);
const CONTAINERS: Expansion = Expansion::Items(&Expansion::Object(&[]));
const POD_SPEC: Expansion =
    Expansion::Object(&[("containers", CONTAINERS), ("initContainers", CONTAINERS)]);
const TEMPLATE: Expansion = Expansion::Object(&[("metadata", META), ("spec", POD_SPEC)]);
/// A Pod's spec is expanded one level only: most Pods are answered by
/// `restartPolicy` alone, and their containers are read only when needed.
const POD: Expansion = Expansion::Object(&[("metadata", META), ("spec", Expansion::Object(&[]))]);
const JOB: Expansion = Expansion::Object(&[
    ("metadata", META),
    ("spec", Expansion::Object(&[("template", TEMPLATE)])),
]);
const CRON_JOB: Expansion = Expansion::Object(&[
    ("metadata", META),
    (
        "spec",
        Expansion::Object(&[(
            "jobTemplate",
            Expansion::Object(&[
                ("metadata", META),
                ("spec", Expansion::Object(&[("template", TEMPLATE)])),
            ]),
        )]),
    ),
]);
/// For a request whose kind comes after its object: every kind's paths.
const ANY: Expansion = Expansion::Object(&[
    ("metadata", META),
    (
        "spec",
        Expansion::Object(&[
            ("containers", CONTAINERS),
            ("initContainers", CONTAINERS),
            ("template", TEMPLATE),
            (
                "jobTemplate",
                Expansion::Object(&[
                    ("metadata", META),
                    ("spec", Expansion::Object(&[("template", TEMPLATE)])),
                ]),
            ),
        ]),
    ),
]);

/// The parts of an object of `kind` (any handled kind when unknown) that
/// are expanded while the payload is read.
pub fn expansion(kind: Option<Kind>) -> &'static Expansion {
    match kind {
        Some(Kind::Pod) => &POD,
        Some(Kind::Job) => &JOB,
        Some(Kind::CronJob) => &CRON_JOB,
        None => &ANY,
    }
}

/// `spec.restartPolicy` of a Pod, read without reading the rest.
pub fn restart_policy<'a>(object: &mut Node<'a>) -> Result<Option<Cow<'a, str>>, String> {
    let root = Path::Root;
    match member(object, &root, "spec")? {
        Some(spec) => member_string(spec, &root.key("spec"), "restartPolicy"),
        None => Ok(None),
    }
}

impl<'a> Workload<'a> {
    /// Read the object through the view of its kind. `Ok(None)` when it has
    /// no pod template; an error names the field of the wrong type.
    pub fn read(kind: Kind, object: &mut Node<'a>) -> Result<Option<Workload<'a>>, String> {
        let root = Path::Root;
        let mut workload = Workload {
            kind,
            object_meta: read_meta(object, &root)?,
            job_template_meta: Meta::default(),
            template_meta: Meta::default(),
            spec: PodSpec::default(),
        };
        if kind == Kind::Pod {
            workload.template_meta = workload.object_meta.clone();
            workload.spec = read_spec(object, &root)?;
            return Ok(Some(workload));
        }
        let Some(spec) = member(object, &root, "spec")? else {
            return Ok(None);
        };
        let at_spec = root.key("spec");
        let (job_spec, at_job_spec) = match kind {
            Kind::CronJob => {
                let Some(job_template) = member(spec, &at_spec, "jobTemplate")? else {
                    return Ok(None);
                };
                let at = at_spec.key("jobTemplate");
                workload.job_template_meta = read_meta(job_template, &at)?;
                match member(job_template, &at, "spec")? {
                    Some(job_spec) => (job_spec, Path::Key(&at_spec, "jobTemplate.spec")),
                    None => return Ok(None),
                }
            }
            _ => (spec, at_spec),
        };
        let Some(template) = member(job_spec, &at_job_spec, "template")? else {
            return Ok(None);
        };
        let at = at_job_spec.key("template");
        workload.template_meta = read_meta(template, &at)?;
        workload.spec = read_spec(template, &at)?;
        Ok(Some(workload))
    }

    pub fn template_annotations(&self) -> Option<&Annotations<'a>> {
        self.template_meta.annotations.as_ref()
    }

    /// What the policy recorded on the template of its earlier edits.
    pub fn record(&self) -> Record {
        let annotations = self.template_annotations();
        Record::read(
            annotations.and_then(|a| a.applied.as_deref()),
            annotations.and_then(|a| a.quit_wrapped.as_deref()),
        )
    }

    /// Whether the template carries a record, readable or not.
    pub fn has_record(&self) -> bool {
        self.template_annotations()
            .is_some_and(|a| a.applied.is_some() || a.quit_wrapped.is_some())
    }

    /// The per-workload mode annotation, nearest the pod first: on the pod
    /// template; else on the owner's metadata: a Job's own (and, for a Job
    /// a CronJob made, the CronJob's word its template carries as
    /// `istio-job-sidecar/owner-mode`), a CronJob's
    /// `spec.jobTemplate.metadata` (each Job's own), then the CronJob's own.
    /// A Pod reads its own annotation, then the owner's word its template
    /// carried down.
    pub fn mode_annotation(&self) -> Option<&str> {
        mode_of(&self.template_meta).or_else(|| match self.kind {
            Kind::Pod => owner_mode_of(&self.template_meta),
            Kind::Job => mode_of(&self.object_meta).or_else(|| owner_mode_of(&self.template_meta)),
            Kind::CronJob => self.owner_mode(),
        })
    }

    /// The mode the owner asked for on its own metadata: what the pod
    /// template must carry down as `istio-job-sidecar/owner-mode`.
    fn owner_mode(&self) -> Option<&str> {
        match self.kind {
            Kind::Pod => None,
            Kind::Job => mode_of(&self.object_meta),
            Kind::CronJob => {
                mode_of(&self.job_template_meta).or_else(|| mode_of(&self.object_meta))
            }
        }
    }

    /// How `istio-job-sidecar/owner-mode` must change so that every Job and
    /// Pod made from this object reads the mode its owner asked for;
    /// `None` when it is right. Only where the template has no mode of its
    /// own (which wins anyway). A CronJob's is brought up to date on every
    /// update, removed with the owner's annotation; a Job's template cannot
    /// change after its creation, and a Job a CronJob made without a mode
    /// of its own keeps the CronJob's.
    pub fn owner_mode_edit(&self) -> Option<OwnerMode<'_>> {
        if self.kind == Kind::Pod || mode_of(&self.template_meta).is_some() {
            return None;
        }
        let carried = owner_mode_of(&self.template_meta);
        match (self.owner_mode(), carried) {
            (Some(asked), carried) if carried != Some(asked) => Some(OwnerMode::Set(asked)),
            (None, Some(_)) if self.kind == Kind::CronJob => Some(OwnerMode::Remove),
            _ => None,
        }
    }

    /// Where Istio recorded an injection, if it did: on the pod template,
    /// else where `istioctl kube-inject` wrote it for a CronJob and where
    /// the CronJob controller then copies it (the Job's own metadata).
    /// An annotation the policy reads, on any of the object's metadata,
    /// too large for the API server to store the object (`Annotations::
    /// oversized`).
    pub fn oversized(&self) -> Option<(&'static str, usize)> {
        [
            &self.object_meta,
            &self.job_template_meta,
            &self.template_meta,
        ]
        .into_iter()
        .find_map(|m| m.annotations.as_ref().and_then(Annotations::oversized))
    }

    pub fn injection_status(&self) -> Option<(StatusAt, &str)> {
        fn status<'m>(m: &'m Meta) -> Option<&'m str> {
            m.annotations.as_ref().and_then(|a| a.status.as_deref())
        }
        let kube_injected = match self.kind {
            Kind::CronJob => Some((StatusAt::JobTemplate, &self.job_template_meta)),
            Kind::Job => Some((StatusAt::Object, &self.object_meta)),
            Kind::Pod => None,
        };
        status(&self.template_meta)
            .map(|s| (StatusAt::Template, s))
            .or_else(|| kube_injected.and_then(|(at, m)| status(m).map(|s| (at, s))))
    }

    /// `status.sidecar.istio.io/port`, when the pod sets it: on the
    /// template, else where the injection status of a kube-injected
    /// CronJob is (its jobTemplate, or its Job's own metadata). A value that
    /// is no port number is 0, no status server, as pilot-agent reads it
    /// (`pilot/cmd/pilot-agent/config/config.go`, `applyAnnotations`:
    /// `strconv.Atoi`'s 0 on an error; Istio's injector refuses such a Pod).
    pub fn status_port(&self) -> Option<u16> {
        let kube_injected = match self.kind {
            Kind::CronJob => &self.job_template_meta,
            Kind::Job => &self.object_meta,
            Kind::Pod => &self.template_meta,
        };
        [&self.template_meta, kube_injected]
            .into_iter()
            .find_map(|m| m.annotations.as_ref()?.status_port.as_deref())
            .map(|port| port.parse().unwrap_or(0))
    }

    /// Istio's injector will not inject this pod, read as Istio reads it
    /// (`pkg/kube/inject/inject.go`, `injectRequired`): never a pod on the
    /// host's network; else the label `sidecar.istio.io/inject` when
    /// present, even empty, the legacy annotation only without the label,
    /// and of their values only the exact `"false"` says no (`"true"` says
    /// yes, anything else, `""` included, leaves it to the namespace,
    /// which the webhook that called the policy already selected).
    pub fn injection_off(&self) -> bool {
        if self.spec.host_network {
            return true;
        }
        let label = self
            .template_meta
            .labels
            .as_ref()
            .and_then(|l| l.inject.as_deref());
        let annotation = self
            .template_annotations()
            .and_then(|a| a.inject.as_deref());
        label.or(annotation) == Some("false")
    }

    /// A container (regular or init) of this name.
    pub fn has_container(&self, name: &str) -> bool {
        self.containers()
            .iter()
            .chain(self.init_containers())
            .any(|c| c.name.as_deref() == Some(name))
    }

    pub fn containers(&self) -> &[Container<'a>] {
        self.spec.containers.as_deref().unwrap_or_default()
    }

    pub fn init_containers(&self) -> &[Container<'a>] {
        self.spec.init_containers.as_deref().unwrap_or_default()
    }
}

/// A JSON path for messages (`spec.template.spec.containers[1]`), built
/// on the stack and written out only when there is an error to report.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl<'p> Path<'p> {
    fn key(&'p self, key: &'p str) -> Path<'p> {
        Path::Key(self, key)
    }

    fn index(&'p self, i: usize) -> Path<'p> {
        Path::Index(self, i)
    }

    fn write(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.write(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Path::Index(parent, i) => {
                parent.write(out);
                out.push_str(&format!("[{i}]"));
            }
        }
    }

    fn error(&self, e: ShapeError) -> String {
        let mut out = String::new();
        self.write(&mut out);
        if out.is_empty() {
            out.push_str("the object");
        }
        format!("{out}: {e}")
    }
}

/// Member `key` of the object `node`, unless absent or null.
fn member<'n, 'a>(
    node: &'n mut Node<'a>,
    at: &Path,
    key: &str,
) -> Result<Option<&'n mut Node<'a>>, String> {
    node.get_mut(key).map_err(|e| at.error(e))
}

fn member_string<'a>(
    node: &mut Node<'a>,
    at: &Path,
    key: &str,
) -> Result<Option<Cow<'a, str>>, String> {
    match member(node, at, key)? {
        Some(child) => child.read_string().map_err(|e| at.key(key).error(e)),
        None => Ok(None),
    }
}

/// `istio-job-sidecar/mode` of a metadata.
fn mode_of<'m>(m: &'m Meta) -> Option<&'m str> {
    m.annotations.as_ref().and_then(|a| a.mode.as_deref())
}

/// `istio-job-sidecar/owner-mode` of a metadata.
fn owner_mode_of<'m>(m: &'m Meta) -> Option<&'m str> {
    m.annotations.as_ref().and_then(|a| a.owner_mode.as_deref())
}

/// The annotations and labels decisions read, of `parent.metadata`.
fn read_meta<'a>(parent: &mut Node<'a>, at: &Path) -> Result<Meta<'a>, String> {
    let mut meta = Meta::default();
    let Some(metadata) = member(parent, at, "metadata")? else {
        return Ok(meta);
    };
    let at = at.key("metadata");
    if let Some(annotations) = member(metadata, &at, "annotations")? {
        let at = at.key("annotations");
        let mut read = Annotations::default();
        for (key, value) in annotations.members_mut().map_err(|e| at.error(e))? {
            if let Some(field) = read.field(key) {
                *field = value.read_string().map_err(|e| at.key(key).error(e))?;
            }
        }
        meta.annotations = Some(read);
    }
    if let Some(labels) = member(metadata, &at, "labels")? {
        let at = at.key("labels");
        let mut read = Labels::default();
        for (key, value) in labels.members_mut().map_err(|e| at.error(e))? {
            if key == INJECT {
                read.inject = value.read_string().map_err(|e| at.key(key).error(e))?;
            }
        }
        meta.labels = Some(read);
    }
    Ok(meta)
}

/// `restartPolicy` and the containers of `parent.spec`.
fn read_spec<'a>(parent: &mut Node<'a>, at: &Path) -> Result<PodSpec<'a>, String> {
    let Some(spec) = member(parent, at, "spec")? else {
        return Ok(PodSpec::default());
    };
    let at = at.key("spec");
    let host_network = match member(spec, &at, "hostNetwork")? {
        Some(value) => value
            .read_bool()
            .map_err(|e| at.key("hostNetwork").error(e))?,
        None => None,
    };
    Ok(PodSpec {
        restart_policy: member_string(spec, &at, "restartPolicy")?,
        host_network: host_network.unwrap_or(false),
        containers: read_containers(spec, &at, "containers")?,
        init_containers: read_containers(spec, &at, "initContainers")?,
    })
}

fn read_containers<'a>(
    spec: &mut Node<'a>,
    at: &Path,
    key: &str,
) -> Result<Option<Vec<Container<'a>>>, String> {
    let Some(list) = member(spec, at, key)? else {
        return Ok(None);
    };
    let at = at.key(key);
    let items = list.items_mut().map_err(|e| at.error(e))?;
    let mut containers = Vec::with_capacity(items.len());
    for (i, item) in items.iter_mut().enumerate() {
        let at = at.index(i);
        item.members_mut().map_err(|e| at.error(e))?;
        containers.push(Container {
            name: member_string(item, &at, "name")?,
            restart_policy: member_string(item, &at, "restartPolicy")?,
            has_command: member(item, &at, "command")?.is_some(),
        });
    }
    Ok(Some(containers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{json, Value};

    /// `f` on the workload read from `object` of `kind`.
    fn read<T>(kind: Kind, object: Value, f: impl FnOnce(&Workload) -> T) -> T {
        let text = object.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let mut node = Node::raw(raw);
        let workload = Workload::read(kind, &mut node).unwrap().unwrap();
        f(&workload)
    }

    fn meta(annotations: Value, labels: Value) -> Value {
        json!({"annotations": annotations, "labels": labels})
    }

    fn job(own: Value, template: Value, spec: Value) -> Value {
        json!({"metadata": own, "spec": {"template": {"metadata": template, "spec": spec}}})
    }

    /// An annotation read, on any metadata, whose key and value alone pass
    /// the limit; one byte less fits; an annotation not read is not
    /// counted (the API server's own check sees it).
    #[rstest]
    #[case::template(ANNOTATION_STATUS, false, 1, Some((ANNOTATION_STATUS, 1)))]
    #[case::own(ANNOTATION_APPLIED, true, 1, Some((ANNOTATION_APPLIED, 1)))]
    #[case::config_fits(ANNOTATION_PROXY_CONFIG, false, 0, None)]
    #[case::not_read("example.com/notes", false, 1, None)]
    fn oversized_annotations(
        #[case] key: &'static str,
        #[case] own: bool,
        #[case] over: usize,
        #[case] expected: Option<(&'static str, usize)>,
    ) {
        let len = ANNOTATIONS_LIMIT - key.len() + over;
        let annotations = meta(json!({key: "x".repeat(len)}), json!({}));
        let (own_meta, template) = if own {
            (annotations, json!({}))
        } else {
            (json!({}), annotations)
        };
        let object = job(own_meta, template, json!({}));
        let expected = expected.map(|(k, _)| (k, len));
        assert_eq!(read(Kind::Job, object, |w| w.oversized()), expected);
    }

    /// Injection off as Istio's `injectRequired` reads the pod: the label
    /// when present (even empty), else the annotation; only the exact
    /// "false" says no; never on the host's network.
    #[rstest]
    #[case::nothing(json!({}), json!({}), false)]
    #[case::label_false(json!({}), json!({"sidecar.istio.io/inject": "false"}), true)]
    #[case::annotation_false(json!({"sidecar.istio.io/inject": "false"}), json!({}), true)]
    #[case::empty_label_wins(json!({"sidecar.istio.io/inject": "false"}), json!({"sidecar.istio.io/inject": ""}), false)]
    #[case::true_label_wins(json!({"sidecar.istio.io/inject": "false"}), json!({"sidecar.istio.io/inject": "true"}), false)]
    #[case::capital_false(json!({}), json!({"sidecar.istio.io/inject": "False"}), false)]
    #[case::no(json!({"sidecar.istio.io/inject": "no"}), json!({}), false)]
    #[case::off(json!({}), json!({"sidecar.istio.io/inject": "off"}), false)]
    fn injection_off_as_istio_reads_it(
        #[case] annotations: Value,
        #[case] labels: Value,
        #[case] off: bool,
    ) {
        let object = job(json!({}), meta(annotations, labels), json!({}));
        assert_eq!(read(Kind::Job, object, |w| w.injection_off()), off);
    }

    #[test]
    fn a_pod_on_the_hosts_network_is_never_injected() {
        let object = job(json!({}), json!({}), json!({"hostNetwork": true}));
        assert!(read(Kind::Job, object, |w| w.injection_off()));
        let object = job(json!({}), json!({}), json!({"hostNetwork": false}));
        assert!(!read(Kind::Job, object, |w| w.injection_off()));
        let wrong = job(json!({}), json!({}), json!({"hostNetwork": "yes"}));
        let text = wrong.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let err = Workload::read(Kind::Job, &mut Node::raw(raw)).unwrap_err();
        assert_eq!(err, "spec.template.spec.hostNetwork: expected a boolean");
    }

    fn annotated(value: Option<&str>, owner_mode: Option<&str>) -> Value {
        let mut annotations = serde_json::Map::new();
        if let Some(v) = value {
            annotations.insert("istio-job-sidecar/mode".into(), v.into());
        }
        if let Some(v) = owner_mode {
            annotations.insert("istio-job-sidecar/owner-mode".into(), v.into());
        }
        json!({ "annotations": annotations })
    }

    fn cronjob(own: Option<&str>, job_template: Option<&str>, template: Value) -> Value {
        json!({"metadata": annotated(own, None), "spec": {"jobTemplate": {
            "metadata": annotated(job_template, None),
            "spec": {"template": {"metadata": template}}}}})
    }

    /// The mode nearest the pod wins; the owner's word reaches the
    /// template as istio-job-sidecar/owner-mode where it has none of its own.
    #[rstest]
    #[case::none(cronjob(None, None, json!({})), None, None)]
    #[case::cronjob_own(cronjob(Some("disabled"), None, json!({})), Some("disabled"), Some(OwnerMode::Set("disabled")))]
    #[case::job_template_wins(cronjob(Some("disabled"), Some("quitEndpoint"), json!({})), Some("quitEndpoint"), Some(OwnerMode::Set("quitEndpoint")))]
    #[case::template_wins(
        cronjob(Some("disabled"), None, annotated(Some("nativeSidecar"), None)),
        Some("nativeSidecar"),
        None
    )]
    #[case::carried_already(
        cronjob(Some("disabled"), None, annotated(None, Some("disabled"))),
        Some("disabled"),
        None
    )]
    #[case::carried_stale(
        cronjob(Some("quitEndpoint"), None, annotated(None, Some("disabled"))),
        Some("quitEndpoint"),
        Some(OwnerMode::Set("quitEndpoint"))
    )]
    // The owner's annotation removed: its copy goes, and a CronJob's own
    // copy is never read as its word.
    #[case::owner_gone(
        cronjob(None, None, annotated(None, Some("disabled"))),
        None,
        Some(OwnerMode::Remove)
    )]
    fn a_cronjobs_mode(
        #[case] object: Value,
        #[case] mode: Option<&str>,
        #[case] edit: Option<OwnerMode>,
    ) {
        read(Kind::CronJob, object, |w| {
            assert_eq!(w.mode_annotation(), mode);
            assert_eq!(w.owner_mode_edit(), edit);
        });
    }

    #[rstest]
    #[case::own(job(annotated(Some("disabled"), None), json!({}), json!({})), Some("disabled"), Some(OwnerMode::Set("disabled")))]
    // A Job a CronJob made: the CronJob's word, carried on the template.
    #[case::carried(job(json!({}), annotated(None, Some("quitEndpoint")), json!({})), Some("quitEndpoint"), None)]
    #[case::own_over_carried(job(annotated(Some("disabled"), None), annotated(None, Some("quitEndpoint")), json!({})), Some("disabled"), Some(OwnerMode::Set("disabled")))]
    #[case::template_wins(job(annotated(Some("disabled"), None), annotated(Some("exitOnJobCompletion"), None), json!({})), Some("exitOnJobCompletion"), None)]
    fn a_jobs_mode(
        #[case] object: Value,
        #[case] mode: Option<&str>,
        #[case] edit: Option<OwnerMode>,
    ) {
        read(Kind::Job, object, |w| {
            assert_eq!(w.mode_annotation(), mode);
            assert_eq!(w.owner_mode_edit(), edit);
        });
    }

    #[rstest]
    #[case::own(annotated(Some("disabled"), Some("quitEndpoint")), Some("disabled"))]
    #[case::carried(annotated(None, Some("quitEndpoint")), Some("quitEndpoint"))]
    fn a_pods_mode(#[case] metadata: Value, #[case] mode: Option<&str>) {
        let pod = json!({"metadata": metadata, "spec": {"restartPolicy": "Never"}});
        read(Kind::Pod, pod, |w| {
            assert_eq!(w.mode_annotation(), mode);
            assert_eq!(w.owner_mode_edit(), None);
        });
    }

    /// A Job a kube-injected CronJob made carries the injection status on
    /// its own metadata: read there, and the status port with it.
    #[test]
    fn a_jobs_own_metadata_carries_a_cronjobs_injection() {
        let own = json!({"annotations": {
            "sidecar.istio.io/status": "{\"containers\":[\"istio-proxy\"]}",
            "status.sidecar.istio.io/port": "15120"
        }});
        read(Kind::Job, job(own, json!({}), json!({})), |w| {
            assert_eq!(
                w.injection_status(),
                Some((StatusAt::Object, "{\"containers\":[\"istio-proxy\"]}"))
            );
            assert_eq!(w.status_port(), Some(15120));
        });
    }

    /// pilot-agent reads a status port that is no port number as 0: no
    /// status server.
    #[rstest]
    #[case::a_port("15120", Some(15120))]
    #[case::off("0", Some(0))]
    #[case::not_a_number("status", Some(0))]
    #[case::out_of_range("70000", Some(0))]
    #[case::negative("-1", Some(0))]
    fn the_status_port_as_pilot_agent_reads_it(#[case] value: &str, #[case] port: Option<u16>) {
        let own = json!({"annotations": {"status.sidecar.istio.io/port": value}});
        read(Kind::Job, job(json!({}), own, json!({})), |w| {
            assert_eq!(w.status_port(), port);
        });
    }
}
