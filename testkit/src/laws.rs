//! The laws of a change of mode (docs/design.md, "The laws of a change of
//! mode"), checked the same way wherever they are checked: on the golden
//! mode-change cases (`tests/mode_changes.rs`), on generated workloads (the
//! properties' laws) and on fuzzed ones (the fuzz target `mode_change`). Each
//! caller makes its passes its own way (a golden case's answer, or
//! `Pass::run` with the policy's `validate`; the generated and fuzzed ones
//! say each pass's mode and make the user's edit with `mode_change`); what
//! the policy should do in a pass is the caller's to say.
//! These functions say whether the passes keep the laws:
//!
//! - `same`: B(A(x)) == B(x), and so disabled(A(x)) == disabled(x) and
//!   B(e(A(x))) == e(B(x)): the objects afterwards are equal whole, the
//!   record included, up to what Kubernetes drops (`kube::normalize`) and
//!   what the caller knows to be inert; and the warnings are the same, but
//!   for the caveats of an edit one pass makes and the other finds made
//!   (`Warned`).
//! - `fixed`: A(A(x)) == A(x): the second pass mutates nothing, and warns
//!   as the first did but for the caveats of the first one's edit.
//! - `gives_back`: disabled(x) is x, but for what the caller expects the
//!   pass to carry (the owner's mode): equal up to `kube::normalize` and
//!   what the caller knows to be inert, and a mutation exactly when that
//!   differs from what was sent.
//! - `undoes_nothing`: a record the policy cannot trust undoes nothing:
//!   the pass is the pass over the object without it (the record put
//!   back), and one more warning names the record.
//!
//! An error says which law failed, what differs as JSON Patch operations,
//! and how to reproduce each pass.

use crate::kube::normalize;
use crate::names::{APPLIED, QUIT_WRAPPED};
use crate::{check_answer, differences, payload, Answer, Order};
use serde_json::Value;

/// One pass of the policy over an object, as the laws see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// The request's object.
    pub sent: Value,
    /// The object afterwards: the mutated one, else `sent`.
    pub out: Value,
    pub mutated: bool,
    pub warnings: Vec<String>,
    /// How to reproduce it: the payload sent, or the golden case's name.
    pub source: String,
}

impl Pass {
    /// The pass of `validate` (the policy natively or through
    /// `policy.wasm`) over `request`, sent with `settings` in `order`; the
    /// answer checked as every answer is (`check_answer`).
    pub fn run(
        validate: impl FnOnce(&[u8]) -> Vec<u8>,
        request: &Value,
        settings: Option<&Value>,
        order: Order,
    ) -> Result<Pass, String> {
        let payload = payload(request, settings, order);
        let source = String::from_utf8_lossy(&payload).into_owned();
        let answer =
            check_answer(&validate(&payload)).map_err(|e| format!("{e}\npayload: {source}"))?;
        Ok(Pass::answered(&request["object"], answer, source))
    }

    /// A pass whose answer is known (a golden case's expected.json).
    pub fn answered(sent: &Value, answer: Answer, source: impl Into<String>) -> Pass {
        Pass {
            sent: sent.clone(),
            out: answer.mutated.clone().unwrap_or_else(|| sent.clone()),
            mutated: answer.mutated.is_some(),
            warnings: answer.warnings,
            source: source.into(),
        }
    }

    fn shown(&self) -> String {
        format!("{}\n  warnings: {:?}", self.source, self.warnings)
    }
}

/// What the warnings of one pass must be next to another's. A pass warns
/// of what it cannot do (a limit of the workload), of records it cannot
/// trust, and of the caveats of an edit it makes (a status it could not
/// update when it moved the proxy); a pass that finds its mode's edit made
/// already (its own record on the object: B over A(x) where A is B, or
/// over an x an earlier pass in B left) makes none, and gives none of
/// those caveats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warned {
    /// The same warnings: both passes make their mode's edit, or neither.
    Alike,
    /// None the second did not give: only the second makes its edit.
    NothingNew,
    /// Every one the second gave: only the first makes its edit.
    NothingLost,
}

impl Warned {
    /// By whether the first pass (`got`) and the second (`want`) make
    /// their mode's edit.
    pub fn by_edits(got: bool, want: bool) -> Warned {
        match (got, want) {
            (false, true) => Warned::NothingNew,
            (true, false) => Warned::NothingLost,
            _ => Warned::Alike,
        }
    }

