//! The golden cases of mode changes, held to the laws whole-object.
//!
//! `policy_testkit::cases` lists, for each variant `<v>` of a CronJob x
//! (plain: no proxy config; yaml and json: a proxy config in that form;
//! injected: `istioctl kube-inject`'s output, the proxy a classic container;
//! flip: the mode picked by the template's `istio-job-sidecar/mode`):
//!
//! - `mode-change-<v>-<M>`: x admitted (CREATE) under mode M, or, for
//!   M = `disabled`, x with the user's `istio-job-sidecar/mode: disabled`;
//! - `mode-change-<v>-<A>-then-<B>`: a CronJob UPDATE whose object is the
//!   first pass's result A(x) (oldObject too), with the user's edit e that
//!   picks B (nothing when B is the cluster's mode), admitted under B.
//!
//! `tests/golden.rs` holds every case to its expected.json; this file holds
//! the cases to each other:
//!
//! (a) a second pass's input is its first pass's current output: object
//!     e(A(x)) and oldObject A(x), where e is what tells the first-pass
//!     inputs x_A and x_B apart (their mode annotations). The list builds
//!     each second pass from its first pass's answer in the same run; a
//!     committed input left stale fails here too: `make golden`.
//! (b) B(e(A(x))) == B(x_B), the record included, compared whole up to what
//!     Kubernetes drops (`policy_testkit::kube::normalize`: an `annotations`
//!     or template `metadata` emptied by an undo, an emptied
//!     `initContainers`); with the same warnings. When B does not mutate
//!     x_B (disabled), that is x_B itself: every edit of A taken back; and
//!     disabled(x) is x but for the owner's mode carried down.
//! (c) A(A(x)) == A(x): the second pass under the same mode mutates
//!     nothing and says nothing.
//!
//! The laws are checked by `policy_testkit::laws`, as the properties and
//! the fuzz target check them on generated workloads. x carries no record,
//! so its warnings are those of B's edit: alike in every pair where B(A(x))
//! makes that edit too, and none new where A already did (A == B).
//!
//! And the cases the laws do not cover, updated under nativeSidecar from the
//! quitEndpoint result of the plain CronJob: an unreadable record and a
//! command the user replaced are left alone with a warning (the wrapper is
//! never "undone" into a wrong command); the `istio-job-sidecar/quit-wrapped`
//! mark of earlier versions is undone like a record.

use policy_testkit::kube::normalize;
use policy_testkit::laws::{self, Pass, Warned};
use policy_testkit::names::{
    APPLIED as RECORD_KEY, MODE as MODE_KEY, NATIVE as NATIVE_KEY, OWNER_MODE as OWNER_MODE_KEY,
    QUIT_WRAPPED as LEGACY_KEY,
};
use policy_testkit::{differences, Answer};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MODES: [&str; 3] = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"];
const DISABLED: &str = "disabled";
/// Every case is a CronJob: its pod template.
const TEMPLATE: &str = "/spec/jobTemplate/spec/template";
/// Variants with a second pass for every pair (A, B): A a mode, B a mode or
/// disabled. Other variants may have some pairs only.
const FULL_VARIANTS: [&str; 6] = ["plain", "yaml", "json", "injected", "held", "ported"];
const REGENERATE: &str = "regenerate: make golden (testkit/src/cases.rs lists the cases)";

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/cases")
}

/// One case: its request and its expected.json.
struct Case {
    name: String,
    request: Value,
    expected: Value,
}

impl Case {
    fn load(name: &str) -> Case {
        let dir = cases_dir().join(name);
        let read = |file: &str| -> Value {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (a new case? make golden)", path.display()));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        Case {
            name: name.to_owned(),
            request: read("request.json"),
            expected: read("expected.json"),
        }
    }

    fn object(&self) -> &Value {
        &self.request["object"]
    }

    fn mutated(&self) -> Option<&Value> {
        Some(&self.expected["mutatedObject"]).filter(|o| !o.is_null())
    }

    fn warnings(&self) -> &Value {
        &self.expected["warnings"]
    }

    /// The case as a pass of the laws: its object and its expected answer.
    fn pass(&self) -> Pass {
        let warnings = self.warnings().as_array().into_iter().flatten();
        let answer = Answer {
            mutated: self.mutated().cloned(),
            warnings: warnings
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect(),
        };
        Pass::answered(
            self.object(),
            answer,
            format!("test_data/cases/{}", self.name),
        )
    }
}

/// The mode-change cases: first passes by (variant, mode), second passes
/// by (variant, A, B).
struct ModeChanges {
    first: BTreeMap<(String, String), Case>,
    pairs: BTreeMap<(String, String, String), Case>,
}

