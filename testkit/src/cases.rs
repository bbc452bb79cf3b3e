//! The golden cases of `test_data/cases/<case>/`: every case's input
//! (`request.json`, `settings.json`), built here from Istio's own manifests
//! in `test_data/fixtures/` and a few hand-made objects. The list is the
//! one place a case is added: `tests/golden.rs` makes a test of each, holds
//! the committed inputs to what is built here (`UPDATE_GOLDEN=1` writes
//! them) and fails on a directory the list does not name; `e2e.bats` runs
//! every case the `cases` binary lists through kwctl. The inputs stay
//! committed because kwctl, policy-server and the wasm-level tests read
//! them; `expected.json` is the policy's answer, written by the golden test.
//!
//! Mode changes (reversible modes: B(A(x)) == B(x)) are made in two
//! passes. `mode-change-<variant>-<mode>` admits a CronJob x under one mode
//! (a CREATE; `<mode>` is `disabled` for x with `istio-job-sidecar/mode:
//! disabled`); `mode-change-<variant>-<A>-then-<B>` is a CronJob UPDATE
//! whose object is the first pass's result A(x) (oldObject A(x) too), with
//! the user's edit that picks B when an annotation picks it, admitted under
//! B. A second pass's input is an answer of the policy, so it is computed
//! from its first pass by the policy itself, natively, in the same run
//! (`Cases::input`). Variants: plain, yaml, json (no proxy config, a YAML
//! block one, a JSON one), injected (istioctl kube-inject's CronJob),
//! ordered (the same with an init container of its own), held (the same
//! as Istio renders it for a pod that holds its application until the
//! proxy starts: the proxy first), ported (the same with a status port of
//! its own), asked (a user's nativeSidecar "yes"), flip (the mode set by the template's annotation);
//! every app container runs a command full of quoting. The unreadable-
//! record, edited-command and legacy-mark cases start from the result of
//! `mode-change-plain-quitEndpoint`, the re-applies from that of
//! `mode-change-injected-nativeSidecar`. `tests/mode_changes.rs` holds the
//! passes to the laws.
//!
//! The files are written as the inputs always were (two-space indented
//! JSON, every member in the order it was made, every character outside
//! printable ASCII escaped), so a case unchanged stays byte for byte the
//! same: `Json` keeps that order, which `serde_json::Value` does not.
//!
//! Where each part lives: `json`, the ordered value, and `text`, its
//! files' text read and written; `workloads`, Istio's fixtures, the
//! hand-made objects and the edits made to them, and `request`, the
//! AdmissionRequest and settings a case sends; then the list's sections,
//! each adding its cases in the order `Cases::all` calls them:
//! `decisions`, `quit`, `native`, and `mode_changes` over the CronJobs of
//! `variants`. Here: the list itself and how a case's input is made.

mod decisions;
mod json;
mod mode_changes;
mod native;
mod quit;
mod request;
mod text;
mod variants;
mod workloads;

pub use json::Json;

use crate::{check_answer, payload, Order};
use decisions::{decision_table, kube_injected, proxy_config_and_odd_shapes};
use mode_changes::mode_changes;
use native::{native_where_it_cannot_run, releases_and_reinjection};
use quit::quit_endpoint;
use request::request;
use serde_json::Value;

/// A change a second pass makes to its first pass's result (the user's
/// edit, a re-apply, a stale record).
type Edit = Box<dyn Fn(&mut Json) + Send + Sync>;

enum Input {
    /// A request and its settings, as they are.
    Given { request: Json, settings: Json },
    /// A CronJob UPDATE of the result of case `first` (its oldObject
    /// too), `edit` made to the object, admitted with `settings`.
    After {
        first: String,
        edit: Edit,
        settings: Json,
    },
}

/// One golden case: its name (its directory) and how its input is made.
pub struct GoldenCase {
    pub name: String,
    input: Input,
}

impl GoldenCase {
    /// The case whose result this one's input is made from, if any.
    pub fn first_pass(&self) -> Option<&str> {
        match &self.input {
            Input::Given { .. } => None,
            Input::After { first, .. } => Some(first),
        }
    }
}

/// Every golden case, in one list.
pub struct Cases {
    list: Vec<GoldenCase>,
}

/// A case's input: `request.json` and `settings.json`.
pub struct Inputs {
    pub request: Json,
    pub settings: Json,
}

impl Inputs {
    pub fn request_file(&self) -> String {
        self.request.to_file()
    }

    pub fn settings_file(&self) -> String {
        self.settings.to_file()
    }
}

/// The result of the native policy on a request, sent as policy-server
/// sends it: what a second pass starts from (the first pass's own test
/// holds that answer to its expected.json).
fn result_of(inputs: &Inputs) -> Result<Value, String> {
    let request = inputs.request.to_value();
    let settings = inputs.settings.to_value();
    let raw = istio_job_sidecar_policy::validate(&payload(
        &request,
        Some(&settings),
        Order::PolicyServer,
    ))
    .map_err(|e| format!("validate: {e:?}"))?;
    check_answer(&raw)?
        .mutated
        .ok_or_else(|| "mutated nothing, so no second pass can start from it".into())
}

impl Cases {
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|c| c.name.as_str())
    }

    pub fn get(&self, name: &str) -> Option<&GoldenCase> {
        self.list.iter().find(|c| c.name == name)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The input of case `name`; a second pass's made from its first
    /// pass's result, computed here by the native policy.
    pub fn input(&self, name: &str) -> Result<Inputs, String> {
        let case = self
            .get(name)
            .ok_or_else(|| format!("{name}: no such case"))?;
        match &case.input {
            Input::Given { request, settings } => Ok(Inputs {
                request: request.clone(),
                settings: settings.clone(),
            }),
            Input::After {
                first,
                edit,
                settings,
            } => {
                let after = self.input(first)?;
                let after = Json::from_value(
                    &result_of(&after).map_err(|e| format!("its first pass {first}: {e}"))?,
                );
                let mut object = after.clone();
                edit(&mut object);
                Ok(Inputs {
                    request: request(object, "UPDATE", Some(after), "batch"),
                    settings: settings.clone(),
                })
            }
        }
    }

    fn given(&mut self, name: impl Into<String>, request: Json, settings: Json) {
        self.push(GoldenCase {
            name: name.into(),
            input: Input::Given { request, settings },
        });
    }

    fn after(
        &mut self,
        name: impl Into<String>,
        first: impl Into<String>,
        settings: Json,
        edit: impl Fn(&mut Json) + Send + Sync + 'static,
    ) {
        self.push(GoldenCase {
            name: name.into(),
            input: Input::After {
                first: first.into(),
                edit: Box::new(edit),
                settings,
            },
        });
    }

    fn push(&mut self, case: GoldenCase) {
        assert!(self.get(&case.name).is_none(), "{}: named twice", case.name);
        self.list.push(case);
    }

    /// Every case.
    pub fn all() -> Cases {
        let mut cases = Cases { list: Vec::new() };
        decision_table(&mut cases);
        kube_injected(&mut cases);
        proxy_config_and_odd_shapes(&mut cases);
        quit_endpoint(&mut cases);
        releases_and_reinjection(&mut cases);
        native_where_it_cannot_run(&mut cases);
        mode_changes(&mut cases);
        cases
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_named_once() {
        let cases = Cases::all();
        assert!(cases.len() > 100);
        for case in &cases.list {
            if let Some(first) = case.first_pass() {
                assert!(cases.get(first).is_some(), "{}: no {first}", case.name);
            }
        }
    }
}
