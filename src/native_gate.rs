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
//!   the Pod asks. The policy takes `sidecar` for Istio's stock template,
//!   which it cannot check: the injector's configuration, which the Pod
//!   does not show, may replace that template or make `sidecar` an alias
//!   of others (`Config.Aliases`, e.g. `sidecar: [proxy, init]`,
//!   `resolveAliases` in `pkg/kube/inject/inject.go`), so `sidecar` alone
//!   is no proof of the stock template.
//! - With `nodeVersionCheck`, kubelets without native sidecars
//!   (docs/facts.md, "Kubelets and native sidecars"): the rule of Istio's
//!   `DetectNativeSidecar` (`pkg/kube/inject/webhook.go`), the Pod's own
//!   `spec.nodeName` when it names a Node there is, else every Node, each
//!   kubelet at 1.33 or later. The Nodes come from Kubewarden's host
//!   (`list_resources_all`, a context-aware policy with
//!   `contextAwareResources: Node`), which does not send only the two
//!   fields read: policy-server 1.31-1.32 ignore the field masks and send
//!   whole Nodes, 1.33 and later prune each Node's other fields to the masks
//!   but keep its `metadata` whole (labels, annotations, managedFields). So the list is read into the two fields alone
//!   ([`Kubelets`]), every other member skipped unbuilt, in one pass.

use crate::host;
use crate::json::ShapeError;
use crate::names::ANNOTATION_INJECT_TEMPLATES;
use crate::object::Object;
use crate::settings::{Mode, Settings};
use crate::warning;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

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
    let node_name = node_name(object)?;
    Ok(match kubelets(node_name.as_deref()) {
        Err(why) => Some(why.into()),
        Ok(kubelets) => kubelets.older_than(MIN_KUBELET_MINOR),
    })
}

/// The Pod's own `spec.nodeName`, when it names one.
pub fn node_name(object: &mut Object) -> Result<Option<String>, ShapeError> {
    Ok(object
        .spec()?
        .get_mut("nodeName")?
        .map(|n| n.read_string())
        .transpose()?
        .flatten()
        .map(|n| n.into_owned()))
}

/// The warning: why, then what was done instead.
pub fn warning(why: &str, settings: &Settings) -> String {
    let then = match settings.fallback_mode {
        Some(Mode::QuitEndpoint) => "used quitEndpoint",
        Some(Mode::ExitOnJobCompletion) => "used exitOnJobCompletion",
        _ => "no mode applied (no fallbackMode)",
    };
    unsafe_then(why, then)
}

/// Said to the operator of a Pod whose proxy Istio injected natively before
/// the policy saw it: what no mode can do for it, and what to do.
pub const NATIVE_ALREADY: &str =
    "no fallbackMode changes a native proxy: inject the workload classic, or run it on kubelets 1.33+";

/// The warnings where nativeSidecar is unsafe (`why`) for a Pod whose proxy
/// Istio already injected natively, which no injection follows: the
/// fallback mode would change nothing of how the kubelet runs that proxy
/// (it stays an init container with `restartPolicy: Always`), and the
/// classic form Istio would have rendered cannot be made from it (the
/// injection template renders the two forms apart from what the Pod does
/// not show: with the mesh's `holdApplicationUntilProxyStarts` a classic
/// proxy goes first with a `postStart` hook, the native one never; a
/// native proxy gets a `preStop` drain unless the mesh sets
/// `global.proxy.lifecycle`; and `reorderPod` runs the user's init
/// containers after `istio-init` only in the native form: injection-template.yaml
/// and `pkg/kube/inject/webhook.go`, Istio 1.24-1.30). So no mode is
/// applied to the Pod, and the operator is told.
pub fn native_already_warnings(why: &str) -> [String; 2] {
    [
        unsafe_then(why, "proxy is native"),
        NATIVE_ALREADY.to_owned(),
    ]
}

fn unsafe_then(why: &str, then: &str) -> String {
    let full = format!("nativeSidecar unsafe: {why}; {then}");
    if warning::fits(&full) {
        full
    } else {
        format!("nativeSidecar unsafe here; {then}")
    }
}

