"""What a cluster sends a policy-server, for load tests (`make bench-server`).

- `request_types()`: the AdmissionRequests of the mix, as the API server
  builds them for the kinds the policy's webhook is called for: long-running
  Pods (a ReplicaSet's), run-to-completion Pods (a Job's), Job CREATE,
  CronJob CREATE and UPDATE, a kube-injected Job (`test_data/fixtures/`),
  and one Pod near the 1.5 MiB an object stored in etcd can have;
- `MIX`: how often each comes in the mix;
- `hostile_requests()`: bodies the API server could send but nobody expects
  (a 1.5 MiB object, a 3 MiB UPDATE, 10,000 containers, deep nesting, the
  proxy configs that cost the merge and the undo the most, after
  `runner/tests/hostile.rs`; the config's alias bombs and YAML nesting
  through the workload's override and a forged record, after
  `runner/tests/cost/config.rs`), and `sized_request()`;
- `bench_policies()`: the ClusterAdmissionPolicies hosted by one
  policy-server: the policy in each mode, the floors, and any extra module.
"""
import copy
import json
from pathlib import Path

import yaml

from . import apiserver, controller, requests

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "test_data" / "fixtures"

# The 1.5 MiB etcd keeps per object (etcd's --max-request-bytes default), and
# the API server's limit on a request body (3 MiB).
ETCD_OBJECT_LIMIT = 1536 * 1024
APISERVER_BODY_LIMIT = 3 * 1024 * 1024

def admission_request(obj, operation="CREATE", old=None, uid=None):
    """The AdmissionRequest the API server sends for `obj` (its kind, name
    and namespace read from it; `default` when it names none)."""
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    request = requests.request(operation, obj, old=old, namespace=namespace)
    request["uid"] = uid or "bench"
    return apiserver.admission_request(request)


def small_job():
    """The benchmarks' Job (a Job with its proxy config in YAML): the one the
    runner's `make bench` measures too (runner/bench/small-job.json)."""
    with open(ROOT / "runner" / "bench" / "small-job.json") as f:
        return json.load(f)


