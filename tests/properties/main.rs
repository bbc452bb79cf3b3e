//! Invariants of the policy, property-tested over generated Jobs, CronJobs,
//! Pods and unhandled kinds.
//!
//! Every case is a whole AdmissionRequest built from random parts
//! (`generators`): container lists with random names (the sidecar names
//! included, unique as Kubernetes requires), commands full of quoting and
//! `$(VAR)`, init containers (istio-init, istio-validation, a native
//! proxy), random annotations and labels (every Istio key the policy
//! reads, and the policy's own), `hostNetwork`, injection status in
//! classic, native, CNI and broken form, on the pod template, on a
//! CronJob's jobTemplate or on a Job's own metadata, Istio's own injection
//! from its `istioctl kube-inject` output, proxy configs in YAML block,
//! YAML flow and JSON form, unknown fields at every level of the object,
//! random operations and every value of every setting. The template may
//! carry the policy's record (`istio-job-sidecar/applied`): a random one of
//! each form (mostly not matching the object), an unreadable one, the
//! legacy `istio-job-sidecar/quit-wrapped`, or the record of an earlier
//! pass of the policy in some mode (`pre_pass`), sometimes edited by hand
//! since (`tamper`, `take_off`); and the owner's mode the policy carries
//! down (`istio-job-sidecar/owner-mode`).
//!
//! The oracle (`oracle`) is written from the README, docs/modes.md,
//! docs/changing-modes.md, docs/design.md,
//! docs/facts.md and the spec, not from src/: the decision table (`plan`: which
//! mode the workload asks for, nearest the pod first, and whether Istio injects
//! it), the owner's mode carried down (`owner_edit`), the undo of another
//! mode's recorded edit, modelled exactly (`undo_expectation`: the object it
//! leaves, or a refusal), what each mode does and records (`quit_expectation`,
//! `native_record_edit`, `exit_record_edit`, `expected_record`). The names come
//! from one place (`names`).
//!
//! The properties:
//! 1. `only_the_modes_parts_change`: the object as the undo leaves it and
//!    the output, each with the parts the applied mode may change removed
//!    (`strip`, the record and the owner's mode among them), are equal; the
//!    record is the one the README says (written, migrated from the legacy
//!    key, removed, or left as it is when untrusted), and so is the owner's
//!    mode; the undo's warning is given exactly when a record is unreadable
//!    or refused, with the README's reason; mutated exactly when a change is
//!    due (`change_due`); when no mode applies only the undo and the owner's
//!    mode change anything, and an unhandled request nothing. The output
//!    still deserializes as the same kind (k8s-openapi types).
//! 2. `idempotent`: the output, sent again, is not mutated (its record
//!    included), in every order of the request's members.
//! 3. `proxy_config_merge`: every key and value of an existing proxy config
//!    survives; the result parses as YAML into the same mapping plus
//!    `exitOnJobCompletion: true`.
//! 4. `containers_kept`: app containers keep order and content; a moved
//!    sidecar keeps every field (plus restartPolicy, and startupProbe only
//!    when it had none) and lands right after Istio's init containers; the
//!    status is rewritten where it was found; the nativeSidecar annotation
//!    is the user's, or "true" wherever the mode asks for a native proxy.
//! 5. `never_changes`: Job UPDATE/DELETE/CONNECT, Pods that run forever and
//!    unhandled kinds are never mutated, whatever record they carry.
//!
//! The laws of a change of mode (`laws`), over workloads as users write
//! them (`LawCase`: Job and Pod CREATE, CronJob CREATE and UPDATE, the
//! follow-up passes a CronJob UPDATE or a Job or Pod CREATE of the previous
//! pass's object, sent as policy-server sends them), for every ordered pair
//! of modes A, B among nativeSidecar, exitOnJobCompletion, quitEndpoint and
//! disabled, each chosen by the `mode` setting or by the workload's
//! `istio-job-sidecar/mode` on the template or on the object:
//! 6. `a_change_of_mode_is_the_new_mode_on_the_original`: B(A(x)) == B(x),
//!    the record included, up to empty maps and lists and an inert owner's
//!    mode; A(A(x)) == A(x).
//! 7. `a_users_edit_survives_a_change_of_mode`: B(e(A(x))) == e(B(x)) for a
//!    user's edit e of a field the policy never writes (an env var or image
//!    on any container, the proxy included, a label, an annotation).
//! 8. `disabled_gives_the_original_back`: disabled(x) is x but for the
//!    owner's mode carried down, and disabled(A(x)) == disabled(x).
//! 9. `an_untrusted_record_undoes_nothing`: a record made unreadable, or an
//!    edit changed by hand since, undoes nothing (no command, no proxy
//!    config goes back), stays as it is, and is named in a warning.
//! 10. `a_record_whose_edit_is_gone_goes`: a record whose edit its owner
//!    took off undoes nothing else and goes, without a warning.
//!
//! And over generated journeys (`journeys`: a workload from its creation,
//! or from before the policy, through its controllers, the API server and
//! Istio's injector, as `policy_testkit::journey` makes it):
//! 11. `a_journey_ends_as_the_workload_asked`: every Pod is accepted by the
//!    API server and ends with its app by the mode the workload asked for,
//!    worked out from the spec; or, where its owner chose otherwise
//!    (`disabled`, injection off, a user's `nativeSidecar: "false"` or
//!    `exitOnJobCompletion`) or a documented limit stands (then with the
//!    policy's warning on the way), it is as the same journey makes it
//!    without the policy; a second journey from the stored objects
//!    changes nothing.
//!
//! By default (`make test`) properties 1-5 run 700 cases, 8 to 10 and 11
//! 250, 6 and 7 64 (each of their cases covers all 16 pairs of modes): the
//! more passes a case makes, the fewer cases. `PROPTEST_CASES=N` (or
//! `make proptest-long`, 50,000) runs N cases of 1-5, 11 half as many, 8
//! to 10 a quarter, 6 and 7 an eighth.
//! `generators_reach_the_interesting_cases` checks that the generators
//! reach every branch that matters (moves, merges, wraps, each form of
//! record undone, refusals and their reasons, unreadable and legacy
//! records, the owner's mode set and removed, injection off, the native
//! annotation's cases, every outcome of a journey). A failing case is
//! saved by proptest in `tests/properties/main.proptest-regressions` and
//! replayed first on every run: commit that file.

