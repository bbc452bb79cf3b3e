//! The list's sections on the native form: what Istio's releases read
//! differently, its re-injection and the native form's order, and
//! nativeSidecar where the Pod could not run it; with the Pods the Job
//! controller makes of Istio's kube-injected Jobs.

use super::json::{obj, Json};
use super::request::{create, create_in, exit, none, quit};
use super::workloads::{
    annotate, container, db_migrate, fixture, job, pod, template, CLASSIC_JOB, MODE_KEY,
    NATIVE_JOB, NATIVE_KEY, RECORD_KEY, STATUS,
};
use super::Cases;

/// The proxy of Istio's native kube-inject output (an init container).
fn native_proxy() -> Json {
    container(&mut fixture(NATIVE_JOB), "initContainers", "istio-proxy").clone()
}

/// A Pod of the Job of fixture `job` as the Job controller makes it.
fn pod_of(job: &str) -> Json {
    let t = template(&mut fixture(job)).clone();
    let mut metadata = t["metadata"].clone();
    metadata["generateName"] = "pi-".into();
    metadata["namespace"] = "default".into();
    obj([
        ("apiVersion", "v1".into()),
        ("kind", "Pod".into()),
        ("metadata", metadata),
        ("spec", t["spec"].clone()),
    ])
}

/// A Pod of Istio's classic kube-injected Job as the Job controller makes
/// it, seen after Istio's webhook (Kubewarden >= 1.37.2). With `twice`, its
/// template had the proxy native and the webhook rendered it classic again:
/// Istio merges onto the Pod as it came, so it is in both lists.
fn injected_pod(twice: bool) -> Json {
    let mut p = pod_of(CLASSIC_JOB);
    if twice {
        p["spec"]["initContainers"]
            .items()
            .insert(1, native_proxy());
    }
    p
}

