//! The list's first sections: the decision table row by row, the outputs
//! of `istioctl kube-inject`, and proxy.istio.io/config forms, odd shapes
//! and fields this crate does not know.

use super::json::{obj, strs, Json};
use super::request::{create, exit, none, update};
use super::workloads::{
    annotate, annotate_on, container, cronjob, db_migrate, fixture, job, label, pod, template,
    CLASSIC_CRONJOB, CLASSIC_JOB, MODE_KEY, NATIVE_JOB, NATIVE_KEY, STATUS, STATUS_PORT,
};
use super::Cases;

/// The decision table (docs/modes.md, "What is mutated, and what never is"), row
/// by row.
pub(super) fn decision_table(cases: &mut Cases) {
    cases.given("job-create-native", create(job()), none());
    cases.given("job-create-exit", create(job()), exit());
    cases.given("job-update-unchanged", update(job(), job()), none());
    cases.given("job-update-exit-unchanged", update(job(), job()), exit());
    cases.given("cronjob-create-native", create(cronjob()), none());
    cases.given(
        "cronjob-update-native",
        update(cronjob(), cronjob()),
        none(),
    );
    cases.given("cronjob-update-exit", update(cronjob(), cronjob()), exit());
    cases.given("pod-never-native", create(pod(Some("Never"))), none());
    cases.given("pod-onfailure-exit", create(pod(Some("OnFailure"))), exit());
    cases.given("pod-always-unchanged", create(pod(Some("Always"))), none());
    cases.given(
        "pod-restart-unset-unchanged",
        create(fixture("istio-native-sidecar-opt-in.yaml")),
        none(),
    );
    cases.given(
        "pod-update-unchanged",
        update(pod(Some("Never")), pod(Some("Never"))),
        none(),
    );
    cases.given(
        "injection-disabled-label-unchanged",
        create(label(job(), "sidecar.istio.io/inject", "false")),
        none(),
    );
    cases.given(
        "injection-disabled-annotation-unchanged",
        create(annotate(cronjob(), "sidecar.istio.io/inject", "false")),
        exit(),
    );
    cases.given(
        "workload-disabled-unchanged",
        create(annotate(job(), MODE_KEY, "disabled")),
        none(),
    );
    cases.given(
        "workload-mode-on-job-metadata",
        create(annotate_on(job(), MODE_KEY, "exitOnJobCompletion", false)),
        none(),
    );
    cases.given(
        "workload-mode-on-template-wins",
        create(annotate(
            annotate_on(cronjob(), MODE_KEY, "disabled", false),
            MODE_KEY,
            "nativeSidecar",
        )),
        exit(),
    );
    cases.given(
        "workload-override-off",
        create(annotate(job(), MODE_KEY, "disabled")),
        obj([("workloadOverride", Json::Bool(false))]),
    );
    cases.given(
        "workload-invalid-mode-warns",
        create(annotate(job(), MODE_KEY, "sometimes")),
        none(),
    );
    let deployment = obj([
        ("apiVersion", "apps/v1".into()),
        ("kind", "Deployment".into()),
        (
            "metadata",
            obj([("name", "web".into()), ("namespace", "default".into())]),
        ),
        (
            "spec",
            obj([
                (
                    "selector",
                    obj([("matchLabels", obj([("app", "web".into())]))]),
                ),
                ("template", template(&mut job()).clone()),
            ]),
        ),
    ]);
    cases.given("deployment-unchanged", create(deployment), none());
    cases.given(
        "native-annotation-present-unchanged",
        create(annotate(job(), NATIVE_KEY, "true")),
        none(),
    );
    cases.given(
        "native-false-respected",
        create(annotate(job(), NATIVE_KEY, "false")),
        none(),
    );
}