fn mode_changes() -> ModeChanges {
    let mut names: Vec<String> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("mode-change-"))
        .collect();
    names.sort();
    let all_modes: Vec<&str> = MODES.iter().copied().chain([DISABLED]).collect();
    let mut found = ModeChanges {
        first: BTreeMap::new(),
        pairs: BTreeMap::new(),
    };
    for name in names {
        let rest = &name["mode-change-".len()..];
        // <variant>-<A>-then-<B> or <variant>-<M>; the modes have no '-'.
        let parts: Vec<&str> = rest.split('-').collect();
        match parts.as_slice() {
            [variant, a, "then", b] if MODES.contains(a) && all_modes.contains(b) => {
                let key = (variant.to_string(), a.to_string(), b.to_string());
                found.pairs.insert(key, Case::load(&name));
            }
            [variant, m] if all_modes.contains(m) => {
                let key = (variant.to_string(), m.to_string());
                found.first.insert(key, Case::load(&name));
            }
            _ => {} // the cases of the last tests below
        }
    }
    found
}

fn template(object: &Value) -> &Value {
    &object["spec"]["jobTemplate"]["spec"]["template"]
}

fn template_mut(object: &mut Value) -> &mut Value {
    &mut object["spec"]["jobTemplate"]["spec"]["template"]
}

fn annotations(object: &Value, on_template: bool) -> Option<&Map<String, Value>> {
    let target = if on_template {
        template(object)
    } else {
        object
    };
    target["metadata"]["annotations"].as_object()
}

/// `object` with `key` set to `value` (removed when None) in the
/// annotations of the CronJob or of its pod template.
fn set_annotation(object: &mut Value, on_template: bool, key: &str, value: Option<&Value>) {
    let target = if on_template {
        template_mut(object)
    } else {
        object
    };
    let metadata = target
        .as_object_mut()
        .unwrap()
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let annotations = metadata
        .as_object_mut()
        .unwrap()
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .unwrap();
    match value {
        Some(v) => {
            annotations.insert(key.to_owned(), v.clone());
        }
        None => {
            annotations.remove(key);
        }
    }
}

/// The user's edit that turns x_A into x_B: the `istio-job-sidecar/mode`
/// annotations of the CronJob and of its template set as x_B has them.
/// Checked to be the only difference between the two.
fn user_edit(x_a: &Value, x_b: &Value) -> impl Fn(&mut Value) {
    let wanted: Vec<(bool, Option<Value>)> = [false, true]
        .into_iter()
        .map(|t| {
            (
                t,
                annotations(x_b, t).and_then(|a| a.get(MODE_KEY)).cloned(),
            )
        })
        .collect();
    let edit = move |object: &mut Value| {
        for (on_template, value) in &wanted {
            let has = annotations(object, *on_template).and_then(|a| a.get(MODE_KEY));
            if has != value.as_ref() {
                set_annotation(object, *on_template, MODE_KEY, value.as_ref());
            }
        }
    };
    let mut edited = x_a.clone();
    edit(&mut edited);
    assert!(
        normalize(&edited) == normalize(x_b),
        "the first-pass inputs differ in more than the mode annotation:\n{}",
        differences(&edited, x_b)
    );
    edit
}

fn record(object: &Value) -> Option<&str> {
    annotations(object, true)
        .and_then(|a| a.get(RECORD_KEY))
        .and_then(Value::as_str)
}

