//! The journeys every policy build is held to (natively, through
//! `policy.wasm`, through `kwctl`): every mode, kind and mode change the
//! README describes, and the ways a workload's word used to be lost on the
//! way from CronJob to Pod. Each one's hops (what the policy changed) and
//! Pods are compared with `test_data/journeys/<name>.yaml`
//! (`journey::golden`), but for the journeys of `ENDS_AS`, compared with
//! the file of the journey they must end as.
//!
//! The workloads are `kubectl create ... --dry-run=client -o yaml` output
//! and Istio's own `istioctl kube-inject` output (`test_data/journeys/workloads/`,
//! `test_data/fixtures/`).

use crate::istio::{self, Mesh, Namespace, Release};
use crate::journey::{created_by_kubectl_apply, Edit, Expect, Journey, Step, Webhooks, NAMESPACE};
use crate::names::{self, MODE};
use serde_json::{json, Value};

const JOB: &str = include_str!("../../test_data/journeys/workloads/job.yaml");
const CRONJOB: &str = include_str!("../../test_data/journeys/workloads/cronjob.yaml");
const POD: &str = include_str!("../../test_data/journeys/workloads/pod.yaml");
const INJECTED_JOB: &str =
    include_str!("../../test_data/fixtures/istio-job-kube-injected-classic.yaml");
const INJECTED_NATIVE_JOB: &str =
    include_str!("../../test_data/fixtures/istio-job-kube-injected-native.yaml");
const INJECTED_CRONJOB: &str =
    include_str!("../../test_data/fixtures/istio-cronjob-old-version.yaml.injected");

fn yaml(text: &str) -> Value {
    let doc = text.split("\n---").next().unwrap_or_default();
    serde_yaml::from_str(doc).expect("a journey's workload is YAML")
}

fn job() -> Value {
    yaml(JOB)
}

fn cronjob() -> Value {
    yaml(CRONJOB)
}

fn pod() -> Value {
    yaml(POD)
}

/// Istio's kube-injected Job (classic: the proxy in `containers`).
fn injected_job() -> Value {
    yaml(INJECTED_JOB)
}

/// Istio's kube-injected CronJob (classic), its app's argv as its
/// `command` so that quitEndpoint can wrap it.
fn injected_cronjob() -> Value {
    let mut cronjob = yaml(INJECTED_CRONJOB);
    let app = &mut cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
    app["command"] = app["args"].take();
    cronjob
}