mod generators;
mod journeys;
mod laws;
mod names;
mod oracle;
mod quit_script;

use generators::*;
use laws::*;
use names::*;
use oracle::*;
use policy_testkit::laws::{as_is, fixed, gives_back, same, undoes_nothing, Pass, Warned};
use policy_testkit::{check_answer, check_fixed_point, payload, Answer, Order};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm};
use serde_json::{json, Value};

// ---------------------------------------------------------------- config

/// A property's cases: `default` when `PROPTEST_CASES` is not set (as in
/// `make test`: each count is set by what a case costs, so that all the
/// properties take about half a minute of CPU unoptimized), else
/// `PROPTEST_CASES` divided by `share`, the property's share of the long
/// mode (`make proptest-long`) by the number of passes a case makes.
fn cases(default: u32, share: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(default, |n| (n / share).max(1))
}

/// Properties 1-5, a few passes a case: 700 cases (about 2-3 s each).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(700, 1),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // ChaCha is proptest's default; unoptimized (as `cargo test` builds
        // it) it costs most of a case. XorShift is plenty for generation.
        rng_algorithm: RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------- running

/// The policy's answer to a request sent as policy-server sends it
/// (members in alphabetical order), checked to be the very answer it gives
/// in the API server's order (kind and operation before the object: the
/// early-skip path) and with the object first (read before the kind is
/// known).
fn run(request: &Value, settings: &Option<Value>) -> Answer {
    let validate = |order| {
        let payload = payload(request, settings.as_ref(), order);
        istio_job_sidecar_policy::validate(&payload).expect("validate never errors")
    };
    let answer = validate(Order::PolicyServer);
    for order in [Order::ApiServer, Order::ObjectFirst] {
        assert_eq!(
            String::from_utf8_lossy(&answer),
            String::from_utf8_lossy(&validate(order)),
            "the answer depends on the order of the request's members ({order:?})"
        );
    }
    check_answer(&answer).unwrap_or_else(|e| panic!("{e}"))
}

