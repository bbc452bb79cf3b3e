//! The scan's answers, resolved once (which requests reach the policy, which
//! objects another one stands for, the owner of each stuck Pod), here; then
//! written as a table for a terminal (`table`), JSON for machines (`json`)
//! or Markdown for a pull request comment (`markdown`), one file each.

mod json;
mod markdown;
mod table;

pub use json::{json, write_json, JSON_SHAPE};
pub use markdown::markdown;
pub use table::{table, Style};

use std::collections::{BTreeMap, HashMap};

use istio_job_sidecar_policy::decide::Skip;
use istio_job_sidecar_policy::names::Kind;
use istio_job_sidecar_policy::policy::Verdict;
use istio_job_sidecar_policy::settings::Mode;
use serde_json::{json, Value};

use crate::config::{Config, Sent};
use crate::evaluate::{summary, verdict_json, At, Evaluation};
use crate::scan::{Scan, Scanned};
use crate::stuck::{format_rfc3339, human};

pub struct Report<'s> {
    pub scan: &'s Scan,
    pub config: &'s Config,
    pub now: i64,
    /// Per object of `scan.objects`, what is decided once all is read.
    pub views: Vec<View>,
    /// Indexes into `scan.objects`, by namespace, in report order.
    pub namespaces: BTreeMap<String, Vec<usize>>,
    pub stuck: Vec<StuckView>,
}

#[derive(Debug, Clone)]
pub struct View {
    /// Per evaluation: does the request reach the policy.
    pub sent: Vec<Sent>,
    /// A stored Pod whose Job is in the input: the Job's `next Pods` stands
    /// for it (`Job/name`).
    pub covered_by: Option<String>,
    /// A Pod the policy leaves alone as long-running, unchanged.
    pub long_running: bool,
    pub changes: bool,
    pub warnings: usize,
}

#[derive(Debug, Clone)]
pub struct StuckView {
    pub object: usize,
    /// `Job/name`, and the Job's CronJob when the input has the Job.
    pub owner: Option<String>,
    pub cronjob: Option<String>,
    /// The object and evaluation that say what the policy would have done
    /// for the Pod's owner (the Pod itself when its owner is not in the input).
    pub decided_by: (usize, usize),
}

impl View {
    /// Listed in the table and counted in the totals.
    pub fn listed(&self) -> bool {
        self.covered_by.is_none() && !self.long_running
    }
}

