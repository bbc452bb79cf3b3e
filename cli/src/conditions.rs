//! A policy's `matchConditions`, evaluated as the API server evaluates a
//! webhook's (Kubernetes >= 1.28): CEL expressions over `object`,
//! `oldObject` and `request`, all of which must be true for the request to
//! reach the policy. One that is false skips the webhook; if none is false
//! and one errs, the `failurePolicy` decides (`Ignore`: skipped; `Fail`:
//! the request is rejected).
//!
//! The expressions run in the `cel` crate (cel-rust: the standard
//! environment and its strings extension, as Kubernetes has them). What it
//! cannot evaluate (a function of Kubernetes' own CEL libraries, the
//! `authorizer`, a syntax it does not parse) is said, never guessed.

use std::sync::Arc;

use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use serde_json::Value;

/// One `matchConditions` entry, compiled.
pub struct Condition {
    pub name: String,
    program: Result<Program, String>,
}

/// A policy's conditions and the environment they run in.
pub struct Conditions {
    env: Arc<Env>,
    pub list: Vec<Condition>,
    /// `failurePolicy: Ignore` (else `Fail`, Kubewarden's default).
    pub ignore_errors: bool,
}

impl std::fmt::Debug for Conditions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.list.iter().map(|c| c.name.as_str()).collect();
        write!(
            f,
            "Conditions({names:?}, ignore errors: {})",
            self.ignore_errors
        )
    }
}

/// What the conditions say of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Not sent to the policy: why.
    Skipped(String),
    /// Rejected by the API server (an error under `failurePolicy: Fail`).
    Rejected(String),
    /// Not known here: why.
    Unknown(String),
}

impl Conditions {
    pub fn new(conditions: &[(String, String)], ignore_errors: bool) -> Conditions {
        let mut env = Env::stdlib();
        let _ = env.add_extension(cel::extensions::strings);
        let env = Arc::new(env);
        let list = conditions
            .iter()
            .map(|(name, expression)| Condition {
                name: name.clone(),
                program: env.compile(expression).map_err(|e| e.to_string()),
            })
            .collect();
        Conditions {
            env,
            list,
            ignore_errors,
        }
    }

    /// The conditions on the AdmissionRequest `request` (its `object` and
    /// `oldObject` are the variables of those names).
    pub fn evaluate(&self, request: &Value) -> Verdict {
        let mut context = Context::with_env(self.env.clone());
        for (name, value) in [
            ("object", &request["object"]),
            ("oldObject", &request["oldObject"]),
            ("request", request),
        ] {
            match cel::to_value(value) {
                Ok(v) => context.add_variable_from_value(name, v),
                Err(e) => return Verdict::Unknown(format!("{name} is not CEL data: {e}")),
            }
        }
        let (mut unknown, mut errors) = (None, None);
        for condition in &self.list {
            let program = match &condition.program {
                Ok(p) => p,
                Err(why) => {
                    unknown.get_or_insert(format!(
                        "matchCondition {} is not understood here: {why}",
                        condition.name
                    ));
                    continue;
                }
            };
            match program.execute(&context) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    return Verdict::Skipped(format!("matchCondition {} is false", condition.name))
                }
                Ok(other) => {
                    errors.get_or_insert(format!(
                        "matchCondition {} gives {other:?}, not a boolean",
                        condition.name
                    ));
                }
                Err(e) if unsupported(&e) => {
                    unknown.get_or_insert(format!(
                        "matchCondition {} cannot be evaluated here: {e}",
                        condition.name
                    ));
                }
                Err(e) => {
                    errors.get_or_insert(format!("matchCondition {} errs: {e}", condition.name));
                }
            }
        }
        if let Some(why) = unknown {
            return Verdict::Unknown(why);
        }
        match errors {
            None => Verdict::Pass,
            Some(why) if self.ignore_errors => {
                Verdict::Skipped(format!("{why} (failurePolicy Ignore)"))
            }
            Some(why) => Verdict::Rejected(format!("{why} (failurePolicy Fail)")),
        }
    }
}

/// An error of this evaluator rather than of the expression: a function or
/// variable Kubernetes' CEL has and this one lacks.
fn unsupported(e: &ExecutionError) -> bool {
    matches!(
        e,
        ExecutionError::UndeclaredReference(_)
            | ExecutionError::NotSupportedAsMethod { .. }
            | ExecutionError::NoSuchOverload(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(resource: &str, object: Value) -> Value {
        json!({"operation": "CREATE", "resource": {"group": "", "version": "v1", "resource": resource},
               "object": object, "oldObject": null})
    }

    /// The examples' condition for Pods (examples/native-sidecar.yaml).
    const RUN_TO_COMPLETION: &str = "request.resource.resource != 'pods' ||\n\
        (has(object.spec.restartPolicy) && object.spec.restartPolicy != 'Always')";

    #[test]
    fn conditions_read_as_the_api_server_reads_them() {
        let c = Conditions::new(
            &[(
                "run-to-completion-pods-only".into(),
                RUN_TO_COMPLETION.into(),
            )],
            true,
        );
        let pod = |policy: Value| json!({"spec": {"restartPolicy": policy}});
        assert_eq!(
            c.evaluate(&request("pods", pod(json!("Never")))),
            Verdict::Pass
        );
        assert_eq!(
            c.evaluate(&request("pods", pod(json!("Always")))),
            Verdict::Skipped("matchCondition run-to-completion-pods-only is false".into())
        );
        assert_eq!(
            c.evaluate(&request("pods", json!({"spec": {}}))),
            Verdict::Skipped("matchCondition run-to-completion-pods-only is false".into())
        );
        assert_eq!(c.evaluate(&request("jobs", json!({}))), Verdict::Pass);
    }

    #[test]
    fn what_it_cannot_evaluate_is_unknown_and_errors_follow_the_failure_policy() {
        let auth = Conditions::new(
            &[(
                "auth".into(),
                "authorizer.requestResource.check('x').allowed()".into(),
            )],
            true,
        );
        assert!(matches!(
            auth.evaluate(&request("pods", json!({}))),
            Verdict::Unknown(_)
        ));
        let missing = "object.metadata.labels['team'] == 'a'";
        let ignore = Conditions::new(&[("team".into(), missing.into())], true);
        assert!(matches!(
            ignore.evaluate(&request("jobs", json!({"metadata": {"labels": {}}}))),
            Verdict::Skipped(_)
        ));
        let fail = Conditions::new(&[("team".into(), missing.into())], false);
        assert!(matches!(
            fail.evaluate(&request("jobs", json!({"metadata": {"labels": {}}}))),
            Verdict::Rejected(_)
        ));
    }
}