/// nativeSidecar where the Pod could not run it: no `"true"`, no move, a
/// warning, and `fallbackMode` where the settings name one
/// (docs/facts.md, "Custom injection templates"; and
/// docs/facts.md, "Kubelets and native sidecars").
pub(super) fn native_where_it_cannot_run(cases: &mut Cases) {
    let fallback = |mode: &str| {
        obj([
            ("mode", "nativeSidecar".into()),
            ("fallbackMode", mode.into()),
        ])
    };
    const TEMPLATES: &str = "inject.istio.io/templates";
    // Istio's spire-template fixture asks for two templates.
    cases.given(
        "native-custom-templates-warns",
        create(annotate(job(), TEMPLATES, "sidecar,spire")),
        none(),
    );
    cases.given(
        "native-custom-templates-fallback-quit",
        create(annotate(job(), TEMPLATES, "sidecar, spire")),
        fallback("quitEndpoint"),
    );
    // grpc-agent renders its agent in containers whatever the Pod asks.
    cases.given(
        "native-grpc-agent-fallback-quit",
        create(annotate(pod(Some("Never")), TEMPLATES, "grpc-agent")),
        fallback("quitEndpoint"),
    );
    // The same template named again is still sidecar alone.
    cases.given(
        "native-sidecar-template-repeated",
        create(annotate(job(), TEMPLATES, "sidecar,sidecar")),
        none(),
    );
    // A kube-injected classic proxy with a second template: not moved.
    cases.given(
        "native-custom-templates-kube-injected-not-moved",
        create(annotate(fixture(CLASSIC_JOB), TEMPLATES, "sidecar,spire")),
        fallback("exitOnJobCompletion"),
    );
    // Istio's sidecar-spire.yaml.injected shape on a Pod seen after the
    // injector: the spire template's partial proxy in containers beside
    // the native one, both in the status; merged into the native one.
    let status = r#"{"initContainers":["istio-init","istio-proxy"],"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert","istio-ca-crl"],"imagePullSecrets":null,"revision":"default"}"#;
    let mut spire_pod = pod_of(NATIVE_JOB);
    let annotations = &mut spire_pod["metadata"]["annotations"];
    annotations[TEMPLATES] = "sidecar,spire".into();
    annotations["sidecar.istio.io/status"] = status.into();
    spire_pod["spec"]["containers"].items().push(Json::parse(
        r#"{"name": "istio-proxy", "resources": {}, "volumeMounts": [
            {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket", "readOnly": true}]}"#,
    ));
    cases.given(
        "pod-spire-partial-proxy-merged",
        create(spire_pod.clone()),
        fallback("quitEndpoint"),
    );
    cases.given(
        "pod-spire-partial-proxy-merged-no-fallback",
        create(spire_pod),
        none(),
    );
    // nodeVersionCheck where the host lists no Nodes (kwctl without
    // --allow-context-aware, a policy-server not granted them): the
    // fallback, and a warning.
    let checked = |fallback: Option<&str>| {
        let mut settings = obj([
            ("mode", "nativeSidecar".into()),
            ("nodeVersionCheck", Json::Bool(true)),
        ]);
        if let Some(mode) = fallback {
            settings["fallbackMode"] = mode.into();
        }
        settings
    };
    cases.given(
        "native-node-check-no-cluster-context",
        create(job()),
        checked(Some("quitEndpoint")),
    );
    // A Pod Istio injected natively before the policy saw it (Kubewarden
    // 1.37.2 and later), from a Job whose template nativeSidecar asked
    // native of while every kubelet was new, where the Node check now
    // fails: no mode changes how the kubelet runs that proxy, nor can its
    // classic form be made from it, so it is kept native and the operator
    // told. Its Job's template is another matter: Istio renders each Pod
    // anew, so the fallback applies there.
    let mut native_pod = pod_of(NATIVE_JOB);
    let annotations = &mut native_pod["metadata"]["annotations"];
    annotations[NATIVE_KEY] = "true".into();
    annotations[RECORD_KEY] =
        r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#.into();
    cases.given(
        "pod-injected-native-node-check-fails-kept-native",
        create(native_pod.clone()),
        checked(Some("quitEndpoint")),
    );
    cases.given(
        "pod-injected-native-node-check-fails-no-fallback-kept-native",
        create(native_pod),
        checked(None),
    );
    cases.given(
        "kube-injected-native-job-node-check-fails-quit",
        create(fixture(NATIVE_JOB)),
        checked(Some("quitEndpoint")),
    );
    // Template names trimmed as Go's strings.TrimSpace trims them (Unicode
    // White_Space): still sidecar alone; a zero-width space is no space.
    cases.given(
        "native-template-name-unicode-space-trimmed",
        create(annotate(job(), TEMPLATES, "\u{a0}sidecar\u{3000}")),
        none(),
    );
    cases.given(
        "native-template-name-zero-width-space-warns",
        create(annotate(job(), TEMPLATES, "sidecar\u{200b}")),
        none(),
    );
}

/// What Istio's releases read differently, its re-injection, and the order
/// of the native form (docs/facts.md, "The journey of a workload").
pub(super) fn releases_and_reinjection(cases: &mut Cases) {
    // sidecar.istio.io/nativeSidecar: 1.24-1.26 render native only for the
    // exact "true"; a user's other opt-in is made exact (and recorded).
    for (case, value) in [("capital-true", "True"), ("yes", "yes"), ("empty", "")] {
        cases.given(
            format!("native-annotation-{case}-made-exact"),
            create(annotate(job(), NATIVE_KEY, value)),
            none(),
        );
    }
    // Istio never injects these namespaces: nothing to wrap; a proxy
    // kube-injected there is moved all the same.
    cases.given(
        "kube-system-job-quit-unchanged",
        create_in(job(), "kube-system"),
        quit(),
    );
    cases.given(
        "kube-system-kube-injected-native",
        create_in(fixture(CLASSIC_JOB), "kube-system"),
        none(),
    );
    // The native form's order: Istio's init containers, the proxy, the rest.
    let mut own_init = fixture(CLASSIC_JOB);
    template(&mut own_init)["spec"]["initContainers"]
        .items()
        .insert(0, db_migrate());
    cases.given(
        "kube-injected-own-init-container-native",
        create(own_init),
        none(),
    );
    // Beside a proxy Istio injected natively the other modes ask for the
    // native form too; a user's "false" there is warned about.
    cases.given(
        "exit-kube-injected-native-annotated",
        create(fixture(NATIVE_JOB)),
        exit(),
    );
    cases.given(
        "quit-kube-injected-native-false-warns",
        create(annotate(fixture(NATIVE_JOB), NATIVE_KEY, "false")),
        quit(),
    );
    // A Pod seen after Istio's injector: moved; with the proxy twice, one kept.
    cases.given(
        "pod-injected-classic-native",
        create(injected_pod(false)),
        none(),
    );
    for (settings, mode) in [(none(), "native"), (exit(), "exit"), (quit(), "quit")] {
        cases.given(
            format!("pod-proxy-twice-{mode}"),
            create(injected_pod(true)),
            settings,
        );
    }
    cases.given(
        "pod-proxy-twice-disabled",
        create(annotate(injected_pod(true), MODE_KEY, "disabled")),
        none(),
    );
    cases.given(
        "pod-proxy-twice-user-true",
        create(annotate(injected_pod(true), NATIVE_KEY, "True")),
        quit(),
    );
    // Istio >= 1.27 renders "True" native but moves a classic proxy only for
    // the exact "true": the native rendering beside the kube-injected classic
    // one, the status naming the native one, which is kept.
    let mut quirk = injected_pod(false);
    quirk["spec"]["initContainers"]
        .items()
        .insert(1, native_proxy());
    let native_status =
        fixture(NATIVE_JOB)["spec"]["template"]["metadata"]["annotations"][STATUS].clone();
    quirk["metadata"]["annotations"][STATUS] = native_status;
    let quirk = annotate(quirk, NATIVE_KEY, "True");
    cases.given("pod-native-rendered-beside-classic", create(quirk), exit());
}