def job_pod():
    """A Pod as the Job controller makes it from `small_job()`'s template."""
    template = small_job()["spec"]["template"]
    meta = template["metadata"]
    meta.update({"generateName": "daily-report-", "namespace": "data",
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "daily-report",
                                      "uid": "0f6b1d8e-4c1a-4d1e-9a57-1e2b3c4d5e6f",
                                      "controller": True, "blockOwnerDeletion": True}]})
    meta["labels"].update({"batch.kubernetes.io/job-name": "daily-report", "job-name": "daily-report"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


def env_var(i, value_len):
    return {"name": "SETTING_%04d" % i, "value": "v" * value_len}


def web_container(name, envs):
    return {
        "name": name,
        "image": "registry.example.com/shop/%s@sha256:%s" % (name, "ab12" * 16),
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [env_var(i, 24) for i in range(envs)],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "periodSeconds": 10},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/shop"},
                         {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                          "readOnly": True}],
        "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }


def deployment_pod():
    """A Pod as a ReplicaSet controller creates it (about 5 KB): most of what
    a cluster creates, answered by the policy's early skip."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "frontend-7d4b9c8f6d-", "namespace": "shop",
            "labels": {"app": "frontend", "pod-template-hash": "7d4b9c8f6d", "version": "v3"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-02T10:00:00Z",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "frontend-7d4b9c8f6d",
                                 "uid": "5f0c1e2a-9a51-4f57-8d2e-3f3b0f5b1c11", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "restartPolicy": "Always", "serviceAccountName": "frontend", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "containers": [web_container("frontend", 12), web_container("metrics-exporter", 4)],
            "volumes": [{"name": "config", "configMap": {"name": "frontend-config"}},
                        {"name": "kube-api-access", "projected": {"sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt",
                                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
        },
    }


def large_pod(target=ETCD_OBJECT_LIMIT - 16 * 1024):
    """A run-to-completion Pod of about `target` bytes of JSON (40 containers
    with large environments, then 1 KiB annotations up to the size)."""
    containers = []
    for i in range(40):
        c = web_container("worker-%02d" % i, 0)
        c["env"] = [env_var(j, 200) for j in range(60)]
        containers.append(c)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "bulk-import", "namespace": "data", "annotations": {}},
           "spec": {"restartPolicy": "Never", "containers": containers}}
    size = len(json.dumps(pod, separators=(",", ":")))
    per_entry = len('"example.com/blob-0000":"",') + 1024
    for i in range(max(0, (target - size) // per_entry)):
        pod["metadata"]["annotations"]["example.com/blob-%04d" % i] = "x" * 1024
    return pod


def fixture(name, kind):
    """The first document of kind `kind` in a fixture, as JSON would carry
    it (timestamps as strings)."""
    with open(FIXTURES / name) as f:
        docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict) and d.get("kind") == kind]
    doc = json.loads(json.dumps(docs[0], default=str))
    doc.setdefault("metadata", {}).setdefault("namespace", "default")
    return doc


def request_types():
    """{name: AdmissionRequest}, in the order the report prints them."""
    cronjob = fixture("istio-cronjob.yaml", "CronJob")
    edited = copy.deepcopy(cronjob)
    edited["spec"]["schedule"] = "*/5 * * * *"
    edited["metadata"].update({"resourceVersion": "4711", "generation": 2})
    cronjob_old = copy.deepcopy(edited)
    cronjob_old["spec"]["schedule"] = cronjob["spec"]["schedule"]
    return {
        "pod-always": admission_request(deployment_pod()),
        "pod-never": admission_request(job_pod()),
        "job-create": admission_request(small_job()),
        "cronjob-create": admission_request(cronjob),
        "cronjob-update": admission_request(edited, "UPDATE", old=cronjob_old),
        "job-kube-injected": admission_request(fixture("istio-job-kube-injected-classic.yaml", "Job")),
        "pod-1.5mib": admission_request(large_pod()),
    }


# How often each request type comes, per 200 requests: mostly Pods that run
# forever, then the batch kinds, and one Pod near etcd's limit.
MIX = {"pod-always": 140, "pod-never": 20, "job-create": 16, "cronjob-create": 5, "cronjob-update": 8,
       "job-kube-injected": 10, "pod-1.5mib": 1}


def review_bytes(request, uid):
    r = dict(request)
    r["uid"] = uid
    return json.dumps(apiserver.admission_review(r), separators=(",", ":")).encode()


# --- hostile bodies -------------------------------------------------------------

APPLIED = "istio-job-sidecar/applied"
CLASSIC_STATUS = ('{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"],'
                  '"imagePullSecrets":null,"revision":"default"}')


def hostile_job(containers=None, annotations=None, name="hostile"):
    """A kube-injected (classic) Job: every mode has something to do."""
    if containers is None:
        containers = [{"name": "app", "image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]},
                      {"name": "istio-proxy", "image": "proxyv2", "args": ["proxy", "sidecar"]}]
    template_annotations = {"sidecar.istio.io/status": CLASSIC_STATUS}
    template_annotations.update(annotations or {})
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"template": {"metadata": {"annotations": template_annotations},
                                  "spec": {"restartPolicy": "Never",
                                           "initContainers": [{"name": "istio-init", "image": "proxyv2"}],
                                           "containers": containers}}}}


def nested(depth):
    """`depth` nested arrays around a string, as JSON text (too deep for a
    Python dict to hold as objects)."""
    return "[" * depth + '"x"' + "]" * depth


# --- proxy configs that cost a YAML reader the most ------------------------------

MODE = "istio-job-sidecar/mode"
PROXY_CONFIG = "proxy.istio.io/config"
# The record an exitOnJobCompletion pass leaves on a pod template: the text
# it inserted at the config's end. Forged, it makes the policy read the
# config back (the undo) under any other cluster mode.
EXIT_RECORD = json.dumps({"mode": "exitOnJobCompletion", "inserted": "\nexitOnJobCompletion: true"},
                         separators=(",", ":"))
# The API server's limit on an object's annotations, all of them together
# (their keys and values): 256 KiB.
ANNOTATIONS_LIMIT = 256 * 1024


def alias_bomb(size):
    """`a: &a [1,1,...]` then `b: [*a,*a,...]`, about `size` bytes, each
    half one list: every alias replays the anchored list, so a reader that
    expands them builds (size/4) x (size/6) nodes from size/2.4 items."""
    half = size // 2
    return "a: &a [%s]\nb: [%s]\n" % (",".join(["1"] * (half // 2)), ",".join(["*a"] * (half // 3)))


def yaml_nesting(depth):
    """`a: ` then `depth` `[` and as many `]`: flow sequences nested `depth`
    deep."""
    return "a: %s%s\n" % ("[" * depth, "]" * depth)


def config_shapes():
    """[(name, config text)]: alias bombs of 8, 16, 32 KiB and at the
    annotations' limit (less 1 KiB for the record and the other
    annotations), YAML nesting 10,000 and 100,000 deep."""
    shapes = [("alias-bomb-%dkib" % (size >> 10), alias_bomb(size))
              for size in (8 << 10, 16 << 10, 32 << 10, ANNOTATIONS_LIMIT - 1024)]
    shapes += [("yaml-nesting-%d" % depth, yaml_nesting(depth)) for depth in (10000, 100000)]
    return shapes


def config_job(job_annotations, template_annotations, name="config"):
    """A Job as a tenant writes it: one app container, `job_annotations` on
    the Job, `template_annotations` on its pod template."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "annotations": job_annotations},
            "spec": {"template": {"metadata": {"annotations": template_annotations},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "app", "image": "registry.example/app:1",
                                                           "command": ["/bin/app", "--once"]}]}}}}


