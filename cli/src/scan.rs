//! `scan`: every Job, CronJob and Pod read, each request of its life that
//! the policy would see evaluated by the policy, and the Pods stuck now.
//!
//! Which requests: an object from a cluster (it has a `uid`, a
//! `resourceVersion` or a `creationTimestamp`) is already stored, so what
//! matters is what comes next: a Job's UPDATE (its template is immutable)
//! and, unless it has finished (`Complete` or `Failed`), its next Pods
//! (`pod_from_job`, then a Pod CREATE); a CronJob's next
//! UPDATE and its next Jobs (`job_from_cronjob`, then a Job CREATE). A
//! manifest is a CREATE (a CronJob's also an UPDATE). A Pod is a CREATE
//! either way. Only the object's summary is kept, so memory grows with the
//! number of objects, not their size.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use istio_job_sidecar_policy::names::Kind;
use kube_model::controllers::{job_from_cronjob, pod_from_job};
use serde_json::{Map, Value};

use crate::config::{Config, Sent};
use crate::evaluate::{evaluate, request, At, Evaluation, Want};
use crate::input::{Found, Location};
use crate::stuck::{stuck, Stuck};

/// One Job, CronJob or Pod of the input.
#[derive(Debug, Clone)]
pub struct Scanned {
    pub kind: Kind,
    /// Shared by the objects of a namespace.
    pub namespace: Rc<str>,
    pub name: String,
    /// Read from a cluster rather than a manifest.
    pub stored: bool,
    pub at: Location,
    /// Its controller (`ownerReferences` with `controller: true`).
    pub owner: Option<Box<(String, String)>>,
    /// A Job's `Complete` or `Failed` condition: it makes no more Pods.
    pub finished: bool,
    /// What the object's own rules and labels say (the namespace's part
    /// is decided once every Namespace of the input is known).
    pub sent: Vec<Sent>,
    pub evaluations: Vec<Evaluation>,
    pub stuck: Option<Box<Stuck>>,
}

/// Everything read.
#[derive(Debug, Default)]
pub struct Scan {
    /// Boxed: growing the list moves pointers, not summaries.
    pub objects: Vec<Box<Scanned>>,
    /// The labels of the Namespaces in the input.
    pub namespaces: BTreeMap<String, Map<String, Value>>,
    /// Objects of other kinds, by `kind` (`(no kind)` for documents that
    /// are no Kubernetes object).
    pub other_kinds: BTreeMap<String, usize>,
    pub invalid: Vec<(Location, String)>,
    pub sources: Vec<String>,
    /// Jobs, CronJobs and Pods of other namespaces than `-n`'s, left out.
    pub outside_namespace: usize,
    /// The Nodes of the input, whose kubelets `nodes` warns about.
    pub nodes: Vec<crate::nodes::NodeSeen>,
    /// istiod's Deployments and the MutatingAdmissionPolicies of the input,
    /// whose notes `mesh` writes.
    pub istiods: Vec<crate::mesh::Istiod>,
    pub admission_policies: Vec<crate::mesh::AdmissionPolicySeen>,
}

/// What a scan needs besides the settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Seconds since the epoch.
    pub now: i64,
    /// The namespace of objects that name none (`--namespace`, else `default`).
    pub default_namespace: String,
    /// `-n`: only this namespace's objects are scanned.
    pub only_namespace: Option<String>,
    pub progress: bool,
    /// Keep each patch (for `-o json`).
    pub keep_patches: bool,
}

pub struct Scanner<'c> {
    config: &'c Config,
    /// One copy of each namespace name, field line, patch and record,
    /// shared by the summaries (a large input repeats them object after
    /// object).
    names: std::collections::HashSet<Rc<str>>,
    options: Options,
    pub scan: Scan,
    started: Instant,
    last_progress: Option<Instant>,
    read: usize,
}

impl<'c> Scanner<'c> {
    pub fn new(config: &'c Config, options: Options) -> Self {
        Scanner {
            config,
            names: Default::default(),
            options,
            scan: Scan::default(),
            started: Instant::now(),
            last_progress: None,
            read: 0,
        }
    }

    pub fn take(&mut self, found: Found) {
        match found {
            Found::Invalid(at, why) => self.scan.invalid.push((at, why)),
            Found::Object(object, at) => self.object(object, at),
        }
        self.read += 1;
        if self.options.progress && self.read % 256 == 0 {
            self.progress(false);
        }
    }

    /// A line on stderr once the input takes more than a second, then at
    /// most four times a second; `done` ends it.
    pub fn progress(&mut self, done: bool) {
        let now = Instant::now();
        if now.duration_since(self.started).as_secs_f64() < 1.0 {
            return;
        }
        if done {
            if self.last_progress.is_some() {
                crate::out::err_line(format_args!(
                    "\rscan: {} objects read in {:.1} s          ",
                    self.read,
                    now.duration_since(self.started).as_secs_f64()
                ));
            }
            return;
        }
        if self
            .last_progress
            .is_some_and(|t| now.duration_since(t).as_millis() < 250)
        {
            return;
        }
        self.last_progress = Some(now);
        crate::out::err(format_args!("\rscan: {} objects read...", self.read));
    }

