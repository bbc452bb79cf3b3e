//! `-o markdown`: the report for a pull request comment.

use super::*;
use std::fmt::Write as _;

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