/// The request object as the policy read it (through the same JSON text).
fn object_of(request: &Value) -> Value {
    let text = serde_json::to_string(&request["object"]).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One admission pass, sent as policy-server sends it: `object` under
/// `operation` (an UPDATE's `oldObject` is the same object; the policy
/// does not read it), the answer checked. Its `out` is the object
/// afterwards (`object` itself when it is not mutated).
fn pass(kind: Kind, operation: &str, object: &Value, settings: &Value) -> Pass {
    let mut request = json!({
        "uid": "0000pass", "kind": gvk(kind, 0), "operation": operation, "object": object
    });
    if operation == "UPDATE" {
        request["oldObject"] = object.clone();
    }
    let validate = |p: &[u8]| istio_job_sidecar_policy::validate(p).expect("validate never errors");
    Pass::run(validate, &request, Some(settings), Order::PolicyServer)
        .unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(config())]

    /// (1) Nothing outside the parts the applied mode may change differs
    /// from the object as the undo leaves it (the undo modelled exactly,
    /// its warning included); the record is the one the README says, and
    /// so is the owner's mode carried down; when no mode applies only the
    /// undo and the owner's mode may change anything, and a request the
    /// policy does not handle never changes.
    #[test]
    fn only_the_modes_parts_change(case in arb_case()) {
        let response = run(&case.request, &case.settings);
        let input = object_of(&case.request);
        if !handled(&case) {
            prop_assert!(response.mutated.is_none(), "not handled, but mutated");
            return Ok(());
        }
        let mode = expected_mode(&case);
        let settings = settings_of(&case.settings);
        let undo = undo_expectation(case.kind, &input, &settings.sidecar, mode);
        if let Err(e) = check_undo_warning(&response, &undo.outcome) {
            prop_assert!(false, "{}", e);
        }
        if let Some(due) = change_due(&case, &undo) {
            prop_assert_eq!(
                response.mutated.is_some(), due,
                "mutated must be {} (mode {:?}, undo {:?}); warnings: {:?}",
                due, mode, undo.outcome, response.warnings
            );
        }
        let Some(output) = response.mutated else {
            return Ok(());
        };
        let a = strip(case.kind, mode, &settings.sidecar, &undo.object);
        let b = strip(case.kind, mode, &settings.sidecar, &output);
        prop_assert!(a == b, "undo {:?}\n{}", undo.outcome, diff_message(&a, &b));
        let t = template_pointer(case.kind);
        let owner = owner_mode_after(case.kind, &input, &owner_edit_of(&case));
        prop_assert_eq!(
            annotation(&output, t, OWNER_MODE), owner.as_deref(),
            "{} (plan {:?})", OWNER_MODE, plan(&case)
        );
        let edit = match mode {
            None => RecordEdit::Keep,
            Some(Mode::Native) => {
                native_record_edit(case.kind, &undo.object, &settings, undo.current.as_ref())
            }
            Some(Mode::Exit) => keep_native_edit(
                case.kind,
                &undo.object,
                &settings,
                exit_record_edit(
                    annotation(&undo.object, t, PROXY_CONFIG),
                    annotation(&output, t, PROXY_CONFIG),
                )
                .map_err(TestCaseError::fail)?,
                undo.current.as_ref(),
            ),
            Some(Mode::Quit) => keep_native_edit(
                case.kind,
                &undo.object,
                &settings,
                quit_expectation(case.kind, &undo.object, &settings, undo.current.as_ref()).record,
                undo.current.as_ref(),
            ),
        };
        let native = native_annotation_after(case.kind, &undo.object, mode, &edit);
        prop_assert_eq!(annotation(&output, t, NATIVE), native.as_deref(), "{}", NATIVE);
        if let Err(e) = check_record(&undo.object, &output, t, &expected_record(&undo, edit)) {
            prop_assert!(false, "mode {:?}, undo {:?}: {}", mode, undo.outcome, e);
        }
        prop_assert!(output != input, "mutated_object equal to the input");
        if let Err(e) = same_kind(case.kind, &input, &output) {
            prop_assert!(false, "{}", e);
        }
    }

    /// (2) The policy's output is a fixed point, in every order of the
    /// request's members: the record included (the second pass writes none).
    #[test]
    fn idempotent(case in arb_case()) {
        let first = run(&case.request, &case.settings);
        let Some(output) = first.mutated else {
            return Ok(());
        };
        let validate = |p: &[u8]| istio_job_sidecar_policy::validate(p).expect("validate never errors");
        for order in Order::ALL {
            if let Err(e) = check_fixed_point(validate, &case.request, case.settings.as_ref(), &output, order) {
                prop_assert!(false, "{:?}: {}", order, e);
            }
        }
    }

    /// (3) exitOnJobCompletion keeps every key and value of the user's
    /// config and adds only `exitOnJobCompletion: true`.
    #[test]
    fn proxy_config_merge(
        case in arb_case_of(vec![Kind::Job, Kind::CronJob, Kind::Pod], Just("CREATE").boxed()),
        config in arb_proxy_config(),
        present in any::<bool>(),
        name in prop::option::of(prop::sample::select(SIDECARS.to_vec())),
    ) {
        // Force the mode and a handled shape; keep everything else random.
        let mut case = case;
        let mut settings = json!({"mode": "exitOnJobCompletion", "workloadOverride": false});
        if let Some(name) = name {
            settings["sidecarContainerName"] = json!(name);
        }
        case.settings = Some(settings);
        let t = template_pointer(case.kind);
        let object = case.request["object"].as_object_mut().unwrap();
        let mut object = Value::Object(std::mem::take(object));
        if case.kind == Kind::Pod {
            object["spec"]["restartPolicy"] = json!("Never");
        }
        remove_annotation(&mut object, t, INJECT);
        if let Some(Value::Object(l)) = object.pointer_mut(&format!("{t}/metadata/labels")) {
            l.remove(INJECT);
        }
        if let Some(Value::Object(spec)) = object.pointer_mut(&format!("{t}/spec")) {
            spec.remove("hostNetwork");
        }
        let template = object.pointer_mut(t).unwrap().as_object_mut().unwrap();
        let meta = template.entry("metadata").or_insert(json!({}));
        if meta.is_null() {
            *meta = json!({});
        }
        let annotations = meta.as_object_mut().unwrap().entry("annotations").or_insert(json!({}));
        if annotations.is_null() {
            *annotations = json!({});
        }
        let annotations = annotations.as_object_mut().unwrap();
        if present {
            annotations.insert(PROXY_CONFIG.into(), json!(config.text));
        } else {
            annotations.remove(PROXY_CONFIG);
        }
        case.request["object"] = object;

        let input = object_of(&case.request);
        // Another mode's recorded edit is taken back first; it never
        // touches the config.
        let sidecar = settings_of(&case.settings).sidecar;
        let undo = undo_expectation(case.kind, &input, &sidecar, Some(Mode::Exit));
        // Beside a proxy injected natively the native form is asked for too.
        let kept = keep_native_edit(
            case.kind, &undo.object, &settings_of(&case.settings), RecordEdit::Keep, undo.current.as_ref(),
        ) != RecordEdit::Keep;
        let undone = matches!(undo.outcome, UndoOutcome::Done { .. }) || kept;
        let response = run(&case.request, &case.settings);
        let output = response.mutated.clone().unwrap_or_else(|| input.clone());
        let out_config = annotation(&output, t, PROXY_CONFIG).map(str::to_owned);
        if !present {
            prop_assert_eq!(out_config.as_deref(), Some("exitOnJobCompletion: true"));
            return Ok(());
        }
        match &config.mapping {
            None => {
                prop_assert_eq!(response.mutated.is_some(), undone);
                prop_assert_eq!(out_config.as_deref(), Some(config.text.as_str()));
                prop_assert!(
                    response.warnings.iter().any(|w| w.contains(PROXY_CONFIG)),
                    "no warning for an unusable config: {:?}", response.warnings
                );
            }
            Some(m) if m.contains_key(EXIT_KEY) => {
                // The user's word stands, whatever its value.
                prop_assert_eq!(response.mutated.is_some(), undone, "{:?}", out_config);
                prop_assert_eq!(out_config.as_deref(), Some(config.text.as_str()));
            }
            Some(m) => {
                let Some(text) = out_config else {
                    prop_assert!(false, "well-formed config {:?} not merged: {:?}",
                        config.text, response.warnings);
                    unreachable!()
                };
                let reread: serde_yaml::Value = serde_yaml::from_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text:?} does not parse: {e}")))?;
                let mut expected = m.clone();
                expected.insert(serde_yaml::Value::from(EXIT_KEY), serde_yaml::Value::Bool(true));
                prop_assert_eq!(&reread, &serde_yaml::Value::Mapping(expected),
                    "merged {:?} into {:?}", config.text, text);
                // The user's text is kept as a prefix-ish: every original
                // line is still there, in order.
                let kept: Vec<&str> = config.text.lines().collect();
                let now: Vec<&str> = text.lines().collect();
                let mut it = now.iter();
                for line in kept.iter().filter(|l| !l.trim().is_empty()) {
                    let in_flow = line.contains('}');
                    prop_assert!(in_flow || it.any(|n| n == line),
                        "line {:?} of the user's config lost in {:?}", line, text);
                }
                // Everything else: the only change.
                let a = strip(case.kind, Some(Mode::Exit), &sidecar, &undo.object);
                let b = strip(case.kind, Some(Mode::Exit), &sidecar, &output);
                prop_assert!(a == b, "{}", diff_message(&a, &b));
            }
        }
    }

    /// (4) App containers keep their order and content; the moved sidecar
    /// keeps every field; other init containers keep theirs (all compared
    /// with the object as the undo leaves it); the status says what Istio
    /// writes for a native proxy, where it was found; the nativeSidecar
    /// annotation is the user's, or "true" wherever the mode asks for a
    /// native proxy or moved one.
    #[test]
    fn containers_kept(
        case in arb_case_of(vec![Kind::Job, Kind::CronJob, Kind::Pod], Just("CREATE").boxed()),
        mode in prop::sample::select(vec!["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"]),
    ) {
        let mut case = case;
        // Every mode as often as the others (the workload's annotation may
        // still pick another).
        let mut settings = match case.settings.take() {
            Some(Value::Object(m)) => Value::Object(m),
            _ => json!({}),
        };
        settings["mode"] = json!(mode);
        case.settings = Some(settings);
        if case.kind == Kind::Pod {
            case.request["object"]["spec"]["restartPolicy"] = json!("Never");
        }
        let mode = expected_mode(&case);
        let settings = settings_of(&case.settings);
        let undo = undo_expectation(case.kind, &object_of(&case.request), &settings.sidecar, mode);
        let input = undo.object.clone();
        let response = run(&case.request, &case.settings);
        let output = response.mutated.clone().unwrap_or_else(|| object_of(&case.request));
        let t = template_pointer(case.kind);
        let list = |o: &Value, key: &str| containers(o, t, key);
        let (in_c, in_i) = (list(&input, "containers"), list(&input, "initContainers"));
        let (out_c, out_i) = (list(&output, "containers"), list(&output, "initContainers"));
        let is_sidecar = |c: &Value| c["name"] == json!(settings.sidecar);
        match mode {
            Some(Mode::Native) => {
                let at = in_c.iter().position(is_sidecar);
                // A user's "false" asks for a classic proxy: nothing moves.
                let should_move = injected(case.kind, &input)
                    && annotation(&input, t, NATIVE) != Some("false")
                    && at.is_some()
                    && in_c.len() > 1
                    && !in_i.iter().any(is_sidecar);
                let status = injection_status(case.kind, &input);
                if !should_move {
                    prop_assert_eq!(&out_c, &in_c);
                    prop_assert_eq!(&out_i, &in_i);
                    if let Some((at, status)) = &status {
                        prop_assert_eq!(annotation(&output, at, STATUS), Some(status.as_str()));
                    }
                }
                let at = at.filter(|_| should_move);
                if let Some(at) = at {
                let mut apps = in_c.clone();
                let sidecar = apps.remove(at);
                prop_assert_eq!(&out_c, &apps, "app containers changed");
                // In the native form's order: Istio's init containers, the
                // proxy, then the others (Istio's `reorderPod`).
                let (mut expected_init, _) = native_order(&in_i);
                let after_istio = native_position(&expected_init);
                // Compared with what Istio itself writes (its fixture), not
                // with the policy's own output.
                let moved = made_native(&sidecar, status_port(case.kind, &input));
                expected_init.insert(after_istio, moved);
                prop_assert_eq!(&out_i, &expected_init, "init containers not as expected");
                // The status, where it was found, lists the proxy among the
                // init containers (left as it is when it lists no such
                // container, or is no JSON of lists).
                let (status_at, before) = status.unwrap();
                let after = match native_status(&before, &settings.sidecar) {
                    Ok(Some(native)) => native,
                    _ => before,
                };
                prop_assert_eq!(annotation(&output, status_at, STATUS), Some(after.as_str()));
                }
            }
            Some(Mode::Exit) => {
                prop_assert_eq!(&out_c, &in_c);
                prop_assert_eq!(&out_i, &in_i);
            }
            Some(Mode::Quit) => {
                // The single app's command is the wrapper's prefix followed
                // by its original argv; args and every other field kept.
                let expected = quit_expectation(case.kind, &input, &settings, undo.current.as_ref());
                let out_c = match quit_script::judged(&out_c, &expected.containers) {
                    Ok(judged) => judged,
                    Err(e) => return Err(TestCaseError::fail(e)),
                };
                prop_assert_eq!(&out_c, &expected.containers, "containers not as the README says");
                let edit = keep_native_edit(case.kind, &input, &settings, expected.record, undo.current.as_ref());
                let record = expected_record(&undo, edit);
                if let Err(e) = check_record(&input, &output, t, &record) {
                    prop_assert!(false, "{}", e);
                }
                prop_assert_eq!(&out_i, &in_i, "init containers are never touched");
            }
            None => {
                let (a, b) = (strip(case.kind, None, "", &input), strip(case.kind, None, "", &output));
                prop_assert!(a == b, "no mode: only the undo and the owner's mode may change anything\n{}",
                    diff_message(&a, &b));
            }
        }
        if mode == Some(Mode::Native) {
            let edit = native_record_edit(case.kind, &input, &settings, undo.current.as_ref());
            let expected = native_annotation_after(case.kind, &input, mode, &edit);
            prop_assert_eq!(annotation(&output, t, NATIVE), expected.as_deref(), "{}", NATIVE);
        }
    }

    /// (5) Job UPDATE (and other non-CREATE operations), Pods that run
    /// forever and unhandled kinds never change, whatever else they carry
    /// (a record of another mode included: nothing is undone either).
    #[test]
    fn never_changes(
        case in prop_oneof![
            arb_case_of(vec![Kind::Job], prop_oneof![Just("UPDATE"), Just("DELETE"), Just("CONNECT")].boxed()),
            arb_case_of(vec![Kind::Pod], arb_operation().boxed()).prop_map(|mut c| {
                c.request["object"]["spec"]["restartPolicy"] = json!("Always");
                c
            }),
            arb_case_of(vec![Kind::Pod], arb_operation().boxed()).prop_map(|mut c| {
                c.request["object"]["spec"].as_object_mut().unwrap().remove("restartPolicy");
                c
            }),
            arb_case_of(vec![Kind::Other], arb_operation().boxed()),
        ]
    ) {
        prop_assert!(!handled(&case));
        let response = run(&case.request, &case.settings);
        prop_assert!(response.mutated.is_none(), "changed: {:?}", response.mutated);
    }
}

