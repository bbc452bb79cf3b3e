//! The scan's answers, resolved once (which requests reach the policy, which
//! objects another one stands for, the owner of each stuck Pod) and then
//! written as a table for a terminal, JSON for machines or Markdown for a
//! pull request comment.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use istio_job_sidecar_policy::decide::Skip;
use istio_job_sidecar_policy::policy::Verdict;
use istio_job_sidecar_policy::view::Kind;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Value};

use crate::config::{Config, Sent};
use crate::evaluate::{summary, verdict_json, At, Evaluation};
use crate::scan::{Scan, Scanned};
use crate::stuck::{format_rfc3339, human};

/// The version of the JSON shape (`-o json`); see the crate's README.
pub const JSON_SHAPE: &str = "istio-job-sidecar.scan/v1";

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
    fn policy_text(&self, object: usize, evaluation: usize) -> String {
        match &self.views[object].sent[evaluation] {
            Sent::No(why) => format!("not sent: {why}"),
            _ => summary(&self.scan.objects[object].evaluations[evaluation]),
        }
    }

    fn notes(&self) -> Vec<String> {
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
        notes
    }

    fn settings_text(&self) -> String {
        let settings = serde_json::to_string(&self.config.settings).unwrap_or_default();
        match &self.config.policy {
            Some(p) => format!("{settings} (from {} {} in {})", p.kind, p.name, p.file),
            None if settings == "{}" => "{} (all defaults)".into(),
            None => settings,
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A kind's plural, as the API names its resources: `Deployments`,
/// `NetworkPolicies`, `Ingresses`; `Endpoints` is already one.
fn kind_plural(kind: &str) -> String {
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
fn end_hint(report: &Report) -> Vec<String> {
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
fn kinds_text(t: &Totals) -> String {
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

// ------------------------------------------------------------------ JSON

/// `-o json`: the shape documented in the crate's README, written as it
/// is made (one object's JSON at a time), members in the documented order.
pub fn write_json(report: &Report, out: impl std::io::Write) -> std::io::Result<()> {
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(out, formatter);
    JsonReport(report)
        .serialize(&mut ser)
        .map_err(std::io::Error::other)
}

/// The whole `-o json` document as a value (for tests).
pub fn json(report: &Report) -> Value {
    let mut bytes = Vec::new();
    let _ = write_json(report, &mut bytes);
    serde_json::from_slice(&bytes).unwrap_or_default()
}

struct JsonReport<'r, 's>(&'r Report<'s>);
struct JsonNamespaces<'r, 's>(&'r Report<'s>);
struct JsonObjects<'r, 's>(&'r Report<'s>, &'r [usize]);

impl Serialize for JsonReport<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        let scan = report.scan;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("apiVersion", JSON_SHAPE)?;
        map.serialize_entry("now", &format_rfc3339(report.now))?;
        map.serialize_entry("sources", &scan.sources)?;
        map.serialize_entry("settings", &report.config.settings)?;
        let policy = report
            .config
            .policy
            .as_ref()
            .map(|p| json!({"file": p.file, "kind": p.kind, "name": p.name}));
        map.serialize_entry("policy", &policy)?;
        map.serialize_entry("notes", &report.notes())?;
        map.serialize_entry("totals", &totals_json(&report.totals(None)))?;
        map.serialize_entry("otherKinds", &scan.other_kinds)?;
        map.serialize_entry("stuck", &stuck_json(report))?;
        map.serialize_entry("namespaces", &JsonNamespaces(report))?;
        let errors: Vec<Value> = scan
            .invalid
            .iter()
            .map(|(at, why)| {
                json!({"source": at.source, "document": at.document, "item": at.item, "line": at.line, "message": why})
            })
            .collect();
        map.serialize_entry("errors", &errors)?;
        map.end()
    }
}

impl Serialize for JsonNamespaces<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        let mut seq = s.serialize_seq(Some(report.namespaces.len()))?;
        for (name, list) in &report.namespaces {
            struct Namespace<'r, 's>(&'r Report<'s>, &'r str, &'r [usize]);
            impl Serialize for Namespace<'_, '_> {
                fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    let mut map = s.serialize_map(Some(3))?;
                    map.serialize_entry("name", self.1)?;
                    map.serialize_entry("totals", &totals_json(&self.0.totals(Some(self.1))))?;
                    map.serialize_entry("objects", &JsonObjects(self.0, self.2))?;
                    map.end()
                }
            }
            seq.serialize_element(&Namespace(report, name, list))?;
        }
        seq.end()
    }
}

impl Serialize for JsonObjects<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.1.len()))?;
        for &i in self.1 {
            seq.serialize_element(&object_json(self.0, i))?;
        }
        seq.end()
    }
}

