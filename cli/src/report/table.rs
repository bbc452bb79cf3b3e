//! The table for a terminal (and a file, unwrapped).

use super::*;
use std::fmt::Write as _;

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
