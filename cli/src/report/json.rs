//! `-o json`: the report as the documented JSON shape.

use super::*;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// The version of the JSON shape (`-o json`); see the crate's README.
pub const JSON_SHAPE: &str = "istio-job-sidecar.scan/v1";

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
