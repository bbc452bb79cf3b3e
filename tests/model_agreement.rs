//! Where the policy and kube-model's model of Istio and Kubernetes state
//! the same outside fact each in its own words (the names of Istio's
//! annotations and label, the namespaces Istio never injects, where a
//! workload's pod template is), the two must agree. The model is written
//! from upstream's source and shares nothing with the policy on purpose:
//! when one side changes, this fails until the other is checked against
//! upstream, instead of both moving together and every other test staying
//! green.

use istio_job_sidecar_policy::names as policy;
use policy_testkit::istio as model;
use policy_testkit::workload::Kind as ModelKind;

const CHECK: &str = "the policy and kube-model's model of Istio disagree: check both against istio/istio and istio/api, then fix the one that is wrong";

#[test]
fn the_names_of_istios_annotations_and_label_agree() {
    let pairs = [
        (
            "sidecar.istio.io/status",
            policy::ANNOTATION_STATUS,
            model::STATUS,
        ),
        (
            "sidecar.istio.io/nativeSidecar",
            policy::ANNOTATION_NATIVE_SIDECAR,
            model::NATIVE_SIDECAR,
        ),
        (
            "proxy.istio.io/config",
            policy::ANNOTATION_PROXY_CONFIG,
            model::PROXY_CONFIG,
        ),
        (
            "status.sidecar.istio.io/port",
            policy::ANNOTATION_STATUS_PORT,
            model::STATUS_PORT,
        ),
        ("sidecar.istio.io/inject", policy::INJECT, model::INJECT),
        (
            "inject.istio.io/templates",
            policy::ANNOTATION_INJECT_TEMPLATES,
            model::TEMPLATES,
        ),
    ];
    for (what, in_policy, in_model) in pairs {
        assert_eq!(in_policy, in_model, "{what}: {CHECK}");
    }
}

/// `pkg/kube/inject/initializer.go`, `IgnoredNamespaces`: an entry in one
/// list and not the other makes the policy skip a namespace Istio injects
/// (the Job hangs) or edit one Istio never injects.
#[test]
fn the_namespaces_istio_never_injects_agree() {
    let mut in_policy = policy::NEVER_INJECTED_NAMESPACES.to_vec();
    let mut in_model = model::IGNORED_NAMESPACES.to_vec();
    in_policy.sort_unstable();
    in_model.sort_unstable();
    assert_eq!(in_policy, in_model, "{CHECK}");
}

/// The kinds and where their pod template is (k8s.io/api `batch/v1`).
#[test]
fn the_kinds_and_their_pod_templates_agree() {
    for kind in ModelKind::ALL {
        let group = match kind {
            ModelKind::Pod => "",
            _ => "batch",
        };
        let theirs = policy::Kind::from_group_kind(group, kind.as_str())
            .unwrap_or_else(|| panic!("the policy does not handle {group}/{}", kind.as_str()));
        assert_eq!(theirs.as_str(), kind.as_str());
        assert_eq!(
            theirs.template_path(),
            kind.template_path(),
            "{}'s pod template: the policy and kube-model's model of Kubernetes disagree",
            kind.as_str()
        );
    }
    for (group, kind) in [("", "Job"), ("apps", "Deployment"), ("batch", "Pod")] {
        assert_eq!(
            policy::Kind::from_group_kind(group, kind).is_some(),
            ModelKind::from_group_kind(group, kind).is_some(),
            "{group}/{kind}"
        );
    }
}