/// The first template `inject.istio.io/templates` names other than
/// `sidecar`.
fn custom_templates(object: &mut Object) -> Result<Option<String>, ShapeError> {
    let view = object.view()?;
    let Some(value) = view
        .template_annotations()
        .and_then(|a| a.inject_templates.as_deref())
    else {
        return Ok(None);
    };
    // Istio splits the value at commas and trims each name with Go's
    // `strings.TrimSpace`, which trims what `unicode.IsSpace` calls space:
    // Unicode's White_Space property (Go's `src/unicode/graphic.go`), the
    // set `str::trim` trims (`char::is_whitespace`).
    let Some(other) = value.split(',').map(str::trim).find(|t| *t != "sidecar") else {
        return Ok(None);
    };
    let named = format!("{ANNOTATION_INJECT_TEMPLATES} names {other:?}");
    Ok(Some(if named.len() <= 60 {
        named
    } else {
        format!("{ANNOTATION_INJECT_TEMPLATES} names a template but sidecar")
    }))
}

/// The Nodes' kubelets that may run a Pod, as Istio's `DetectNativeSidecar`
/// picks them: the Pod's own Node when `spec.nodeName` names a Node there
/// is, else every Node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kubelets {
    /// The oldest of them (a version go-version cannot read counts as the
    /// oldest; the first in the list among equals), `None` for no Node.
    pub oldest: Option<Kubelet>,
    /// The newest minor release among them that could be read.
    pub newest: Option<u64>,
    /// Whether a version among them could not be read.
    pub unreadable: bool,
}

/// One Node's kubelet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kubelet {
    pub node: String,
    pub version: String,
    /// Its minor release, as [`minor`] reads it.
    pub minor: Option<u64>,
}

impl Kubelets {
    /// Why one of them is older than `1.<minor>`, or `None` when none is.
    pub fn older_than(&self, minor: u64) -> Option<String> {
        let old = self
            .oldest
            .as_ref()
            .filter(|k| k.minor.is_none_or(|m| m < minor))?;
        let full = format!(
            "node {} runs kubelet {} (< 1.{minor})",
            old.node, old.version
        );
        Some(if full.len() <= 70 {
            full
        } else if old.node.len() <= 45 {
            format!("node {} runs an older kubelet", old.node)
        } else {
            "a node runs an older kubelet".to_owned()
        })
    }

    /// Whether there is at least one, and each one's release is at least
    /// `1.<minor>`.
    pub fn all_from(&self, minor: u64) -> bool {
        self.oldest
            .as_ref()
            .is_some_and(|k| k.minor.is_some_and(|m| m >= minor))
    }

    /// Whether there is at least one, and each one's release is known and
    /// before `1.<minor>`.
    pub fn all_before(&self, minor: u64) -> bool {
        self.oldest.is_some() && !self.unreadable && self.newest.is_some_and(|m| m < minor)
    }

    fn add(&mut self, node: &str, version: &str) {
        let read = minor(version);
        match read {
            Some(m) => self.newest = Some(self.newest.map_or(m, |n| n.max(m))),
            None => self.unreadable = true,
        }
        // None (unreadable) orders before every Some.
        if self.oldest.as_ref().is_none_or(|o| read < o.minor) {
            self.oldest = Some(Kubelet {
                node: node.to_owned(),
                version: version.to_owned(),
                minor: read,
            });
        }
    }
}

/// The kubelets that may run a Pod on `node_name` (its `spec.nodeName`),
/// from the host's Node list; `Err` with why it could not be read.
pub fn kubelets(node_name: Option<&str>) -> Result<Kubelets, &'static str> {
    let answer = host::call(
        "kubewarden",
        "kubernetes",
        "list_resources_all",
        LIST_NODES.as_bytes(),
    )
    .map_err(|_| "the Nodes could not be listed (contextAwareResources: Node?)")?;
    read_kubelets(&answer, node_name).ok_or("the host's Node list could not be read")
}

/// The kubelets of a Node list (`{"items": [Node, ...]}`) that may run a
/// Pod on `node_name`; `None` when it is no such list. One pass over the
/// text: of each Node only `metadata.name` and
/// `status.nodeInfo.kubeletVersion` are kept, borrowed from the text where
/// no escape needs decoding, every other member skipped without being built
/// (`IgnoredAny`); the work is linear in the text, nesting bounded by
/// serde_json's recursion limit.
pub fn read_kubelets(list: &[u8], node_name: Option<&str>) -> Option<Kubelets> {
    // Read as text, with the one JSON reader the module carries (str).
    let text = std::str::from_utf8(list).ok()?;
    let mut reader = serde_json::Deserializer::from_str(text);
    let read = Nodes { node_name }.deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    let read = read?;
    Some(read.own.unwrap_or(read.all))
}