    /// As the records on the objects the two passes in `mode` (`None`:
    /// disabled) were given say (`makes_edit`); `template` points to the
    /// pod template in them.
    pub fn by_records(mode: Option<&str>, template: &str, got: &Pass, want: &Pass) -> Warned {
        Warned::by_edits(
            makes_edit(mode, &got.sent, template),
            makes_edit(mode, &want.sent, template),
        )
    }

    fn hold(self, got: &[String], want: &[String]) -> bool {
        match self {
            Warned::Alike => got == want,
            Warned::NothingNew => got.iter().all(|w| want.contains(w)),
            Warned::NothingLost => want.iter().all(|w| got.contains(w)),
        }
    }
}

/// Whether a pass in `mode` (`None`: disabled) over `object` makes an edit,
/// so that it may warn of the edit's caveats: a mode's pass unless the pod
/// template at `template` carries that mode's own record (an earlier pass
/// left its edit there), a disabled pass where there is a record (or the
/// legacy mark) to undo.
pub fn makes_edit(mode: Option<&str>, object: &Value, template: &str) -> bool {
    let annotations = object
        .pointer(template)
        .map(|t| &t["metadata"]["annotations"]);
    let record = annotations.and_then(|a| a[APPLIED].as_str());
    let legacy = annotations.is_some_and(|a| a.get(QUIT_WRAPPED).is_some());
    let own = record
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|r| r["mode"].as_str().map(str::to_owned));
    match mode {
        None => record.is_some() || legacy,
        Some(mode) => own.as_deref() != Some(mode),
    }
}

/// Nothing is inert: the objects are compared up to `kube::normalize` only.
pub fn as_is(object: &Value) -> Value {
    object.clone()
}

/// `object` as the laws compare it: without what `inert` takes off (what
/// the caller knows the policy leaves as it is, and rightly: an owner's
/// mode where it is read by nothing), up to what Kubernetes drops.
pub fn up_to(object: &Value, inert: &dyn Fn(&Value) -> Value) -> Value {
    normalize(&inert(object))
}

/// B(A(x)) == B(x) for `got` the pass B(A(x)) and `want` the pass B(x):
/// the objects afterwards whole, the record included, up to `up_to`, and
/// the warnings as `warned` says. `what` names the law and the modes.
pub fn same(
    what: &str,
    got: &Pass,
    want: &Pass,
    inert: &dyn Fn(&Value) -> Value,
    warned: Warned,
) -> Result<(), String> {
    let (g, w) = (up_to(&got.out, inert), up_to(&want.out, inert));
    if g != w {
        return Err(format!(
            "{what}: the objects differ (patch from the second to the first):\n{}\nfirst: {}\nsecond: {}",
            differences(&w, &g),
            got.shown(),
            want.shown()
        ));
    }
    if !warned.hold(&got.warnings, &want.warnings) {
        return Err(format!(
            "{what}: the warnings differ ({warned:?})\nfirst: {}\nsecond: {}",
            got.shown(),
            want.shown()
        ));
    }
    Ok(())
}

/// A(A(x)) == A(x) for `first` the pass A(x) and `again` the pass A over
/// its result: not a mutation, and warned as the first pass was, but for
/// the caveats of its edit where it made one (`Warned`: the second, no
/// mutation, makes none).
pub fn fixed(what: &str, first: &Pass, again: &Pass) -> Result<(), String> {
    if again.mutated {
        return Err(format!(
            "{what}: A(A(x)) is a mutation (patch from A(x)):\n{}\npass: {}",
            differences(&again.sent, &again.out),
            again.shown()
        ));
    }
    let warned = Warned::by_edits(false, first.mutated);
    if !warned.hold(&again.warnings, &first.warnings) {
        return Err(format!(
            "{what}: A(A(x)) warns otherwise than A(x) ({warned:?})\nA(x): {}\nA(A(x)): {}",
            first.shown(),
            again.shown()
        ));
    }
    Ok(())
}