/// Already injected by `istioctl kube-inject` (Istio's own outputs).
pub(super) fn kube_injected(cases: &mut Cases) {
    cases.given(
        "kube-injected-classic-job-native",
        create(fixture(CLASSIC_JOB)),
        none(),
    );
    cases.given(
        "kube-injected-classic-job-exit",
        create(fixture(CLASSIC_JOB)),
        exit(),
    );
    cases.given(
        "kube-injected-native-job-annotated",
        create(fixture(NATIVE_JOB)),
        none(),
    );
    cases.given(
        "kube-injected-classic-cronjob-native",
        create(fixture(CLASSIC_CRONJOB)),
        none(),
    );
    cases.given(
        "kube-injected-native-cronjob-annotated",
        create(fixture("istio-cronjob.yaml.injected")),
        none(),
    );
    let mut cni = fixture(CLASSIC_JOB);
    let spec = &mut template(&mut cni)["spec"];
    spec["initContainers"][0]["name"] = "istio-validation".into();
    spec["initContainers"].items().push(db_migrate());
    let annotations = &mut template(&mut cni)["metadata"]["annotations"];
    let mut status = Json::parse(annotations[STATUS].as_str().unwrap_or_default());
    status["initContainers"] = strs(&["istio-validation"]);
    annotations[STATUS] = status.to_compact().into();
    cases.given("kube-injected-cni-with-init-native", create(cni), none());

    // An older proxy (no startupProbe) whose status ports are not the
    // defaults: the added probe checks what its readinessProbe checks, the
    // drain hook talks to the pod's status port.
    let mut custom_ports = fixture(CLASSIC_JOB);
    let proxy = container(&mut custom_ports, "containers", "istio-proxy");
    proxy.remove("startupProbe");
    proxy["readinessProbe"]["httpGet"]["port"] = 15121.into();
    let custom_ports = annotate(custom_ports, STATUS_PORT, "15120");
    cases.given(
        "kube-injected-custom-status-port-native",
        create(custom_ports),
        none(),
    );

    // A proxy with its own lifecycle (holdApplicationUntilProxyStarts) keeps
    // it; one without a readinessProbe gets no startupProbe (Istio writes
    // both or neither).
    let mut held = fixture(CLASSIC_JOB);
    let proxy = container(&mut held, "containers", "istio-proxy");
    proxy["lifecycle"] =
        Json::parse(r#"{"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}"#);
    proxy.remove("readinessProbe");
    proxy.remove("startupProbe");
    cases.given(
        "kube-injected-lifecycle-no-probes-native",
        create(held),
        none(),
    );

    // Injection customization: a partial istio-proxy, no status: not a proxy.
    let mut custom = job();
    template(&mut custom)["spec"]["containers"]
        .items()
        .push(Json::parse(
            r#"{"name": "istio-proxy", "image": "auto", "resources": {"limits": {"memory": "256Mi"}}}"#,
        ));
    cases.given(
        "customization-partial-proxy-not-moved",
        create(custom),
        none(),
    );
}

/// proxy.istio.io/config forms, odd shapes and fields this crate does not
/// know.
pub(super) fn proxy_config_and_odd_shapes(cases: &mut Cases) {
    const CONFIG: &str = "proxy.istio.io/config";
    cases.given(
        "cronjob-yaml-proxy-config-exit",
        create(annotate(
            cronjob(),
            CONFIG,
            "holdApplicationUntilProxyStarts: true\ntracing:\n  sampling: 10\n  zipkin:\n    address: zipkin.istio-system:9411\n",
        )),
        exit(),
    );
    cases.given(
        "job-json-proxy-config-exit",
        create(annotate(
            job(),
            CONFIG,
            r#"{"holdApplicationUntilProxyStarts": true, "proxyMetadata": {"ISTIO_META_DNS_CAPTURE": "true"}}"#,
        )),
        exit(),
    );
    cases.given(
        "proxy-config-key-present-unchanged",
        create(annotate(job(), CONFIG, "exitOnJobCompletion: false\n")),
        exit(),
    );
    cases.given(
        "proxy-config-not-mapping-warns",
        create(annotate(
            job(),
            CONFIG,
            "- holdApplicationUntilProxyStarts\n",
        )),
        exit(),
    );

    let mut odd = job();
    template(&mut odd)["spec"]["containers"] = "pi".into();
    cases.given("wrong-shape-containers-warns", create(odd), none());
    let mut odd = job();
    template(&mut odd)["metadata"]["annotations"] = strs(&["not", "a", "map"]);
    cases.given("wrong-shape-annotations-warns", create(odd), exit());
    let mut future = job();
    future["spec"]["futureJobField"] = Json::parse(r#"{"enabled": true}"#);
    future["spec"]["template"]["metadata"]["futureMetaField"] = 7.into();
    future["spec"]["template"]["spec"]["futurePodField"] =
        Json::parse(r#"[1.50, 2e3, {"x": null}]"#);
    future["spec"]["template"]["spec"]["containers"][0]["futureContainerField"] = "keep me".into();
    future["spec"]["template"]["spec"]["resourceClaims"] =
        Json::parse(r#"[{"name": "gpu", "resourceClaimTemplateName": "gpu-claim"}]"#);
    cases.given("future-fields-kept", create(future), none());
}