/// Every pair of every full variant has its case, and every first pass a
/// mode-change needs is there and did what it should.
#[test]
fn every_pair_has_its_cases() {
    let cases = mode_changes();
    let variants: BTreeSet<&String> = cases.first.keys().map(|(v, _)| v).collect();
    for variant in FULL_VARIANTS {
        assert!(
            variants.contains(&variant.to_owned()),
            "no mode-change-{variant}-* cases: {REGENERATE}"
        );
    }
    let mut missing = Vec::new();
    for variant in &variants {
        for mode in MODES.iter().copied().chain([DISABLED]) {
            let Some(first) = cases.first.get(&(variant.to_string(), mode.to_owned())) else {
                missing.push(format!("mode-change-{variant}-{mode}"));
                continue;
            };
            let op = &first.request["operation"];
            assert_eq!(op, "CREATE", "{}: a first pass is a CREATE", first.name);
            assert_eq!(first.object()["kind"], "CronJob", "{}", first.name);
            if mode == DISABLED {
                // Nothing applied: only the CronJob's own mode goes down to
                // the pod template its Jobs and Pods are made from.
                let mut want = first.object().clone();
                let value = annotations(&want, false)
                    .and_then(|a| a.get(MODE_KEY))
                    .cloned();
                if first.mutated().is_some() {
                    assert_eq!(value, Some(Value::from(DISABLED)), "{}", first.name);
                }
                if value.is_some() {
                    set_annotation(&mut want, true, OWNER_MODE_KEY, value.as_ref());
                }
                laws::gives_back(&first.name, &first.pass(), &want, &laws::as_is)
                    .unwrap_or_else(|e| panic!("{e}"));
            } else {
                let mutated = first.mutated().unwrap_or_else(|| {
                    panic!("{}: not mutated, no mode change to test", first.name)
                });
                let record = record(mutated)
                    .unwrap_or_else(|| panic!("{}: no record {RECORD_KEY}", first.name));
                let record: Value = serde_json::from_str(record).unwrap();
                assert_eq!(record["mode"], mode, "{}: the record's mode", first.name);
            }
        }
        if FULL_VARIANTS.contains(&variant.as_str()) {
            for a in MODES {
                for b in MODES.iter().copied().chain([DISABLED]) {
                    let key = (variant.to_string(), a.to_owned(), b.to_owned());
                    if !cases.pairs.contains_key(&key) {
                        missing.push(format!("mode-change-{variant}-{a}-then-{b}"));
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "missing cases {missing:?}: {REGENERATE}"
    );
    for (variant, a, b) in cases.pairs.keys() {
        for m in [a, b] {
            assert!(
                cases.first.contains_key(&(variant.clone(), m.clone())),
                "mode-change-{variant}-{a}-then-{b}: no first pass mode-change-{variant}-{m}"
            );
        }
    }
}

/// (a): each second pass starts from its first pass's current result.
#[test]
fn second_pass_input_is_the_first_pass_output() {
    let cases = mode_changes();
    assert!(!cases.pairs.is_empty(), "no mode-change pair cases");
    let mut stale = Vec::new();
    for ((variant, a, b), pair) in &cases.pairs {
        let first_a = &cases.first[&(variant.clone(), a.clone())];
        let first_b = &cases.first[&(variant.clone(), b.clone())];
        assert_eq!(pair.request["operation"], "UPDATE", "{}", pair.name);
        assert_eq!(pair.request["kind"]["kind"], "CronJob", "{}", pair.name);
        let after_a = first_a
            .mutated()
            .unwrap_or_else(|| panic!("{}: A mutated nothing", first_a.name));
        let mut object = after_a.clone();
        user_edit(first_a.object(), first_b.object())(&mut object);
        if pair.request["oldObject"] != *after_a {
            stale.push(format!(
                "{}: oldObject is not the result of {}:\n{}",
                pair.name,
                first_a.name,
                differences(after_a, &pair.request["oldObject"])
            ));
        }
        if *pair.object() != object {
            stale.push(format!(
                "{}: object is not the result of {} with the user's edit:\n{}",
                pair.name,
                first_a.name,
                differences(&object, pair.object())
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\n{} stale inputs; {REGENERATE}",
        stale.join("\n"),
        stale.len()
    );
}

/// (b) and (c): B(e(A(x))) == B(x_B) whole, record included; A(A(x)) is
/// not mutated.
#[test]
fn mode_change_equals_the_new_mode_on_the_original() {
    let cases = mode_changes();
    let mut broken = Vec::new();
    for ((variant, a, b), pair) in &cases.pairs {
        let first_a = &cases.first[&(variant.clone(), a.clone())];
        let first_b = &cases.first[&(variant.clone(), b.clone())];
        let what = format!("{}: B(A(x)) != B(x) ({})", pair.name, first_b.name);
        // The warnings of an edit come with the pass that makes it: B(x)
        // makes B's, B(A(x)) only when A's record is another mode's.
        let mode = Some(b.as_str()).filter(|m| *m != DISABLED);
        let warned = Warned::by_records(mode, TEMPLATE, &pair.pass(), &first_b.pass());
        let law = laws::same(&what, &pair.pass(), &first_b.pass(), &laws::as_is, warned);
        broken.extend(law.err());
        if a == b {
            let what = format!("{}: A(A(x)) != A(x) ({})", pair.name, first_a.name);
            broken.extend(laws::fixed(&what, &first_a.pass(), &pair.pass()).err());
            if pair.warnings() != &Value::Array(vec![]) {
                broken.push(format!("{}: A(A(x)) warned: {}", pair.name, pair.expected));
            }
        }
        if a != b && pair.mutated().is_none() {
            broken.push(format!("{}: the mode change mutated nothing", pair.name));
        }
    }
    assert!(
        broken.is_empty(),
        "{}\n{} cases break the laws of a change of mode",
        broken.join("\n"),
        broken.len()
    );
}

/// The quitEndpoint result of the plain CronJob: the input the last cases
/// were made from.
fn quit_result() -> Value {
    Case::load("mode-change-plain-quitEndpoint")
        .mutated()
        .expect("mode-change-plain-quitEndpoint mutates")
        .clone()
}

fn app_command(object: &Value) -> &Value {
    &template(object)["spec"]["containers"][0]["command"]
}

/// `result` is `object` plus `sidecar.istio.io/nativeSidecar: "true"` and
/// nothing else: nativeSidecar applied on top, nothing undone, the record
/// left as it is.
/// Returns that object: the pass over the object without its record (as
/// the plain CronJob never wrapped has no proxy to move), the record put
/// back.
fn only_native_added(case: &Case) -> Value {
    let result = case
        .mutated()
        .unwrap_or_else(|| panic!("{}: nativeSidecar not applied", case.name));
    let mut want = case.object().clone();
    set_annotation(&mut want, true, NATIVE_KEY, Some(&Value::from("true")));
    assert!(
        *result == want,
        "{}: more than the native annotation changed:\n{}",
        case.name,
        differences(&want, result)
    );
    want
}

fn one_warning_with(case: &Case, text: &str) {
    let warnings = case.warnings().as_array().unwrap();
    assert!(
        warnings.len() == 1 && warnings[0].as_str().unwrap().contains(text),
        "{}: warnings {:?}, one with {text:?} expected",
        case.name,
        warnings
    );
}

/// A record that is not JSON on a wrapped CronJob, updated under
/// nativeSidecar: the wrapper stays, the record stays, a warning.
#[test]
fn unreadable_record_leaves_the_command_wrapped() {
    let case = Case::load("mode-change-unreadable-record-warns");
    let quit = quit_result();
    assert_eq!(
        case.request["oldObject"], quit,
        "{}: {REGENERATE}",
        case.name
    );
    assert_eq!(record(case.object()), Some("garbage"));
    assert_eq!(app_command(case.object()), app_command(&quit));
    let want = only_native_added(&case);
    laws::undoes_nothing(&case.name, &case.pass(), &want, &[]).unwrap_or_else(|e| panic!("{e}"));
    one_warning_with(&case, &format!("{RECORD_KEY} unreadable"));
}

/// A quitEndpoint record whose container's command no longer holds the
/// wrapper, updated under nativeSidecar: nothing of the edit is left, so
/// nothing is undone and the record goes; the command stays as it is now
/// and nativeSidecar is applied as to a workload never wrapped, without a
/// warning. `replaced`: the user wrote another command by hand;
/// `written back`: a server-side apply by a tool that owns `command` wrote
/// the original back beside the record it does not own.
#[test]
fn a_record_whose_wrapper_is_gone_goes() {
    let quit = quit_result();
    for name in [
        "mode-change-command-replaced-record-goes",
        "mode-change-command-written-back-record-goes",
    ] {
        let case = Case::load(name);
        assert_eq!(
            case.request["oldObject"], quit,
            "{}: {REGENERATE}",
            case.name
        );
        assert_eq!(record(case.object()), record(&quit));
        assert_ne!(app_command(case.object()), app_command(&quit));
        let result = case
            .mutated()
            .unwrap_or_else(|| panic!("{}: not mutated", case.name));
        assert_eq!(app_command(result), app_command(case.object()));
        assert_eq!(
            record(result),
            Some(r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#)
        );
        assert_eq!(case.warnings(), &Value::Array(vec![]), "{}", case.name);
    }
    // Written back, it is nativeSidecar on the original.
    native_on_the_original(&Case::load("mode-change-command-written-back-record-goes"));
}

/// `case` is nativeSidecar on the original: the answer to the plain
/// CronJob under nativeSidecar, compared as the laws compare (B(A(x)) ==
/// B(x)), warnings included.
fn native_on_the_original(case: &Case) {
    let native = Case::load("mode-change-plain-nativeSidecar");
    let what = format!("{}: not nativeSidecar on the original", case.name);
    let law = laws::same(
        &what,
        &case.pass(),
        &native.pass(),
        &laws::as_is,
        Warned::Alike,
    );
    law.unwrap_or_else(|e| panic!("{e}"));
}

/// The mark of earlier versions, `istio-job-sidecar/quit-wrapped:
/// <container>`, updated under nativeSidecar: undone like a record, so the
/// result is nativeSidecar on the original, the mark gone.
#[test]
fn legacy_mark_is_undone() {
    let case = Case::load("mode-change-legacy-mark-undone");
    let quit = quit_result();
    assert_eq!(
        case.request["oldObject"], quit,
        "{}: {REGENERATE}",
        case.name
    );
    let marks = annotations(case.object(), true).unwrap();
    assert_eq!(marks.get(LEGACY_KEY), Some(&Value::from("hello")));
    assert!(!marks.contains_key(RECORD_KEY));
    assert_eq!(app_command(case.object()), app_command(&quit));
    assert!(case.mutated().is_some(), "{}: not mutated", case.name);
    native_on_the_original(&case);
    assert_eq!(case.warnings(), &Value::Array(vec![]));
}