/// The list's reading: every Node's kubelet, and the Pod's own Node's.
struct Read {
    all: Kubelets,
    own: Option<Kubelets>,
}

/// Reads a Node list with its `items`.
struct Nodes<'n> {
    node_name: Option<&'n str>,
}

impl<'de> DeserializeSeed<'de> for Nodes<'_> {
    /// `None` for a list without `items`.
    type Value = Option<Read>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Nodes<'_> {
    type Value = Option<Read>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Node list")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut read = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "items" && read.is_none() {
                read = Some(map.next_value_seed(Items {
                    node_name: self.node_name,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(read)
    }
}

/// Reads `items`, one Node at a time, into what is kept of them.
struct Items<'n> {
    node_name: Option<&'n str>,
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = Read;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of Nodes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Self::Value, A::Error> {
        let mut read = Read {
            all: Kubelets::default(),
            own: None,
        };
        while let Some(node) = items.next_element::<Node<'de>>()? {
            let name = node.metadata.as_ref().and_then(|m| m.name.as_deref());
            let version = node
                .status
                .as_ref()
                .and_then(|s| s.node_info.as_ref())
                .and_then(|i| i.kubelet_version.as_deref());
            let (name, version) = (name.unwrap_or("?"), version.unwrap_or("none"));
            read.all.add(name, version);
            // The first Node of that name, as Istio's lister finds it.
            if read.own.is_none() && self.node_name.is_some_and(|own| own == name) {
                let mut own = Kubelets::default();
                own.add(name, version);
                read.own = Some(own);
            }
        }
        Ok(read)
    }
}

/// What is read of a Node: unknown members are skipped (serde's derive
/// ignores them with `IgnoredAny`), a null reads as absent.
#[derive(Deserialize)]
struct Node<'a> {
    #[serde(borrow)]
    metadata: Option<NodeMeta<'a>>,
    #[serde(borrow)]
    status: Option<NodeStatus<'a>>,
}

#[derive(Deserialize)]
struct NodeMeta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct NodeStatus<'a> {
    #[serde(borrow, rename = "nodeInfo")]
    node_info: Option<NodeInfo<'a>>,
}

#[derive(Deserialize)]
struct NodeInfo<'a> {
    #[serde(borrow, rename = "kubeletVersion")]
    kubelet_version: Option<Cow<'a, str>>,
}

/// Whether a kubelet of `version` (a Node's `status.nodeInfo.kubeletVersion`,
/// `v1.33.2`, `v1.33.2-eks-1234`, `v1.34.1+k3s1`) runs native sidecars as
/// Istio counts them: its minor release, the second number, at least 1.33
/// (`DetectNativeSidecar` reads the second segment of hashicorp's
/// go-version, the major never; a version it cannot parse counts as too
/// old).
pub fn runs_native_sidecars(version: &str) -> bool {
    minor(version).is_some_and(|m| m >= MIN_KUBELET_MINOR)
}