def override_job(config):
    """A Job asking exitOnJobCompletion itself (the workload's override, on
    by default) with `config` as its proxy config: read to merge the key in,
    whatever the cluster's mode."""
    return config_job({MODE: "exitOnJobCompletion"}, {PROXY_CONFIG: config})


def forged_record_job(config):
    """A Job whose pod template carries a forged exitOnJobCompletion record
    beside `config` (the inserted text at its end, where a merge puts it):
    under any other cluster mode the policy reads the config to take the
    key out."""
    return config_job({}, {PROXY_CONFIG: config + "exitOnJobCompletion: true\n", APPLIED: EXIT_RECORD})


def benign_config(size):
    """An ordinary proxy config of about `size` bytes as users write them: a
    block mapping, `proxyMetadata` entries of quoted scalars."""
    lines = ["holdApplicationUntilProxyStarts: true", "proxyMetadata:"]
    total = sum(len(line) + 1 for line in lines)
    i = 0
    while total + 48 < size:
        line = '  KEY_%06d: "value %06d of the proxy\'s metadata"' % (i, i)
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def benign_config_requests(names):
    """[(name, AdmissionRequest)]: for each config shape of `names`, an
    ordinary config of its size through the workload's override (read
    whole and the key merged in): the benign request of that size."""
    shapes = dict(config_shapes())
    return [("benign-config-%dkib-override" % (len(shapes[n]) >> 10),
             admission_request(override_job(benign_config(len(shapes[n]))))) for n in names]


def config_requests():
    """[(name, AdmissionRequest)]: each config shape through the workload's
    override and through a forged record."""
    out = []
    for name, config in config_shapes():
        out.append(("config-%s-override" % name, admission_request(override_job(config))))
        out.append(("config-%s-record" % name, admission_request(forged_record_job(config))))
    return out