fn stuck_json(report: &Report) -> Vec<Value> {
    let scan = report.scan;
    report
        .stuck
        .iter()
        .map(|s| {
            let o = &scan.objects[s.object];
            let st = o.stuck.as_ref().expect("stuck views are of stuck Pods");
            let (d, e) = s.decided_by;
            let decider = &scan.objects[d];
            json!({
                "namespace": o.namespace,
                "pod": o.name,
                "owner": s.owner,
                "cronJob": s.cronjob,
                "sidecarIn": st.sidecar_in,
                "finishedAt": st.finished_at,
                "stuckSeconds": st.seconds,
                "policy": {
                    "object": format!("{}/{}", decider.kind.as_str(), decider.name),
                    "at": decider.evaluations[e].at.as_str(),
                    "summary": report.policy_text(d, e),
                    "verdict": verdict_json(&decider.evaluations[e].verdict),
                },
            })
        })
        .collect()
}

fn totals_json(t: &Totals) -> Value {
    json!({
        "objects": t.objects,
        "cronJobs": t.cronjobs,
        "jobs": t.jobs,
        "pods": t.pods,
        "longRunningPods": t.long_running_pods,
        "podsOfListedJobs": t.covered_pods,
        "wouldChange": t.would_change,
        "withWarnings": t.with_warnings,
        "notSent": t.not_sent,
        "stuck": t.stuck,
    })
}

fn object_json(report: &Report, i: usize) -> Value {
    let o = &report.scan.objects[i];
    let v = &report.views[i];
    let evaluations: Vec<Value> = o
        .evaluations
        .iter()
        .enumerate()
        .map(|(j, e)| evaluation_json(report, i, j, e))
        .collect();
    json!({
        "kind": o.kind.as_str(),
        "name": o.name,
        "stored": o.stored,
        "source": {"file": o.at.source, "document": o.at.document, "item": o.at.item, "line": o.at.line},
        "owner": o.owner.as_deref().map(|(k, n)| format!("{k}/{n}")),
        "finished": o.finished,
        "coveredBy": v.covered_by,
        "wouldChange": v.changes,
        "stuck": o.stuck.is_some(),
        "evaluations": evaluations,
    })
}

fn evaluation_json(report: &Report, i: usize, j: usize, e: &Evaluation) -> Value {
    let sent = match &report.views[i].sent[j] {
        Sent::Yes => json!({"sent": true}),
        Sent::No(why) => json!({"sent": false, "why": why}),
        Sent::Unknown(why) => json!({"sent": null, "why": why}),
    };
    json!({
        "at": e.at.as_str(),
        "operation": e.operation,
        "kind": e.kind.as_str(),
        "sent": sent,
        "verdict": verdict_json(&e.verdict),
        "summary": report.policy_text(i, j),
        "changes": e.changes(),
        "record": e
            .record
            .as_ref()
            .and_then(|r| serde_json::from_str::<Value>(r).ok()),
        "fields": e.fields,
        "patch": e
            .patch
            .as_ref()
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .unwrap_or_else(|| json!([])),
        "warnings": e.warnings,
        "broken": e.broken,
    })
}

// ----------------------------------------------------------------- table

