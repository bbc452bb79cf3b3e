//! The list's mode-change section (reversible modes): each variant's first
//! passes, its second passes after the user's edit, the re-applies of a
//! moved proxy, and the records the policy cannot trust.

use super::json::{strs, Json};
use super::request::{create_in, quit, settings};
use super::variants::{variants, DISABLED, MODES};
use super::workloads::{template, template_of, MODE_KEY, RECORD_KEY, STATUS};
use super::Cases;

fn mode_annotation(obj: &Json, on_template: bool) -> Option<&str> {
    let target = if on_template { template_of(obj) } else { obj };
    target["metadata"]["annotations"][MODE_KEY].as_str()
}

pub(super) fn mode_changes(cases: &mut Cases) {
    let variants = variants();
    for (variant, x, pick, pairs) in &variants {
        for mode in MODES.iter().chain([&DISABLED]) {
            cases.given(
                format!("mode-change-{variant}-{mode}"),
                create_in(pick.pick(x, mode), "batch"),
                pick.settings(mode, "nativeSidecar"),
            );
        }
        for (a, b) in pairs {
            // the user's edit between the passes: what picks b
            let (x_a, x_b) = (pick.pick(x, a), pick.pick(x, b));
            let changed: Vec<(bool, Json)> = [false, true]
                .into_iter()
                .filter(|t| mode_annotation(&x_a, *t) != mode_annotation(&x_b, *t))
                .map(|t| (t, Json::from(mode_annotation(&x_b, t))))
                .collect();
            cases.after(
                format!("mode-change-{variant}-{a}-then-{b}"),
                format!("mode-change-{variant}-{a}"),
                pick.settings(b, a),
                move |obj| {
                    for (on_template, now) in &changed {
                        let target = if *on_template {
                            template(obj)
                        } else {
                            &mut *obj
                        };
                        target["metadata"]["annotations"][MODE_KEY] = now.clone();
                    }
                },
            );
        }
    }
    let x_of = |name: &str| {
        variants
            .iter()
            .find(|v| v.0 == name)
            .map(|v| v.1.clone())
            .expect("a variant")
    };

    // A re-apply (kubectl apply or server-side apply) of the kube-injected
    // CronJob whose proxy the policy moved brings the classic proxy and
    // Istio's status back beside the moved proxy, which neither applier
    // owns: the policy resolves it to one, and the apply lands.
    let injected = x_of("injected");
    let containers = template_of(&injected)["spec"]["containers"].clone();
    let status = injected["spec"]["jobTemplate"]["metadata"]["annotations"][STATUS].clone();
    let reapplied = move |obj: &mut Json| {
        template(obj)["spec"]["containers"] = containers.clone();
        obj["spec"]["jobTemplate"]["metadata"]["annotations"][STATUS] = status.clone();
    };
    let moved = "mode-change-injected-nativeSidecar";
    for (mode, settings) in [("native", settings("nativeSidecar")), ("quit", quit())] {
        cases.after(
            format!("gitops-reapplied-moved-proxy-{mode}"),
            moved,
            settings,
            reapplied.clone(),
        );
    }
    cases.after(
        "gitops-reapplied-moved-proxy-disabled",
        moved,
        settings("nativeSidecar"),
        move |obj| {
            reapplied(obj);
            obj["metadata"]["annotations"][MODE_KEY] = DISABLED.into();
        },
    );

    // Records the policy cannot trust, and the mark of earlier versions, on
    // the quitEndpoint result of the plain CronJob, updated under
    // nativeSidecar.
    let quit_result = "mode-change-plain-quitEndpoint";
    let native = || settings("nativeSidecar");
    cases.after(
        "mode-change-unreadable-record-warns",
        quit_result,
        native(),
        |obj| template(obj)["metadata"]["annotations"][RECORD_KEY] = "garbage".into(),
    );
    cases.after(
        "mode-change-command-replaced-record-goes",
        quit_result,
        native(),
        |obj| {
            template(obj)["spec"]["containers"][0]["command"] =
                strs(&["/bin/report", "--since", "it's $(DAY)"]);
        },
    );
    // A server-side apply by a tool that owns `command` writes the original
    // back and leaves the record, which it does not own, as stored.
    let original = template_of(&x_of("plain"))["spec"]["containers"][0]["command"].clone();
    cases.after(
        "mode-change-command-written-back-record-goes",
        quit_result,
        native(),
        move |obj| template(obj)["spec"]["containers"][0]["command"] = original.clone(),
    );
    cases.after(
        "mode-change-legacy-mark-undone",
        quit_result,
        native(),
        |obj| {
            let annotations = &mut template(obj)["metadata"]["annotations"];
            let record = annotations.remove(RECORD_KEY).unwrap_or(Json::Null);
            let record = Json::parse(record.as_str().unwrap_or("null"));
            annotations[crate::names::QUIT_WRAPPED] = record["container"].clone();
        },
    );
}