proptest! {
    #![proptest_config(law_config())]

    /// (6) For every ordered pair of modes A, B (`disabled` included):
    /// B(A(x)) == B(x), the record included, up to what Kubernetes drops
    /// (`policy_testkit::kube::normalize`: the undo drops the annotations,
    /// metadata and initContainers it empties, as the API server would; x
    /// may have them empty or null) and an inert owner's mode
    /// (`LawCase::inert_off`), with the same warnings; and A(A(x)) ==
    /// A(x): the second pass does not mutate at all, and warns as the
    /// first did. Checked by `policy_testkit::laws`, as the golden mode
    /// changes and the fuzz target check them. Where a Job's template
    /// carries its owner's word from A and B is said by the settings, the
    /// owner's word still stands (`LawCase::premise`).
    #[test]
    fn a_change_of_mode_is_the_new_mode_on_the_original(law in arb_law_case(true)) {
        let firsts = law.firsts();
        for (a, ax) in firsts.iter().enumerate() {
            let again = law.pass(law.follow_up(), &ax.out, law.first[a], MODES[a]);
            fixed(&pair(&law, a, a), ax, &again).map_err(TestCaseError::fail)?;
        }
        for b in 0..MODES.len() {
            let bx = law.second(&law.x, b, false);
            for (a, ax) in firsts.iter().enumerate() {
                if !law.premise(&ax.out, b).map_err(TestCaseError::fail)? {
                    continue;
                }
                let bax = law.second(&ax.out, b, true);
                let what = format!("B(A(x)) != B(x), {}", pair(&law, a, b));
                same(&what, &bax, &bx, &|o| law.inert_off(b, o), law.warned(b, &bax, &bx)).map_err(TestCaseError::fail)?;
            }
        }
    }

    /// (7) A user's edit e between the passes, to a field the policy never
    /// writes (a new env var or image on a container, the proxy included,
    /// a new label or annotation on the template), survives the change of
    /// mode: B(e(A(x))) == e(B(x)), up to what (6) allows.
    #[test]
    fn a_users_edit_survives_a_change_of_mode(law in arb_law_case(true)) {
        let firsts = law.firsts();
        for b in 0..MODES.len() {
            let bx = law.second(&law.x, b, false);
            let ebx = Pass { out: law.edited(&bx.out).expect("the edits drawn here apply"), ..bx };
            for (a, ax) in firsts.iter().enumerate() {
                if !law.premise(&ax.out, b).map_err(TestCaseError::fail)? {
                    continue;
                }
                let eax = law.edited(&ax.out).expect("the edits drawn here apply");
                let beax = law.second(&eax, b, true);
                let what = format!("B(e(A(x))) != e(B(x)), e = {:?}, {}", law.edit, pair(&law, a, b));
                same(&what, &beax, &ebx, &|o| law.inert_off(b, o), law.warned(b, &beax, &ebx)).map_err(TestCaseError::fail)?;
            }
        }
    }

}

