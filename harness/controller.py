"""What Kubewarden's controller makes of a ClusterAdmissionPolicy.

Read off kubewarden/kubewarden-controller at v1.35.0:

- the CRD's defaults, applied by the API server when the policy is stored
  (charts/kubewarden-crds, clusteradmissionpolicies: `policyServer`
  default, `mode` protect, `backgroundAudit` true, `timeoutSeconds` 10);
- policy-server's configuration, `policies.yml` and `sources.yml` of the
  PolicyServer's ConfigMap (internal/controller/policyserver_controller_configmap.go:
  `buildPoliciesMap`, `policyServerConfigEntry.MarshalJSON`,
  `hostCapabilitiesForPolicy`, `buildSourcesMap`), and the environment of
  its Deployment (policyserver_controller_deployment.go,
  `getPolicyServerContainer`, `configuresInsecureSources`);
- the MutatingWebhookConfiguration of a mutating policy
  (internal/controller/policy_subreconciler_webhook.go,
  `reconcileMutatingWebhookConfiguration` and `namespaceSelector`).

and, where admission controller 1.37.2 (GHSA-m5vp-9g65-pv6v) changed them,
the names: a policy's id, its webhook configuration, its webhook and its
path are `kw.cap.<name>` from 1.37.2 on, `clusterwide-<name>` (the webhook
`clusterwide-<name>.kubewarden.admission`) up to 1.37.1. Every function that
names something takes the controller's `release`; None is
$CONTROLLER_RELEASE, else the newest form.
"""
import copy
import json
import os
import re

import yaml

KIND = "ClusterAdmissionPolicy"
API_VERSION = "policies.kubewarden.io/v1"

# The CRD's `default:` values (the API server writes them into the stored policy).
CRD_DEFAULTS = {"policyServer": "default", "mode": "protect", "backgroundAudit": True, "timeoutSeconds": 10}

# The namespace Kubewarden is installed in (the Helm charts' `kubewarden`).
DEPLOYMENTS_NAMESPACE = "kubewarden"

# internal/constants: the Service port of a PolicyServer and the label of the
# webhook configurations.
POLICY_SERVER_SERVICE_PORT = 443
PART_OF_LABEL = ("app.kubernetes.io/part-of", "kubewarden")


def load(path):
    """Every ClusterAdmissionPolicy of a YAML file, as the API server stores
    it: the CRD's defaults filled in. Fails on any other kind of document."""
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs:
        raise ValueError("%s holds no document" % path)
    return [stored(doc, "%s (%s)" % (path, (doc.get("metadata") or {}).get("name"))) for doc in docs]


def stored(doc, where="policy"):
    """The policy `doc` with the CRD's defaults filled in."""
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise ValueError("%s is a %s %s, not a %s" % (where, doc.get("apiVersion"), doc.get("kind"), KIND))
    doc = copy.deepcopy(doc)
    spec = doc.setdefault("spec", {})
    for key, value in CRD_DEFAULTS.items():
        spec.setdefault(key, value)
    return doc


# One release of each naming form, oldest first: the tests run under each.
RELEASES = ("1.37.1", "1.37.2")
# The first release that names a ClusterAdmissionPolicy kw.cap.<name>.
KW_CAP_SINCE = (1, 37, 2)


def release_number(release=None):
    """(major, minor, patch) of a release such as "1.37.2" or "v1.37.2";
    None: $CONTROLLER_RELEASE, else the newest of RELEASES."""
    text = release or os.environ.get("CONTROLLER_RELEASE") or RELEASES[-1]
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", text.strip())
    if not match:
        raise ValueError("Kubewarden controller release %r: expected MAJOR.MINOR.PATCH, such as %s"
                         % (text, RELEASES[-1]))
    return tuple(int(part) for part in match.groups())


def kw_cap(release=None):
    """Whether the controller of `release` names policies kw.cap.<name>."""
    return release_number(release) >= KW_CAP_SINCE


def policy_id(name, release=None):
    """`GetUniqueName` of the ClusterAdmissionPolicy `name`: its id in
    policies.yml, its webhook configuration's name and its path."""
    return ("kw.cap." if kw_cap(release) else "clusterwide-") + name


def unique_name(policy, release=None):
    """`policy_id` of a stored policy."""
    return policy_id(policy["metadata"]["name"], release)


def webhook_name(policy, release=None):
    """The name of the one webhook in the policy's webhook configuration."""
    name = unique_name(policy, release)
    return name if kw_cap(release) else name + ".kubewarden.admission"


