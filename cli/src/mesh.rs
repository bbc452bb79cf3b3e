//! What `scan` says of the three ways out (docs/alternatives.md): whether
//! Istio injects native sidecars by itself (istiod's `ENABLE_NATIVE_SIDECARS`
//! and release, read off its Deployment, against the Nodes' kubelets: the
//! rule of Istio's `DetectNativeSidecar`), and whether a
//! MutatingAdmissionPolicy already asks for them.

use istio_job_sidecar_policy::native_gate::{minor, MIN_KUBELET_MINOR};
use serde_json::Value;

use crate::nodes::NodeSeen;

/// The annotation a MutatingAdmissionPolicy would write to ask for native.
const NATIVE: &str = "sidecar.istio.io/nativeSidecar";
/// The first Istio release whose `ENABLE_NATIVE_SIDECARS` defaults to `auto`.
const AUTO_FROM: u64 = 27;
/// Kubelets run native sidecars by default from 1.29.
const NATIVE_KUBELET_MINOR: u64 = 29;

/// An istiod Deployment of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Istiod {
    pub name: String,
    /// The minor release of its image tag (`pilot:1.31.1` is 31).
    pub release: Option<u64>,
    /// Its `discovery` container's `ENABLE_NATIVE_SIDECARS`, when set.
    pub flag: Option<String>,
}

impl Istiod {
    /// An istiod Deployment (`apps/v1`, named `istiod` or `istiod-<revision>`).
    pub fn of(object: &Value) -> Option<Istiod> {
        let name = object["metadata"]["name"].as_str()?;
        if name != "istiod" && !name.starts_with("istiod-") {
            return None;
        }
        let containers = object["spec"]["template"]["spec"]["containers"].as_array()?;
        let discovery = containers
            .iter()
            .find(|c| c["name"] == "discovery")
            .or(containers.first())?;
        let release = discovery["image"]
            .as_str()
            .and_then(|image| image.rsplit_once(':'))
            .and_then(|(_, tag)| minor(tag));
        let flag = discovery["env"].as_array().and_then(|env| {
            env.iter()
                .find(|e| e["name"] == "ENABLE_NATIVE_SIDECARS")
                .and_then(|e| e["value"].as_str())
                .map(str::to_owned)
        });
        Some(Istiod {
            name: name.to_owned(),
            release,
            flag,
        })
    }
}

/// A MutatingAdmissionPolicy of the input, and whether its text names the
/// native annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionPolicySeen {
    pub name: String,
    pub asks_native: bool,
}

impl AdmissionPolicySeen {
    pub fn of(object: &Value) -> AdmissionPolicySeen {
        AdmissionPolicySeen {
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or("(no name)")
                .to_owned(),
            asks_native: object["spec"].to_string().contains(NATIVE),
        }
    }
}