/// How the table is written: colours (a terminal), and whether long
/// names are cut to fit 80 columns (a terminal without `-o wide`; piped
/// output keeps every name whole).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub on: bool,
    pub cut: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
}

const WIDTH: usize = 80;

impl Style {
    /// `text` cut to `width` characters, with `~` where it was cut.
    fn fit(&self, text: &str, width: usize) -> String {
        if !self.cut || text.chars().count() <= width {
            return text.to_owned();
        }
        let kept: String = text.chars().take(width.saturating_sub(1)).collect();
        format!("{kept}~")
    }

    fn pad(&self, text: &str, width: usize) -> String {
        let fitted = self.fit(text, width);
        let n = fitted.chars().count();
        format!("{fitted}{}", " ".repeat(width.saturating_sub(n)))
    }

    /// A column as wide as its widest entry, at least `min`; at most `max`
    /// when names are cut.
    fn column(&self, widths: impl Iterator<Item = usize>, min: usize, max: usize) -> usize {
        let widest = widths.max().unwrap_or(0).max(min);
        if self.cut {
            widest.min(max)
        } else {
            widest
        }
    }
}

/// `text` in lines of at most `WIDTH` characters, the first after
/// `first`, the others indented by `indent`.
fn wrap(text: &str, first: usize, indent: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut room = WIDTH.saturating_sub(first);
    for word in text.split(' ') {
        let len = line.chars().count();
        let add = word.chars().count() + usize::from(len > 0);
        if len > 0 && len + add > room {
            lines.push(std::mem::take(&mut line));
            room = WIDTH.saturating_sub(indent);
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// The table: what a person reads first (the stuck Pods), then what the
/// policy would do, by namespace, then the totals; at most 80 columns.
pub fn table(report: &Report, style: Style) -> String {
    let scan = report.scan;
    let t = report.totals(None);
    let mut out = String::new();
    let sources = match scan.sources.len() {
        1 => scan.sources[0].clone(),
        n => format!("{n} sources"),
    };
    for line in wrap(&format!("istio-job-sidecar scan of {sources}"), 0, 2) {
        let _ = writeln!(out, "{line}");
    }
    let mut head = format!(
        "{}: {}",
        plural(t.objects, "object", "objects"),
        kinds_text(&t)
    );
    if !scan.other_kinds.is_empty() {
        let kinds: Vec<String> = scan
            .other_kinds
            .iter()
            .map(|(k, n)| plural(*n, k, &kind_plural(k)))
            .collect();
        let _ = write!(head, "; ignored: {}", kinds.join(", "));
    }
    if scan.outside_namespace > 0 {
        let _ = write!(
            head,
            "; {} of other namespaces left out (-n)",
            plural(scan.outside_namespace, "object", "objects")
        );
    }
    for line in wrap(&head, 0, 2) {
        let _ = writeln!(out, "{line}");
    }
    for line in wrap(&format!("settings: {}", report.settings_text()), 0, 2) {
        let _ = writeln!(out, "{line}");
    }
    for note in report.notes() {
        for (k, line) in wrap(&format!("note: {note}"), 0, 6).into_iter().enumerate() {
            let _ = writeln!(
                out,
                "{}{}",
                if k == 0 { "" } else { "      " },
                style.yellow(&line)
            );
        }
    }

    let proxy = &report.config.parsed.sidecar_container_name;
    let _ = writeln!(out);
    if report.stuck.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            style.bold(&format!("STUCK NOW: no Pod waits on {proxy}"))
        );
    } else {
        let title = format!(
            "STUCK NOW: {} whose app containers all ended while {proxy} runs",
            plural(report.stuck.len(), "Pod", "Pods")
        );
        let _ = writeln!(out, "{}", style.red(&style.bold(&style.fit(&title, WIDTH))));
        let ns_w = style.column(
            report
                .stuck
                .iter()
                .map(|s| scan.objects[s.object].namespace.len()),
            9,
            16,
        );
        let pod_w = style.column(
            report
                .stuck
                .iter()
                .map(|s| scan.objects[s.object].name.len()),
            3,
            30,
        );
        let room = WIDTH.saturating_sub(ns_w + pod_w + 3 * 2 + "STUCK FOR".len());
        let owners = report.stuck.iter().map(|s| {
            s.cronjob
                .as_ref()
                .or(s.owner.as_ref())
                .map_or(1, |o| o.chars().count())
        });
        let owner_w = if style.cut {
            room
        } else {
            owners.max().unwrap_or(0).max(room)
        };
        let _ = writeln!(
            out,
            "{}",
            style.dim(&format!(
                "{}  {}  {}  STUCK FOR",
                style.pad("NAMESPACE", ns_w),
                style.pad("POD", pod_w),
                style.pad("OWNER", owner_w)
            ))
        );
        for s in &report.stuck {
            let o = &scan.objects[s.object];
            let st = o.stuck.as_ref().expect("stuck");
            let owner = match (&s.cronjob, &s.owner) {
                (Some(c), _) => c.clone(),
                (None, Some(o)) => o.clone(),
                (None, None) => "-".into(),
            };
            let _ = writeln!(
                out,
                "{}  {}  {}  {}",
                style.pad(&o.namespace, ns_w),
                style.pad(&o.name, pod_w),
                style.pad(&owner, owner_w),
                style.red(&human(st.seconds))
            );
            let (d, e) = s.decided_by;
            let decider = &scan.objects[d];
            let whose = if d == s.object {
                "as a Pod".to_owned()
            } else {
                format!(
                    "{} of {}/{}",
                    decider.evaluations[e].at.label(),
                    decider.kind.as_str(),
                    decider.name
                )
            };
            let text = format!("policy, {whose}: {}", report.policy_text(d, e));
            for line in wrap(&text, 4, 6) {
                let _ = writeln!(out, "    {line}");
            }
            if st.sidecar_in == "initContainers" {
                let _ = writeln!(
                    out,
                    "    {proxy} is a native sidecar the kubelet has not stopped"
                );
            }
        }
        for line in end_hint(report) {
            let _ = writeln!(out, "{}", style.dim(&line));
        }
    }

    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{}",
        style.bold("WHAT THE POLICY WOULD DO, by namespace")
    );
    for (name, list) in &report.namespaces {
        let nt = report.totals(Some(name));
        let _ = writeln!(out);
        let head = format!(
            "{name}: {}; {} would change, {} with warnings",
            kinds_text(&nt),
            nt.would_change,
            nt.with_warnings
        );
        let _ = writeln!(out, "{}", style.bold(&style.fit(&head, WIDTH)));
        let listed: Vec<usize> = list
            .iter()
            .copied()
            .filter(|&i| report.views[i].listed())
            .collect();
        let name_w = style.column(
            listed.iter().map(|&i| {
                let o = &scan.objects[i];
                o.kind.as_str().len() + 1 + o.name.len() + if o.finished { 11 } else { 0 }
            }),
            6,
            34,
        );
        if !listed.is_empty() {
            let _ = writeln!(
                out,
                "{}",
                style.dim(&format!(
                    "  {}  {}  POLICY",
                    style.pad("OBJECT", name_w),
                    style.pad("AT", 9)
                ))
            );
        }
        for &i in &listed {
            let o = &scan.objects[i];
            let twin = listed
                .iter()
                .filter(|&&j| scan.objects[j].kind == o.kind && scan.objects[j].name == o.name)
                .count()
                > 1;
            table_object(&mut out, report, i, name_w, style, twin);
        }
        let hidden: Vec<String> = [
            (
                nt.long_running_pods,
                "long-running Pod",
                "long-running Pods",
            ),
            (
                nt.covered_pods,
                "Pod of the Jobs above",
                "Pods of the Jobs above",
            ),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| plural(n, one, many))
        .collect();
        if !hidden.is_empty() {
            let text = format!("not listed: {} (-o json has them)", hidden.join(", "));
            for (k, line) in wrap(&text, 2, 4).into_iter().enumerate() {
                let indent = if k == 0 { "  " } else { "    " };
                let _ = writeln!(out, "{indent}{}", style.dim(&line));
            }
        }
    }

    if !scan.invalid.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            style.red(&style.bold(&format!(
                "NOT READ: {}",
                plural(scan.invalid.len(), "document", "documents")
            )))
        );
        for (at, why) in &scan.invalid {
            for line in wrap(&format!("{at}: {why}"), 2, 4) {
                let _ = writeln!(out, "  {line}");
            }
        }
    }

    let _ = writeln!(out);
    let mut total = format!(
        "TOTAL: {} in {}: {} would change, {} with warnings, {} stuck now",
        plural(t.objects, "object", "objects"),
        plural(report.namespaces.len(), "namespace", "namespaces"),
        t.would_change,
        t.with_warnings,
        t.stuck
    );
    if t.not_sent > 0 {
        let _ = write!(total, ", {} not sent", t.not_sent);
    }
    if !scan.invalid.is_empty() {
        let _ = write!(
            total,
            "; {} not read",
            plural(scan.invalid.len(), "document", "documents")
        );
    }
    for line in wrap(&total, 0, 2) {
        let _ = writeln!(out, "{}", style.bold(&line));
    }
    out
}