pub fn build<'s>(scan: &'s Scan, config: &'s Config, now: i64) -> Report<'s> {
    let index: HashMap<(&str, &str, &str), usize> = scan
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| ((&*o.namespace, o.kind.as_str(), o.name.as_str()), i))
        .collect();
    let find = |o: &Scanned, kind: Kind, name: &str| {
        index.get(&(&*o.namespace, kind.as_str(), name)).copied()
    };
    let owner_in_input = |o: &Scanned, wanted: &str, kind: Kind| match o.owner.as_deref() {
        Some((k, name)) if k == wanted => find(o, kind, name),
        _ => None,
    };
    let mut views = Vec::with_capacity(scan.objects.len());
    for o in &scan.objects {
        let namespace = config.sent_for_namespace(&o.namespace, scan.namespaces.get(&*o.namespace));
        let sent: Vec<Sent> = o
            .sent
            .iter()
            .map(|s| s.clone().and(namespace.clone()))
            .collect();
        let reached = |i: usize| !matches!(sent[i], Sent::No(_));
        let covered_by = match (o.kind, o.stored, owner_in_input(o, "Job", Kind::Job)) {
            (Kind::Pod, true, Some(_)) => o.owner.as_deref().map(|(k, n)| format!("{k}/{n}")),
            _ => None,
        };
        let long_running = o.kind == Kind::Pod
            && o.evaluations
                .iter()
                .all(|e| e.verdict == Verdict::Skip(Skip::LongRunningPod) && !e.changes());
        let changes = o
            .evaluations
            .iter()
            .enumerate()
            .any(|(i, e)| reached(i) && e.changes());
        let warnings = o
            .evaluations
            .iter()
            .enumerate()
            .filter(|(i, _)| reached(*i))
            .map(|(_, e)| e.warnings.len() + usize::from(e.broken.is_some()))
            .sum();
        views.push(View {
            sent,
            covered_by,
            long_running,
            changes,
            warnings,
        });
    }
    let mut namespaces: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, o) in scan.objects.iter().enumerate() {
        namespaces
            .entry(o.namespace.to_string())
            .or_default()
            .push(i);
    }
    let rank = |k: Kind| match k {
        Kind::CronJob => 0,
        Kind::Job => 1,
        Kind::Pod => 2,
    };
    for list in namespaces.values_mut() {
        list.sort_by(|a, b| {
            let (a, b) = (&scan.objects[*a], &scan.objects[*b]);
            (
                rank(a.kind),
                &a.name,
                &a.at.source,
                a.at.document,
                a.at.item,
            )
                .cmp(&(
                    rank(b.kind),
                    &b.name,
                    &b.at.source,
                    b.at.document,
                    b.at.item,
                ))
        });
    }
    let mut stuck = Vec::new();
    for list in namespaces.values() {
        for &i in list {
            let o = &scan.objects[i];
            if o.stuck.is_none() {
                continue;
            }
            let job = owner_in_input(o, "Job", Kind::Job);
            let cron = job.and_then(|j| owner_in_input(&scan.objects[j], "CronJob", Kind::CronJob));
            let decider = cron.or(job).unwrap_or(i);
            let step = match scan.objects[decider].kind {
                Kind::CronJob => At::NextJobs,
                Kind::Job => At::NextPods,
                Kind::Pod => At::Create,
            };
            let evaluations = &scan.objects[decider].evaluations;
            let e = evaluations
                .iter()
                .position(|e| e.at == step)
                .or_else(|| evaluations.iter().position(|e| e.at == At::Create))
                .unwrap_or(0);
            stuck.push(StuckView {
                object: i,
                owner: o.owner.as_deref().map(|(k, n)| format!("{k}/{n}")),
                cronjob: cron.map(|c| format!("CronJob/{}", scan.objects[c].name)),
                decided_by: (decider, e),
            });
        }
    }
    Report {
        scan,
        config,
        now,
        views,
        namespaces,
        stuck,
    }
}

/// The totals every format prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub objects: usize,
    pub cronjobs: usize,
    pub jobs: usize,
    pub pods: usize,
    pub long_running_pods: usize,
    pub covered_pods: usize,
    pub would_change: usize,
    pub with_warnings: usize,
    pub not_sent: usize,
    pub stuck: usize,
}

