//! Where nativeSidecar is asked for but the Pod could not run it: the
//! policy then neither asks Istio for the native form nor moves a proxy,
//! says why, and applies `fallbackMode` instead (nothing without one).
//!
//! - Custom injection templates
//!   (docs/facts.md, "Custom injection templates"): a Pod whose `inject.istio.io/templates` names any template
//!   but `sidecar`. Istio applies the templates in turn and moves only a
//!   proxy the original Pod had in `containers`, so a second template that
//!   patches `containers[name=istio-proxy]` adds a partial proxy beside the
//!   native one, and `grpc-agent` renders its agent in `containers` whatever
//!   the Pod asks.
//! - With `nodeVersionCheck`, kubelets without native sidecars
//!   (docs/facts.md, "Kubelets and native sidecars"): the rule of Istio's
//!   `DetectNativeSidecar` (`pkg/kube/inject/webhook.go`), the Pod's own
//!   `spec.nodeName` when it names a Node there is, else every Node, each
//!   kubelet at 1.33 or later. The Nodes come from Kubewarden's host
//!   (`list_resources_all`, a context-aware policy with
//!   `contextAwareResources: Node`), trimmed to the two fields read.

use crate::host;
use crate::json::ShapeError;
use crate::names::ANNOTATION_INJECT_TEMPLATES;
use crate::object::Object;
use crate::settings::{Mode, Settings};
use crate::warning;
use serde_json::Value;

/// The first kubelet minor release Istio counts as running native sidecars
/// (GA in 1.33).
pub const MIN_KUBELET_MINOR: u64 = 33;

/// The host call that lists the Nodes, trimmed by field masks to what is
/// read (a host that knows no masks sends whole Nodes, read all the same).
pub const LIST_NODES: &str = r#"{"api_version":"v1","kind":"Node","label_selector":null,"field_selector":null,"field_masks":["metadata.name","status.nodeInfo.kubeletVersion"]}"#;

/// Why nativeSidecar must not be applied to `object` with `settings`, as
/// the warning's first part; `None` where it may be.
pub fn unsafe_here(object: &mut Object, settings: &Settings) -> Result<Option<String>, ShapeError> {
    if let Some(why) = custom_templates(object)? {
        return Ok(Some(why));
    }
    if !settings.node_version_check {
        return Ok(None);
    }
    let node_name = object
        .spec()?
        .get_mut("nodeName")?
        .map(|n| n.read_string())
        .transpose()?
        .flatten()
        .map(|n| n.into_owned());
    Ok(nodes_without_native(node_name.as_deref()))
}

/// The warning: why, then what was done instead.
pub fn warning(why: &str, settings: &Settings) -> String {
    let then = match settings.fallback_mode {
        Some(Mode::QuitEndpoint) => "used quitEndpoint",
        Some(Mode::ExitOnJobCompletion) => "used exitOnJobCompletion",
        _ => "no mode applied (no fallbackMode)",
    };
    let full = format!("nativeSidecar unsafe: {why}; {then}");
    if warning::fits(&full) {
        full
    } else {
        format!("nativeSidecar unsafe here; {then}")
    }
}

/// The first template `inject.istio.io/templates` names other than
/// `sidecar` (Istio splits the value at commas and trims each name).
fn custom_templates(object: &mut Object) -> Result<Option<String>, ShapeError> {
    let view = object.view()?;
    let Some(value) = view
        .template_annotations()
        .and_then(|a| a.inject_templates.as_deref())
    else {
        return Ok(None);
    };
    // Istio trims each name (strings.TrimSpace); ASCII spaces are the ones
    // a manifest carries, and a name with any other is no `sidecar` either.
    let Some(other) = value
        .split(',')
        .map(|t| t.trim_matches(|c: char| c.is_ascii_whitespace()))
        .find(|t| *t != "sidecar")
    else {
        return Ok(None);
    };
    let named = format!("{ANNOTATION_INJECT_TEMPLATES} names {other:?}");
    Ok(Some(if named.len() <= 60 {
        named
    } else {
        format!("{ANNOTATION_INJECT_TEMPLATES} names a template but sidecar")
    }))
}

