//! After which exits the kubelet restarts an application container, and so
//! after which the quitEndpoint wrapper may ask the proxy to quit: only
//! after an exit that is the container's last in this Pod
//! (docs/facts.md, "Container restart rules"). This file is the one home
//! of the wrapper's `when` ([`When`]): its words, what the mode writes and
//! what the script reads of them.
//!
//! The kubelet's rule (Kubernetes' `ContainerShouldRestart`,
//! `pkg/api/v1/pod/util.go`): a container that sets its own
//! `restartPolicy` is restarted by the first of its `restartPolicyRules`
//! whose `exitCodes` match the exit code (`In` or `NotIn` its `values`;
//! a rule without `exitCodes`, or with another operator, matches nothing),
//! else by its own `restartPolicy` (`Always`; `OnFailure` after a non-zero
//! exit; `Never`), else (any other value) by the Pod's. A container without
//! its own `restartPolicy` follows the Pod's, and its rules are not read
//! (the API server accepts rules only beside a container `restartPolicy`).
//! A rule's `RestartAllContainers` (alpha in 1.35) restarts the whole Pod
//! in place, the proxy with it: the container is started again all the
//! same, so the wrapper must not quit then either. An action the policy
//! does not know leaves it no safe time to quit.
//!
//! Kubelets that ignore the fields: the kubelet reads them only with its
//! feature gate `ContainerRestartRules` on (`pkg/kubelet/prober/worker.go`,
//! `pkg/features/kube_features.go`: alpha and off in 1.34, beta and on in
//! 1.35), and KEP-5307's version-skew section says a kubelet unaware of
//! them "will ignore this field and keep the existing behavior determined
//! by pod's restart policy". The skew policy lets a 1.35+ API server keep
//! the fields for kubelets three minors older, so a container's own
//! restart fields have two readings: the Pod's `restartPolicy` alone
//! (kubelets before 1.35) and the container's (1.35 and later). The
//! wrapper never quits before a restart some kubelet would make, nor
//! waits for one that never comes: where the two readings differ, the
//! kubelets that may run the Pod decide ([`Kubelets`]), and where they are
//! not known the container is not wrapped.

use serde_json::Value;
use std::borrow::Cow;

/// Quit after any exit of the program.
pub const ALWAYS: &str = "always";
/// Quit only after the program succeeded (restartPolicy OnFailure).
pub const ON_SUCCESS: &str = "on-success";
/// `unless:C,...`: quit after any exit but those codes.
pub const UNLESS: &str = "unless:";
/// `only:C,...`: quit only after those exit codes.
pub const ONLY: &str = "only:";

/// After which exits of the program the wrapper asks the proxy to quit:
/// the wrapper's `when` argument (`$2` of `quit_wrapper.sh`, whose
/// `case $2 in` reads the four forms as [`When::quits_after`] does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// After any exit: `always`.
    Always,
    /// After exit code 0 only: `on-success`.
    OnSuccess,
    /// After any exit but these codes (ascending): `unless:C,...`.
    Unless(Vec<u8>),
    /// After these exit codes only (ascending): `only:C,...`.
    Only(Vec<u8>),
}

impl When {
    /// The argument the wrapper is given.
    pub fn arg(&self) -> Cow<'static, str> {
        let (word, codes) = match self {
            When::Always => return ALWAYS.into(),
            When::OnSuccess => return ON_SUCCESS.into(),
            When::Unless(codes) => (UNLESS, codes),
            When::Only(codes) => (ONLY, codes),
        };
        let mut arg = String::from(word);
        for (i, code) in codes.iter().enumerate() {
            if i > 0 {
                arg.push(',');
            }
            arg.push_str(&code.to_string());
        }
        arg.into()
    }

    /// The `when` an argument names, as the script reads it; `None` for a
    /// word it does not know (the script then quits after any exit).
    pub fn parse(arg: &str) -> Option<When> {
        let codes =
            |list: &str| -> Option<Vec<u8>> { list.split(',').map(|c| c.parse().ok()).collect() };
        match arg {
            ALWAYS => Some(When::Always),
            ON_SUCCESS => Some(When::OnSuccess),
            _ => {
                if let Some(list) = arg.strip_prefix(UNLESS) {
                    codes(list).map(When::Unless)
                } else {
                    codes(arg.strip_prefix(ONLY)?).map(When::Only)
                }
            }
        }
    }

    /// Whether the wrapper asks the proxy to quit after exit `code`.
    pub fn quits_after(&self, code: u8) -> bool {
        match self {
            When::Always => true,
            When::OnSuccess => code == 0,
            When::Unless(codes) => !codes.contains(&code),
            When::Only(codes) => codes.contains(&code),
        }
    }

    /// The `when` that quits after exactly the codes not `restarted`
    /// after; `Err` when every code is.
    fn from_restarted(restarted: &[bool; 256]) -> Result<When, NoSafeTime> {
        let again = restarted.iter().filter(|r| **r).count();
        Ok(match again {
            256 => return Err(NoSafeTime::AlwaysRestarted),
            0 => When::Always,
            255 if !restarted[0] => When::OnSuccess,
            // The shorter list: the codes restarted after, or the others.
            _ => {
                let listed = again <= 256 - again;
                let codes = (0..=255u8)
                    .filter(|c| restarted[usize::from(*c)] == listed)
                    .collect();
                if listed {
                    When::Unless(codes)
                } else {
                    When::Only(codes)
                }
            }
        })
    }
}