/// The lines `scan` prints of the mesh, the kubelets and the
/// MutatingAdmissionPolicies it read; none when it read none of them.
pub fn notes(
    istiods: &[Istiod],
    nodes: &[NodeSeen],
    policies: &[AdmissionPolicySeen],
) -> Vec<String> {
    let mut notes = Vec::new();
    let kubelet_minors: Vec<Option<u64>> = nodes
        .iter()
        .map(|n| n.kubelet_version.as_deref().and_then(minor))
        .collect();
    let all_from = |least: u64| {
        !kubelet_minors.is_empty() && kubelet_minors.iter().all(|m| m.is_some_and(|m| m >= least))
    };
    let oldest = kubelet_minors.iter().flatten().min();
    for istiod in istiods {
        let release = istiod
            .release
            .map_or("release unknown".to_owned(), |r| format!("1.{r}"));
        let flag = match (istiod.flag.as_deref(), istiod.release) {
            (Some(flag), _) => flag.to_owned(),
            (None, Some(r)) if r >= AUTO_FROM => "auto".to_owned(),
            (None, Some(_)) => "false".to_owned(),
            (None, None) => "unknown".to_owned(),
        };
        let verdict = match flag.as_str() {
            "true" if all_from(NATIVE_KUBELET_MINOR) => {
                "native for every Pod it injects: Istio alone is enough".to_owned()
            }
            "true" => "native for every Pod, but a kubelet runs no native sidecars: \
                       Jobs there hang at Init"
                .to_owned(),
            "auto" if all_from(MIN_KUBELET_MINOR) => {
                format!("native, every kubelet is 1.{MIN_KUBELET_MINOR}+: Istio alone is enough")
            }
            "auto" if nodes.is_empty() => {
                format!("native only if every kubelet is 1.{MIN_KUBELET_MINOR}+ (no Nodes read)")
            }
            "auto" => format!(
                "classic: a kubelet is older than 1.{MIN_KUBELET_MINOR} (oldest 1.{}): Istio alone is not enough",
                oldest.map_or("?".to_owned(), u64::to_string)
            ),
            _ => "classic: Istio alone is not enough".to_owned(),
        };
        notes.push(format!(
            "mesh: {} ({release}), ENABLE_NATIVE_SIDECARS {flag}: {verdict}",
            istiod.name
        ));
    }
    let asking: Vec<&str> = policies
        .iter()
        .filter(|p| p.asks_native)
        .map(|p| p.name.as_str())
        .collect();
    if !asking.is_empty() {
        notes.push(format!(
            "MutatingAdmissionPolicy {} writes {NATIVE}: do not run nativeSidecar on the same workloads",
            asking.join(", ")
        ));
    } else if !policies.is_empty() {
        notes.push(format!(
            "{} MutatingAdmissionPolicies, none writes {NATIVE}",
            policies.len()
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn istiod(image: &str, env: Value) -> Istiod {
        Istiod::of(
            &json!({"metadata": {"name": "istiod"}, "spec": {"template": {"spec": {"containers": [
            {"name": "discovery", "image": image, "env": env}]}}}}),
        )
        .unwrap()
    }

    fn nodes(versions: &[&str]) -> Vec<NodeSeen> {
        versions
            .iter()
            .map(|v| NodeSeen {
                name: "n".into(),
                kubelet_version: Some((*v).into()),
            })
            .collect()
    }

    #[test]
    fn istio_alone_as_detect_native_sidecar_decides() {
        let auto = istiod("docker.io/istio/pilot:1.31.1", json!([]));
        assert_eq!(auto.release, Some(31));
        assert_eq!(auto.flag, None);
        let said =
            |i: &Istiod, n: &[&str]| notes(std::slice::from_ref(i), &nodes(n), &[]).join("\n");
        assert!(said(&auto, &["v1.33.1", "v1.36.0"]).contains("Istio alone is enough"));
        assert!(said(&auto, &["v1.33.1", "v1.32.9"]).contains("oldest 1.32"));
        assert!(said(&auto, &[]).contains("no Nodes read"));
        let old = istiod("istio/pilot:1.26.4", json!([]));
        assert!(said(&old, &["v1.36.0"]).contains("ENABLE_NATIVE_SIDECARS false: classic"));
        let off = istiod(
            "istio/pilot:1.31.1",
            json!([{"name": "ENABLE_NATIVE_SIDECARS", "value": "false"}]),
        );
        assert!(said(&off, &["v1.36.0"]).contains("Istio alone is not enough"));
        let on = istiod(
            "istio/pilot:1.25.0",
            json!([{"name": "ENABLE_NATIVE_SIDECARS", "value": "true"}]),
        );
        assert!(said(&on, &["v1.30.2"]).contains("Istio alone is enough"));
        assert!(said(&on, &["v1.28.2"]).contains("hang at Init"));
    }

    #[test]
    fn other_deployments_are_no_istiod() {
        assert_eq!(
            Istiod::of(&json!({"metadata": {"name": "istio-ingressgateway"}})),
            None
        );
    }
}
