//! After which exits the kubelet restarts an application container, and so
//! after which the quitEndpoint wrapper may ask the proxy to quit: only
//! after an exit that is the container's last in this Pod
//! (docs/facts.md, "Container restart rules").
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

use crate::modes::quit_endpoint::{ALWAYS, ON_SUCCESS};
use serde_json::Value;
use std::borrow::Cow;

/// `unless:C,...`: quit after any exit but those codes.
pub const UNLESS: &str = "unless:";
/// `only:C,...`: quit only after those exit codes.
pub const ONLY: &str = "only:";

/// Why no exit of the program is a safe time to quit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSafeTime {
    /// The container is restarted after every exit.
    AlwaysRestarted,
    /// Its `restartPolicyRules` are not of a shape the kubelet runs, or
    /// name an action the policy does not know.
    UnknownRules,
}

impl NoSafeTime {
    /// The warning, naming the container `name` when that fits.
    pub fn warning(self, name: &str) -> String {
        let what = match self {
            NoSafeTime::AlwaysRestarted => "is restarted after every exit",
            NoSafeTime::UnknownRules => "has restartPolicyRules it cannot read",
        };
        let full = format!("quitEndpoint: container {name} {what}: not wrapped; use nativeSidecar");
        if crate::warning::fits(&full) {
            full
        } else {
            format!("quitEndpoint: the app container {what}: not wrapped; use nativeSidecar")
        }
    }
}

/// The wrapper's `when` for a container with the Pod's `pod` and its own
/// `container` restart policy and `rules` (its `restartPolicyRules`).
pub fn when(
    pod: Option<&str>,
    container: Option<&str>,
    rules: Option<&Value>,
) -> Result<Cow<'static, str>, NoSafeTime> {
    let Some(container) = container else {
        // The Pod's restartPolicy alone; Job templates hold Never or
        // OnFailure, long-running Pods are never wrapped.
        return Ok(match pod {
            Some("OnFailure") => ON_SUCCESS.into(),
            _ => ALWAYS.into(),
        });
    };
    let rules = read_rules(rules).ok_or(NoSafeTime::UnknownRules)?;
    // Exit codes as the wrapper sees them: 0-255 (128+N after signal N).
    let mut restarted = [false; 256];
    for (code, restarts) in restarted.iter_mut().enumerate() {
        *restarts = restarts_after(pod, container, &rules, code as i64)?;
    }
    let again = restarted.iter().filter(|r| **r).count();
    Ok(match again {
        256 => return Err(NoSafeTime::AlwaysRestarted),
        0 => ALWAYS.into(),
        255 if !restarted[0] => ON_SUCCESS.into(),
        // The shorter list: the codes restarted after, or the others.
        _ => {
            let listed = again <= 256 - again;
            let mut when = String::from(if listed { UNLESS } else { ONLY });
            let start = when.len();
            for (code, restarts) in restarted.iter().enumerate() {
                if *restarts == listed {
                    if when.len() > start {
                        when.push(',');
                    }
                    when.push_str(&code.to_string());
                }
            }
            when.into()
        }
    })
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
/// `code`; `Err` for a matching rule whose action the policy does not know.
fn restarts_after(
    pod: Option<&str>,
    container: &str,
    rules: &[Rule],
    code: i64,
) -> Result<bool, NoSafeTime> {
    if let Some(rule) = rules.iter().find(|r| r.matches(code)) {
        return match rule.action {
            "Restart" | "RestartAllContainers" => Ok(true),
            _ => Err(NoSafeTime::UnknownRules),
        };
    }
    Ok(match container {
        "Always" => true,
        "OnFailure" => code != 0,
        "Never" => false,
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
        assert_eq!(
            when(pod, container, rules.as_ref())
                .as_deref()
                .map_err(|e| *e),
            expected
        );
    }

    #[test]
    fn warnings_fit_with_a_long_name() {
        for why in [NoSafeTime::AlwaysRestarted, NoSafeTime::UnknownRules] {
            assert!(why.warning("app").contains("container app "));
            let long = why.warning(&"a".repeat(63));
            assert!(crate::warning::fits(&long), "{long}");
            assert!(long.contains("the app container"), "{long}");
        }
    }
}