    fn object(&mut self, object: Value, at: Location) {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let Some(kind_name) = object["kind"].as_str() else {
            *self.scan.other_kinds.entry("(no kind)".into()).or_default() += 1;
            return;
        };
        let metadata = &object["metadata"];
        if group.is_empty() && kind_name == "Namespace" {
            if let Some(name) = metadata["name"].as_str() {
                let labels = metadata["labels"].as_object().cloned().unwrap_or_default();
                self.scan.namespaces.insert(name.to_owned(), labels);
            }
            *self.scan.other_kinds.entry("Namespace".into()).or_default() += 1;
            return;
        }
        if group == "apps" && kind_name == "Deployment" {
            self.scan.istiods.extend(crate::mesh::Istiod::of(&object));
        }
        if group == "admissionregistration.k8s.io" && kind_name == "MutatingAdmissionPolicy" {
            self.scan
                .admission_policies
                .push(crate::mesh::AdmissionPolicySeen::of(&object));
        }
        if group.is_empty() && kind_name == "Node" {
            self.scan.nodes.push(crate::nodes::NodeSeen::of(&object));
            *self.scan.other_kinds.entry("Node".into()).or_default() += 1;
            return;
        }
        let Some(kind) = Kind::from_group_kind(group, kind_name) else {
            *self
                .scan
                .other_kinds
                .entry(kind_name.to_owned())
                .or_default() += 1;
            return;
        };
        let namespace = match metadata["namespace"].as_str() {
            Some(ns) => self.intern(ns),
            None => {
                let default = self.options.default_namespace.clone();
                self.intern(&default)
            }
        };
        if self
            .options
            .only_namespace
            .as_ref()
            .is_some_and(|only| **only != *namespace)
        {
            self.scan.outside_namespace += 1;
            return;
        }
        let name = match (metadata["name"].as_str(), metadata["generateName"].as_str()) {
            (Some(name), _) => name.to_owned(),
            (None, Some(prefix)) => format!("{prefix}*"),
            (None, None) => "(no name)".to_owned(),
        };
        let stored = metadata["uid"].is_string()
            || metadata["resourceVersion"].is_string()
            || metadata["creationTimestamp"].is_string();
        let owner = controller_of(&object).map(Box::new);
        let finished = kind == Kind::Job
            && object["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter().any(|c| {
                    matches!(c["type"].as_str(), Some("Complete" | "Failed"))
                        && c["status"] == "True"
                })
            });
        let steps: &[At] = match (kind, stored) {
            // A finished Job makes no more Pods.
            (Kind::Job, true) if finished => &[At::Update],
            (Kind::Job, true) => &[At::Update, At::NextPods],
            (Kind::Job, false) => &[At::Create],
            (Kind::CronJob, true) => &[At::Update, At::NextJobs],
            (Kind::CronJob, false) => &[At::Create, At::Update],
            (Kind::Pod, _) => &[At::Create],
        };
        // Kept for every object: sized exactly, memory follows the count.
        let mut scanned = Scanned {
            kind,
            namespace,
            name,
            stored,
            at,
            owner,
            finished,
            sent: Vec::with_capacity(steps.len()),
            evaluations: Vec::with_capacity(steps.len()),
            stuck: None,
        };
        for step in steps {
            let (mut evaluation, sent) = self.evaluate(*step, kind, &object, &scanned.namespace);
            let fields = std::mem::take(&mut evaluation.fields);
            evaluation.fields = fields.iter().map(|f| self.intern(f)).collect();
            evaluation.patch = evaluation.patch.take().map(|p| self.intern(&p));
            evaluation.record = evaluation.record.take().map(|r| self.intern(&r));
            scanned.evaluations.push(evaluation);
            scanned.sent.push(sent);
        }
        if kind == Kind::Pod {
            let sidecar = &self.config.parsed.sidecar_container_name;
            scanned.stuck = stuck(&object, sidecar, self.options.now).map(Box::new);
        }
        self.scan.objects.push(Box::new(scanned));
    }

    fn evaluate(&self, at: At, kind: Kind, object: &Value, namespace: &str) -> (Evaluation, Sent) {
        let settings = &self.config.settings;
        let (kind, object, operation) = match at {
            At::Create => (kind, Cow::Borrowed(object), "CREATE"),
            At::Update => (kind, Cow::Borrowed(object), "UPDATE"),
            At::NextPods => (Kind::Pod, Cow::Owned(pod_from_job(object, 0)), "CREATE"),
            At::NextJobs => {
                let minute = self.options.now.div_euclid(60);
                (
                    Kind::Job,
                    Cow::Owned(job_from_cronjob(object, minute)),
                    "CREATE",
                )
            }
        };
        let admission = request(operation, &object, namespace);
        let sent = self
            .config
            .sent_for_object(&admission)
            .and(self.config.sent_for_conditions(&admission));
        let want = Want {
            patch: self.options.keep_patches,
            admitted: false,
        };
        let (mut evaluation, _) = evaluate(at, kind, &object, operation, namespace, settings, want);
        evaluation.warnings.shrink_to_fit();
        (evaluation, sent)
    }
}

impl Scanner<'_> {
    fn intern(&mut self, text: &str) -> Rc<str> {
        if let Some(shared) = self.names.get(text) {
            return shared.clone();
        }
        let shared: Rc<str> = text.into();
        self.names.insert(shared.clone());
        shared
    }
}

fn controller_of(object: &Value) -> Option<(String, String)> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or_default().to_owned(),
                r["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
}
