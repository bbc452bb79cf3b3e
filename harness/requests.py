"""The AdmissionRequests the harness sends for objects, written here from the
API server's source, independently of kube-model's builder (which the
operator's tool and the Rust tests use), so that the harness's model of the
API server and the Rust one check the selection tables from two sources.

The request is `admission/v1.AdmissionRequest` as the API server fills it
(k8s.io/apiserver `pkg/admission/plugin/webhook/request/admissionreview.go`,
`CreateV1AdmissionReview`): `kind` and `resource` of the object's REST
mapping, equal to `requestKind` and `requestResource` when no conversion is
made; `name` and `namespace` of the request; `userInfo` of the caller;
`object` and `oldObject` as the operation carries them (a DELETE has no
`object`, the stored object as `oldObject`; a CONNECT neither); `dryRun`;
`options` of the operation's own kind. `apiserver.admission_request` then
writes it with its members in the struct's order."""

# The uid of every request made here: one value, so outputs are stable.
REQUEST_UID = "705ab4f5-6393-11e8-b7cc-42010a800002"

# The REST mapping of the kinds the harness sends, as the API server serves
# them (Kubernetes 1.33, `kubectl api-resources`): kind -> (group, resource).
RESOURCES = {
    "Pod": ("", "pods"),
    "Job": ("batch", "jobs"),
    "CronJob": ("batch", "cronjobs"),
    "Deployment": ("apps", "deployments"),
    "ReplicaSet": ("apps", "replicasets"),
    "StatefulSet": ("apps", "statefulsets"),
    "DaemonSet": ("apps", "daemonsets"),
    "Namespace": ("", "namespaces"),
    "ConfigMap": ("", "configmaps"),
    "Service": ("", "services"),
}

# The controller that creates an owned object, by (kind, owner's kind): its
# service account in kube-system (kube-controller-manager's
# `--use-service-account-credentials`, the names of `pkg/controller/*`).
CONTROLLERS = {
    ("Pod", "Job"): "job-controller",
    ("Pod", "ReplicaSet"): "replicaset-controller",
    ("Pod", "StatefulSet"): "statefulset-controller",
    ("Pod", "DaemonSet"): "daemon-set-controller",
    ("Job", "CronJob"): "cronjob-controller",
}

OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def _owner_kind(obj):
    owners = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    for owner in owners:
        if owner.get("controller") is True:
            return owner.get("kind")
    return owners[0].get("kind") if len(owners) == 1 else None


def _user_info(kind, obj):
    controller = CONTROLLERS.get((kind, _owner_kind(obj)))
    if controller:
        return {"username": "system:serviceaccount:kube-system:%s" % controller,
                "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                           "system:authenticated"]}
    # The admin kubeadm writes into the admin kubeconfig.
    return {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}


def request(operation, obj, old=None, namespace=None):
    """The AdmissionRequest the API server sends for `operation` on `obj`
    (`namespace` defaults to the object's own)."""
    kind = obj.get("kind", "")
    if kind not in RESOURCES:
        raise ValueError("no REST mapping known for kind %r: add it to RESOURCES" % kind)
    group, resource = RESOURCES[kind]
    api_version = obj.get("apiVersion", "v1")
    version = api_version.split("/", 1)[1] if "/" in api_version else api_version
    if namespace is None:
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    if operation == "CREATE" or operation == "UPDATE":
        sent, old_sent = obj, old
    elif operation == "DELETE":
        sent, old_sent = None, old if old is not None else obj
    else:
        sent, old_sent = None, None
    name = ((sent or old_sent or {}).get("metadata") or {}).get("name", "")
    out = {
        "uid": REQUEST_UID,
        "kind": gvk,
        "resource": gvr,
        "requestKind": dict(gvk),
        "requestResource": dict(gvr),
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": _user_info(kind, obj),
        "object": sent,
    }
    if old_sent is not None:
        out["oldObject"] = old_sent
    out["dryRun"] = False
    if operation in OPTIONS:
        out["options"] = {"kind": OPTIONS[operation], "apiVersion": "meta.k8s.io/v1"}
    return out


def requests(entries):
    """The AdmissionRequest of each `{"operation", "object", "oldObject"?,
    "namespace"?}` entry."""
    return [request(e["operation"], e["object"], old=e.get("oldObject"), namespace=e.get("namespace"))
            for e in entries]
