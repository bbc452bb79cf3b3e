//! A change of mode, the state machine every pass over a template goes
//! through: a proxy the template has twice is resolved to one
//! (`one_proxy`); the recorded edit of another mode (or of any mode, when
//! none is wanted now) is taken back, the record removed, then the wanted
//! mode is applied (and, beside a proxy Istio injected natively, the
//! native form asked for, `native_sidecar::keep_native`) and the record
//! brought up to date. A record that cannot be read, or whose edit is no
//! longer on the object as it was left, is left as it is and undoes
//! nothing. docs/changing-modes.md.

use crate::json::{Node, ShapeError};
use crate::modes::native_sidecar::NativeFacts;
use crate::modes::target::{RecordEdit, Target, Undone};
use crate::modes::{apply, native_sidecar, one_proxy, undo};
use crate::names::{ANNOTATION_APPLIED, ANNOTATION_QUIT_WRAPPED};
use crate::object::Object;
use crate::record::Record;
use crate::settings::{Mode, Settings};
use crate::warning;

/// Take back what another mode's record says it did, then apply `wanted`.
/// Returns whether the object changed, and the warnings.
pub fn undo_then_apply(
    object: &mut Object,
    settings: &Settings,
    wanted: Option<Mode>,
) -> Result<(bool, Vec<String>), ShapeError> {
    let mut warnings = Vec::new();
    let record = object.view()?.record();
    let name = settings.sidecar_container_name.as_str();
    let (mut changed, warning) = one_proxy::resolve(object, name, record.applied())?;
    warnings.extend(warning);
    // The record while it is trusted, and whether it is in its legacy form.
    let (mut current, mut legacy, mut trusted) = (None, false, true);
    match record {
        Record::Absent => {}
        Record::Unreadable(why) => {
            trusted = false;
            warnings.push(unreadable(&why));
        }
        Record::Read { applied, legacy: l } if Some(applied.mode()) == wanted => {
            (current, legacy) = (Some(applied), l);
        }
        Record::Read { applied, .. } => {
            let mut target = Target {
                object: &mut *object,
                settings,
                record: None,
            };
            match undo(&applied, &mut target)? {
                Undone::Done { .. } => {
                    object.remove_annotations(&RECORD_KEYS)?;
                    changed = true;
                }
                Undone::Refused(why) => {
                    trusted = false;
                    let mode = applied.mode().as_str();
                    warnings.push(format!("{ANNOTATION_APPLIED}: {mode} edit kept: {why}"));
                }
            }
        }
    }
    let Some(mode) = wanted else {
        return Ok((changed, warnings));
    };
    // Read before the mode's edit, which never touches what they are made of.
    let facts = match mode {
        Mode::NativeSidecar => None,
        _ => Some(NativeFacts::of(object.view()?, name)),
    };
    let mut target = Target {
        object: &mut *object,
        settings,
        record: current.as_ref(),
    };
    let mut outcome = apply(mode, &mut target)?;
    if let Some(facts) = facts {
        native_sidecar::keep_native(&mut target, &mut outcome, facts)?;
    }
    changed |= outcome.changed;
    warnings.extend(outcome.warnings);
    if !trusted {
        return Ok((changed, warnings));
    }
    let write = match outcome.record {
        RecordEdit::Set(applied) if legacy || current.as_ref() != Some(&applied) => Some(applied),
        RecordEdit::Keep if legacy => current,
        RecordEdit::Remove => {
            changed |= object.remove_annotations(&RECORD_KEYS)?;
            None
        }
        _ => None,
    };
    if let Some(applied) = write {
        object.set_annotation(ANNOTATION_APPLIED, Node::from_string(applied.to_text()))?;
        if legacy {
            object.remove_annotations(&[ANNOTATION_QUIT_WRAPPED])?;
        }
        changed = true;
    }
    Ok((changed, warnings))
}

/// The record, and its form in earlier versions.
const RECORD_KEYS: [&str; 2] = [ANNOTATION_APPLIED, ANNOTATION_QUIT_WRAPPED];