/// Why the Nodes that can run the Pod do not all run native sidecars, or
/// `None` when they do.
fn nodes_without_native(node_name: Option<&str>) -> Option<String> {
    let answer = match host::call(
        "kubewarden",
        "kubernetes",
        "list_resources_all",
        LIST_NODES.as_bytes(),
    ) {
        Ok(answer) => answer,
        Err(_) => {
            return Some("the Nodes could not be listed (contextAwareResources: Node?)".into())
        }
    };
    // Read as text, with the one JSON parser the module carries.
    let list: Option<Value> = std::str::from_utf8(&answer)
        .ok()
        .and_then(|text| serde_json::from_str(text).ok());
    let Some(items) = list
        .as_ref()
        .and_then(|l| l.get("items"))
        .and_then(Value::as_array)
    else {
        return Some("the host's Node list could not be read".into());
    };
    let own = node_name.and_then(|name| items.iter().find(|n| name_of(n) == Some(name)));
    let candidates = match own {
        Some(node) => std::slice::from_ref(node),
        None => items.as_slice(),
    };
    let old = candidates
        .iter()
        .find(|n| !version_of(n).is_some_and(runs_native_sidecars))?;
    let name = name_of(old).unwrap_or("?");
    let version = version_of(old).unwrap_or("none");
    let full = format!("node {name} runs kubelet {version} (< 1.{MIN_KUBELET_MINOR})");
    Some(if full.len() <= 70 {
        full
    } else if name.len() <= 45 {
        format!("node {name} runs an older kubelet")
    } else {
        "a node runs an older kubelet".to_owned()
    })
}

/// Whether a kubelet of `version` (a Node's `status.nodeInfo.kubeletVersion`,
/// `v1.33.2`, `v1.33.2-eks-1234`, `v1.34.1+k3s1`) runs native sidecars as
/// Istio counts them: its minor release, the second number, at least 1.33
/// (`DetectNativeSidecar` reads the second segment of hashicorp's
/// go-version; a version it cannot parse counts as too old).
pub fn runs_native_sidecars(version: &str) -> bool {
    minor(version).is_some_and(|m| m >= MIN_KUBELET_MINOR)
}

/// The minor release of a version as go-version reads one: an optional
/// `v`, dot-separated numbers, then nothing or a `-` prerelease or `+`
/// metadata; a missing minor is 0.
pub fn minor(version: &str) -> Option<u64> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let end = v.find(['-', '+']).unwrap_or(v.len());
    if v.len() == end + 1 {
        return None;
    }
    let mut segments = v[..end].split('.');
    let mut minor = 0;
    for (i, segment) in segments.by_ref().enumerate() {
        let mut n: u64 = 0;
        if segment.is_empty() {
            return None;
        }
        for b in segment.bytes() {
            let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
            n = n.checked_mul(10)?.checked_add(u64::from(digit))?;
        }
        if i == 1 {
            minor = n;
        }
    }
    Some(minor)
}

/// The Node list a test host answers with: `(name, kubeletVersion)` each,
/// as Kubewarden's host gives it, trimmed to the masked fields.
pub fn node_list(nodes: &[(&str, &str)]) -> Vec<u8> {
    let items: Vec<serde_json::Value> = nodes
        .iter()
        .map(|(name, version)| {
            serde_json::json!({"metadata": {"name": name}, "status": {"nodeInfo": {"kubeletVersion": version}}})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .unwrap_or_default()
}

fn name_of(node: &Value) -> Option<&str> {
    node.get("metadata")?.get("name")?.as_str()
}

fn version_of(node: &Value) -> Option<&str> {
    node.get("status")?
        .get("nodeInfo")?
        .get("kubeletVersion")?
        .as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("v1.33.0", Some(33))]
    #[case("v1.32.9", Some(32))]
    #[case("1.34.1", Some(34))]
    #[case("v1.33.2-eks-113cf36", Some(33))]
    #[case("v1.34.1+k3s1", Some(34))]
    #[case("v1.29", Some(29))]
    #[case("v1", Some(0))]
    #[case("", None)]
    #[case("v", None)]
    #[case("vx.33", None)]
    #[case("v1.x", None)]
    #[case("v1.33.", None)]
    #[case("v1.33-", None)]
    #[case("v1..33", None)]
    #[case("v1.99999999999999999999999", None)]
    fn reads_the_minor_as_go_version_does(#[case] version: &str, #[case] expected: Option<u64>) {
        assert_eq!(minor(version), expected);
    }

    #[rstest]
    #[case("v1.33.0", true)]
    #[case("v1.35.4", true)]
    #[case("v1.32.12", false)]
    #[case("v1.28.15", false)]
    #[case("garbage", false)]
    fn native_from_1_33(#[case] version: &str, #[case] native: bool) {
        assert_eq!(runs_native_sidecars(version), native);
    }
}