def hostile_requests():
    """[(name, body bytes)] of AdmissionReviews an API server could send:
    each must be answered within policy-server's 2 s policy timeout."""
    out = []
    mib = 1024 * 1024

    def add(name, request):
        out.append((name, review_bytes(request, "hostile-" + name)))

    # An object at etcd's limit: a Job with a 1.5 MiB unknown field.
    big = hostile_job()
    big["spec"]["template"]["spec"]["x-blob"] = "b" * (ETCD_OBJECT_LIMIT - 2048)
    add("job-1.5mib", admission_request(big))
    # A body at the API server's limit: a CronJob UPDATE, object and
    # oldObject of about 1.5 MiB each.
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "big", "namespace": "default"},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": hostile_job()["spec"]["template"]}}}}
    cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["x-blob"] = "c" * (ETCD_OBJECT_LIMIT - 40 * 1024)
    old = copy.deepcopy(cron)
    old["spec"]["schedule"] = "0 3 * * *"
    add("cronjob-update-3mib", admission_request(cron, "UPDATE", old=old))
    # The same UPDATE as large as policy-server takes (2 MiB bodies).
    for label, blob in (("cronjob-update-2mib", (POLICY_SERVER_BODY_LIMIT - 64 * 1024) // 2),):
        cron2 = copy.deepcopy(cron)
        cron2["spec"]["jobTemplate"]["spec"]["template"]["spec"]["x-blob"] = "c" * blob
        old2 = copy.deepcopy(cron2)
        old2["spec"]["schedule"] = "0 3 * * *"
        add(label, admission_request(cron2, "UPDATE", old=old2))
    # 10,000 containers, the proxy last.
    many = [{"name": "c%05d" % i, "image": "busybox"} for i in range(10000)]
    many.append({"name": "istio-proxy", "image": "proxyv2", "args": ["proxy", "sidecar"]})
    add("job-10000-containers", admission_request(hostile_job(many)))
    # A 1 MiB proxy config of 32,768 YAML keys (the merge's worst known before
    # it was made linear; past the annotations' 256 KiB it is no longer read).
    keys = "".join("k%05d: %s\n" % (i, "v" * 22) for i in range(32768))
    add("proxy-config-32768-keys", admission_request(hostile_job(annotations={"proxy.istio.io/config": keys})))
    # The undo's worst: an exitOnJobCompletion record whose inserted text
    # occurs on every line of a config near the body limit, the real key
    # first (the undo refuses after its parses).
    inserted = "exitOnJobCompletion: true"
    record = json.dumps({"mode": "exitOnJobCompletion", "inserted": inserted}, separators=(",", ":"))
    # At the API server's limit (refused by policy-server's), and at
    # policy-server's.
    # (Sizes of the config; JSON's escapes of the quotes add to the body.)
    for label, size in (("2.6mib", int(2.6 * mib)), ("1.8mib", int(1.8 * mib))):
        lines = "".join('k%06d: "%s"\n' % (i, inserted) for i in range(size // 37))
        add("undo-record-%s-lines" % label, admission_request(hostile_job(
            annotations={APPLIED: record, "proxy.istio.io/config": inserted + "\n" + lines})))
        one_value = 'k: "' + (inserted + " ") * (size // 26) + '"\n'
        add("undo-record-%s-one-value" % label, admission_request(hostile_job(
            annotations={APPLIED: record, "proxy.istio.io/config": inserted + "\n" + one_value})))
    # Deep nesting in an unread container field: 100 levels (read by every
    # host), 129 (past serde_json's 128) and 100,000.
    for depth in (100, 129, 100000):
        marker = "@@NESTED@@"
        job = hostile_job([{"name": "app", "image": "busybox", "x-deep": marker},
                           {"name": "istio-proxy", "image": "proxyv2"}])
        body = review_bytes(admission_request(job), "hostile-nested-%d" % depth)
        out.append(("nested-%d" % depth, body.replace(json.dumps(marker).encode(), nested(depth).encode())))
    # The proxy config's alias bombs and nesting (read within the module's
    # YAML budget: allowed, unchanged, a warning that it is too large).
    for name, request in config_requests():
        add(name, request)
    return out


# policy-server 1.35 buffers a request body of at most 2 MiB (axum's
# DefaultBodyLimit): past it the answer is 413, and the connection closed.
POLICY_SERVER_BODY_LIMIT = 2 * 1024 * 1024


def sized_request(size, uid="hostile-sized"):
    """A well-formed AdmissionReview (a kube-injected Job) of exactly `size`
    bytes, padded with an unknown field of the pod spec."""
    job = hostile_job()
    job["spec"]["template"]["spec"]["x-blob"] = ""
    bare = len(review_bytes(admission_request(job), uid))
    job["spec"]["template"]["spec"]["x-blob"] = "o" * max(0, size - bare)
    return review_bytes(admission_request(job), uid)


# --- the policies one policy-server hosts -------------------------------------

# The policy in each mode: the examples' manifests, renamed.
MODES = {"native": ("examples/native-sidecar.yaml", "nativeSidecar"),
         "exit": ("examples/exit-on-job-completion.yaml", "exitOnJobCompletion"),
         "quit": ("examples/quit-endpoint.yaml", "quitEndpoint")}


def floor_policy(name, module):
    """A ClusterAdmissionPolicy for a floor or an extra module: the policy's
    rules, mutating, no settings."""
    base = controller.load(str(ROOT / MODES["native"][0]))[0]
    doc = copy.deepcopy(base)
    doc["metadata"] = {"name": name}
    doc["spec"]["module"] = module
    doc["spec"].pop("settings", None)
    doc["spec"].pop("matchConditions", None)
    return doc


def bench_policies(policy_module, floors, extra=()):
    """The stored ClusterAdmissionPolicies: `istio-job-sidecar-<mode>` for
    each mode (module `policy_module`), `floor-<name>` for each of `floors`
    ({name: module}), and each (name, module, settings) of `extra`."""
    policies = []
    for mode, (path, _) in MODES.items():
        doc = controller.load(str(ROOT / path))[0]
        doc["metadata"]["name"] = "istio-job-sidecar-" + mode
        doc["spec"]["module"] = policy_module
        policies.append(doc)
    for name, module in floors.items():
        policies.append(floor_policy("floor-" + name, module))
    for name, module, settings in extra:
        doc = floor_policy(name, module)
        if settings is not None:
            doc["spec"]["settings"] = settings
        policies.append(doc)
    return [controller.stored(p) for p in policies]