proptest! {
    #![proptest_config(one_pair_config())]

    /// (8) `disabled` gives back the workload as written, but for the
    /// owner's mode the policy carries down: for x without a record,
    /// disabled(x) is x with that owner's mode (`disabled`, where the
    /// object's own metadata says it), and mutated only for it; and
    /// disabled(A(x)) == disabled(x), up to what (6) allows.
    #[test]
    fn disabled_gives_the_original_back(law in arb_law_case(false)) {
        let disabled = MODES.len() - 1;
        let (xd, settings) = law.choose(&law.x, law.second[disabled], None);
        let carried = owner_edit(law.kind, law.operation, &xd, &settings_of(&Some(settings.clone())));
        let expected = with_owner_edit(law.kind, &xd, &carried);
        let dx = pass(law.kind, law.operation, &xd, &settings);
        prop_assert_eq!(dx.mutated, carried != OwnerEdit::Keep,
            "disabled changed a workload without a record beyond the owner's mode {:?}", carried);
        gives_back(&format!("the owner's mode {carried:?}"), &dx, &expected, &as_is)
            .map_err(TestCaseError::fail)?;
        let dx = Pass { out: expected, ..dx };
        for (a, ax) in law.firsts().iter().enumerate() {
            let dax = law.second(&ax.out, disabled, true);
            let what = format!("disabled(A(x)) != disabled(x), {}", pair(&law, a, disabled));
            same(&what, &dax, &dx, &|o| law.inert_off(disabled, o), law.warned(disabled, &dax, &dx)).map_err(TestCaseError::fail)?;
        }
    }

    /// (9) A record made unreadable, or whose edit was changed by hand since
    /// so that it is there otherwise than the policy left it (the wrapper
    /// emptied, the wrapped container there twice, the config edited where
    /// the key was or no longer a mapping, the moved proxy or its status
    /// changed, a container of its name beside it), undoes nothing: no
    /// command and no proxy config goes back, the record stays exactly as
    /// it is, and a warning names `istio-job-sidecar/applied`. Exactly: the
    /// pass is the pass over the object without its record (the wanted
    /// mode applied on top), with the record put back and that one warning
    /// added.
    #[test]
    fn an_untrusted_record_undoes_nothing(
        law in arb_law_case(true),
        a in 0..3usize,
        b in 0..4usize,
        which in 0..3u8,
        pick in any::<usize>(),
    ) {
        let y = law.pass(law.operation, &law.x, law.first[a], MODES[a]).out;
        let Some(y) = tamper(law.kind, &y, which, pick) else {
            return Ok(());
        };
        // The wanted mode's own record is not undone: a hand edit of its
        // edit is then no refusal (an unreadable record still is); a Job's
        // owner's word may still ask for A (`LawCase::premise`).
        let b = if which != 0 && b == a { 3 } else { b };
        let wanted = law.plan(law.follow_up(), &y, law.second[b], MODES[b]).mode();
        if which != 0 && wanted == MODES[a] {
            return Ok(());
        }
        let t = template_pointer(law.kind);
        let out = law.pass(law.follow_up(), &y, law.second[b], MODES[b]);
        let mut bare = y.clone();
        remove_annotations(&mut bare, t, &RECORD_KEYS);
        let bare = law.pass(law.follow_up(), &bare, law.second[b], MODES[b]);
        let mut expected = bare.out.clone();
        remove_annotations(&mut expected, t, &RECORD_KEYS);
        for (key, value) in RECORD_KEYS.iter().zip(record_keys(&y, t)) {
            if let Some(value) = value {
                set_annotation(&mut expected, t, key, &value);
            }
        }
        undoes_nothing(&pair(&law, a, b), &out, &expected, &bare.warnings)
            .map_err(TestCaseError::fail)?;
    }

    /// (10) A record whose edit is no longer on the object at all (the
    /// wrapped command replaced or removed by its owner, the container
    /// renamed, the key set to `false` or taken out, the proxy written
    /// back into `containers` with the status as it was, the annotation
    /// set to `"false"`) goes, silently: the pass is the pass over the
    /// object as if the policy had never recorded anything there (but the
    /// nativeSidecar annotation the move wrote, which goes with it), with
    /// no warning naming `istio-job-sidecar/applied`.
    #[test]
    fn a_record_whose_edit_is_gone_goes(
        law in arb_law_case(true),
        a in 0..3usize,
        b in 0..4usize,
        pick in any::<usize>(),
    ) {
        let y = law.pass(law.operation, &law.x, law.first[a], MODES[a]).out;
        let Some((y, bare)) = take_off(law.kind, &y, pick) else {
            return Ok(());
        };
        let t = template_pointer(law.kind);
        let Record::Read { applied, .. } = record_of(&y, t) else {
            unreachable!("take_off leaves the record");
        };
        // The wanted mode's own record is not undone.
        let b = if b == a { 3 } else { b };
        let wanted = law.plan(law.follow_up(), &y, law.second[b], MODES[b]).mode();
        if wanted == Some(applied.mode()) {
            return Ok(());
        }
        let out = law.pass(law.follow_up(), &y, law.second[b], MODES[b]);
        let bare = law.pass(law.follow_up(), &bare, law.second[b], MODES[b]);
        let what = format!("{}, {:?}: not the pass without the record", pair(&law, a, b), applied);
        same(&what, &out, &bare, &as_is, Warned::Alike).map_err(TestCaseError::fail)?;
        prop_assert!(!out.warnings.iter().any(|w| w.contains(APPLIED)), "{:?}", out.warnings);
    }
}