/// One object's rows; `twin`: another of its kind and name is listed, so
/// its source is said.
fn table_object(
    out: &mut String,
    report: &Report,
    i: usize,
    name_w: usize,
    style: Style,
    twin: bool,
) {
    let o = &report.scan.objects[i];
    if twin {
        let _ = writeln!(
            out,
            "  {}",
            style.dim(&style.fit(
                &format!("{}/{} in {}", o.kind.as_str(), o.name, o.at),
                WIDTH - 2
            ))
        );
    }
    let policy_col = 2 + name_w + 2 + 9 + 2;
    let mut previous: Option<&[std::rc::Rc<str>]> = None;
    for (j, e) in o.evaluations.iter().enumerate() {
        let object = match (j, o.finished) {
            (0, false) => format!("{}/{}", o.kind.as_str(), o.name),
            // A finished Job makes no more Pods.
            (0, true) => format!("{}/{} (finished)", o.kind.as_str(), o.name),
            _ => String::new(),
        };
        let text = report.policy_text(i, j);
        let reached = !matches!(report.views[i].sent[j], Sent::No(_));
        let lines = wrap(&text, policy_col, policy_col);
        for (k, line) in lines.iter().enumerate() {
            let line = if reached && e.changes() {
                style.green(line)
            } else {
                line.clone()
            };
            if k == 0 {
                let _ = writeln!(
                    out,
                    "  {}  {}  {line}",
                    style.pad(&object, name_w),
                    style.pad(e.at.label(), 9)
                );
            } else {
                let _ = writeln!(out, "{}{line}", " ".repeat(policy_col));
            }
        }
        if !reached {
            previous = None;
            continue;
        }
        if previous != Some(e.fields.as_slice()) {
            for field in &e.fields {
                let _ = writeln!(out, "      {}", style.fit(field, WIDTH - 6));
            }
        }
        previous = Some(e.fields.as_slice());
        let warnings = e.broken.iter().chain(e.warnings.iter());
        for w in warnings {
            for (k, line) in wrap(&format!("! {w}"), 6, 8).into_iter().enumerate() {
                let indent = if k == 0 { "      " } else { "        " };
                let _ = writeln!(out, "{indent}{}", style.yellow(&line));
            }
        }
    }
    if o.finished && o.stored {
        let _ = writeln!(
            out,
            "  {}  {}  {FINISHED}",
            style.pad("", name_w),
            style.pad(At::NextPods.label(), 9)
        );
    }
}

