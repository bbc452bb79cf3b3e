//! The decision table, as pure functions over plain data: what the policy
//! does with a request, before it looks at how. The rows of docs/modes.md ("What is
//! mutated, and what never is") are read in the order a request meets
//! them: by kind and operation (`by_operation`), by a Pod's restart policy
//! (`by_request`), then by the workload's mode and whether Istio injects it
//! (`decide`, `workload_mode`). The rstest table below checks every row,
//! with a case or more each.

use crate::names::{Kind, ANNOTATIONS_LIMIT, ANNOTATION_MODE};
use crate::settings::{Mode, Settings};
use crate::warning;

/// Value of `istio-job-sidecar/mode` that turns the policy off for a workload.
pub const DISABLED: &str = "disabled";

/// What the request view says, before any mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts<'f> {
    pub kind: Kind,
    pub operation: &'f str,
    /// `spec.restartPolicy` (read for Pods only).
    pub restart_policy: Option<&'f str>,
    /// `istio-job-sidecar/mode` as the workload asked for it
    /// (`Workload::mode_annotation`).
    pub mode_annotation: Option<&'f str>,
    /// Istio's injector will not inject this pod: `sidecar.istio.io/inject`
    /// says "false" as every release reads it, the pod is on the host's
    /// network, or its namespace is one Istio never injects.
    pub injection_off: bool,
    /// A proxy is already there: `sidecar.istio.io/status` says Istio
    /// injected one, or a container has the sidecar's name (a Pod of a
    /// kube-injected CronJob carries the proxy, not the status, which
    /// stays on the Job's own metadata).
    pub injected: bool,
    /// An annotation the policy reads too large for the API server to
    /// store the object: its key and its value's length
    /// (`Workload::oversized`).
    pub oversized: Option<(&'f str, usize)>,
}

/// Why a request is accepted unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A Job's template is immutable after creation: mutating it on UPDATE
    /// would make the API server reject the update.
    JobNotCreate,
    /// An operation this kind is not mutated on.
    Operation,
    /// A Pod that runs forever (restartPolicy Always or unset).
    LongRunningPod,
    /// `istio-job-sidecar/mode: disabled`.
    Disabled,
    /// Istio will not inject this pod and no proxy is there.
    InjectionOff,
    /// An annotation the policy would read is past what an object's
    /// annotations may total: the API server refuses the object whatever
    /// the policy does, so nothing of it is read further.
    Oversized,
    /// nativeSidecar was asked for where the Pod could not run it (custom
    /// injection templates, kubelets without native sidecars), and no
    /// `fallbackMode` is set.
    NativeUnsafe,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    Skip(Skip),
    Apply(Mode),
}

/// The rows decided by kind and operation alone: read before the object is.
pub fn by_operation(kind: Kind, operation: &str) -> Option<Skip> {
    match (kind, operation) {
        (Kind::Job, op) if op != "CREATE" => Some(Skip::JobNotCreate),
        (Kind::CronJob, op) if op != "CREATE" && op != "UPDATE" => Some(Skip::Operation),
        (Kind::Pod, op) if op != "CREATE" => Some(Skip::Operation),
        _ => None,
    }
}

/// The rows decided by the request and a Pod's `restartPolicy`: answered
/// before the workload is read.
pub fn by_request(kind: Kind, operation: &str, restart_policy: Option<&str>) -> Option<Skip> {
    by_operation(kind, operation).or_else(|| {
        let runs_to_completion = matches!(restart_policy, Some("Never" | "OnFailure"));
        (kind == Kind::Pod && !runs_to_completion).then_some(Skip::LongRunningPod)
    })
}