/// The minor release of a version as hashicorp/go-version's `NewVersion`
/// reads one (`version.go`, v1.7.0, which Istio 1.24-1.29 vendor, and
/// v1.9.0, which 1.30 vendors: the same `VersionRegexpRaw`), `None` where
/// it refuses the version. Its regular expression, anchored at both ends:
///
/// ```text
/// v?([0-9]+(\.[0-9]+)*?)
/// (-([0-9]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)|(-?([A-Za-z\-~]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)))?
/// (\+([0-9A-Za-z\-~]+(\.[0-9A-Za-z\-~]+)*))??
/// ```
///
/// Neither the prerelease nor the metadata can begin with a digit or a
/// dot, so the segments are the longest run of dot-separated numbers after
/// the `v`; then a prerelease up to any `+` (its first character a letter,
/// `-` or `~`, then dot-separated non-empty runs of letters, digits, `-`
/// and `~`: the `-` of the first branch is one of those), then `+` and the
/// metadata (dot-separated non-empty runs of the same). Each segment is
/// read by `strconv.ParseInt(s, 10, 64)`, so one past `i64::MAX` is
/// refused; fewer than three segments are padded with zeros, so a missing
/// minor is 0. Digits alone, so never negative.
pub fn minor(version: &str) -> Option<u64> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let end = v
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'.'))
        .unwrap_or(v.len());
    // The numbers end at the last digit: a dot after it starts the rest,
    // which no rest may start with.
    let (numbers, rest) = v.split_at(end);
    let mut minor = 0;
    for (i, segment) in numbers.split('.').enumerate() {
        if segment.is_empty() {
            return None;
        }
        let n: i64 = segment.parse().ok()?;
        let n = u64::try_from(n).ok()?;
        if i == 1 {
            minor = n;
        }
    }
    let (pre, meta) = match rest.split_once('+') {
        Some((pre, meta)) => (pre, Some(meta)),
        None => (rest, None),
    };
    let pre_ok = pre.is_empty()
        || (pre.starts_with(|c: char| c.is_ascii_alphabetic() || c == '-' || c == '~')
            && dotted_runs(pre));
    (pre_ok && meta.is_none_or(dotted_runs)).then_some(minor)
}

