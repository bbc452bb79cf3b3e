//! One request, one way: payload -> request view -> workload -> decide ->
//! mode -> response. Every failure on the way is an accept, unchanged, with a
//! warning that says why: a mutating helper must never deny a pod.

use crate::decide::{self, decide, Facts, Plan};
use crate::json::Node;
use crate::modes::{self, Target};
use crate::request::Request;
use crate::response;
use crate::settings::Settings;
use crate::workload::{self, Kind, Workload};

/// The `validate` answer for a raw payload (JSON `ValidationResponse` bytes).
pub fn evaluate(payload: &[u8]) -> Vec<u8> {
    match answer(payload) {
        Answer::Accept(warnings) => response::accept(&warnings),
        Answer::Mutate(object, warnings) => response::mutate(&object, &warnings),
    }
}

/// The decision, before it is written out.
#[derive(Debug)]
pub enum Answer<'a> {
    Accept(Vec<String>),
    Mutate(Node<'a>, Vec<String>),
}

pub fn answer(payload: &[u8]) -> Answer<'_> {
    // One reader type (str) for every parse keeps one copy of serde_json's
    // parser in the module; UTF-8 is checked once, here.
    let Ok(text) = std::str::from_utf8(payload) else {
        return Answer::Accept(vec!["request not understood: it is not UTF-8".into()]);
    };
    let request = match Request::parse(text) {
        Ok(r) => r,
        Err(e) => {
            let why = crate::workload::without_position(&e);
            return Answer::Accept(vec![format!("request not understood: {why}")]);
        }
    };
    let (Some(kind), Some(mut object)) = (request.kind, request.object) else {
        return Answer::Accept(Vec::new());
    };
    let unexpected = |why: &str| {
        Answer::Accept(vec![format!(
            "{} left unchanged, unexpected shape: {why}",
            kind.as_str()
        )])
    };
    let operation = request.operation.as_deref().unwrap_or_default();
    // Most Pods of a cluster run forever: answered before the rest is read.
    let restart_policy = match kind {
        Kind::Pod => match workload::restart_policy(&mut object) {
            Ok(policy) => policy,
            Err(why) => return unexpected(&why),
        },
        _ => None,
    };
    if decide::by_request(kind, operation, restart_policy.as_deref()).is_some() {
        return Answer::Accept(Vec::new());
    }
    let settings = match read_settings(request.settings) {
        Ok(s) => s,
        Err(why) => return Answer::Accept(vec![format!("invalid settings, nothing done: {why}")]),
    };
    let workload = match Workload::read(kind, &mut object) {
        Ok(Some(w)) => w,
        Ok(None) => return unexpected("no pod template"),
        Err(why) => return unexpected(&why),
    };
    let facts = Facts {
        kind,
        operation,
        restart_policy: workload.spec.restart_policy.as_deref(),
        mode_annotation: workload.mode_annotation(),
        injection_disabled: workload.injection_disabled(),
        injected: workload.injection_status().is_some(),
    };
    let (plan, mut warnings) = decide(&facts, &settings);
    let Plan::Apply(mode) = plan else {
        return Answer::Accept(warnings);
    };
    let mut target = Target {
        kind,
        workload: &workload,
        object: &mut object,
        settings: &settings,
    };
    match modes::apply(mode, &mut target) {
        Ok(outcome) => {
            warnings.extend(outcome.warnings);
            if outcome.changed {
                Answer::Mutate(object, warnings)
            } else {
                Answer::Accept(warnings)
            }
        }
        Err(e) => unexpected(&e.to_string()),
    }
}

fn read_settings(raw: Option<&serde_json::value::RawValue>) -> Result<Settings, String> {
    match raw.map(|r| r.get().trim()) {
        // The common case costs nothing.
        None | Some("null") | Some("{}") => Ok(Settings::default()),
        Some(text) => Settings::from_json_str(text),
    }
}