def go_json(value):
    """JSON as Go's encoding/json writes it: compact, non-ASCII kept, and
    <, >, &, U+2028 and U+2029 escaped (they only occur inside strings)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def settings_raw(policy):
    """`spec.settings` as the controller reads it back from the API server
    (a RawExtension holding JSON with sorted keys, which the API server
    writes for custom resources); None when the policy has none."""
    settings = policy["spec"].get("settings")
    if settings is None:
        return None
    return json.loads(json.dumps(settings, sort_keys=True))


def policies_entry(policy, module=None):
    """The `policies.yml` entry of a ClusterAdmissionPolicy, members in the
    order of `policyServerConfigEntry.MarshalJSON`. `module` replaces
    spec.module (a test registry, a local file)."""
    spec = policy["spec"]
    entry = {
        # types.NamespacedName has no json tags: Go writes its field names.
        "namespacedName": {"Namespace": "", "Name": policy["metadata"]["name"]},
        "module": module if module is not None else spec["module"],
        "policyMode": spec["mode"],
        "allowedToMutate": bool(spec.get("mutating", False)),
    }
    if spec.get("contextAwareResources"):
        entry["contextAwareResources"] = spec["contextAwareResources"]
    # A RawExtension is a struct: omitempty does not drop it, and an absent
    # one is written as null.
    entry["settings"] = settings_raw(policy)
    if spec.get("message"):
        entry["message"] = spec["message"]
    if spec.get("timeoutEvalSeconds") is not None:
        entry["timeoutEvalSeconds"] = spec["timeoutEvalSeconds"]
    # hostCapabilitiesForPolicy: a cluster-wide policy gets every host capability.
    entry["hostCapabilities"] = ["*"]
    return entry


def policies_yml(policies, module=None, release=None):
    """The ConfigMap's `policies.yml` for these policies (all on one
    PolicyServer): one JSON object, keys sorted as Go sorts a map's."""
    entries = {}
    for policy in policies:
        name = unique_name(policy, release)
        if name in entries:
            raise ValueError("two policies named %s on one PolicyServer" % name)
        entries[name] = policies_entry(policy, module)
    return go_json(dict(sorted(entries.items())))


def sources_yml(insecure_sources=()):
    """The ConfigMap's `sources.yml` (`buildSourcesMap`): both members are
    omitempty, so a PolicyServer without insecure sources or source
    authorities gets `{}`."""
    sources = {}
    if insecure_sources:
        sources["insecure_sources"] = list(insecure_sources)
    return go_json(sources)


def namespace_selector(policy, deployments_namespace=DEPLOYMENTS_NAMESPACE):
    """`namespaceSelector` of a ClusterAdmissionPolicy: Kubewarden's own
    namespace excluded, then ONLY the matchExpressions of the policy's
    selector; its matchLabels are dropped. With
    allowInsideAdmissionControllerNamespace, the policy's selector as it is."""
    spec = policy["spec"]
    if spec.get("allowInsideAdmissionControllerNamespace"):
        return copy.deepcopy(spec.get("namespaceSelector"))
    expressions = [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [deployments_namespace]}]
    expressions += copy.deepcopy((spec.get("namespaceSelector") or {}).get("matchExpressions") or [])
    return {"matchExpressions": expressions}


def webhook_configuration(policy, deployments_namespace=DEPLOYMENTS_NAMESPACE, ca_bundle="",
                          match_conditions=True, release=None):
    """The MutatingWebhookConfiguration the controller installs for a mutating
    ClusterAdmissionPolicy, with only the members it sets (the API server
    defaults the others: `apiserver.defaulted`). `match_conditions` False is
    a cluster where the controller finds no matchConditions in the API
    (Kubernetes < 1.28, or 1.28/1.29 with the feature gate off): it then
    leaves them out and only logs it."""
    spec = policy["spec"]
    if not spec.get("mutating"):
        raise ValueError("%s is not mutating: the controller installs a ValidatingWebhookConfiguration"
                         % policy["metadata"]["name"])
    name = unique_name(policy, release)
    webhook = {
        "name": webhook_name(policy, release),
        "clientConfig": {
            "service": {
                "namespace": deployments_namespace,
                "name": "policy-server-" + spec["policyServer"],
                "path": "/validate/" + name,
                "port": POLICY_SERVER_SERVICE_PORT,
            },
            "caBundle": ca_bundle,
        },
        "rules": copy.deepcopy(spec["rules"]),
    }
    for key in ("failurePolicy", "matchPolicy"):
        if spec.get(key) is not None:
            webhook[key] = spec[key]
    selector = namespace_selector(policy, deployments_namespace)
    if selector is not None:
        webhook["namespaceSelector"] = selector
    if spec.get("objectSelector") is not None:
        webhook["objectSelector"] = copy.deepcopy(spec["objectSelector"])
    webhook["sideEffects"] = spec.get("sideEffects") or "None"
    if spec.get("timeoutSeconds") is not None:
        webhook["timeoutSeconds"] = spec["timeoutSeconds"]
    webhook["admissionReviewVersions"] = ["v1"]
    if match_conditions and spec.get("matchConditions"):
        webhook["matchConditions"] = copy.deepcopy(spec["matchConditions"])
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": name,
            "labels": {PART_OF_LABEL[0]: PART_OF_LABEL[1]},
            "annotations": {"kubewardenPolicyName": policy["metadata"]["name"], "kubewardenPolicyNamespace": ""},
        },
        "webhooks": [webhook],
    }


def policy_server_environment(policies_path, download_dir, sigstore_cache_dir, cert_file, key_file,
                              port, readiness_port, sources_path=None):
    """The environment the controller gives policy-server's container
    (`getPolicyServerContainer`; KUBEWARDEN_SOURCES_PATH only when the
    PolicyServer has insecure sources or source authorities), with our
    paths and ports in place of the container's."""
    env = {
        "KUBEWARDEN_CERT_FILE": str(cert_file),
        "KUBEWARDEN_KEY_FILE": str(key_file),
        "KUBEWARDEN_PORT": str(port),
        "KUBEWARDEN_READINESS_PROBE_PORT": str(readiness_port),
        "KUBEWARDEN_POLICIES_DOWNLOAD_DIR": str(download_dir),
        "KUBEWARDEN_POLICIES": str(policies_path),
        "KUBEWARDEN_SIGSTORE_CACHE_DIR": str(sigstore_cache_dir),
    }
    if sources_path is not None:
        env["KUBEWARDEN_SOURCES_PATH"] = str(sources_path)
    return env