fn unreadable(why: &str) -> String {
    const TAIL: &str = "nothing undone, left as it is";
    let full = format!("{ANNOTATION_APPLIED} unreadable ({why}): {TAIL}");
    if warning::fits(&full) {
        full
    } else {
        format!("{ANNOTATION_APPLIED} unreadable: {TAIL}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes;
    use crate::names::ANNOTATION_APPLIED;
    use crate::policy::evaluate;
    use serde_json::{json, Value};

    const QUIT_RECORD: &str = r#"{"mode":"quitEndpoint","container":"app"}"#;

    fn cronjob(annotations: serde_json::Value, command: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "app", "image": "app:1", "command": command}
                ]}
            }}}}
        })
    }

    /// One CronJob UPDATE under `mode`: the object afterwards, and the warnings.
    fn update(object: &serde_json::Value, mode: &str) -> (serde_json::Value, Vec<String>) {
        let payload = json!({
            "request": {
                "kind": {"group": "batch", "version": "v1", "kind": "CronJob"},
                "operation": "UPDATE",
                "object": object
            },
            "settings": {"mode": mode}
        });
        let out: serde_json::Value =
            serde_json::from_slice(&evaluate(&serde_json::to_vec(&payload).unwrap())).unwrap();
        let warnings = serde_json::from_value(out["warnings"].clone()).unwrap_or_default();
        match &out["mutated_object"] {
            serde_json::Value::Null => (object.clone(), warnings),
            mutated => (mutated.clone(), warnings),
        }
    }

    fn template(object: &serde_json::Value) -> &serde_json::Value {
        &object["spec"]["jobTemplate"]["spec"]["template"]
    }

    fn wrapped(original: &[&str]) -> serde_json::Value {
        let url = crate::settings::DEFAULT_QUIT_URL;
        let mut command = vec!["/bin/sh", "-c", modes::quit_endpoint::SCRIPT];
        command.extend(["istio-job-sidecar-quit", url, "always"]);
        command.extend(original);
        json!(command)
    }

    #[test]
    fn disabled_takes_the_earlier_edit_back() {
        let original = cronjob(json!({"team": "a"}), json!(["run", "it's \"quoted\""]));
        let (quit, _) = update(&original, "quitEndpoint");
        assert_ne!(quit, original);
        let mut disabled = quit.clone();
        disabled["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
            ["istio-job-sidecar/mode"] = json!("disabled");
        let (out, warnings) = update(&disabled, "quitEndpoint");
        let mut expected = original.clone();
        expected["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
            ["istio-job-sidecar/mode"] = json!("disabled");
        assert_eq!((out, warnings), (expected, vec![]));
    }

    #[test]
    fn the_legacy_mark_is_undone_and_replaced() {
        let legacy = cronjob(
            json!({"istio-job-sidecar/quit-wrapped": "app"}),
            wrapped(&["run", "$(X)"]),
        );
        let (native, warnings) = update(&legacy, "nativeSidecar");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            template(&native)["spec"]["containers"][0]["command"],
            json!(["run", "$(X)"])
        );
        assert_eq!(
            template(&native)["metadata"]["annotations"],
            json!({
                "sidecar.istio.io/nativeSidecar": "true",
                "istio-job-sidecar/applied": r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#
            })
        );
        let (quit, _) = update(&legacy, "quitEndpoint");
        assert_eq!(
            template(&quit)["metadata"]["annotations"],
            json!({"istio-job-sidecar/applied": QUIT_RECORD})
        );
        assert_eq!(template(&quit)["spec"], template(&legacy)["spec"]);
    }

    /// A quitEndpoint record may name the proxy (quitEndpoint never wraps
    /// it: a hand-made record). Its undo refused, nativeSidecar still moves
    /// the proxy, wrapper and all, into the init containers; the next pass
    /// keeps that edit too instead of taking the record for one of a
    /// container that is gone, so the output is a fixed point.
    #[test]
    fn a_record_of_the_moved_proxy_stays_untrusted() {
        let record = r#"{"mode":"quitEndpoint","container":"istio-proxy"}"#;
        let status = r#"{"initContainers":null,"containers":["istio-proxy"],"volumes":null}"#;
        let mut object = cronjob(
            json!({"istio-job-sidecar/applied": record, "sidecar.istio.io/status": status}),
            json!(["run"]),
        );
        let proxy = json!({"name": "istio-proxy", "image": "proxy", "command": wrapped(&[])});
        template_mut(&mut object)["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(proxy.clone());
        let (moved, warnings) = update(&object, "nativeSidecar");
        let kept = "istio-job-sidecar/applied: quitEndpoint edit kept:";
        assert_eq!(
            warnings,
            vec![format!("{kept} the wrapper holds no command")]
        );
        assert_eq!(
            template(&moved)["spec"]["initContainers"][0]["command"],
            proxy["command"]
        );
        assert_eq!(
            template(&moved)["metadata"]["annotations"]["istio-job-sidecar/applied"],
            record
        );
        let again = format!("{kept} the wrapped proxy is a native sidecar");
        assert!(crate::warning::fits(&again));
        assert_eq!(
            update(&moved, "nativeSidecar"),
            (moved.clone(), vec![again])
        );
        // Without the wrapper nothing of quitEndpoint's is left: the record goes.
        let mut unwrapped = moved.clone();
        template_mut(&mut unwrapped)["spec"]["initContainers"][0]["command"] =
            json!(["pilot-agent"]);
        let (out, warnings) = update(&unwrapped, "nativeSidecar");
        assert_eq!(warnings, Vec::<String>::new());
        assert!(template(&out)["metadata"]["annotations"]["istio-job-sidecar/applied"].is_null());
    }

    fn template_mut(object: &mut serde_json::Value) -> &mut serde_json::Value {
        &mut object["spec"]["jobTemplate"]["spec"]["template"]
    }

    /// A record that cannot be trusted undoes nothing and stays as it is;
    /// the mode wanted now is still applied, without a record of its own.
    #[rstest::rstest]
    #[case::garbage(
        "garbage",
        "istio-job-sidecar/applied unreadable (it is not JSON): nothing undone, left as it is"
    )]
    #[case::unknown_member(
        r#"{"mode":"quitEndpoint","container":"app","argv":["rm"]}"#,
        "istio-job-sidecar/applied unreadable (it has an unknown member \"argv\"): nothing undone, left as it is"
    )]
    #[case::several_of_its_name(
        QUIT_RECORD,
        "istio-job-sidecar/applied: quitEndpoint edit kept: container not in the pod once"
    )]
    #[case::a_wrapper_of_nothing(
        QUIT_RECORD,
        "istio-job-sidecar/applied: quitEndpoint edit kept: the wrapper holds no command"
    )]
    fn an_untrusted_record_is_left_alone(#[case] record: &str, #[case] warning: &str) {
        let command = match record {
            QUIT_RECORD => wrapped(&[]),
            _ => wrapped(&["run"]),
        };
        let mut object = cronjob(
            json!({"istio-job-sidecar/applied": record}),
            command.clone(),
        );
        if warning.ends_with("not in the pod once") {
            let containers =
                &mut object["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"];
            let twin = containers[0].clone();
            containers.as_array_mut().unwrap().push(twin);
        }
        let (out, warnings) = update(&object, "nativeSidecar");
        assert_eq!(warnings, vec![warning.to_owned()]);
        assert!(crate::warning::fits(warning));
        assert_eq!(template(&out)["spec"]["containers"][0]["command"], command);
        assert_eq!(
            template(&out)["metadata"]["annotations"],
            json!({"istio-job-sidecar/applied": record, "sidecar.istio.io/nativeSidecar": "true"})
        );
        // The next pass changes nothing more, and says so again.
        assert_eq!(
            update(&out, "nativeSidecar"),
            (out, vec![warning.to_owned()])
        );
    }

    /// A record whose edit is no longer on the object (the container is
    /// gone, or its command was written back by an applier that owns it)
    /// undoes nothing and goes, without a warning; the wanted mode is
    /// applied and recorded as on a workload never edited.
    #[rstest::rstest]
    #[case::container_gone(r#"{"mode":"quitEndpoint","container":"db"}"#, json!(["run", "it"]))]
    #[case::command_written_back(QUIT_RECORD, json!(["run", "it"]))]
    #[case::no_command_any_more(QUIT_RECORD, Value::Null)]
    fn a_record_whose_edit_is_gone_goes(#[case] record: &str, #[case] command: Value) {
        let mut original = cronjob(json!({}), command.clone());
        let t = &mut original["spec"]["jobTemplate"]["spec"]["template"];
        t.as_object_mut().unwrap().remove("metadata");
        if command.is_null() {
            let app =
                &mut original["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
            app.as_object_mut().unwrap().remove("command");
        }
        let mut stale = original.clone();
        stale["spec"]["jobTemplate"]["spec"]["template"]["metadata"] =
            json!({"annotations": {"istio-job-sidecar/applied": record}});
        for mode in ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"] {
            assert_eq!(update(&stale, mode), update(&original, mode), "{mode}");
        }
    }

    #[test]
    fn a_users_own_keys_are_never_recorded_nor_removed() {
        let own = json!({
            "sidecar.istio.io/nativeSidecar": "true",
            "proxy.istio.io/config": "exitOnJobCompletion: true\n"
        });
        let object = cronjob(own.clone(), json!(["run"]));
        for (first, then) in [
            ("nativeSidecar", "quitEndpoint"),
            ("exitOnJobCompletion", "quitEndpoint"),
        ] {
            let (a, _) = update(&object, first);
            assert_eq!(a, object, "{first} recorded a user's key");
            let (b, _) = update(&a, then);
            let annotations = &template(&b)["metadata"]["annotations"];
            for (key, value) in own.as_object().unwrap() {
                assert_eq!(&annotations[key], value);
            }
        }
    }

    /// Every refusal and unreadable warning fits the 120 characters.
    #[test]
    fn record_warnings_fit() {
        let whys = [
            "container not in the pod once",
            "command is not the policy's wrapper",
            "proxy not in initContainers once",
            "proxy no longer a native sidecar",
            "a container has the proxy's name",
            "sidecar.istio.io/status changed since",
            "sidecar.istio.io/status gone since",
            "proxy.istio.io/config no longer a mapping",
            "proxy.istio.io/config has another exitOnJobCompletion",
            "proxy.istio.io/config edited where the key was added",
        ];
        for why in whys {
            let text = format!("{ANNOTATION_APPLIED}: exitOnJobCompletion edit kept: {why}");
            assert!(warning::fits(&text), "{text}");
        }
        assert!(warning::fits(&unreadable(&"x".repeat(200))));
    }

    fn kube_injected_cronjob() -> serde_json::Value {
        let text = include_str!("../../test_data/fixtures/istio-cronjob-old-version.yaml.injected");
        let mut cronjob: serde_json::Value = serde_yaml::from_str(text).unwrap();
        // The app's argv as its command, so that quitEndpoint wraps it.
        let app = &mut cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
        app["command"] = app["args"].take();
        cronjob
    }

    /// The proxy the policy moved goes back exactly where it was, without
    /// what the move added, and the status reads as Istio wrote it; then
    /// the new mode is applied as to the original.
    #[test]
    fn a_moved_proxy_goes_back() {
        let original = kube_injected_cronjob();
        let (moved, _) = update(&original, "nativeSidecar");
        assert_ne!(moved, original);
        for mode in ["exitOnJobCompletion", "quitEndpoint"] {
            let (direct, direct_warnings) = update(&original, mode);
            let (after_move, warnings) = update(&moved, mode);
            assert_eq!(warnings, direct_warnings, "{mode}");
            assert_eq!(after_move, direct, "{mode}");
            let (back, _) = update(&after_move, "nativeSidecar");
            assert_eq!(back, moved, "{mode} then nativeSidecar");
        }
    }

    #[test]
    fn a_moved_proxy_edited_since_is_left_where_it_is() {
        let (moved, _) = update(&kube_injected_cronjob(), "nativeSidecar");
        let mut restatused = moved.clone();
        restatused["spec"]["jobTemplate"]["metadata"]["annotations"]["sidecar.istio.io/status"] =
            json!(r#"{"initContainers":["istio-init","istio-proxy"],"containers":null}"#);
        let mut renamed = moved.clone();
        renamed["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"][1]["name"] =
            json!("envoy");
        for (edited, why) in [
            (restatused, "sidecar.istio.io/status changed since"),
            (renamed, "proxy not in initContainers once"),
        ] {
            let (out, warnings) = update(&edited, "exitOnJobCompletion");
            let warning = format!("istio-job-sidecar/applied: nativeSidecar edit kept: {why}");
            let written = warning::format(crate::modes::exit_on_completion::UPSTREAM_IGNORES);
            assert_eq!(warnings, vec![warning, written]);
            assert_eq!(
                template(&out)["spec"]["initContainers"],
                template(&edited)["spec"]["initContainers"]
            );
        }
    }

    /// Found by the mode_change fuzz target: a nameless container is
    /// wrapped and recorded as "", and must be unwrapped again.
    #[test]
    fn a_nameless_wrapped_container_is_unwrapped() {
        let mut original = cronjob(json!({}), json!(["run", "a b"]));
        let app = &mut original["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
        app.as_object_mut().unwrap().remove("name");
        let (quit, _) = update(&original, "quitEndpoint");
        assert_eq!(
            template(&quit)["metadata"]["annotations"]["istio-job-sidecar/applied"],
            r#"{"mode":"quitEndpoint","container":""}"#
        );
        let mut disabled = quit.clone();
        disabled["metadata"]["annotations"] = json!({"istio-job-sidecar/mode": "disabled"});
        let (out, warnings) = update(&disabled, "quitEndpoint");
        assert!(warnings.is_empty(), "{warnings:?}");
        let mut expected = original.clone();
        expected["metadata"]["annotations"] = json!({"istio-job-sidecar/mode": "disabled"});
        // The record goes; the CronJob's own mode goes down to the template
        // its Jobs are made from.
        let t = &mut expected["spec"]["jobTemplate"]["spec"]["template"];
        t["metadata"] = json!({"annotations": {"istio-job-sidecar/owner-mode": "disabled"}});
        assert_eq!(out, expected);
    }

    /// Found by the mode_change fuzz target: a proxy moved beside an init
    /// container of its name could not be moved back; it is not moved.
    #[test]
    fn no_move_beside_an_init_container_of_the_proxys_name() {
        let mut injected = kube_injected_cronjob();
        let spec = &mut injected["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        spec["initContainers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "istio-proxy", "image": "busybox"}));
        let (out, warnings) = update(&injected, "nativeSidecar");
        assert_eq!(out, injected);
        assert_eq!(
            warnings,
            vec!["istio-job-sidecar: more than one container is named istio-proxy; left unchanged"]
        );
    }

    /// Found by the property tests (tests/properties/): a template the policy annotated for
    /// native injection, kube-injected since, is moved; the policy's
    /// annotation stays, recorded by the move, so a later mode leaves
    /// nothing of it.
    #[test]
    fn an_annotated_template_injected_since_keeps_the_policys_annotation_on_record() {
        let native_record =
            r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#;
        let mut x = kube_injected_cronjob();
        let t = &mut x["spec"]["jobTemplate"]["spec"]["template"];
        t["metadata"] = json!({"annotations": {
            "team": "a",
            "sidecar.istio.io/nativeSidecar": "true",
            "istio-job-sidecar/applied": native_record
        }});
        let (moved, warnings) = update(&x, "nativeSidecar");
        assert!(warnings.is_empty(), "{warnings:?}");
        let annotations = &template(&moved)["metadata"]["annotations"];
        assert_eq!(annotations["sidecar.istio.io/nativeSidecar"], "true");
        assert!(annotations["istio-job-sidecar/applied"]
            .as_str()
            .unwrap()
            .starts_with(r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","moved":"istio-proxy""#));
        for mode in ["quitEndpoint", "exitOnJobCompletion"] {
            assert_eq!(update(&moved, mode).0, update(&x, mode).0, "{mode}");
        }
    }
}