/// Istio's kube-injected Job (classic) with an init container of its own,
/// which the classic form runs before `istio-init`.
fn injected_job_with_init() -> Value {
    let mut job = injected_job();
    let spec = &mut job["spec"]["template"]["spec"];
    let mut init = vec![
        json!({"name": "db-migrate", "image": "registry.example/migrate:1", "command": ["migrate", "up"]}),
    ];
    init.extend(
        spec["initContainers"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    spec["initContainers"] = Value::Array(init);
    job
}

fn with_meta(mut object: Value, on: &str, map: &str, key: &str, value: &str) -> Value {
    let owner = match on {
        "template" => kube_model::workload::pod_template_mut(&mut object),
        "jobTemplate" => &mut object["spec"]["jobTemplate"],
        _ => &mut object,
    };
    if !owner["metadata"].is_object() {
        owner["metadata"] = json!({});
    }
    if !owner["metadata"][map].is_object() {
        owner["metadata"][map] = json!({});
    }
    owner["metadata"][map][key] = Value::from(value);
    object
}

fn annotated(object: Value, on: &str, key: &str, value: &str) -> Value {
    with_meta(object, on, "annotations", key, value)
}

fn labelled(object: Value, on: &str, key: &str, value: &str) -> Value {
    with_meta(object, on, "labels", key, value)
}

/// `holdApplicationUntilProxyStarts: true` in the pod template's
/// `proxy.istio.io/config`.
fn held(object: Value) -> Value {
    annotated(
        object,
        "template",
        istio::PROXY_CONFIG,
        "holdApplicationUntilProxyStarts: true\n",
    )
}

/// The pod template's own status port.
fn status_port(object: Value, port: &str) -> Value {
    annotated(object, "template", istio::STATUS_PORT, port)
}

/// A pod template on the host's network.
fn host_network(mut object: Value) -> Value {
    kube_model::workload::pod_template_mut(&mut object)["spec"]["hostNetwork"] = json!(true);
    object
}

/// `object` as `istioctl kube-inject` leaves it in `mesh`: its pod
/// template injected by the model of Istio's injector, as a Pod would be.
fn kube_injected(mut object: Value, mesh: Mesh) -> Value {
    let template = kube_model::workload::pod_template_mut(&mut object);
    let pod = json!({"kind": "Pod", "metadata": template["metadata"], "spec": template["spec"]});
    let injected = istio::inject(&pod, Namespace::Enabled, mesh)
        .expect("Istio injects the journeys' templates");
    template["metadata"] = injected["metadata"].clone();
    template["spec"] = injected["spec"].clone();
    object
}

/// The pod template's `inject.istio.io/templates`.
fn templated(object: Value, templates: &str) -> Value {
    annotated(object, "template", istio::TEMPLATES, templates)
}

/// nativeSidecar, with `fallback` where the Pod could not run it.
fn native_else(fallback: &str) -> Value {
    json!({ "mode": NATIVE, "fallbackMode": fallback })
}

fn mode(name: &str) -> Value {
    json!({ "mode": name })
}

const NATIVE: &str = "nativeSidecar";
const QUIT: &str = "quitEndpoint";
const EXIT: &str = "exitOnJobCompletion";
const OFF: Mesh = Mesh::default_of(Release::V1_27);
const ON: Mesh = Mesh {
    native_flag: true,
    ..OFF
};

fn case(name: &'static str, about: &'static str, settings: Value, steps: Vec<Step>) -> Journey {
    Journey {
        name,
        about,
        settings,
        namespace: Namespace::Enabled,
        namespace_name: NAMESPACE,
        mesh: OFF,
        webhooks: Webhooks::PolicyFirst,
        selected: true,
        steps,
    }
}

fn run(expect: Expect) -> Step {
    Step::Run(expect)
}

use Expect::{AsWithoutPolicy as UNTOUCHED, Ends};

/// Journeys that must end as another does, hop for hop and Pod for Pod
/// (`journey::golden`'s form, but for what the journey is): (journey, the
/// journey it ends as). The first keeps no golden file of its own.
pub const ENDS_AS: [(&str, &str); 3] = [
    // The two ways GitOps re-applies the same kube-injected CronJob.
    (
        "gitops-server-side-apply-kube-injected-cronjob",
        "gitops-kubectl-apply-kube-injected-cronjob",
    ),
    // workloadOverride false: the Job's own "disabled" is not read at all.
    ("workload-override-off", "job-quit"),
    // Istio's injector called or not: the policy's proxy is the one Istio
    // renders again.
    (
        "kube-injected-cronjob-status-port-no-injector",
        "kube-injected-cronjob-status-port-native-quit-native",
    ),
];

/// The golden file `name` is compared with, in `dir`.
pub fn golden_file(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let owner = ENDS_AS
        .iter()
        .find(|(journey, _)| *journey == name)
        .map_or(name, |(_, ends_as)| *ends_as);
    dir.join(format!("{owner}.yaml"))
}

/// Every journey, in the order the README tells them.
pub fn all() -> Vec<Journey> {
    let mut cases = vec![
        // Each mode, each kind.
        case("cronjob-native", "a CronJob under nativeSidecar: its Jobs' Pods get a native proxy", mode(NATIVE),
            vec![Step::Create(cronjob()), run(Ends(NATIVE)), run(Ends(NATIVE))]),
        case("job-quit", "a Job under quitEndpoint: its Pods' app asks the proxy to quit", mode(QUIT),
            vec![Step::Create(job()), run(Ends(QUIT))]),
        case("job-exit", "a Job under exitOnJobCompletion: its Pods' proxy config carries the key", mode(EXIT),
            vec![Step::Create(job()), run(Ends(EXIT))]),
        case("pod-quit", "a run-to-completion Pod created directly, under quitEndpoint", mode(QUIT),
            vec![Step::Create(pod()), run(Ends(QUIT))]),
        case("pod-native", "a run-to-completion Pod created directly, under nativeSidecar", mode(NATIVE),
            vec![Step::Create(pod()), run(Ends(NATIVE))]),
        case("indexed-job-quit", "an Indexed Job: its Pods carry their index and are wrapped", mode(QUIT),
            vec![Step::Create({ let mut j = job(); j["spec"]["completionMode"] = json!("Indexed"); j["spec"]["completions"] = json!(3); j }), run(Ends(QUIT))]),
        // The mode a workload asks for on its own metadata reaches every hop.
        case("job-metadata-disabled-under-quit", "a Job disabled on its own metadata: its Pods are not wrapped", mode(QUIT),
            vec![Step::Create(annotated(job(), "object", MODE, "disabled")), run(UNTOUCHED)]),
        case("cronjob-metadata-disabled-under-quit", "a CronJob disabled on its own metadata: none of its Jobs' Pods is wrapped", mode(QUIT),
            vec![Step::Create(annotated(cronjob(), "object", MODE, "disabled")), run(UNTOUCHED), run(UNTOUCHED)]),
        case("cronjob-jobtemplate-metadata-disabled", "a CronJob disabled on spec.jobTemplate.metadata (each Job's own)", mode(QUIT),
            vec![Step::Create(annotated(cronjob(), "jobTemplate", MODE, "disabled")), run(UNTOUCHED)]),
        case("job-metadata-quit-under-native", "a Job asking for quitEndpoint on its metadata under a nativeSidecar cluster stays wrapped at Pod CREATE", mode(NATIVE),
            vec![Step::Create(annotated(job(), "object", MODE, QUIT)), run(Ends(QUIT))]),
        case("cronjob-template-mode-wins", "the pod template's own mode wins over the CronJob's", mode(QUIT),
            vec![Step::Create(annotated(annotated(cronjob(), "object", MODE, NATIVE), "template", MODE, EXIT)), run(Ends(EXIT))]),
        case("cronjob-annotated-native-after-quit", "the README's example: a CronJob admitted under quitEndpoint, then `kubectl annotate ... mode=nativeSidecar`", mode(QUIT),
            vec![Step::Create(cronjob()), run(Ends(QUIT)), Step::Update(Edit::Annotate(MODE, Some(NATIVE))), run(Ends(NATIVE))]),
        case("cronjob-annotated-again-and-removed", "a CronJob annotated, annotated again with --overwrite, then the annotation removed: its Jobs follow each time", mode(NATIVE),
            vec![Step::Create(cronjob()),
                 Step::Update(Edit::Annotate(MODE, Some(QUIT))), run(Ends(QUIT)),
                 Step::Update(Edit::Annotate(MODE, Some(EXIT))), run(Ends(EXIT)),
                 Step::Update(Edit::Annotate(MODE, Some("disabled"))), run(UNTOUCHED),
                 Step::Update(Edit::Annotate(MODE, None)), run(Ends(NATIVE))]),
        case("cronjob-stored-before-policy-updated", "a CronJob disabled on its metadata, stored before the policy: its next update carries the mode down", mode(QUIT),
            vec![Step::Stored(annotated(cronjob(), "object", MODE, "disabled")),
                 Step::Update(Edit::Annotate("team", Some("reports"))), run(UNTOUCHED)]),
        case("workload-override-off", "with workloadOverride false a Job's disabled is not honoured", json!({"mode": QUIT, "workloadOverride": false}),
            vec![Step::Create(annotated(job(), "object", MODE, "disabled")), run(Ends(QUIT))]),
        // Already injected by istioctl kube-inject.
        case("kube-injected-cronjob-stored-before-policy", "a kube-injected CronJob stored before the policy: each Job is fixed at Job CREATE", mode(NATIVE),
            vec![Step::Stored(injected_cronjob()), run(Ends(NATIVE)), run(Ends(NATIVE))]),
        case("kube-injected-cronjob-stored-before-policy-quit", "the same under quitEndpoint", mode(QUIT),
            vec![Step::Stored(injected_cronjob()), run(Ends(QUIT))]),
        case("kube-injected-job-reinjected", "a kube-injected Job moved to native: Istio's re-injection, mesh flag off, keeps it native", mode(NATIVE),
            vec![Step::Create(injected_job()), run(Ends(NATIVE))]),
        case("kube-injected-native-job-reinjected", "a Job kube-injected natively, the mesh flag off: the annotation keeps Istio's re-injection native", mode(NATIVE),
            vec![Step::Create(yaml(INJECTED_NATIVE_JOB)), run(Ends(NATIVE))]),
        case("kube-injected-native-job-quit", "quitEndpoint beside a natively kube-injected proxy: Istio's re-injection renders it classic with the mesh flag off, the wrapper ends it", mode(QUIT),
            vec![Step::Create(yaml(INJECTED_NATIVE_JOB)), run(Ends(QUIT))]),
        case("kube-injected-cronjob-injection-off-quit", "an older kube-injected CronJob whose template says inject \"false\": its Pods carry the proxy but no status, and keep the wrapper", mode(QUIT),
            vec![Step::Create(labelled(injected_cronjob(), "template", names::INJECT, "false")), run(Ends(QUIT))]),
        case("kube-injected-job-native-false", "a kube-injected Job whose template says sidecar.istio.io/nativeSidecar: \"false\": the user's word stands", mode(NATIVE),
            vec![Step::Create(annotated(injected_job(), "template", names::NATIVE, "false")), run(UNTOUCHED)]),
        // Injection off, read as Istio reads it.
        case("injection-label-false", "a template labelled sidecar.istio.io/inject: \"false\": never injected, never wrapped", mode(QUIT),
            vec![Step::Create(labelled(job(), "template", names::INJECT, "false")), run(UNTOUCHED)]),
        case("injection-annotation-false", "the legacy annotation \"false\" without the label", mode(QUIT),
            vec![Step::Create(annotated(job(), "template", names::INJECT, "false")), run(UNTOUCHED)]),
        case("injection-empty-label-beats-annotation", "an empty label wins over the annotation \"false\": Istio injects, so the app is wrapped", mode(QUIT),
            vec![Step::Create(annotated(labelled(job(), "template", names::INJECT, ""), "template", names::INJECT, "false")), run(Ends(QUIT))]),
        case("injection-label-capital-false", "the label \"False\" is no exact \"false\": Istio >= 1.27 injects (1.24-1.26 do not, and the wrapper finds no proxy to quit)", mode(QUIT),
            vec![Step::Create(labelled(job(), "template", names::INJECT, "False")), run(Ends(QUIT))]),
        case("injection-annotation-no", "the annotation \"no\" is no exact \"false\": Istio >= 1.27 injects (1.24-1.26 do not)", mode(QUIT),
            vec![Step::Create(annotated(job(), "template", names::INJECT, "no")), run(Ends(QUIT))]),
        case("host-network-job", "a hostNetwork Job: Istio never injects it, so it is never wrapped", mode(QUIT),
            vec![Step::Create({ let mut j = job(); j["spec"]["template"]["spec"]["hostNetwork"] = json!(true); j }), run(UNTOUCHED)]),
        // Istio's re-injection merges onto the Pod as it came: a proxy
        // injected natively, rendered classic again, would be there twice.
        case("kube-injected-native-job-stored-before-policy", "a Job kube-injected natively, stored before the policy: each Pod keeps one, native, proxy whichever webhook runs first", mode(NATIVE),
            vec![Step::Stored(yaml(INJECTED_NATIVE_JOB)), run(Ends(NATIVE))]),
        case("kube-injected-native-job-stored-before-policy-quit", "the same under quitEndpoint", mode(QUIT),
            vec![Step::Stored(yaml(INJECTED_NATIVE_JOB)), run(Ends(QUIT))]),
        case("kube-injected-native-job-exit", "exitOnJobCompletion beside a natively kube-injected proxy: it stays native", mode(EXIT),
            vec![Step::Create(yaml(INJECTED_NATIVE_JOB)), run(Ends(EXIT))]),
        // Istio 1.24-1.26 render native only for the exact "true".
        case("job-native-annotation-capital-true", "a Job whose template says sidecar.istio.io/nativeSidecar: \"True\": made the exact \"true\" every release reads as native", mode(NATIVE),
            vec![Step::Create(annotated(job(), "template", names::NATIVE, "True")), run(Ends(NATIVE))]),
        case("cronjob-native-annotation-yes-then-quit", "a CronJob whose template says \"yes\", made \"true\" under nativeSidecar, then moved to quitEndpoint: the user's \"yes\" comes back", mode(NATIVE),
            vec![Step::Create(annotated(cronjob(), "template", names::NATIVE, "yes")), run(Ends(NATIVE)),
                 Step::Update(Edit::Annotate(MODE, Some(QUIT))), run(Ends(QUIT))]),
        // The native form's order of init containers.
        case("kube-injected-job-own-init-container", "a kube-injected Job with an init container of its own: moved, the proxy goes before it, as Istio's native form has it", mode(NATIVE),
            vec![Step::Create(injected_job_with_init()), run(Ends(NATIVE))]),
        case("kube-injected-indexed-job-native", "an Indexed kube-injected Job: its Pods' moved proxy gets the completion index too", mode(NATIVE),
            vec![Step::Create({ let mut j = injected_job(); j["spec"]["completionMode"] = json!("Indexed"); j["spec"]["completions"] = json!(2); j }), run(Ends(NATIVE))]),
        // GitOps: re-applying a kube-injected CronJob whose proxy was moved.
        case("gitops-kubectl-apply-kube-injected-cronjob", "a kube-injected CronJob created and re-applied with kubectl apply: the classic proxy it brings back meets the moved one, and the apply lands", mode(NATIVE),
            vec![Step::Create(created_by_kubectl_apply(&injected_cronjob())), run(Ends(NATIVE)),
                 Step::Update(Edit::KubectlApply(injected_cronjob())), run(Ends(NATIVE)),
                 Step::Update(Edit::KubectlApply(injected_cronjob())), run(Ends(NATIVE))]),
        case("gitops-server-side-apply-kube-injected-cronjob", "the same with a server-side apply", mode(NATIVE),
            vec![Step::Create(injected_cronjob()), run(Ends(NATIVE)),
                 Step::Update(Edit::Apply(injected_cronjob())), run(Ends(NATIVE)),
                 Step::Update(Edit::Apply(injected_cronjob())), run(Ends(NATIVE))]),
        case("gitops-kubectl-apply-kube-injected-cronjob-then-quit", "a moved kube-injected CronJob re-applied as the cluster moves to quitEndpoint: the moved proxy goes, the app is wrapped", mode(NATIVE),
            vec![Step::Create(created_by_kubectl_apply(&injected_cronjob())), run(Ends(NATIVE)), Step::Settings(mode(QUIT)),
                 Step::Update(Edit::KubectlApply(injected_cronjob())), run(Ends(QUIT))]),
        case("gitops-server-side-apply-kube-injected-cronjob-disabled", "a moved kube-injected CronJob re-applied with the workload disabled in Git: the moved proxy goes", mode(NATIVE),
            vec![Step::Create(injected_cronjob()), run(Ends(NATIVE)),
                 Step::Update(Edit::Apply(annotated(injected_cronjob(), "object", MODE, "disabled"))), run(UNTOUCHED)]),
        // GitOps: a server-side apply after a change of mode.
        case("gitops-reapply-after-quit-to-native", "a CronJob wrapped under quitEndpoint, the cluster moved to nativeSidecar, then re-applied by a tool that owns command", mode(QUIT),
            vec![Step::Create(cronjob()), run(Ends(QUIT)), Step::Settings(mode(NATIVE)),
                 Step::Update(Edit::Apply(cronjob())), run(Ends(NATIVE)),
                 Step::Update(Edit::Apply(cronjob())), run(Ends(NATIVE))]),
        case("gitops-reapply-same-mode", "a wrapped CronJob re-applied under the same mode is wrapped again", mode(QUIT),
            vec![Step::Create(cronjob()), Step::Update(Edit::Apply(cronjob())), run(Ends(QUIT))]),
        // Changes of mode.
        case("cluster-quit-to-native", "the cluster moves from quitEndpoint to nativeSidecar: a CronJob's new Jobs follow before and after its next update", mode(QUIT),
            vec![Step::Create(cronjob()), run(Ends(QUIT)), Step::Settings(mode(NATIVE)), run(Ends(NATIVE)),
                 Step::Update(Edit::Annotate("team", Some("reports"))), run(Ends(NATIVE))]),
        case("cluster-native-to-quit-kube-injected", "a kube-injected CronJob moved to native, then the cluster moves to quitEndpoint: the proxy goes back and the app is wrapped", mode(NATIVE),
            vec![Step::Create(injected_cronjob()), run(Ends(NATIVE)), Step::Settings(mode(QUIT)),
                 Step::Update(Edit::Annotate("team", Some("reports"))), run(Ends(QUIT))]),
        case("disabled-after-quit", "a wrapped CronJob disabled later: its edit is taken back", mode(QUIT),
            vec![Step::Create(cronjob()), run(Ends(QUIT)), Step::Update(Edit::Annotate(MODE, Some("disabled"))), run(UNTOUCHED)]),
        case("job-before-mode-change", "a Job created under quitEndpoint keeps its template; its new Pods get nativeSidecar at Pod CREATE", mode(QUIT),
            vec![Step::Create(job()), run(Ends(QUIT)), Step::Settings(mode(NATIVE)), run(Ends(NATIVE)),
                 Step::Update(Edit::Annotate(MODE, Some("disabled"))), run(Ends(NATIVE))]),
    ];
    let mut flag_on = case(
        "cronjob-native-flag-on",
        "nativeSidecar where istiod injects natively anyway",
        mode(NATIVE),
        vec![Step::Create(cronjob()), run(Ends(NATIVE))],
    );
    flag_on.mesh = ON;
    let mut cni = case(
        "kube-injected-job-cni-flag-on",
        "a kube-injected Job, mesh flag on, with the Istio CNI plugin",
        mode(NATIVE),
        vec![Step::Create(injected_job()), run(Ends(NATIVE))],
    );
    cni.mesh = Mesh {
        native_flag: true,
        cni: true,
        ..OFF
    };
    let mut no_injector = case(
        "kube-injected-cronjob-no-injector",
        "a kube-injected CronJob stored before the policy, in a namespace without Istio's injector",
        mode(NATIVE),
        vec![Step::Stored(injected_cronjob()), run(Ends(NATIVE))],
    );
    no_injector.namespace = Namespace::Unlabelled;
    let mut labelled_pods = case(
        "injection-label-true-unlabelled-namespace",
        "a Job whose template asks for injection in a namespace without the istio-injection label",
        mode(QUIT),
        vec![
            Step::Create(labelled(job(), "template", names::INJECT, "true")),
            run(Ends(QUIT)),
        ],
    );
    labelled_pods.namespace = Namespace::Unlabelled;
    // Istio's revision webhooks inject a Pod labelled istio.io/rev there;
    // quit-endpoint-labelled-pods.yaml selects it.
    let mut revision = case(
        "revision-label-unlabelled-namespace",
        "a Job whose template picks an Istio revision (istio.io/rev) in a namespace without labels",
        mode(QUIT),
        vec![
            Step::Create(labelled(job(), "template", "istio.io/rev", "canary")),
            run(Ends(QUIT)),
        ],
    );
    revision.namespace = Namespace::Unlabelled;
    let mut not_selected = case(
        "quit-namespace-not-selected",
        "quitEndpoint's namespaceSelector leaves out a namespace Istio never injects",
        mode(QUIT),
        vec![Step::Create(job()), run(UNTOUCHED)],
    );
    not_selected.namespace = Namespace::Unlabelled;
    not_selected.selected = false;
    // Istio never injects these namespaces, whatever their labels say.
    let mut system = case(
        "kube-system-job-quit",
        "a Job in kube-system under quitEndpoint: Istio never injects there, so it is never wrapped",
        mode(QUIT),
        vec![Step::Create(job()), run(UNTOUCHED)],
    );
    system.namespace_name = "kube-system";
    // Every namespace of Istio's list, and none other: a Job in one the
    // policy wrongly skipped would hang, one it wrongly edited would be
    // wrapped for a proxy that never comes.
    let mut istio_system = case(
        "istio-system-job-quit",
        "a Job in istio-system, which Istio's injector does not skip: wrapped",
        mode(QUIT),
        vec![Step::Create(job()), run(Ends(QUIT))],
    );
    istio_system.namespace_name = "istio-system";
    let mut local_path = case(
        "local-path-storage-job-quit",
        "a Job in local-path-storage, which Istio's injector never injects: never wrapped",
        mode(QUIT),
        vec![Step::Create(job()), run(UNTOUCHED)],
    );
    local_path.namespace_name = "local-path-storage";
    let mut system_injected = case(
        "kube-system-kube-injected-job",
        "a kube-injected Job in kube-system carries its proxy anyway: moved to native",
        mode(NATIVE),
        vec![Step::Create(injected_job()), run(Ends(NATIVE))],
    );
    system_injected.namespace_name = "kube-system";
    let pod_always = case(
        "pod-always-untouched",
        "a Pod that runs forever is none of the policy's business",
        mode(QUIT),
        vec![
            Step::Create({
                let mut p = pod();
                p["spec"]["restartPolicy"] = json!("Always");
                p
            }),
            run(UNTOUCHED),
        ],
    );
    // holdApplicationUntilProxyStarts: Istio puts a classic proxy first
    // and has it wait; a proxy moved to native and back returns there.
    let quit_and_back = |create: Value| {
        vec![
            Step::Create(create),
            run(Ends(NATIVE)),
            Step::Settings(mode(QUIT)),
            Step::Update(Edit::Annotate("team", Some("reports"))),
            run(Ends(QUIT)),
            Step::Settings(mode(NATIVE)),
            Step::Update(Edit::Annotate("team", Some("billing"))),
            run(Ends(NATIVE)),
        ]
    };
    let held_cronjob = case(
        "cronjob-hold-native-quit-native",
        "a CronJob whose pod template holds the application until the proxy starts: nativeSidecar, quitEndpoint, then nativeSidecar again",
        mode(NATIVE),
        quit_and_back(held(cronjob())),
    );
    let held_injected = case(
        "kube-injected-cronjob-hold-native-quit-native",
        "a CronJob kube-injected with hold (the proxy first, waiting): moved to native, put back first for quitEndpoint, moved again",
        mode(NATIVE),
        quit_and_back(kube_injected(held(cronjob()), OFF)),
    );
    // exitOnJobCompletion merged into a config of the workload's own: the
    // hold it asks for stays, so Istio still starts the proxy first.
    let held_exit = case(
        "job-hold-exit",
        "a Job whose pod template holds the application until the proxy starts, under exitOnJobCompletion: the key joins the config, the hold stays",
        mode(EXIT),
        vec![Step::Create(held(job())), run(Ends(EXIT))],
    );
    let mut held_no_injector = case(
        "kube-injected-cronjob-hold-no-injector",
        "the same where Istio's injector is not called: each Pod runs the policy's order of containers as it is",
        mode(NATIVE),
        quit_and_back(kube_injected(held(cronjob()), OFF)),
    );
    held_no_injector.namespace = Namespace::Unlabelled;
    let mesh_hold = Mesh {
        hold_application: true,
        ..OFF
    };
    let mut held_by_mesh = case(
        "kube-injected-cronjob-mesh-hold-native-quit-native",
        "a mesh that holds every application until its proxy starts: a kube-injected CronJob through nativeSidecar, quitEndpoint and back",
        mode(NATIVE),
        quit_and_back(kube_injected(cronjob(), mesh_hold)),
    );
    held_by_mesh.mesh = mesh_hold;
    // The Pod's own status port: where pilot-agent listens, so where the
    // wrapper POSTs and the native proxy drains.
    let ported = case(
        "cronjob-status-port-quit-native-quit",
        "a CronJob whose pod template sets status.sidecar.istio.io/port: quitEndpoint, nativeSidecar, then quitEndpoint again",
        mode(QUIT),
        vec![
            Step::Create(status_port(cronjob(), "15120")),
            run(Ends(QUIT)),
            Step::Settings(mode(NATIVE)),
            Step::Update(Edit::Annotate("team", Some("reports"))),
            run(Ends(NATIVE)),
            Step::Settings(mode(QUIT)),
            Step::Update(Edit::Annotate("team", Some("billing"))),
            run(Ends(QUIT)),
        ],
    );
    let ported_injected = case(
        "kube-injected-cronjob-status-port-native-quit-native",
        "a CronJob kube-injected with its own status port: the moved proxy drains through it, the wrapper POSTs to it",
        mode(NATIVE),
        quit_and_back(kube_injected(status_port(cronjob(), "15120"), OFF)),
    );
    let mut ported_no_injector = case(
        "kube-injected-cronjob-status-port-no-injector",
        "the same where Istio's injector is not called",
        mode(NATIVE),
        quit_and_back(kube_injected(status_port(cronjob(), "15120"), OFF)),
    );
    ported_no_injector.namespace = Namespace::Unlabelled;
    let ported_held = case(
        "kube-injected-cronjob-hold-status-port-quit",
        "hold and a status port of its own together, under quitEndpoint then nativeSidecar",
        mode(QUIT),
        vec![
            Step::Create(kube_injected(status_port(held(cronjob()), "15121"), OFF)),
            run(Ends(QUIT)),
            Step::Settings(mode(NATIVE)),
            Step::Update(Edit::Annotate("team", Some("reports"))),
            run(Ends(NATIVE)),
        ],
    );
    // hostNetwork: Istio checks it before anything else, the namespace
    // included.
    let host_cronjob = case(
        "host-network-cronjob-quit-native",
        "a hostNetwork CronJob: never injected, so neither wrapped nor moved, whatever the mode",
        mode(QUIT),
        vec![
            Step::Create(host_network(cronjob())),
            run(UNTOUCHED),
            Step::Settings(mode(NATIVE)),
            Step::Update(Edit::Annotate("team", Some("reports"))),
            run(UNTOUCHED),
        ],
    );
    let mut host_system = case(
        "host-network-kube-system-job",
        "a hostNetwork Job in kube-system, labelled for injection: never injected",
        mode(QUIT),
        vec![
            Step::Create(labelled(
                host_network(job()),
                "template",
                names::INJECT,
                "true",
            )),
            run(UNTOUCHED),
        ],
    );
    host_system.namespace_name = "kube-system";
    cases.extend(custom_templates());
    cases.extend([
        held_cronjob,
        held_injected,
        held_exit,
        held_no_injector,
        held_by_mesh,
        ported,
        ported_injected,
        ported_no_injector,
        ported_held,
        host_cronjob,
        host_system,
    ]);
    cases.extend([
        istio_system,
        local_path,
        flag_on,
        cni,
        no_injector,
        labelled_pods,
        revision,
        not_selected,
        system,
        system_injected,
        pod_always,
    ]);
    cases
}

/// Istio's custom injection templates (kube-model's `istio`: `sidecar`, a
/// `custom` template patching `istio-proxy`, `grpc-agent`). Wherever
/// `inject.istio.io/templates` names another template than `sidecar`,
/// nativeSidecar neither asks for the native form nor moves, and
/// `fallbackMode` applies; Istio's native rendering of `sidecar,custom`
/// (the mesh flag on, or the Pod's own `"true"`) is a Pod the API server
/// refuses, which the policy resolves where it sees it (Istio first) and
/// which is refused alike where Istio injects after it.
fn custom_templates() -> Vec<Journey> {
    use Expect::EndsOrRefusedAlike as ENDS_OR_REFUSED;
    let custom = || templated(cronjob(), "sidecar,custom");
    let mut cases = vec![
        case("cronjob-custom-template-native", "a CronJob whose pods add a custom template to sidecar, under nativeSidecar without fallbackMode: nothing applied, the proxy where Istio renders it", mode(NATIVE),
            vec![Step::Create(custom()), run(UNTOUCHED), run(UNTOUCHED)]),
        case("cronjob-custom-template-fallback-quit-exit-quit", "the same with fallbackMode quitEndpoint, then the cluster moves to exitOnJobCompletion and back", native_else(QUIT),
            vec![Step::Create(custom()), run(ENDS_OR_REFUSED(QUIT)),
                 Step::Settings(mode(EXIT)), Step::Update(Edit::Annotate("team", Some("reports"))), run(ENDS_OR_REFUSED(EXIT)),
                 Step::Settings(native_else(QUIT)), Step::Update(Edit::Annotate("team", Some("billing"))), run(ENDS_OR_REFUSED(QUIT))]),
        case("job-custom-template-fallback-exit", "a Job with sidecar,custom under nativeSidecar, fallbackMode exitOnJobCompletion", native_else(EXIT),
            vec![Step::Create(templated(job(), "sidecar,custom")), run(ENDS_OR_REFUSED(EXIT))]),
        case("cronjob-custom-template-annotated-native-after-quit", "a CronJob with sidecar,custom admitted under quitEndpoint, then annotated nativeSidecar with the cluster's fallbackMode quitEndpoint: it stays wrapped", json!({"mode": QUIT, "fallbackMode": QUIT}),
            vec![Step::Create(custom()), run(ENDS_OR_REFUSED(QUIT)),
                 Step::Update(Edit::Annotate(MODE, Some(NATIVE))), run(ENDS_OR_REFUSED(QUIT))]),
        case("cronjob-custom-template-first-native", "a CronJob whose pods name the custom template before sidecar: rendered native, Istio moves the partial proxy and merges the native one into it, a valid Pod; nativeSidecar still applies nothing", mode(NATIVE),
            vec![Step::Create(templated(cronjob(), "custom,sidecar")), run(UNTOUCHED)]),
        case("job-custom-template-native-true-fallback-quit", "a Job with sidecar,custom whose template asks for the native form itself: Istio always renders the partial proxy, refused unless the policy sees it after Istio; fallbackMode quitEndpoint", native_else(QUIT),
            vec![Step::Create(annotated(custom_job(), "template", names::NATIVE, "true")), run(ENDS_OR_REFUSED(QUIT))]),
        case("job-grpc-agent-fallback-quit", "a Job injected with grpc-agent, which has no native form: fallbackMode quitEndpoint wraps the app", native_else(QUIT),
            vec![Step::Create(templated(job(), "grpc-agent")), run(Ends(QUIT))]),
        case("job-grpc-agent-native", "the same without fallbackMode: nothing applied", mode(NATIVE),
            vec![Step::Create(templated(job(), "grpc-agent")), run(UNTOUCHED)]),
        // kube-injected with the custom template: classic, the custom
        // patch merged into the proxy; native, the partial proxy beside it.
        case("kube-injected-custom-template-classic-job", "a Job kube-injected with sidecar,custom in classic form, under nativeSidecar: not moved", mode(NATIVE),
            vec![Step::Create(kube_injected(custom_job(), OFF)), run(UNTOUCHED)]),
        case("kube-injected-custom-template-classic-job-fallback-quit", "the same with fallbackMode quitEndpoint: the app wrapped beside the classic proxy", native_else(QUIT),
            vec![Step::Create(kube_injected(custom_job(), OFF)), run(ENDS_OR_REFUSED(QUIT))]),
    ];
    let mut partial = case(
        "kube-injected-custom-template-partial-proxy-no-injector",
        "a Job kube-injected natively with sidecar,custom carries the partial proxy beside the native one: resolved at Job CREATE, its Pods run the native proxy",
        mode(NATIVE),
        vec![Step::Create(kube_injected(custom_job(), ON)), run(Ends(NATIVE))],
    );
    partial.namespace = Namespace::Unlabelled;
    cases.push(partial);
    cases
}

fn custom_job() -> Value {
    templated(job(), "sidecar,custom")
}