/// The first kubelet minor release that reads a container's own restart
/// fields by default (`ContainerRestartRules` beta, on, in 1.35); the one
/// before reads them only with its alpha gate turned on.
pub const FIRST_READING_MINOR: u64 = 35;

/// What the kubelets that may run the Pod make of a container's own
/// `restartPolicy` and `restartPolicyRules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kubelets {
    /// Every one is 1.35 or later: the container's fields decide.
    ReadRules,
    /// Every one is older than 1.34 (no such fields): the Pod's
    /// `restartPolicy` decides.
    IgnoreRules,
    /// Not known, or some of each (a 1.34 kubelet reads them only with its
    /// alpha gate on): the detail the warning gives, e.g.
    /// `"node pool-a-1: v1.34.2"`.
    Unknown(String),
}

/// Why no exit of the program is a safe time to quit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoSafeTime {
    /// The container is restarted after every exit.
    AlwaysRestarted,
    /// Its `restartPolicyRules` are not of a shape the kubelet runs, or
    /// name an action the policy does not know.
    UnknownRules,
    /// Kubelets before 1.35 restart it otherwise than later ones, and the
    /// kubelets that may run the Pod are not known: why, as
    /// [`Kubelets::Unknown`] says it.
    KubeletsDiffer(String),
}

impl NoSafeTime {
    /// The warning, naming the container `name` when that fits.
    pub fn warning(&self, name: &str) -> String {
        let fitted = |full: String, short: String| {
            if crate::warning::fits(&full) {
                full
            } else {
                short
            }
        };
        let what = match self {
            NoSafeTime::AlwaysRestarted => "is restarted after every exit",
            NoSafeTime::UnknownRules => "has restartPolicyRules it cannot read",
            NoSafeTime::KubeletsDiffer(why) => {
                const WHO: &str = "quitEndpoint: kubelets < 1.35 ignore";
                const TAIL: &str = "restartPolicy: not wrapped";
                return fitted(
                    format!("{WHO} {name}'s {TAIL} ({why})"),
                    fitted(
                        format!("{WHO} {name}'s {TAIL}"),
                        format!("{WHO} the app container's {TAIL}"),
                    ),
                );
            }
        };
        fitted(
            format!("quitEndpoint: container {name} {what}: not wrapped; use nativeSidecar"),
            format!("quitEndpoint: the app container {what}: not wrapped; use nativeSidecar"),
        )
    }
}

/// The wrapper's `when` for a container with the Pod's `pod` and its own
/// `container` restart policy and `rules` (its `restartPolicyRules`);
/// `kubelets` is asked only where kubelets before 1.35 and later ones
/// read them differently.
pub fn when(
    pod: Option<&str>,
    container: Option<&str>,
    rules: Option<&Value>,
    kubelets: impl FnOnce() -> Kubelets,
) -> Result<When, NoSafeTime> {
    // The Pod's restartPolicy alone: what every kubelet reads where the
    // container sets none, and what kubelets before 1.35 read always. A
    // Pod is wrapped only at Never or OnFailure; a template's other value,
    // which the API server refuses in a Job, is read as Never.
    let pods = reading(
        Some(pod.filter(|p| *p == "OnFailure").unwrap_or("Never")),
        None,
        &[],
    );
    let Some(container) = container else {
        return pods;
    };
    let rules = read_rules(rules).ok_or(NoSafeTime::UnknownRules);
    let own = rules.and_then(|rules| reading(pod, Some(container), &rules));
    if own == pods {
        return own;
    }
    match kubelets() {
        Kubelets::ReadRules => own,
        Kubelets::IgnoreRules => pods,
        // The later kubelets' reason not to wrap is reason enough.
        Kubelets::Unknown(why) => own.and(Err(NoSafeTime::KubeletsDiffer(why))),
    }
}

