//! The Nodes `scan` reads: a warning for each whose kubelet must not run
//! Istio's native sidecar on a Job's Pod
//! (docs/facts.md, "Kubelets and native sidecars"): a kubelet without native sidecars (before 1.29;
//! 1.28 only behind its feature gate), one Istio does not count as running
//! them (before 1.33, `DetectNativeSidecar`), and the patch releases with a
//! bug on Istio's Pod shape (a proxy with a `startupProbe`), each fixed in
//! the release the fix's own release note names.

use istio_job_sidecar_policy::native_gate::{minor, MIN_KUBELET_MINOR};

/// A kubelet release line with a bug on Istio's native Pod shape, fixed in
/// `fixed` (a patch release of `minor`), and what the bug does.
struct Bug {
    minor: u64,
    /// The first patch release of the line with the fix.
    fixed: u64,
    what: &'static str,
}

/// From the CHANGELOG of each release line (kubernetes/kubernetes
/// `CHANGELOG/CHANGELOG-1.N.md`).
const BUGS: [Bug; 3] = [
    // kubernetes#132826, fixed by #133072 (1.35.0), picked as #134801
    // (1.33.6) and #134800 (1.34.2); the 1.32 pick #134802 was closed
    // unmerged, so no 1.32 release has it.
    Bug {
        minor: 33,
        fixed: 6,
        what: "startup-probe race: a restartPolicy Never Pod's app may never start (kubernetes#133072)",
    },
    Bug {
        minor: 34,
        fixed: 2,
        what: "startup-probe race: a restartPolicy Never Pod's app may never start (kubernetes#133072)",
    },
    // kubernetes#136910, a 1.35.0 regression, fixed by #137146 (1.36.0),
    // picked as #137885 (1.35.4).
    Bug {
        minor: 35,
        fixed: 4,
        what: "after a kubelet restart, crashed containers beside a sidecar never restart (kubernetes#137146)",
    },
];

/// Why a Node whose kubelet reports `version` must not run Istio's native
/// sidecar on a Job's Pod; `None` when nothing is known against it.
pub fn warning(version: &str) -> Option<String> {
    let Some(minor) = minor(version) else {
        return Some(
            "a kubelet version Istio cannot read: it counts as without native sidecars".into(),
        );
    };
    if minor < 29 {
        return Some(format!(
            "kubelet 1.{minor}: no native sidecars (on by default from 1.29): a native proxy never exits"
        ));
    }
    if minor < MIN_KUBELET_MINOR {
        return Some(format!(
            "kubelet 1.{minor}: Istio counts native sidecars from 1.{MIN_KUBELET_MINOR}, and no 1.{minor} release \
             has the startup-probe race fix (kubernetes#133072)"
        ));
    }
    let patch = patch(version)?;
    BUGS.iter()
        .find(|b| b.minor == minor && patch < b.fixed)
        .map(|b| {
            format!(
                "kubelet 1.{minor}.{patch}: {}; fixed in 1.{minor}.{}",
                b.what, b.fixed
            )
        })
}

/// The patch release of a version `minor` reads (0 when it names none).
fn patch(version: &str) -> Option<u64> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let numbers = &v[..v.find(['-', '+']).unwrap_or(v.len())];
    match numbers.split('.').nth(2) {
        None => Some(0),
        Some(p) => p.parse().ok(),
    }
}

/// A Node of the input: its name and its kubelet's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSeen {
    pub name: String,
    pub kubelet_version: Option<String>,
}

impl NodeSeen {
    /// Read from a Node object.
    pub fn of(object: &serde_json::Value) -> NodeSeen {
        NodeSeen {
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or("(no name)")
                .to_owned(),
            kubelet_version: object["status"]["nodeInfo"]["kubeletVersion"]
                .as_str()
                .map(str::to_owned),
        }
    }

    /// The warning line for this Node, if any.
    pub fn warning(&self) -> Option<String> {
        let version = self.kubelet_version.as_deref().unwrap_or("");
        warning(version).map(|why| format!("node {}: {why}", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_release_line_as_its_changelog_says() {
        let warned = |v: &str| warning(v).unwrap_or_default();
        assert!(warned("v1.27.16").contains("no native sidecars"));
        assert!(warned("v1.28.15").contains("no native sidecars"));
        assert!(warned("v1.31.4").contains("from 1.33"));
        assert!(warned("v1.32.12-eks-1").contains("no 1.32 release"));
        assert!(warned("v1.33.5").contains("fixed in 1.33.6"));
        assert_eq!(warning("v1.33.6"), None);
        assert!(warned("v1.34.1+k3s1").contains("fixed in 1.34.2"));
        assert_eq!(warning("v1.34.2"), None);
        assert!(warned("v1.35.0").contains("fixed in 1.35.4"));
        assert!(warned("v1.35.3").contains("kubernetes#137146"));
        assert_eq!(warning("v1.35.4"), None);
        assert_eq!(warning("v1.36.0"), None);
        assert!(warned("garbage").contains("cannot read"));
    }
}