/// disabled(x) is x but for what the pass carries: `pass` (disabled over
/// x) leaves `expected` (x with the owner's mode carried down, or x
/// itself), up to `up_to`, and is a mutation exactly when `expected` is
/// not what was sent.
pub fn gives_back(
    what: &str,
    pass: &Pass,
    expected: &Value,
    inert: &dyn Fn(&Value) -> Value,
) -> Result<(), String> {
    let (got, want) = (up_to(&pass.out, inert), up_to(expected, inert));
    if got != want {
        return Err(format!(
            "{what}: disabled(x) is not x but for the owner's mode (patch from it):\n{}\npass: {}",
            differences(&want, &got),
            pass.shown()
        ));
    }
    let due = *expected != pass.sent;
    if pass.mutated != due {
        return Err(format!(
            "{what}: disabled(x) {} where {}\npass: {}",
            if pass.mutated {
                "is a mutation"
            } else {
                "is no mutation"
            },
            if due {
                "the owner's mode is carried down"
            } else {
                "nothing is due"
            },
            pass.shown()
        ));
    }
    Ok(())
}

/// A record the policy cannot trust undoes nothing: `pass` leaves
/// `expected` (the pass over the object without the record, the record
/// put back as it was), up to `kube::normalize`, and warns as that pass
/// (`bare_warnings`) did, plus exactly one warning naming the record.
pub fn undoes_nothing(
    what: &str,
    pass: &Pass,
    expected: &Value,
    bare_warnings: &[String],
) -> Result<(), String> {
    let (got, want) = (normalize(&pass.out), normalize(expected));
    if got != want {
        return Err(format!(
            "{what}: the untrusted record undid something (patch from the pass without the record):\n{}\npass: {}",
            differences(&want, &got),
            pass.shown()
        ));
    }
    let (named, rest): (Vec<&String>, Vec<&String>) =
        pass.warnings.iter().partition(|w| w.contains(APPLIED));
    if named.len() != 1 {
        return Err(format!(
            "{what}: not one warning naming {APPLIED}\npass: {}",
            pass.shown()
        ));
    }
    if !rest.iter().copied().eq(bare_warnings) {
        return Err(format!(
            "{what}: the other warnings are not those without the record, {bare_warnings:?}\npass: {}",
            pass.shown()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pass(sent: Value, out: Option<Value>, warnings: &[&str]) -> Pass {
        let answer = Answer {
            mutated: out,
            warnings: warnings.iter().map(|w| w.to_string()).collect(),
        };
        Pass::answered(&sent, answer, "test")
    }

    #[test]
    fn same_reads_empty_and_null_alike_and_compares_warnings() {
        let x = json!({"metadata": {"annotations": {}}, "spec": {"a": 1}});
        let left = pass(
            x.clone(),
            Some(json!({"spec": {"a": 1}, "status": null})),
            &[],
        );
        let right = pass(x.clone(), None, &[]);
        assert_eq!(same("law", &left, &right, &as_is, Warned::Alike), Ok(()));
        let warned = pass(x.clone(), None, &["w"]);
        assert!(same("law", &left, &warned, &as_is, Warned::Alike).is_err());
        assert_eq!(
            same("law", &left, &warned, &as_is, Warned::NothingNew),
            Ok(())
        );
        assert!(same("law", &warned, &left, &as_is, Warned::NothingNew).is_err());
        let other = pass(x, Some(json!({"spec": {"a": 2}})), &[]);
        let error = same("law", &other, &right, &as_is, Warned::Alike).unwrap_err();
        assert!(error.contains(r#""path":"/spec/a""#), "{error}");
    }

    /// A volume's `emptyDir: {}` is its source: an undo that drops it, or
    /// nulls it, gives back another Pod, and no law holds.
    #[test]
    fn an_empty_dir_lost_breaks_the_laws() {
        let x = json!({"metadata": {"annotations": {}}, "spec": {"volumes": [{"name": "istio-data", "emptyDir": {}}]}});
        let kept = pass(x.clone(), None, &[]);
        for lost in [
            json!({"spec": {"volumes": [{"name": "istio-data"}]}}),
            json!({"spec": {"volumes": [{"name": "istio-data", "emptyDir": null}]}}),
        ] {
            let undone = pass(x.clone(), Some(lost), &[]);
            assert!(same("law", &undone, &kept, &as_is, Warned::Alike).is_err());
            assert!(gives_back("law", &undone, &x, &as_is).is_err());
        }
        // What the API server drops is no loss.
        let emptied = pass(
            x.clone(),
            Some(json!({"spec": {"volumes": [{"name": "istio-data", "emptyDir": {}}]}})),
            &[],
        );
        assert_eq!(same("law", &emptied, &kept, &as_is, Warned::Alike), Ok(()));
    }

    #[test]
    fn inert_parts_are_left_out() {
        let left = pass(json!({}), Some(json!({"a": 1, "inert": 2})), &[]);
        let right = pass(json!({"a": 1}), None, &[]);
        let off = |o: &Value| {
            let mut o = o.clone();
            o.as_object_mut().map(|m| m.remove("inert"));
            o
        };
        assert!(same("law", &left, &right, &as_is, Warned::Alike).is_err());
        assert_eq!(same("law", &left, &right, &off, Warned::Alike), Ok(()));
        let expected = json!({"a": 1});
        assert!(gives_back("law", &left, &expected, &as_is).is_err());
        assert_eq!(gives_back("law", &left, &expected, &off), Ok(()));
    }

    #[test]
    fn a_second_pass_neither_mutates_nor_warns_anew() {
        let first = pass(json!({}), Some(json!({"a": 1})), &["limit"]);
        let again = |out, warnings| pass(json!({"a": 1}), out, warnings);
        assert_eq!(fixed("law", &first, &again(None, &["limit"])), Ok(()));
        assert_eq!(fixed("law", &first, &again(None, &[])), Ok(()));
        assert!(fixed("law", &first, &again(None, &["new"])).is_err());
        let mutated = again(Some(json!({"a": 2})), &["limit"]);
        assert!(fixed("law", &first, &mutated).is_err());
        // A first pass that changed nothing warns as the second.
        let unchanged = pass(json!({"a": 1}), None, &["limit"]);
        assert!(fixed("law", &unchanged, &again(None, &[])).is_err());
    }

    #[test]
    fn a_pass_finds_its_own_record_and_makes_no_edit() {
        let object = |annotations: Value| json!({"t": {"metadata": {"annotations": annotations}}});
        let native = object(json!({APPLIED: r#"{"mode":"nativeSidecar"}"#}));
        let legacy = object(json!({QUIT_WRAPPED: "app"}));
        let none = object(json!({}));
        assert!(!makes_edit(Some("nativeSidecar"), &native, "/t"));
        assert!(makes_edit(Some("quitEndpoint"), &native, "/t"));
        assert!(makes_edit(Some("quitEndpoint"), &legacy, "/t"));
        assert!(makes_edit(Some("quitEndpoint"), &none, "/t"));
        assert!(makes_edit(None, &native, "/t") && makes_edit(None, &legacy, "/t"));
        assert!(!makes_edit(None, &none, "/t"));
    }

    #[test]
    fn the_caveats_of_an_edit_go_with_the_pass_that_makes_it() {
        let caveat = pass(json!({}), None, &["limit", "caveat"]);
        let limit = pass(json!({}), None, &["limit"]);
        assert_eq!(Warned::by_edits(true, true), Warned::Alike);
        assert_eq!(Warned::by_edits(false, false), Warned::Alike);
        let lost = Warned::by_edits(true, false);
        assert_eq!(same("law", &caveat, &limit, &as_is, lost), Ok(()));
        assert!(same("law", &limit, &caveat, &as_is, lost).is_err());
    }

    #[test]
    fn disabled_gives_back_what_was_sent_but_for_the_owners_mode() {
        let x = json!({"a": 1});
        let carried = json!({"a": 1, "owner": "disabled"});
        assert_eq!(
            gives_back("law", &pass(x.clone(), None, &[]), &x, &as_is),
            Ok(())
        );
        assert_eq!(
            gives_back(
                "law",
                &pass(x.clone(), Some(carried.clone()), &[]),
                &carried,
                &as_is
            ),
            Ok(())
        );
        assert!(gives_back("law", &pass(x.clone(), None, &[]), &carried, &as_is).is_err());
        assert!(gives_back(
            "law",
            &pass(x.clone(), Some(carried.clone()), &[]),
            &x,
            &as_is
        )
        .is_err());
    }

    #[test]
    fn an_untrusted_record_is_named_once() {
        let expected = json!({"a": 1});
        let unreadable = format!("{APPLIED} unreadable");
        let named = pass(json!({}), Some(expected.clone()), &[&unreadable, "other"]);
        assert_eq!(
            undoes_nothing("law", &named, &expected, &["other".into()]),
            Ok(())
        );
        assert!(undoes_nothing("law", &named, &expected, &[]).is_err());
        let silent = pass(json!({}), Some(expected.clone()), &[]);
        assert!(undoes_nothing("law", &silent, &expected, &[]).is_err());
        assert!(undoes_nothing("law", &named, &json!({"a": 2}), &["other".into()]).is_err());
    }
}