/// The `when` of one kubelet's reading: with the container's own
/// `restartPolicy` (`Some`) and `rules`, or the Pod's alone.
fn reading(pod: Option<&str>, container: Option<&str>, rules: &[Rule]) -> Result<When, NoSafeTime> {
    // Exit codes as the wrapper sees them: 0-255 (128+N after signal N).
    let mut restarted = [false; 256];
    for (code, restarts) in (0i64..).zip(restarted.iter_mut()) {
        *restarts = restarts_after(pod, container, rules, code)?;
    }
    When::from_restarted(&restarted)
}

/// A rule as the kubelet reads it.
struct Rule<'v> {
    action: &'v str,
    /// `Some((in, values))`: matches when the code is (`in`) or is not in
    /// `values`; `None`: matches no code.
    exit_codes: Option<(bool, Vec<i64>)>,
}

impl Rule<'_> {
    fn matches(&self, code: i64) -> bool {
        match &self.exit_codes {
            Some((is_in, values)) => values.contains(&code) == *is_in,
            None => false,
        }
    }
}

/// The rules, `None` when they are not of the shape the API server keeps
/// (a list of objects with a string `action` and integer `values`).
fn read_rules(rules: Option<&Value>) -> Option<Vec<Rule<'_>>> {
    let items = match rules {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return None,
    };
    items
        .iter()
        .map(|rule| {
            let action = rule.get("action")?.as_str()?;
            let exit_codes = match rule.get("exitCodes") {
                None | Some(Value::Null) => None,
                Some(codes) => {
                    let values = match codes.get("values") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(values) => values
                            .as_array()?
                            .iter()
                            .map(Value::as_i64)
                            .collect::<Option<Vec<i64>>>()?,
                    };
                    match codes.get("operator").and_then(Value::as_str) {
                        Some("In") => Some((true, values)),
                        Some("NotIn") => Some((false, values)),
                        _ => None,
                    }
                }
            };
            Some(Rule { action, exit_codes })
        })
        .collect()
}