/// Dot-separated, non-empty runs of `[0-9A-Za-z\-~]`.
fn dotted_runs(s: &str) -> bool {
    s.split('.').all(|run| {
        !run.is_empty()
            && run
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'~')
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// hashicorp/go-version's own `TestNewVersion` rows (`version_test.go`,
    /// v1.7.0; the same in v1.9.0): whether `NewVersion` refuses it.
    #[rstest]
    #[case("", true)]
    #[case("1.2.3", false)]
    #[case("1.0", false)]
    #[case("1", false)]
    #[case("1.2.beta", true)]
    #[case("1.21.beta", true)]
    #[case("foo", true)]
    #[case("1.2-5", false)]
    #[case("1.2-beta.5", false)]
    #[case("\n1.2", true)]
    #[case("1.2.0-x.Y.0+metadata", false)]
    #[case("1.2.0-x.Y.0+metadata-width-hyphen", false)]
    #[case("1.2.3-rc1-with-hyphen", false)]
    #[case("1.2.3.4", false)]
    #[case("1.2.0.4-x.Y.0+metadata", false)]
    #[case("1.2.0.4-x.Y.0+metadata-width-hyphen", false)]
    #[case("1.2.0-X-1.2.0+metadata~dist", false)]
    #[case("1.2.3.4-rc1-with-hyphen", false)]
    #[case("v1.2.3", false)]
    #[case("foo1.2.3", true)]
    #[case("1.7rc2", false)]
    #[case("v1.7rc2", false)]
    #[case("1.0-", false)]
    fn go_version_new_version(#[case] version: &str, #[case] refused: bool) {
        assert_eq!(minor(version).is_none(), refused, "{version:?}");
    }

    /// The minor of go-version's `TestVersionSegments` and
    /// `TestVersionSegments64` rows (`version_test.go`, v1.7.0), then the
    /// forms where a reading of one's own would part from go-version's, then
    /// kubelet versions as Nodes report them.
    #[rstest]
    #[case("1.2.3", Some(2))]
    #[case("1.2-beta", Some(2))]
    #[case("1-x.Y.0", Some(0))]
    #[case("1.2.0-x.Y.0+metadata", Some(2))]
    #[case("1.2.0-metadata-1.2.0+metadata~dist", Some(2))]
    #[case("17.03.0-ce", Some(3))]
    #[case("1.4.9223372036854775807", Some(4))]
    // A prerelease may be a lone `-`, or follow the numbers without one.
    #[case("v1.33-", Some(33))]
    #[case("v1.33.0beta", Some(33))]
    // `_` is in no part, and no part has an empty run between dots.
    #[case("v1.33.0-eks_1", None)]
    #[case("v1.33.0+k3s..1", None)]
    #[case("v1.33.0+", None)]
    #[case("v1.33.0+a+b", None)]
    #[case("v1.33.0-a.", None)]
    // strconv.ParseInt(s, 10, 64): i64::MAX is read, one more is refused.
    #[case("v1.9223372036854775807", Some(i64::MAX as u64))]
    #[case("v1.9223372036854775808", None)]
    #[case("v1.99999999999999999999999", None)]
    #[case("v1.033.0", Some(33))]
    #[case("v", None)]
    #[case("vv1.33", None)]
    #[case("V1.33", None)]
    #[case("vx.33", None)]
    #[case("v1.x", None)]
    #[case("v1.33.", None)]
    #[case("v1..33", None)]
    #[case(" v1.33.0", None)]
    #[case("v1.33.0\n", None)]
    #[case("v1", Some(0))]
    // Kubelets as clusters report them.
    #[case("v1.33.0", Some(33))]
    #[case("v1.32.9", Some(32))]
    #[case("1.34.1", Some(34))]
    #[case("v1.33.2-eks-1234", Some(33))]
    #[case("v1.33.2-eks-113cf36", Some(33))]
    #[case("v1.34.1+k3s1", Some(34))]
    #[case("v1.35.0-gke.1000", Some(35))]
    #[case("v1.31.4+rke2r1", Some(31))]
    #[case("v1.29", Some(29))]
    fn reads_the_minor_as_go_version_does(#[case] version: &str, #[case] expected: Option<u64>) {
        assert_eq!(minor(version), expected, "{version:?}");
    }

    #[rstest]
    #[case("v1.33.0", true)]
    #[case("v1.35.4", true)]
    #[case("v1.32.12", false)]
    #[case("v1.28.15", false)]
    #[case("garbage", false)]
    // The major is never read, as in DetectNativeSidecar.
    #[case("v2.10.0", false)]
    fn native_from_1_33(#[case] version: &str, #[case] native: bool) {
        assert_eq!(runs_native_sidecars(version), native);
    }

    fn read(list: &str, own: Option<&str>) -> Option<Kubelets> {
        read_kubelets(list.as_bytes(), own)
    }

    fn kubelet(node: &str, version: &str) -> Option<Kubelet> {
        Some(Kubelet {
            node: node.into(),
            version: version.into(),
            minor: minor(version),
        })
    }

    /// A Node as policy-server 1.31-1.32 send it (every field), beside one
    /// trimmed to the masks: only the two fields are read.
    #[test]
    fn reads_whole_nodes_and_trimmed_ones() {
        let whole = r#"{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "7"}, "items": [
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "pool-a-1", "labels": {"kubernetes.io/os": "linux"},
                          "annotations": {"a": "{\"b\": [1, 2]}"},
                          "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]},
             "spec": {"podCIDR": "10.0.0.0/24", "taints": []},
             "status": {"conditions": [{"type": "Ready", "status": "True"}],
                        "images": [{"names": ["registry.example/a@sha256:00"], "sizeBytes": 1}],
                        "nodeInfo": {"kubeletVersion": "v1.35.1", "osImage": "Ubuntu"}}},
            {"metadata": {"name": "pool-old-1"}, "status": {"nodeInfo": {"kubeletVersion": "v1.32.9"}}}
        ]}"#;
        let kubelets = read(whole, None).unwrap();
        assert_eq!(kubelets.oldest, kubelet("pool-old-1", "v1.32.9"));
        assert_eq!(kubelets.newest, Some(35));
        assert!(!kubelets.unreadable);
        assert_eq!(
            kubelets.older_than(MIN_KUBELET_MINOR).as_deref(),
            Some("node pool-old-1 runs kubelet v1.32.9 (< 1.33)")
        );
        // The Pod's own Node alone.
        let own = read(whole, Some("pool-a-1")).unwrap();
        assert_eq!(own.oldest, kubelet("pool-a-1", "v1.35.1"));
        assert!(own.all_from(35));
        // A name no Node has: every Node.
        assert_eq!(read(whole, Some("gone")).unwrap(), kubelets);
    }

    /// Escaped text is decoded; a missing or null field reads as a kubelet
    /// no version of which is known, the oldest of all.
    #[rstest]
    #[case(r#"{"items": [{"metadata": {"name": "n\u0031"}, "status": {"nodeInfo": {"kubeletVersion": "v1.3\u0034.0"}}}]}"#, kubelet("n1", "v1.34.0"))]
    #[case(r#"{"items": [{"metadata": {"name": "n1"}}]}"#, kubelet("n1", "none"))]
    #[case(
        r#"{"items": [{"metadata": null, "status": {"nodeInfo": null}}]}"#,
        kubelet("?", "none")
    )]
    #[case(r#"{"items": [{"status": {"nodeInfo": {"kubeletVersion": "v1.35.0"}}}, {"metadata": {"name": "b"}, "status": {"nodeInfo": {"kubeletVersion": "v1.36.0-"}}}]}"#, kubelet("?", "v1.35.0"))]
    #[case(r#"{"items": []}"#, None)]
    fn reads_each_nodes_two_fields(#[case] list: &str, #[case] oldest: Option<Kubelet>) {
        assert_eq!(read(list, None).unwrap().oldest, oldest);
    }

    /// The oldest kubelet is named, the unreadable first; among equals the
    /// first in the list.
    #[test]
    fn the_oldest_is_named() {
        let list = node_list(&[
            ("a", "v1.34.0"),
            ("b", "v1.32.1"),
            ("c", "v1.32.0"),
            ("d", "v1.36.0"),
        ]);
        let kubelets = read_kubelets(&list, None).unwrap();
        assert_eq!(kubelets.oldest, kubelet("b", "v1.32.1"));
        assert_eq!(kubelets.newest, Some(36));
        assert!(!kubelets.all_from(35) && !kubelets.all_before(34));
        let list = node_list(&[("a", "v1.33.0"), ("b", "v1.33-eks_1"), ("c", "1.2")]);
        let kubelets = read_kubelets(&list, None).unwrap();
        assert_eq!(kubelets.oldest, kubelet("b", "v1.33-eks_1"));
        assert!(kubelets.unreadable && !kubelets.all_before(34));
        let list = node_list(&[("a", "v1.33.0"), ("b", "v1.32.0")]);
        assert!(read_kubelets(&list, None).unwrap().all_before(34));
        let list = node_list(&[("a", "v1.35.0"), ("b", "v1.37.0")]);
        assert!(read_kubelets(&list, None).unwrap().all_from(35));
    }

    #[rstest]
    #[case("")]
    #[case("[]")]
    #[case("{}")]
    #[case(r#"{"items": null}"#)]
    #[case(r#"{"items": {}}"#)]
    #[case(r#"{"items": [null]}"#)]
    #[case(r#"{"items": [{"metadata": {"name": 7}}]}"#)]
    #[case(r#"{"items": []} x"#)]
    fn what_is_no_node_list(#[case] list: &str) {
        assert_eq!(read(list, None), None, "{list}");
        assert_eq!(read_kubelets(b"{\"items\": [\xff]}", None), None);
    }

    /// A skipped member is skipped without recursion (serde_json's
    /// `ignore_value` keeps its own stack), however deep: work and memory
    /// linear in its text, and the Node still read.
    #[test]
    fn deep_nesting_in_a_skipped_member_is_skipped() {
        let deep = format!(
            r#"{{"items": [{{"metadata": {{"name": "a", "x": {}{}}}}}]}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let kubelets = read(&deep, None).unwrap();
        assert_eq!(kubelets.oldest, kubelet("a", "none"));
    }

    /// Template names trimmed as Go's `strings.TrimSpace` trims them:
    /// Unicode's White_Space (`unicode.IsSpace`), not ASCII's alone.
    #[rstest]
    #[case(" sidecar ", true)]
    #[case("\tsidecar\n", true)]
    #[case("sidecar\u{b}", true)]
    #[case("\u{85}sidecar\u{a0}", true)]
    #[case("\u{3000}sidecar\u{2029}", true)]
    #[case("sidecar, sidecar\u{1680}", true)]
    // Not White_Space: a zero-width space, a BOM.
    #[case("sidecar\u{200b}", false)]
    #[case("\u{feff}sidecar", false)]
    #[case("side car", false)]
    fn template_names_trimmed_as_go_trims(#[case] value: &str, #[case] stock: bool) {
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"annotations": {ANNOTATION_INJECT_TEMPLATES: value}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "app"}]}
        })
        .to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&pod).unwrap();
        let mut node = crate::json::Node::raw(raw);
        let mut object = Object::read(crate::names::Kind::Pod, &mut node)
            .unwrap()
            .unwrap();
        let why = custom_templates(&mut object).unwrap();
        assert_eq!(why.is_none(), stock, "{value:?}: {why:?}");
    }
}