impl Report<'_> {
    pub fn totals(&self, only: Option<&str>) -> Totals {
        let mut t = Totals::default();
        for (i, o) in self.scan.objects.iter().enumerate() {
            if only.is_some_and(|ns| *ns != *o.namespace) {
                continue;
            }
            let v = &self.views[i];
            t.objects += 1;
            match o.kind {
                Kind::CronJob => t.cronjobs += 1,
                Kind::Job => t.jobs += 1,
                Kind::Pod => t.pods += 1,
            }
            t.long_running_pods += usize::from(v.long_running);
            t.covered_pods += usize::from(v.covered_by.is_some());
            t.stuck += usize::from(o.stuck.is_some());
            if v.listed() {
                t.would_change += usize::from(v.changes);
                t.with_warnings += usize::from(v.warnings > 0);
                t.not_sent += usize::from(v.sent.iter().all(|s| matches!(s, Sent::No(_))));
            }
        }
        t
    }

    pub fn other_kinds(&self) -> usize {
        self.scan.other_kinds.values().sum()
    }

    /// Words for an evaluation, or why the request never reaches the policy.
    pub(super) fn policy_text(&self, object: usize, evaluation: usize) -> String {
        match &self.views[object].sent[evaluation] {
            Sent::No(why) => format!("not sent: {why}"),
            _ => summary(&self.scan.objects[object].evaluations[evaluation]),
        }
    }

    pub(super) fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .config
            .policy
            .as_ref()
            .map(|p| p.notes.clone())
            .unwrap_or_default();
        let unknown: Vec<&str> = self
            .views
            .iter()
            .flat_map(|v| v.sent.iter())
            .filter_map(|s| match s {
                Sent::Unknown(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        if let Some(first) = unknown.iter().find(|w| w.contains("namespaceSelector")) {
            notes.push(format!(
                "{first}: shown as sent; add the Namespaces to the input \
                 (kubectl get namespaces -o json) to apply the selector"
            ));
        }
        if let Some(first) = unknown.iter().find(|w| !w.contains("namespaceSelector")) {
            notes.push(format!("{first}: shown as sent"));
        }
        let wraps = self.config.parsed.mode == Mode::QuitEndpoint
            && self.views.iter().any(|v| v.listed() && v.changes);
        if self.config.policy.is_none() && wraps {
            notes.push(QUIT_WITHOUT_POLICY.to_owned());
        }
        notes
    }

    pub(super) fn settings_text(&self) -> String {
        let settings = serde_json::to_string(&self.config.settings).unwrap_or_default();
        match &self.config.policy {
            Some(p) => format!("{settings} (from {} {} in {})", p.kind, p.name, p.file),
            None if settings == "{}" => "{} (all defaults)".into(),
            None => settings,
        }
    }
}

/// Without a manifest every namespace counts as selected; the manifests
/// shipped for quitEndpoint select far fewer, so the report points to them.
const QUIT_WITHOUT_POLICY: &str = "quitEndpoint without --policy: every namespace counts as \
    selected, while the shipped quitEndpoint policies select only namespaces labelled \
    istio-injection=enabled (examples/quit-endpoint.yaml) and, elsewhere, only Pods labelled \
    sidecar.istio.io/inject=true or istio.io/rev (examples/quit-endpoint-labelled-pods.yaml): \
    give the manifest you apply, e.g. --policy examples/quit-endpoint.yaml";

pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A kind's plural, as the API names its resources: `Deployments`,
/// `NetworkPolicies`, `Ingresses`; `Endpoints` is already one.
pub(super) fn kind_plural(kind: &str) -> String {
    let consonant_y = kind.ends_with('y')
        && !kind.ends_with("ay")
        && !kind.ends_with("ey")
        && !kind.ends_with("oy");
    if consonant_y {
        format!("{}ies", &kind[..kind.len() - 1])
    } else if kind.ends_with("ss")
        || kind.ends_with('x')
        || kind.ends_with("ch")
        || kind.ends_with("sh")
    {
        format!("{kind}es")
    } else if kind.ends_with('s') {
        kind.to_owned()
    } else {
        format!("{kind}s")
    }
}

/// How many stuck Pods the table spells the quit command out for.
const HINTS: usize = 3;

/// The commands that end the stuck Pods now, with their real names: the
/// first few spelled out, and the subcommand that prints and runs them all.
pub(super) fn end_hint(report: &Report) -> Vec<String> {
    let proxy = &report.config.parsed.sidecar_container_name;
    let mut lines = vec![
        "A running Pod never changes; the policy fixes the next ones. To end these now:".to_owned(),
    ];
    for s in report.stuck.iter().take(HINTS) {
        let o = &report.scan.objects[s.object];
        let Some(port) = o.stuck.as_ref().and_then(|st| st.status_port) else {
            lines.push(format!(
                "  {}/{}: no status server (status.sidecar.istio.io/port \"0\"): delete it",
                o.namespace, o.name
            ));
            continue;
        };
        let command = crate::stuck::quit_command(&o.namespace, &o.name, proxy, port);
        lines.push(format!("  {} \\", command[..8].join(" ")));
        lines.push(format!("    {}", command[8..].join(" ")));
    }
    if report.stuck.len() > HINTS {
        lines.push(format!("  ... and {} more;", report.stuck.len() - HINTS));
    }
    lines.push(
        "  kubectl istio-job-sidecar end-stuck prints each command, runs them with --yes"
            .to_owned(),
    );
    lines
}

/// "2 CronJobs, 5 Jobs, 6 Pods", without the kinds there are none of.
pub(super) fn kinds_text(t: &Totals) -> String {
    let kinds: Vec<String> = [
        (t.cronjobs, "CronJob", "CronJobs"),
        (t.jobs, "Job", "Jobs"),
        (t.pods, "Pod", "Pods"),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| plural(n, one, many))
    .collect();
    if kinds.is_empty() {
        "no Job, CronJob or Pod".into()
    } else {
        kinds.join(", ")
    }
}

/// A finished Job's next Pods: there are none.
pub(super) const FINISHED: &str = "none: the Job has finished";