/// Whether the kubelet starts the container again after it exited with
/// `code`, by the container's own `restartPolicy` (`None`: the Pod's
/// decides) and `rules`; `Err` for a matching rule whose action the policy
/// does not know.
fn restarts_after(
    pod: Option<&str>,
    container: Option<&str>,
    rules: &[Rule],
    code: i64,
) -> Result<bool, NoSafeTime> {
    if container.is_some() {
        if let Some(rule) = rules.iter().find(|r| r.matches(code)) {
            return match rule.action {
                "Restart" | "RestartAllContainers" => Ok(true),
                _ => Err(NoSafeTime::UnknownRules),
            };
        }
    }
    Ok(match container {
        Some("Always") => true,
        Some("OnFailure") => code != 0,
        Some("Never") => false,
        // The Pod's: Always (its default) restarts after every exit.
        _ => match pod {
            Some("Never") => false,
            Some("OnFailure") => code != 0,
            _ => true,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn rule(action: &str, operator: &str, values: &[i64]) -> Value {
        json!({"action": action, "exitCodes": {"operator": operator, "values": values}})
    }

    /// Each row is a container of Kubernetes' own examples and tests of the
    /// feature (the docs' `restart-on-exit-codes` Pod: Pod `Never`,
    /// container `Never`, `Restart` `In` `[42]`), and what the wrapper does.
    #[rstest]
    #[case::pod_never(Some("Never"), None, None, Ok("always"))]
    #[case::pod_on_failure(Some("OnFailure"), None, None, Ok("on-success"))]
    #[case::rules_without_a_container_policy_are_not_read(
        Some("Never"), None, Some(json!([rule("Restart", "In", &[42])])), Ok("always")
    )]
    #[case::container_never_in_an_on_failure_pod(
        Some("OnFailure"),
        Some("Never"),
        None,
        Ok("always")
    )]
    #[case::container_on_failure_in_a_never_pod(
        Some("Never"),
        Some("OnFailure"),
        None,
        Ok("on-success")
    )]
    #[case::retry_42_in_place(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), Ok("unless:42")
    )]
    #[case::retry_all_but_0_and_3(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "NotIn", &[0, 3])])), Ok("only:0,3")
    )]
    #[case::not_in_0_is_on_failure(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "NotIn", &[0])])), Ok("on-success")
    )]
    #[case::restart_all_containers_restarts_it_too(
        Some("Never"), Some("Never"), Some(json!([rule("RestartAllContainers", "In", &[7, 9])])), Ok("unless:7,9")
    )]
    #[case::out_of_range_codes_never_happen(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "In", &[-1, 256, 70000])])), Ok("always")
    )]
    #[case::a_rule_without_exit_codes_matches_nothing(
        Some("Never"), Some("Never"), Some(json!([{"action": "Restart"}])), Ok("always")
    )]
    #[case::an_unknown_operator_matches_nothing(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "Above", &[1])])), Ok("always")
    )]
    #[case::on_failure_with_a_rule_for_0_restarts_always(
        Some("Never"), Some("OnFailure"), Some(json!([rule("Restart", "In", &[0])])), Err(NoSafeTime::AlwaysRestarted)
    )]
    #[case::container_always(Some("Never"), Some("Always"), None, Err(NoSafeTime::AlwaysRestarted))]
    #[case::unknown_container_policy_is_the_pods(
        Some("OnFailure"),
        Some("Sometimes"),
        None,
        Ok("on-success")
    )]
    #[case::an_unknown_action(
        Some("Never"), Some("Never"), Some(json!([rule("Pause", "In", &[1])])), Err(NoSafeTime::UnknownRules)
    )]
    #[case::an_unknown_action_that_never_matches(
        Some("Never"), Some("Never"), Some(json!([rule("Pause", "In", &[300])])), Ok("always")
    )]
    #[case::first_matching_rule_wins(
        Some("Never"), Some("Never"),
        Some(json!([rule("Restart", "In", &[1]), rule("Pause", "In", &[1])])),
        Ok("unless:1")
    )]
    #[case::not_a_list(Some("Never"), Some("Never"), Some(json!({"action": "Restart"})), Err(NoSafeTime::UnknownRules))]
    #[case::values_not_integers(
        Some("Never"), Some("Never"), Some(json!([{"action": "Restart", "exitCodes": {"operator": "In", "values": ["42"]}}])),
        Err(NoSafeTime::UnknownRules)
    )]
    fn when_to_quit(
        #[case] pod: Option<&str>,
        #[case] container: Option<&str>,
        #[case] rules: Option<Value>,
        #[case] expected: Result<&str, NoSafeTime>,
    ) {
        // As every kubelet 1.35 or later reads them.
        let when = when(pod, container, rules.as_ref(), || Kubelets::ReadRules);
        assert_eq!(
            when.map(|w| w.arg().into_owned()),
            expected.map(str::to_owned)
        );
    }

    fn unknown() -> Kubelets {
        Kubelets::Unknown("nodeVersionCheck off".into())
    }

    fn differ() -> Result<&'static str, NoSafeTime> {
        Err(NoSafeTime::KubeletsDiffer("nodeVersionCheck off".into()))
    }

    /// The container's own restart fields under each reading of the
    /// kubelets that may run the Pod: the 1.35+ reading where every one
    /// reads them, the Pod's `restartPolicy` where none does, and no
    /// wrapper where the two differ and the kubelets are not known.
    #[rstest]
    // Pod OnFailure, container Never: a kubelet before 1.35 restarts the
    // app after a failure, a later one never does.
    #[case::never_in_on_failure_pod_1_35(
        Some("OnFailure"),
        Some("Never"),
        None,
        Kubelets::ReadRules,
        Ok("always")
    )]
    #[case::never_in_on_failure_pod_1_34(
        Some("OnFailure"),
        Some("Never"),
        None,
        Kubelets::IgnoreRules,
        Ok("on-success")
    )]
    #[case::never_in_on_failure_pod_unknown(
        Some("OnFailure"),
        Some("Never"),
        None,
        unknown(),
        differ()
    )]
    // Pod Never, Restart In [42]: only a 1.35+ kubelet runs it again on 42.
    #[case::retry_42_1_35(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), Kubelets::ReadRules, Ok("unless:42")
    )]
    #[case::retry_42_1_34(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), Kubelets::IgnoreRules, Ok("always")
    )]
    #[case::retry_42_unknown(
        Some("Never"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), unknown(), differ()
    )]
    // Pod OnFailure, container Never, Restart In [42].
    #[case::retry_42_in_on_failure_pod_1_35(
        Some("OnFailure"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), Kubelets::ReadRules, Ok("unless:42")
    )]
    #[case::retry_42_in_on_failure_pod_1_34(
        Some("OnFailure"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), Kubelets::IgnoreRules, Ok("on-success")
    )]
    #[case::retry_42_in_on_failure_pod_unknown(
        Some("OnFailure"), Some("Never"), Some(json!([rule("Restart", "In", &[42])])), unknown(), differ()
    )]
    // Pod Never, container OnFailure.
    #[case::on_failure_in_never_pod_unknown(
        Some("Never"),
        Some("OnFailure"),
        None,
        unknown(),
        differ()
    )]
    // The same reading everywhere: no kubelet needs to be known.
    #[case::never_in_never_pod(Some("Never"), Some("Never"), None, unknown(), Ok("always"))]
    #[case::on_failure_in_on_failure_pod(
        Some("OnFailure"),
        Some("OnFailure"),
        None,
        unknown(),
        Ok("on-success")
    )]
    #[case::restart_not_in_0_in_on_failure_pod(
        Some("OnFailure"), Some("Never"), Some(json!([rule("Restart", "NotIn", &[0])])), unknown(), Ok("on-success")
    )]
    // Restarted after every exit by 1.35+: not wrapped for that reason.
    #[case::always_in_never_pod_unknown(
        Some("Never"),
        Some("Always"),
        None,
        unknown(),
        Err(NoSafeTime::AlwaysRestarted)
    )]
    #[case::always_in_never_pod_1_34(
        Some("Never"),
        Some("Always"),
        None,
        Kubelets::IgnoreRules,
        Ok("always")
    )]
    #[case::unknown_action_1_34(
        Some("Never"), Some("Never"), Some(json!([rule("Pause", "In", &[1])])), Kubelets::IgnoreRules, Ok("always")
    )]
    #[case::unknown_action_unknown(
        Some("Never"), Some("Never"), Some(json!([rule("Pause", "In", &[1])])), unknown(), Err(NoSafeTime::UnknownRules)
    )]
    fn each_kubelet_reading(
        #[case] pod: Option<&str>,
        #[case] container: Option<&str>,
        #[case] rules: Option<Value>,
        #[case] kubelets: Kubelets,
        #[case] expected: Result<&str, NoSafeTime>,
    ) {
        let when = when(pod, container, rules.as_ref(), || kubelets);
        assert_eq!(
            when.map(|w| w.arg().into_owned()),
            expected.map(str::to_owned)
        );
    }

    /// The kubelets are asked only where the readings differ.
    #[test]
    fn kubelets_asked_only_where_the_readings_differ() {
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Kubelets::ReadRules
        };
        assert!(when(Some("Never"), Some("Never"), None, ask).is_ok());
        assert!(when(Some("OnFailure"), None, None, ask).is_ok());
        assert_eq!(asked.get(), 0);
        assert!(when(Some("OnFailure"), Some("Never"), None, ask).is_ok());
        assert_eq!(asked.get(), 1);
    }

    /// Every `when` the mode writes is read back as written, and quits
    /// after exactly the codes it was made from.
    #[test]
    fn the_argument_reads_back() {
        for when in [
            When::Always,
            When::OnSuccess,
            When::Unless(vec![42]),
            When::Unless(vec![1, 2, 255]),
            When::Only(vec![0, 3]),
        ] {
            assert_eq!(When::parse(&when.arg()), Some(when.clone()));
            let mut restarted = [false; 256];
            for (code, r) in (0..=255u8).zip(restarted.iter_mut()) {
                *r = !when.quits_after(code);
            }
            assert_eq!(When::from_restarted(&restarted), Ok(when));
        }
        for odd in ["", "never", "unless:", "only:256", "unless:1,,2", "Always"] {
            assert_eq!(When::parse(odd), None, "{odd}");
        }
    }

    #[test]
    fn warnings_fit_with_a_long_name() {
        for why in [
            NoSafeTime::AlwaysRestarted,
            NoSafeTime::UnknownRules,
            NoSafeTime::KubeletsDiffer("node pool-old-1: v1.34.2".into()),
        ] {
            let short = why.warning("app");
            assert!(crate::warning::fits(&short), "{short}");
            assert!(
                short.contains("container app ") || short.contains(" app's "),
                "{short}"
            );
            let long = why.warning(&"a".repeat(63));
            assert!(crate::warning::fits(&long), "{long}");
            assert!(long.contains("the app container"), "{long}");
        }
    }
}