/// A finished Job's next Pods: there are none.
const FINISHED: &str = "none: the Job has finished";

// -------------------------------------------------------------- markdown

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A pull request comment: the same as the table, as GitHub renders it.
pub fn markdown(report: &Report) -> String {
    let scan = report.scan;
    let t = report.totals(None);
    let mut out = String::new();
    let _ = writeln!(out, "### istio-job-sidecar scan\n");
    let _ = writeln!(
        out,
        "**{}** ({}) · **{} would change** · **{} with warnings** · **{} stuck now**{}\n",
        plural(t.objects, "object", "objects"),
        kinds_text(&t),
        t.would_change,
        t.with_warnings,
        t.stuck,
        if scan.invalid.is_empty() {
            String::new()
        } else {
            format!(
                " · **{} not read**",
                plural(scan.invalid.len(), "document", "documents")
            )
        }
    );
    let _ = writeln!(out, "Settings: `{}`\n", cell(&report.settings_text()));
    for note in report.notes() {
        let _ = writeln!(out, "> **Note** {}\n", cell(&note));
    }
    let proxy = &report.config.parsed.sidecar_container_name;
    if !report.stuck.is_empty() {
        let _ = writeln!(
            out,
            "#### Stuck now: app containers ended, `{proxy}` still runs\n"
        );
        let _ = writeln!(
            out,
            "| Namespace | Pod | Owner | Stuck for | What the policy would have done |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for s in &report.stuck {
            let o = &scan.objects[s.object];
            let st = o.stuck.as_ref().expect("stuck");
            let owner = [s.owner.clone(), s.cronjob.clone()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ← ");
            let (d, e) = s.decided_by;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&o.namespace),
                cell(&o.name),
                cell(if owner.is_empty() { "-" } else { &owner }),
                human(st.seconds),
                cell(&report.policy_text(d, e))
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "#### What the policy would do\n");
    for (name, list) in &report.namespaces {
        let nt = report.totals(Some(name));
        let _ = writeln!(
            out,
            "**`{}`**: {}; {} would change, {} with warnings\n",
            cell(name),
            kinds_text(&nt),
            nt.would_change,
            nt.with_warnings
        );
        let listed: Vec<usize> = list
            .iter()
            .copied()
            .filter(|&i| report.views[i].listed())
            .collect();
        if !listed.is_empty() {
            let _ = writeln!(out, "| Object | At | Policy | Fields | Warnings |");
            let _ = writeln!(out, "|---|---|---|---|---|");
        }
        for i in listed {
            let o = &scan.objects[i];
            for (j, e) in o.evaluations.iter().enumerate() {
                let object = match (j, o.finished) {
                    (0, false) => format!("{}/{}", o.kind.as_str(), o.name),
                    (0, true) => format!("{}/{} (finished)", o.kind.as_str(), o.name),
                    _ => String::new(),
                };
                let reached = !matches!(report.views[i].sent[j], Sent::No(_));
                let fields = if reached {
                    e.fields
                        .iter()
                        .map(|f| format!("`{}`", cell(f)))
                        .collect::<Vec<_>>()
                        .join("<br>")
                } else {
                    String::new()
                };
                let warnings = e
                    .broken
                    .iter()
                    .chain(e.warnings.iter())
                    .map(|w| cell(w))
                    .collect::<Vec<_>>()
                    .join("<br>");
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    cell(&object),
                    e.at.label(),
                    cell(&report.policy_text(i, j)),
                    fields,
                    warnings
                );
            }
            if o.finished && o.stored {
                let _ = writeln!(out, "|  | {} | {FINISHED} |  |  |", At::NextPods.label());
            }
        }
        let hidden = nt.long_running_pods + nt.covered_pods;
        if hidden > 0 {
            let _ = writeln!(
                out,
                "\n{} not listed ({} long-running, {} of the Jobs above).",
                plural(hidden, "Pod", "Pods"),
                nt.long_running_pods,
                nt.covered_pods
            );
        }
        let _ = writeln!(out);
    }
    if !scan.invalid.is_empty() {
        let _ = writeln!(out, "#### Not read\n");
        for (at, why) in &scan.invalid {
            let _ = writeln!(out, "- `{}`: {}", cell(&at.to_string()), cell(why));
        }
        let _ = writeln!(out);
    }
    out
}