/// The plan for a handled kind, and the warnings to return with it.
pub fn decide(facts: &Facts, settings: &Settings) -> (Plan, Vec<String>) {
    if let Some(skip) = by_request(facts.kind, facts.operation, facts.restart_policy) {
        return (Plan::Skip(skip), Vec::new());
    }
    if let Some((key, len)) = facts.oversized {
        let limit = ANNOTATIONS_LIMIT / 1024;
        let why = format!(
            "{key} too large: {len} bytes, past the API server's {limit} KiB; left unchanged"
        );
        return (Plan::Skip(Skip::Oversized), vec![why]);
    }
    let mut warnings = Vec::new();
    let plan = match workload_mode(facts, settings, &mut warnings) {
        None => Plan::Skip(Skip::Disabled),
        Some(_) if facts.injection_off && !facts.injected => Plan::Skip(Skip::InjectionOff),
        Some(mode) => Plan::Apply(mode),
    };
    (plan, warnings)
}

/// The mode for this workload: the cluster's, unless the workload's own
/// annotation (when honoured) picks another or `disabled` (`None`).
fn workload_mode(facts: &Facts, settings: &Settings, warnings: &mut Vec<String>) -> Option<Mode> {
    let annotation = facts.mode_annotation.filter(|_| settings.workload_override);
    match annotation {
        None => Some(settings.mode),
        Some(DISABLED) => None,
        Some(value) => Mode::parse(value).or_else(|| {
            let used = settings.mode.as_str();
            let valid = Mode::ALL.map(Mode::as_str).join("|");
            let with_value =
                format!("{ANNOTATION_MODE} {value:?} unknown; valid: {valid}|{DISABLED}");
            // A value too long for the warning is not repeated.
            warnings.push(if warning::fits(&with_value) {
                with_value
            } else {
                format!("{ANNOTATION_MODE} unknown, used {used}; valid: {valid}|{DISABLED}")
            });
            Some(settings.mode)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const BASE: Facts<'static> = Facts {
        kind: Kind::Job,
        operation: "CREATE",
        restart_policy: Some("Never"),
        mode_annotation: None,
        injection_off: false,
        injected: false,
        oversized: None,
    };

    fn with(f: impl FnOnce(&mut Facts<'static>)) -> Facts<'static> {
        let mut facts = BASE;
        f(&mut facts);
        facts
    }

    const NATIVE: Plan = Plan::Apply(Mode::NativeSidecar);

    #[rstest]
    #[case::job_create(BASE, NATIVE)]
    #[case::job_update(with(|f| f.operation = "UPDATE"), Plan::Skip(Skip::JobNotCreate))]
    #[case::job_delete(with(|f| f.operation = "DELETE"), Plan::Skip(Skip::JobNotCreate))]
    #[case::cronjob_create(with(|f| f.kind = Kind::CronJob), NATIVE)]
    #[case::cronjob_update(with(|f| { f.kind = Kind::CronJob; f.operation = "UPDATE" }), NATIVE)]
    #[case::cronjob_delete(with(|f| { f.kind = Kind::CronJob; f.operation = "DELETE" }), Plan::Skip(Skip::Operation))]
    #[case::pod_never(with(|f| f.kind = Kind::Pod), NATIVE)]
    #[case::pod_on_failure(with(|f| { f.kind = Kind::Pod; f.restart_policy = Some("OnFailure") }), NATIVE)]
    #[case::pod_always(with(|f| { f.kind = Kind::Pod; f.restart_policy = Some("Always") }), Plan::Skip(Skip::LongRunningPod))]
    #[case::pod_unset(with(|f| { f.kind = Kind::Pod; f.restart_policy = None }), Plan::Skip(Skip::LongRunningPod))]
    #[case::pod_update(with(|f| { f.kind = Kind::Pod; f.operation = "UPDATE" }), Plan::Skip(Skip::Operation))]
    #[case::injection_off(with(|f| f.injection_off = true), Plan::Skip(Skip::InjectionOff))]
    #[case::injection_off_but_injected(with(|f| { f.injection_off = true; f.injected = true }), NATIVE)]
    #[case::workload_disabled(with(|f| f.mode_annotation = Some("disabled")), Plan::Skip(Skip::Disabled))]
    #[case::workload_exit(with(|f| f.mode_annotation = Some("exitOnJobCompletion")), Plan::Apply(Mode::ExitOnJobCompletion))]
    #[case::workload_quit(with(|f| f.mode_annotation = Some("quitEndpoint")), Plan::Apply(Mode::QuitEndpoint))]
    #[case::workload_invalid(with(|f| f.mode_annotation = Some("off")), NATIVE)]
    #[case::job_update_wins_over_annotation(with(|f| { f.operation = "UPDATE"; f.mode_annotation = Some("exitOnJobCompletion") }), Plan::Skip(Skip::JobNotCreate))]
    #[case::oversized(with(|f| f.oversized = Some(("sidecar.istio.io/status", 300_000))), Plan::Skip(Skip::Oversized))]
    #[case::oversized_disabled(with(|f| { f.oversized = Some(("proxy.istio.io/config", 300_000)); f.mode_annotation = Some("disabled") }), Plan::Skip(Skip::Oversized))]
    #[case::job_update_wins_over_oversized(with(|f| { f.operation = "UPDATE"; f.oversized = Some(("proxy.istio.io/config", 300_000)) }), Plan::Skip(Skip::JobNotCreate))]
    #[case::long_running_pod_wins_over_oversized(with(|f| { f.kind = Kind::Pod; f.restart_policy = None; f.oversized = Some(("proxy.istio.io/config", 300_000)) }), Plan::Skip(Skip::LongRunningPod))]
    fn decision_table(#[case] facts: Facts<'static>, #[case] expected: Plan) {
        assert_eq!(decide(&facts, &Settings::default()).0, expected);
    }

    /// The warning names the annotation and its size, whole within a
    /// warning's length for every key read and a value up to the largest
    /// body policy-server takes.
    #[test]
    fn oversized_says_which_annotation() {
        let facts = with(|f| f.oversized = Some(("istio-job-sidecar/applied", 2_097_152)));
        let (_, warnings) = decide(&facts, &Settings::default());
        assert_eq!(
            warnings,
            vec!["istio-job-sidecar/applied too large: 2097152 bytes, past the API server's 256 KiB; left unchanged"]
        );
        assert!(warning::fits(&warnings[0]));
    }

    #[test]
    fn invalid_workload_mode_warns_and_names_valid_values() {
        let facts = with(|f| f.mode_annotation = Some("off"));
        let (plan, warnings) = decide(&facts, &Settings::default());
        assert_eq!(plan, NATIVE);
        assert_eq!(
            warnings,
            vec!["istio-job-sidecar/mode \"off\" unknown; valid: nativeSidecar|exitOnJobCompletion|quitEndpoint|disabled"]
        );
        let long = with(|f| f.mode_annotation = Some("exit-on-job-completion-please"));
        let (_, warnings) = decide(&long, &Settings::default());
        assert_eq!(
            warnings,
            vec!["istio-job-sidecar/mode unknown, used nativeSidecar; valid: nativeSidecar|exitOnJobCompletion|quitEndpoint|disabled"]
        );
    }

    #[rstest]
    #[case::disabled("disabled")]
    #[case::other_mode("exitOnJobCompletion")]
    #[case::invalid("nonsense")]
    fn annotation_ignored_without_workload_override(#[case] value: &'static str) {
        let settings = Settings {
            workload_override: false,
            ..Settings::default()
        };
        let facts = with(|f| f.mode_annotation = Some(value));
        assert_eq!(decide(&facts, &settings), (NATIVE, vec![]));
    }

    #[test]
    fn cluster_mode_applies() {
        let settings = Settings {
            mode: Mode::ExitOnJobCompletion,
            ..Settings::default()
        };
        assert_eq!(
            decide(&BASE, &settings).0,
            Plan::Apply(Mode::ExitOnJobCompletion)
        );
    }
}