/// The journeys run the policy some 15 times a case (each hop, the same
/// journey without the policy, each result sent again), natively and
/// without the triple request of `run`: 250 cases (about 2 s), half the
/// long mode's.
fn journey_config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(250, 2),
        ..config()
    }
}

proptest! {
    #![proptest_config(journey_config())]

    /// (11) A generated journey (a Job, CronJob or run-to-completion Pod,
    /// created or stored before the policy, maybe annotated or under a
    /// new cluster mode, then run by its controllers and injected by
    /// Istio) gives Pods the API server accepts, that end with their app
    /// by the mode the workload asked for or, where its owner chose
    /// otherwise or a documented limit stands (then with its warning on
    /// the way), are as the journey makes them without the policy; and
    /// a second journey from the stored objects changes nothing.
    #[test]
    fn a_journey_ends_as_the_workload_asked(j in journeys::arb_journey()) {
        if let Err(e) = journeys::check(&j) {
            prop_assert!(false, "{} (expected {:?})", e, j.case().1);
        }
    }
}

/// The generators reach every branch that matters; if they stop doing so
/// (a refactor narrowing them), the properties above would pass vacuously.
#[test]
fn generators_reach_the_interesting_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeMap;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_case();
    let (mut mutated, mut moved, mut merged, mut wrapped, mut skipped) = (0, 0, 0, 0, 0);
    // The undo's outcomes, as the oracle (checked by property 1) has them.
    let mut undone: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut refused, mut unreadable, mut migrated) = (0, 0, 0);
    let mut whys = BTreeMap::new();
    // What the owner's mode, injection and the native annotation come to.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..2000 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let mode = expected_mode(&case);
        let response = run(&case.request, &case.settings);
        if handled(&case) {
            let object = object_of(&case.request);
            let sidecar = settings_of(&case.settings).sidecar;
            let undo = undo_expectation(case.kind, &object, &sidecar, mode);
            match undo.outcome {
                UndoOutcome::Done { form, edited: true } => *undone.entry(form).or_default() += 1,
                UndoOutcome::Done { edited: false, .. } => {
                    *undone.entry("record only").or_default() += 1
                }
                UndoOutcome::Refused(_, why) => {
                    refused += 1;
                    *whys.entry(why).or_insert(0) += 1;
                }
                UndoOutcome::Unreadable => unreadable += 1,
                UndoOutcome::Nothing => {}
            }
            if undo.legacy {
                migrated += 1;
            }
            let mut count = |what| *seen.entry(what).or_default() += 1;
            match owner_edit_of(&case) {
                OwnerEdit::Set(_) => count("owner's mode set"),
                OwnerEdit::Remove => count("owner's mode removed"),
                OwnerEdit::Keep => {}
            }
            let t = template_pointer(case.kind);
            match plan(&case) {
                Plan::InjectionOff
                    if object.pointer(&format!("{t}/spec/hostNetwork")) == Some(&json!(true)) =>
                {
                    count("hostNetwork")
                }
                Plan::InjectionOff => count("injection off"),
                Plan::Apply(Mode::Native) => {
                    let settings = settings_of(&case.settings);
                    let in_containers = containers(&undo.object, t, "containers")
                        .iter()
                        .any(|c| c["name"] == json!(settings.sidecar));
                    let native = annotation(&undo.object, t, NATIVE);
                    if native == Some("false") && injected(case.kind, &undo.object) {
                        count("user's native false, injected");
                    }
                    match native_record_edit(
                        case.kind,
                        &undo.object,
                        &settings,
                        undo.current.as_ref(),
                    ) {
                        RecordEdit::Set(Applied::NativeMove(m))
                            if in_containers && m.annotation.is_some() =>
                        {
                            count("move writing the annotation")
                        }
                        RecordEdit::Set(Applied::NativeMove(_)) if in_containers => {
                            count("move beside the user's annotation")
                        }
                        RecordEdit::Set(_) if injected(case.kind, &undo.object) => {
                            count("native proxy asked native again")
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        match (&response.mutated, mode) {
            (Some(out), Some(Mode::Native)) => {
                mutated += 1;
                let t = template_pointer(case.kind);
                if out.pointer(&format!("{t}/spec/initContainers"))
                    != object_of(&case.request).pointer(&format!("{t}/spec/initContainers"))
                {
                    moved += 1;
                }
            }
            (Some(_), Some(Mode::Exit)) => {
                mutated += 1;
                merged += 1;
            }
            (Some(_), Some(Mode::Quit)) => {
                mutated += 1;
                wrapped += 1;
            }
            (Some(_), _) => mutated += 1,
            (None, _) => skipped += 1,
        }
    }
    eprintln!(
        "of 2000 generated cases: {mutated} mutated ({moved} sidecar moves, \
         {merged} config merges, {wrapped} commands wrapped), {skipped} unchanged; \
         another mode's edit undone: {undone:?}; {refused} refused {whys:?}, {unreadable} \
         unreadable, {migrated} legacy records read by quitEndpoint; {seen:?}"
    );
    assert!(mutated > 300 && moved > 30 && merged > 50 && wrapped > 10 && skipped > 300);
    let undone_of = |form| undone.get(form).copied().unwrap_or_default();
    assert!(
        undone_of("annotation") > 15
            && undone_of("move") > 2
            && undone_of("exit") > 15
            && undone_of("quit") > 5
            && undone_of("record only") > 15,
        "{undone:?}"
    );
    assert!(refused > 15 && unreadable > 15 && migrated > 2);
    assert!(whys.len() >= 6, "{whys:?}");
    assert!(seen.len() == 8 && seen.values().all(|&n| n > 2), "{seen:?}");

    // The laws' workloads: every carrier and mode, records of each form.
    let strategy = arb_law_case(true);
    let mut records: BTreeMap<&str, usize> = BTreeMap::new();
    let mut untrusted = 0;
    for i in 0..300 {
        let law = strategy.new_tree(&mut runner).unwrap().current();
        let t = template_pointer(law.kind);
        let form = match record_of(&law.x, t) {
            Record::Read { legacy: true, .. } => "legacy",
            Record::Read { applied, .. } => applied.form(),
            Record::Absent => "none",
            Record::Unreadable => "unreadable",
        };
        *records.entry(form).or_default() += 1;
        let y = law
            .pass(law.operation, &law.x, law.first[i % 3], MODES[i % 3])
            .out;
        if tamper(law.kind, &y, 1 + (i % 2) as u8, i / 3).is_some() {
            untrusted += 1;
        }
    }
    eprintln!("of 300 workloads for the laws, records: {records:?}; {untrusted} hand-edited");
    assert!(["annotation", "move", "exit", "quit", "legacy", "none"]
        .iter()
        .all(|form| records.get(form).is_some_and(|&n| n > 3)));
    assert!(!records.contains_key("unreadable") && untrusted > 30);

    // The journeys: each outcome the spec gives their runs (3000 of them:
    // the rarest, a proxy config that is no mapping where Istio does not
    // inject, is about one run in two hundred; generating one costs little).
    let strategy = journeys::arb_journey();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut runs = 0;
    for _ in 0..3000 {
        let journey = strategy.new_tree(&mut runner).unwrap().current();
        for outcome in journey.case().1 {
            runs += 1;
            let what = match outcome {
                journeys::Outcome::Ends(mode) => format!("ends by {}", mode.name()),
                journeys::Outcome::Untouched(None) => "as without the policy".to_owned(),
                journeys::Outcome::Untouched(Some(limit)) => limit.to_owned(),
                journeys::Outcome::Valid => "valid, the key reaching no proxy".to_owned(),
            };
            *outcomes.entry(what).or_default() += 1;
        }
    }
    eprintln!("of 3000 journeys, {runs} runs: {outcomes:?}");
    let of = |what: &str| outcomes.get(what).copied().unwrap_or_default();
    assert!(
        ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"]
            .iter()
            .all(|mode| of(&format!("ends by {mode}")) > 100)
            && of("as without the policy") > 100
            && of("quitEndpoint wraps a single app container") > 5
            && of("no command, not wrapped") > 5
            && of("proxy.istio.io/config left unchanged") > 5
            && of("nativeSidecar unsafe") > 5,
        "{outcomes:?}"
    );
}
