//! The list's quitEndpoint section: the app container's command wrapped,
//! and where it is not (container restart rules, several app containers,
//! the status port, an earlier version's wrapper, injection read as Istio
//! reads it).

use super::json::{obj, strs, Json};
use super::request::{create, create_in, exit, none, quit, request, update};
use super::workloads::{
    annotate, annotate_on, args_split, cronjob, cronjob_with_command, fixture, job, label,
    older_quit_scripts, pod, pod_name_env, quit_wrapped, template, uploader, CLASSIC_CRONJOB,
    CLASSIC_JOB, MODE_KEY, NATIVE_JOB, NATIVE_KEY, QUIT_SCRIPT, RECORD_KEY, STATUS_PORT,
};
use super::Cases;

/// quitEndpoint: the app container's command is wrapped.
pub(super) fn quit_endpoint(cases: &mut Cases) {
    cases.given("quit-job", create(job()), quit());
    let mut cron = cronjob();
    let hello = &mut template(&mut cron)["spec"]["containers"][0];
    let (command, mut args) = args_split(hello, 2);
    hello["command"] = Json::Arr(command);
    args.extend(["$(POD_NAME)", "$$(NOT_EXPANDED)", "cost: $$5"].map(Json::from));
    hello["args"] = Json::Arr(args);
    hello["env"] = Json::Arr(vec![pod_name_env()]);
    cases.given("quit-cronjob-with-args", update(cron, cronjob()), quit());
    cases.given("quit-pod-never", create(pod(Some("Never"))), quit());
    cases.given("quit-pod-onfailure", create(pod(Some("OnFailure"))), quit());
    cases.given("quit-no-command-warns", create(cronjob()), quit());
    // Container restart rules (Kubernetes 1.34 alpha, 1.35 beta): the
    // container's own restartPolicy and restartPolicyRules decide when its
    // proxy may quit, as the kubelet's ContainerShouldRestart reads them.
    // The first app container with the members of `own` (a JSON object).
    let set_own = |container: &mut Json, own: &str| {
        for (key, value) in match Json::parse(own) {
            Json::Obj(members) => members,
            _ => unreachable!("an object"),
        } {
            container[key.as_str()] = value;
        }
    };
    let retried = |pod_policy: &str, own: &str| {
        let mut p = pod(Some(pod_policy));
        set_own(&mut p["spec"]["containers"][0], own);
        create(p)
    };
    // A kubelet before 1.35 ignores them and reads the Pod's restartPolicy
    // (KEP-5307, "Version Skew Strategy"): where the two readings differ
    // the container is not wrapped, unless the Node list (nodeVersionCheck)
    // says which kubelets run it; where they agree it is wrapped.
    const RETRY_42: &str = r#"{"restartPolicy": "Never", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}"#;
    cases.given(
        "quit-container-restart-rule-retries-42-warns",
        retried("Never", RETRY_42),
        quit(),
    );
    cases.given(
        "quit-container-never-in-onfailure-pod-warns",
        retried("OnFailure", r#"{"restartPolicy": "Never"}"#),
        quit(),
    );
    cases.given(
        "quit-container-retries-42-in-onfailure-pod-nodes-not-read-warns",
        retried("OnFailure", RETRY_42),
        obj([
            ("mode", "quitEndpoint".into()),
            ("nodeVersionCheck", Json::Bool(true)),
        ]),
    );
    cases.given(
        "quit-container-never-in-never-pod",
        retried("Never", r#"{"restartPolicy": "Never"}"#),
        quit(),
    );
    cases.given(
        "quit-container-restart-not-0-in-onfailure-pod",
        retried(
            "OnFailure",
            r#"{"restartPolicy": "Never", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0]}}]}"#,
        ),
        quit(),
    );
    // The same in a Job's pod template.
    let job_with = |pod_policy: &str, own: &str| {
        let mut j = job();
        let t = template(&mut j);
        t["spec"]["restartPolicy"] = pod_policy.into();
        set_own(&mut t["spec"]["containers"][0], own);
        create(j)
    };
    cases.given(
        "quit-job-container-restart-rule-retries-42-warns",
        job_with("Never", RETRY_42),
        quit(),
    );
    cases.given(
        "quit-job-container-never-in-onfailure-pod-warns",
        job_with("OnFailure", r#"{"restartPolicy": "Never"}"#),
        quit(),
    );
    cases.given(
        "quit-container-always-restarted-warns",
        retried("Never", r#"{"restartPolicy": "Always"}"#),
        quit(),
    );
    let mut several = job();
    template(&mut several)["spec"]["containers"]
        .items()
        .push(uploader());
    cases.given("quit-several-containers-warns", create(several), quit());
    cases.given(
        "quit-kube-injected-job",
        create(fixture(CLASSIC_JOB)),
        quit(),
    );
    cases.given(
        "quit-kube-injected-native-wrapped",
        create(fixture(NATIVE_JOB)),
        quit(),
    );
    let mut wrapped = job();
    let pi = &mut template(&mut wrapped)["spec"]["containers"][0];
    let mut command = strs(&["/bin/sh", "-c"]);
    command.items().extend(
        [
            QUIT_SCRIPT,
            "istio-job-sidecar-quit",
            "http://127.0.0.1:15020/quitquitquit",
            "always",
        ]
        .map(Json::from),
    );
    command
        .items()
        .extend(pi["command"].items().iter().cloned());
    pi["command"] = command;
    let legacy = wrapped.clone();
    let wrapped = annotate(
        wrapped,
        RECORD_KEY,
        r#"{"mode":"quitEndpoint","container":"pi"}"#,
    );
    cases.given("quit-already-wrapped-unchanged", create(wrapped), quit());
    // Reversible modes: the quit-wrapped mark of 0.1.0 is read as a record
    // and replaced.
    let legacy = annotate(legacy, crate::names::QUIT_WRAPPED, "pi");
    cases.given("quit-legacy-mark-replaced", create(legacy), quit());
    // Each wrapper text an earlier version wrote is still the policy's own:
    // brought up to date (never wrapped twice), taken back by another mode,
    // taken off when a second app container comes.
    for (name, script) in older_quit_scripts() {
        let older = quit_wrapped(cronjob_with_command(), &script);
        let again = || request(older.clone(), "UPDATE", Some(older.clone()), "default");
        cases.given(
            format!("quit-older-wrapper-{name}-refreshed"),
            again(),
            quit(),
        );
        cases.given(
            format!("quit-older-wrapper-{name}-taken-back"),
            again(),
            none(),
        );
        cases.given(
            format!("quit-older-wrapper-{name}-taken-back-exit"),
            again(),
            exit(),
        );
        let mut several = older.clone();
        template(&mut several)["spec"]["containers"]
            .items()
            .push(uploader());
        cases.given(
            format!("quit-older-wrapper-{name}-several-taken-off"),
            update(several, older.clone()),
            quit(),
        );
    }
    // pilot-agent serves /quitquitquit on the pod's status port; "0" turns
    // its status server off, and nothing can end the proxy this way.
    cases.given(
        "quit-status-port-job",
        create(annotate(job(), STATUS_PORT, "15120")),
        quit(),
    );
    let made = obj([
        ("apiVersion", "batch/v1".into()),
        ("kind", "Job".into()),
        (
            "metadata",
            obj([
                ("name", "report-29420000".into()),
                ("namespace", "batch".into()),
                ("annotations", obj([(STATUS_PORT, "15320".into())])),
            ]),
        ),
        ("spec", job()["spec"].clone()),
    ]);
    cases.given(
        "quit-status-port-on-the-jobs-own-metadata",
        create_in(made, "batch"),
        quit(),
    );
    cases.given(
        "quit-status-port-zero-warns",
        create(annotate(job(), STATUS_PORT, "0")),
        quit(),
    );
    let zero = annotate(
        quit_wrapped(cronjob_with_command(), QUIT_SCRIPT),
        STATUS_PORT,
        "0",
    );
    cases.given(
        "quit-status-port-zero-wrapper-taken-off",
        update(zero.clone(), zero),
        quit(),
    );
    cases.given(
        "quit-workload-annotation",
        create(annotate(job(), MODE_KEY, "quitEndpoint")),
        none(),
    );
    cases.given("quit-job-update-unchanged", update(job(), job()), quit());
    // Injection read as Istio reads it: the label when present (even
    // empty), the exact "false" only, never a Pod on the host's network.
    cases.given(
        "injection-empty-label-wins-wrapped",
        create(annotate(
            label(job(), "sidecar.istio.io/inject", ""),
            "sidecar.istio.io/inject",
            "false",
        )),
        quit(),
    );
    cases.given(
        "injection-label-capital-false-wrapped",
        create(label(job(), "sidecar.istio.io/inject", "False")),
        quit(),
    );
    let mut host = job();
    template(&mut host)["spec"]["hostNetwork"] = Json::Bool(true);
    cases.given("quit-host-network-unchanged", create(host), quit());
    // The owner's word carried down to the template.
    cases.given(
        "workload-mode-on-cronjob-metadata",
        create(annotate_on(cronjob(), MODE_KEY, "disabled", false)),
        quit(),
    );
    let stale = annotate(cronjob(), crate::names::OWNER_MODE, "disabled");
    cases.given(
        "workload-owner-mode-removed-with-the-owners",
        update(stale.clone(), stale),
        quit(),
    );
    // A Job the CronJob controller made from a kube-injected CronJob: the
    // injection status on the Job's own metadata (spec.jobTemplate.metadata).
    let injected = fixture(CLASSIC_CRONJOB);
    let mut metadata = injected["spec"]["jobTemplate"]["metadata"].clone();
    metadata["name"] = "hellocron-29420000".into();
    metadata["namespace"] = "batch".into();
    metadata["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
        "2025-12-08T13:20:00Z".into();
    let made = obj([
        ("apiVersion", "batch/v1".into()),
        ("kind", "Job".into()),
        ("metadata", metadata),
        ("spec", injected["spec"]["jobTemplate"]["spec"].clone()),
    ]);
    cases.given(
        "kube-injected-cronjobs-job-native",
        create_in(made, "batch"),
        none(),
    );
    cases.given(
        "kube-injected-native-false-respected",
        create(annotate(fixture(CLASSIC_JOB), NATIVE_KEY, "false")),
        none(),
    );
}
