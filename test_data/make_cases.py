#!/usr/bin/env python3
"""Writes the inputs of the golden cases: test_data/cases/<case>/request.json
and settings.json, from Istio's own manifests in test_data/fixtures/ and a few
hand-made objects. The expected outputs (expected.json) are not written here:
`make golden` writes them from the module, and a reviewer reads the diff.

Run: python3 test_data/make_cases.py   (needs PyYAML)
     python3 test_data/make_cases.py --list   (the case names, nothing written)
Existing request.json/settings.json files are overwritten; cases written by
hand (no entry below, named in tests/golden.rs's HAND_WRITTEN) are left
alone.

Mode changes (reversible modes: B(A(x)) == B(x)) are made in two steps.
The cases `mode-change-<variant>-<mode>` admit a CronJob x under one mode (a CREATE;
`<mode>` is `disabled` for x with `istio-job-sidecar/mode: disabled`); the
cases `mode-change-<variant>-<A>-then-<B>` are a CronJob UPDATE whose object
is the first one's result A(x), read from the `mutatedObject` of
`mode-change-<variant>-<A>/expected.json` (oldObject A(x) too), with the
user's edit that picks B when an annotation picks it, admitted under B.
Variants (VARIANTS below): plain, yaml, json (no proxy config, a YAML block
one, a JSON one), injected (istioctl kube-inject's CronJob), flip (the mode
set by the template's annotation); every app container runs a command
full of quoting. The unreadable-record, edited-command and legacy-mark
cases start from the result of mode-change-plain-quitEndpoint.

Their input is an output of the policy, so this script and the rewrite of
expected.json run twice, the first time for the first passes, the second
for the second passes made from them: `make golden` does both, and every
other golden file. The script says how many second passes still wait for a
first pass's expected.json. tests/golden.rs fails on a case directory
this script does not list (`--list`) and that is not listed there as
written by hand.
tests/mode_changes.rs fails on a second pass whose input is not its first
pass's current output ("regenerate") and holds each pair to the laws,
B(A(x)) == B(x) with the record; e2e.bats makes the same passes through
kwctl.
"""
import copy
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
CASES = os.path.join(HERE, "cases")

GVK = {
    "Job": ("batch", "v1", "jobs"),
    "CronJob": ("batch", "v1", "cronjobs"),
    "Pod": ("", "v1", "pods"),
    "Deployment": ("apps", "v1", "deployments"),
}


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    return docs[0]


def request(obj, operation="CREATE", old=None, namespace="default"):
    kind = obj["kind"]
    group, version, resource = GVK[kind]
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    options = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions"}.get(operation)
    return {
        "uid": "1299d386-525b-4032-98ae-1949f69f9cfc",
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": obj.get("metadata", {}).get("name", ""),
        "namespace": namespace,
        "operation": operation,
        "userInfo": {
            "username": "kubernetes-admin",
            "groups": ["system:masters", "system:authenticated"],
        },
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"kind": options, "apiVersion": "meta.k8s.io/v1"} if options else None,
    }


# `--list`: the names of the cases this script writes, one a line, and
# nothing written (tests/golden.rs holds test_data/cases/ to them).
LISTING = "--list" in sys.argv[1:]
LISTED = []


def write(case, req, settings=None):
    if LISTING:
        LISTED.append(case)
        return
    d = os.path.join(CASES, case)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "request.json"), "w") as f:
        json.dump(req, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "settings.json"), "w") as f:
        json.dump(settings or {}, f, indent=2)
        f.write("\n")


def template(obj):
    """The pod template (or the Pod) of obj."""
    if obj["kind"] == "Job":
        return obj["spec"]["template"]
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]
    return obj


def annotate(obj, key, value, on_template=True):
    target = template(obj) if on_template else obj
    target.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
    return obj


def label(obj, key, value):
    template(obj).setdefault("metadata", {}).setdefault("labels", {})[key] = value
    return obj


def job():
    j = fixture("istio-job.yaml")
    j["metadata"]["namespace"] = "default"
    j["metadata"]["creationTimestamp"] = None
    return j


def cronjob():
    c = fixture("istio-cronjob.yaml")
    c["metadata"]["namespace"] = "batch"
    return c


def cronjob_with_command():
    """cronjob() whose container runs `command` (its args' first two), as quitEndpoint needs."""
    c = cronjob()
    hello = template(c)["spec"]["containers"][0]
    hello["command"], hello["args"] = hello["args"][:2], hello["args"][2:]
    return c


def pod(restart_policy):
    p = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "report-28712345-x7k2p",
            "namespace": "default",
            "labels": {"app": "report"},
        },
        "spec": {
            "containers": [
                {
                    "name": "report",
                    "image": "registry.example/report:1.4",
                    "command": ["/bin/report", "--since", "24h"],
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ],
            "serviceAccountName": "report",
        },
    }
    if restart_policy:
        p["spec"]["restartPolicy"] = restart_policy
    return p


EXIT = {"mode": "exitOnJobCompletion"}
QUIT = {"mode": "quitEndpoint"}
# The quitEndpoint wrapper script, as the module embeds it.
with open(os.path.join(HERE, "..", "src", "modes", "quit_wrapper.sh")) as f:
    QUIT_SCRIPT = f.read()
# Every wrapper text an earlier version wrote, oldest first (quit_wrappers/README.md).
OLDER_QUIT_SCRIPTS = []
for name in sorted(os.listdir(os.path.join(HERE, "quit_wrappers"))):
    if name.endswith(".sh"):
        with open(os.path.join(HERE, "quit_wrappers", name)) as f:
            OLDER_QUIT_SCRIPTS.append((name[:-3], f.read()))


def quit_wrapped(obj, script, url="http://127.0.0.1:15020/quitquitquit", record=True):
    """obj with its first container wrapped as the policy wraps it, by `script`."""
    spec = template(obj)["spec"]
    when = "on-success" if spec.get("restartPolicy") == "OnFailure" else "always"
    app = spec["containers"][0]
    app["command"] = ["/bin/sh", "-c", script, "istio-job-sidecar-quit", url, when] + app["command"]
    if record:
        annotate(obj, "istio-job-sidecar/applied",
                 '{"mode":"quitEndpoint","container":"%s"}' % app["name"])
    return obj


def main():
    # The decision table (README, "What is mutated, and what never is"), row by row.
    write("job-create-native", request(job()))
    write("job-create-exit", request(job()), EXIT)
    write("job-update-unchanged", request(job(), "UPDATE", old=job()))
    write("job-update-exit-unchanged", request(job(), "UPDATE", old=job()), EXIT)
    write("cronjob-create-native", request(cronjob()))
    write("cronjob-update-native", request(cronjob(), "UPDATE", old=cronjob()))
    write("cronjob-update-exit", request(cronjob(), "UPDATE", old=cronjob()), EXIT)
    write("pod-never-native", request(pod("Never")))
    write("pod-onfailure-exit", request(pod("OnFailure")), EXIT)
    write("pod-always-unchanged", request(pod("Always")))
    write("pod-restart-unset-unchanged", request(fixture("istio-native-sidecar-opt-in.yaml")))
    write("pod-update-unchanged", request(pod("Never"), "UPDATE", old=pod("Never")))
    write(
        "injection-disabled-label-unchanged",
        request(label(job(), "sidecar.istio.io/inject", "false")),
    )
    write(
        "injection-disabled-annotation-unchanged",
        request(annotate(cronjob(), "sidecar.istio.io/inject", "false")),
        EXIT,
    )
    write(
        "workload-disabled-unchanged",
        request(annotate(job(), "istio-job-sidecar/mode", "disabled")),
    )
    write(
        "workload-mode-on-job-metadata",
        request(annotate(job(), "istio-job-sidecar/mode", "exitOnJobCompletion", on_template=False)),
    )
    write(
        "workload-mode-on-template-wins",
        request(
            annotate(
                annotate(cronjob(), "istio-job-sidecar/mode", "disabled", on_template=False),
                "istio-job-sidecar/mode",
                "nativeSidecar",
            )
        ),
        EXIT,
    )
    write(
        "workload-override-off",
        request(annotate(job(), "istio-job-sidecar/mode", "disabled")),
        {"workloadOverride": False},
    )
    write(
        "workload-invalid-mode-warns",
        request(annotate(job(), "istio-job-sidecar/mode", "sometimes")),
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": copy.deepcopy(template(job())),
        },
    }
    write("deployment-unchanged", request(deployment))
    write(
        "native-annotation-present-unchanged",
        request(annotate(job(), "sidecar.istio.io/nativeSidecar", "true")),
    )
    write(
        "native-false-respected",
        request(annotate(job(), "sidecar.istio.io/nativeSidecar", "false")),
    )

    # Already injected by `istioctl kube-inject` (Istio's own outputs).
    write("kube-injected-classic-job-native", request(fixture("istio-job-kube-injected-classic.yaml")))
    write("kube-injected-classic-job-exit", request(fixture("istio-job-kube-injected-classic.yaml")), EXIT)
    write("kube-injected-native-job-annotated", request(fixture("istio-job-kube-injected-native.yaml")))
    write(
        "kube-injected-classic-cronjob-native",
        request(fixture("istio-cronjob-old-version.yaml.injected")),
    )
    write(
        "kube-injected-native-cronjob-annotated",
        request(fixture("istio-cronjob.yaml.injected")),
    )
    cni = fixture("istio-job-kube-injected-classic.yaml")
    spec = template(cni)["spec"]
    spec["initContainers"][0]["name"] = "istio-validation"
    spec["initContainers"].append({"name": "db-migrate", "image": "migrate:3", "command": ["migrate", "up"]})
    status = json.loads(template(cni)["metadata"]["annotations"]["sidecar.istio.io/status"])
    status["initContainers"] = ["istio-validation"]
    template(cni)["metadata"]["annotations"]["sidecar.istio.io/status"] = json.dumps(
        status, separators=(",", ":")
    )
    write("kube-injected-cni-with-init-native", request(cni))

    # An older proxy (no startupProbe) whose status ports are not the
    # defaults: the added probe checks what its readinessProbe checks, the
    # drain hook talks to the pod's status port.
    custom_ports = fixture("istio-job-kube-injected-classic.yaml")
    proxy = next(c for c in template(custom_ports)["spec"]["containers"] if c["name"] == "istio-proxy")
    del proxy["startupProbe"]
    proxy["readinessProbe"]["httpGet"]["port"] = 15121
    annotate(custom_ports, "status.sidecar.istio.io/port", "15120")
    write("kube-injected-custom-status-port-native", request(custom_ports))

    # A proxy with its own lifecycle (holdApplicationUntilProxyStarts) keeps
    # it; one without a readinessProbe gets no startupProbe (Istio writes
    # both or neither).
    held = fixture("istio-job-kube-injected-classic.yaml")
    proxy = next(c for c in template(held)["spec"]["containers"] if c["name"] == "istio-proxy")
    proxy["lifecycle"] = {"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}
    del proxy["readinessProbe"]
    del proxy["startupProbe"]
    write("kube-injected-lifecycle-no-probes-native", request(held))

    # Injection customization: a partial istio-proxy, no status: not a proxy.
    custom = job()
    template(custom)["spec"]["containers"].append(
        {"name": "istio-proxy", "image": "auto", "resources": {"limits": {"memory": "256Mi"}}}
    )
    write("customization-partial-proxy-not-moved", request(custom))

    # proxy.istio.io/config forms.
    write(
        "cronjob-yaml-proxy-config-exit",
        request(
            annotate(
                cronjob(),
                "proxy.istio.io/config",
                "holdApplicationUntilProxyStarts: true\ntracing:\n  sampling: 10\n  zipkin:\n    address: zipkin.istio-system:9411\n",
            )
        ),
        EXIT,
    )
    write(
        "job-json-proxy-config-exit",
        request(
            annotate(
                job(),
                "proxy.istio.io/config",
                '{"holdApplicationUntilProxyStarts": true, "proxyMetadata": {"ISTIO_META_DNS_CAPTURE": "true"}}',
            )
        ),
        EXIT,
    )
    write(
        "proxy-config-key-present-unchanged",
        request(annotate(job(), "proxy.istio.io/config", "exitOnJobCompletion: false\n")),
        EXIT,
    )
    write(
        "proxy-config-not-mapping-warns",
        request(annotate(job(), "proxy.istio.io/config", "- holdApplicationUntilProxyStarts\n")),
        EXIT,
    )

    # Odd shapes and fields this crate does not know.
    odd = job()
    template(odd)["spec"]["containers"] = "pi"
    write("wrong-shape-containers-warns", request(odd))
    odd = job()
    template(odd)["metadata"]["annotations"] = ["not", "a", "map"]
    write("wrong-shape-annotations-warns", request(odd), EXIT)
    future = job()
    future["spec"]["futureJobField"] = {"enabled": True}
    future["spec"]["template"]["metadata"]["futureMetaField"] = 7
    future["spec"]["template"]["spec"]["futurePodField"] = [1.50, 2e3, {"x": None}]
    future["spec"]["template"]["spec"]["containers"][0]["futureContainerField"] = "keep me"
    future["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-claim"}]
    write("future-fields-kept", request(future))

    # quitEndpoint: the app container's command is wrapped.
    write("quit-job", request(job()), QUIT)
    cron = cronjob()
    hello = template(cron)["spec"]["containers"][0]
    hello["command"] = hello["args"][:2]
    hello["args"] = hello["args"][2:] + ["$(POD_NAME)", "$$(NOT_EXPANDED)", "cost: $$5"]
    hello["env"] = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    write("quit-cronjob-with-args", request(cron, "UPDATE", old=cronjob()), QUIT)
    write("quit-pod-never", request(pod("Never")), QUIT)
    write("quit-pod-onfailure", request(pod("OnFailure")), QUIT)
    write("quit-no-command-warns", request(cronjob()), QUIT)
    several = job()
    template(several)["spec"]["containers"].append(
        {"name": "uploader", "image": "registry.example/upload:2", "command": ["/upload", "--wait"]}
    )
    write("quit-several-containers-warns", request(several), QUIT)
    write("quit-kube-injected-job", request(fixture("istio-job-kube-injected-classic.yaml")), QUIT)
    write(
        "quit-kube-injected-native-wrapped",
        request(fixture("istio-job-kube-injected-native.yaml")),
        QUIT,
    )
    wrapped = job()
    pi = template(wrapped)["spec"]["containers"][0]
    pi["command"] = ["/bin/sh", "-c", QUIT_SCRIPT, "istio-job-sidecar-quit",
                     "http://127.0.0.1:15020/quitquitquit", "always"] + pi["command"]
    legacy = copy.deepcopy(wrapped)
    annotate(wrapped, "istio-job-sidecar/applied", '{"mode":"quitEndpoint","container":"pi"}')
    write("quit-already-wrapped-unchanged", request(wrapped), QUIT)
    # Reversible modes: the quit-wrapped mark of 0.1.0 is read as a record and replaced.
    annotate(legacy, "istio-job-sidecar/quit-wrapped", "pi")
    write("quit-legacy-mark-replaced", request(legacy), QUIT)
    # Each wrapper text an earlier version wrote is still the policy's own:
    # brought up to date (never wrapped twice), taken back by another mode,
    # taken off when a second app container comes.
    for name, script in OLDER_QUIT_SCRIPTS:
        older = quit_wrapped(cronjob_with_command(), script)
        write("quit-older-wrapper-%s-refreshed" % name, request(older, "UPDATE", old=older), QUIT)
        write("quit-older-wrapper-%s-taken-back" % name, request(older, "UPDATE", old=older))
        write("quit-older-wrapper-%s-taken-back-exit" % name, request(older, "UPDATE", old=older), EXIT)
        several = copy.deepcopy(older)
        template(several)["spec"]["containers"].append(
            {"name": "uploader", "image": "registry.example/upload:2", "command": ["/upload", "--wait"]}
        )
        write("quit-older-wrapper-%s-several-taken-off" % name, request(several, "UPDATE", old=older), QUIT)
    # pilot-agent serves /quitquitquit on the pod's status port; "0" turns
    # its status server off, and nothing can end the proxy this way.
    write(
        "quit-status-port-job",
        request(annotate(job(), "status.sidecar.istio.io/port", "15120")),
        QUIT,
    )
    made = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "report-29420000", "namespace": "batch",
                     "annotations": {"status.sidecar.istio.io/port": "15320"}},
        "spec": copy.deepcopy(job()["spec"]),
    }
    write("quit-status-port-on-the-jobs-own-metadata", request(made, namespace="batch"), QUIT)
    write(
        "quit-status-port-zero-warns",
        request(annotate(job(), "status.sidecar.istio.io/port", "0")),
        QUIT,
    )
    zero = annotate(quit_wrapped(cronjob_with_command(), QUIT_SCRIPT), "status.sidecar.istio.io/port", "0")
    write("quit-status-port-zero-wrapper-taken-off", request(zero, "UPDATE", old=zero), QUIT)
    write(
        "quit-workload-annotation",
        request(annotate(job(), "istio-job-sidecar/mode", "quitEndpoint")),
    )
    write("quit-job-update-unchanged", request(job(), "UPDATE", old=job()), QUIT)
    # Injection read as Istio reads it: the label when present (even empty),
    # the exact "false" only, never a Pod on the host's network.
    write(
        "injection-empty-label-wins-wrapped",
        request(annotate(label(job(), "sidecar.istio.io/inject", ""), "sidecar.istio.io/inject", "false")),
        QUIT,
    )
    write(
        "injection-label-capital-false-wrapped",
        request(label(job(), "sidecar.istio.io/inject", "False")),
        QUIT,
    )
    host = job()
    template(host)["spec"]["hostNetwork"] = True
    write("quit-host-network-unchanged", request(host), QUIT)
    # The owner's word carried down to the template.
    write(
        "workload-mode-on-cronjob-metadata",
        request(annotate(cronjob(), "istio-job-sidecar/mode", "disabled", on_template=False)),
        QUIT,
    )
    stale = annotate(cronjob(), "istio-job-sidecar/owner-mode", "disabled")
    write("workload-owner-mode-removed-with-the-owners", request(stale, "UPDATE", old=stale), QUIT)
    # A Job the CronJob controller made from a kube-injected CronJob: the
    # injection status on the Job's own metadata (spec.jobTemplate.metadata).
    injected = fixture("istio-cronjob-old-version.yaml.injected")
    made = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": dict(copy.deepcopy(injected["spec"]["jobTemplate"]["metadata"]),
                         name="hellocron-29420000", namespace="batch"),
        "spec": copy.deepcopy(injected["spec"]["jobTemplate"]["spec"]),
    }
    made["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] = "2025-12-08T13:20:00Z"
    write("kube-injected-cronjobs-job-native", request(made, namespace="batch"))
    write(
        "kube-injected-native-false-respected",
        request(annotate(fixture("istio-job-kube-injected-classic.yaml"), "sidecar.istio.io/nativeSidecar", "false")),
    )
    releases_and_reinjection()


def native_proxy():
    """The proxy of Istio's native kube-inject output (an init container)."""
    native = fixture("istio-job-kube-injected-native.yaml")
    return copy.deepcopy(
        next(c for c in template(native)["spec"]["initContainers"] if c["name"] == "istio-proxy")
    )


def injected_pod(twice=False):
    """A Pod of Istio's classic kube-injected Job as the Job controller makes
    it, seen after Istio's webhook (Kubewarden >= 1.37.2). With `twice`, its
    template had the proxy native and the webhook rendered it classic again:
    Istio merges onto the Pod as it came, so it is in both lists."""
    job = fixture("istio-job-kube-injected-classic.yaml")
    t = copy.deepcopy(template(job))
    p = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": dict(t["metadata"], generateName="pi-", namespace="default"),
        "spec": t["spec"],
    }
    if twice:
        p["spec"]["initContainers"].insert(1, native_proxy())
    return p


def releases_and_reinjection():
    """What Istio's releases read differently, its re-injection, and the
    order of the native form (docs/facts.md, "The journey of a workload")."""
    # sidecar.istio.io/nativeSidecar: 1.24-1.26 render native only for the
    # exact "true"; a user's other opt-in is made exact (and recorded).
    for case, value in [("capital-true", "True"), ("yes", "yes"), ("empty", "")]:
        write(
            "native-annotation-%s-made-exact" % case,
            request(annotate(job(), "sidecar.istio.io/nativeSidecar", value)),
        )
    # Istio never injects these namespaces: nothing to wrap; a proxy
    # kube-injected there is moved all the same.
    write("kube-system-job-quit-unchanged", request(job(), namespace="kube-system"), QUIT)
    write(
        "kube-system-kube-injected-native",
        request(fixture("istio-job-kube-injected-classic.yaml"), namespace="kube-system"),
    )
    # The native form's order: Istio's init containers, the proxy, the rest.
    own_init = fixture("istio-job-kube-injected-classic.yaml")
    spec = template(own_init)["spec"]
    spec["initContainers"].insert(0, {"name": "db-migrate", "image": "migrate:3", "command": ["migrate", "up"]})
    write("kube-injected-own-init-container-native", request(own_init))
    # Beside a proxy Istio injected natively the other modes ask for the
    # native form too; a user's "false" there is warned about.
    write("exit-kube-injected-native-annotated", request(fixture("istio-job-kube-injected-native.yaml")), EXIT)
    write(
        "quit-kube-injected-native-false-warns",
        request(annotate(fixture("istio-job-kube-injected-native.yaml"), "sidecar.istio.io/nativeSidecar", "false")),
        QUIT,
    )
    # A Pod seen after Istio's injector: moved; with the proxy twice, one kept.
    write("pod-injected-classic-native", request(injected_pod()))
    for settings, mode in [({}, "native"), (EXIT, "exit"), (QUIT, "quit")]:
        write("pod-proxy-twice-%s" % mode, request(injected_pod(twice=True)), settings)
    write(
        "pod-proxy-twice-disabled",
        request(annotate(injected_pod(twice=True), "istio-job-sidecar/mode", "disabled")),
    )
    write(
        "pod-proxy-twice-user-true",
        request(annotate(injected_pod(twice=True), "sidecar.istio.io/nativeSidecar", "True")),
        QUIT,
    )
    # Istio >= 1.27 renders "True" native but moves a classic proxy only for
    # the exact "true": the native rendering beside the kube-injected classic
    # one, the status naming the native one, which is kept.
    quirk = injected_pod()
    quirk["spec"]["initContainers"].insert(1, native_proxy())
    native_status = fixture("istio-job-kube-injected-native.yaml")["spec"]["template"]["metadata"][
        "annotations"]["sidecar.istio.io/status"]
    quirk["metadata"]["annotations"]["sidecar.istio.io/status"] = native_status
    annotate(quirk, "sidecar.istio.io/nativeSidecar", "True")
    write("pod-native-rendered-beside-classic", request(quirk), EXIT)


# --- Mode changes (reversible modes) -----------------------------------------

MODES = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint"]
DISABLED = "disabled"
MODE_KEY = "istio-job-sidecar/mode"
RECORD_KEY = "istio-job-sidecar/applied"

# A command and args full of what quoting gets wrong: both quotes, a
# backslash, Kubernetes' $(VAR) and $$, spaces, newlines, an empty element.
QUOTING_SCRIPT = (
    "set -eu\n"
    "printf '%s\\n' \"it's $1\" 'say \"hi\"' \"C:\\\\temp\\\\new\" \"cost: $$5\" \\\n"
    "  \"$(POD_NAME)\" '$$(NOT_EXPANDED)'\n"
    "echo \"done: $*\" >&2\n"
)
QUOTING_ARGS = [
    "$(POD_NAME)",
    "$$(NOT_EXPANDED)",
    "cost: $$5",
    "two  words",
    "it's \"quoted\" \\ back\\slash",
    "line one\nline two",
    "",
    "--flag='a b'",
    "\\",
    "tab\there \u00fcn\u00efcode \u2713",
]

# proxy.istio.io/config as a YAML block (a comment, quoted scalars, a
# literal block last; the final line break a `|` annotation in a manifest
# has: without it the policy refuses to add a line after the literal, whose
# value would gain a line break) and as JSON.
YAML_PROXY_CONFIG = (
    "# platform defaults: keep\n"
    "holdApplicationUntilProxyStarts: true\n"
    "proxyMetadata:\n"
    "  ISTIO_META_DNS_CAPTURE: \"true\"\n"
    "  GREETING: 'it''s \"quoted\" \\ $$ok'\n"
    "tracing:\n"
    "  sampling: 10\n"
    "  note: |\n"
    "    line one\n"
    "    line two\n"
)
JSON_PROXY_CONFIG = (
    '{"holdApplicationUntilProxyStarts": true, '
    '"proxyMetadata": {"ISTIO_META_DNS_CAPTURE": "true", '
    '"GREETING": "it\'s \\"quoted\\" \\\\ $(ok)"}}'
)


def quoting(obj):
    """obj with the quoting command and args on its one app container."""
    app = next(c for c in template(obj)["spec"]["containers"] if c["name"] != "istio-proxy")
    app["command"] = ["/bin/sh", "-c", QUOTING_SCRIPT, "report"]
    app["args"] = list(QUOTING_ARGS)
    app.setdefault("env", []).append(
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    )
    return obj


def quoting_cronjob(proxy_config=None):
    c = quoting(cronjob())
    if proxy_config is not None:
        annotate(c, "proxy.istio.io/config", proxy_config)
    return c


def injected_cronjob():
    """istioctl kube-inject of a CronJob, the proxy a classic container."""
    c = quoting(fixture("istio-cronjob-old-version.yaml.injected"))
    c["metadata"]["namespace"] = "batch"
    return c


def injected_cronjob_with_init():
    """The kube-injected CronJob with an init container of its own, which
    Istio's classic form runs before istio-init."""
    c = injected_cronjob()
    spec = template(c)["spec"]
    spec["initContainers"].insert(0, {"name": "db-migrate", "image": "migrate:3", "command": ["migrate", "up"]})
    return c


def by_settings(x):
    """A variant whose mode is the cluster's (settings); disabled is the
    user's `istio-job-sidecar/mode: disabled` on the CronJob."""

    def pick(mode):
        obj = copy.deepcopy(x)
        if mode == DISABLED:
            annotate(obj, MODE_KEY, DISABLED, on_template=False)
        return obj

    def settings(mode, before):
        # disabled is the workload's word: the cluster's mode stays as it was
        return {"mode": before if mode == DISABLED else mode}

    return pick, settings


def by_annotation(x):
    """A variant whose team flips `istio-job-sidecar/mode` on the template."""

    def pick(mode):
        return annotate(copy.deepcopy(x), MODE_KEY, mode)

    def settings(mode, before):
        return {}

    return pick, settings


# variant: (x, how a mode is picked, the second passes made)
ALL_PAIRS = [(a, b) for a in MODES for b in MODES + [DISABLED]]
VARIANTS = {
    # no proxy config
    "plain": (quoting_cronjob(), by_settings, ALL_PAIRS),
    "yaml": (quoting_cronjob(YAML_PROXY_CONFIG), by_settings, ALL_PAIRS),
    "json": (quoting_cronjob(JSON_PROXY_CONFIG), by_settings, ALL_PAIRS),
    # the move of nativeSidecar, taken back by the other modes
    "injected": (injected_cronjob(), by_settings, ALL_PAIRS),
    # the move puts istio-init first; taken back, it goes back last
    "ordered": (injected_cronjob_with_init(), by_settings, ALL_PAIRS),
    # a user's "yes", made the exact "true" and given back
    "asked": (annotate(quoting_cronjob(), "sidecar.istio.io/nativeSidecar", "yes"), by_settings, ALL_PAIRS),
    "flip": (
        quoting_cronjob(JSON_PROXY_CONFIG),
        by_annotation,
        [
            ("quitEndpoint", "exitOnJobCompletion"),
            ("exitOnJobCompletion", "nativeSidecar"),
            ("nativeSidecar", "quitEndpoint"),
            ("quitEndpoint", DISABLED),
        ],
    ),
}


def mode_annotation(obj, on_template):
    target = template(obj) if on_template else obj
    return target.get("metadata", {}).get("annotations", {}).get(MODE_KEY)


def first_pass_result(case):
    """mutatedObject of a case's expected.json (None: not written yet)."""
    if LISTING:
        return {}  # the second passes are listed whether written yet or not
    path = os.path.join(CASES, case, "expected.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        expected = json.load(f)
    if expected.get("mutatedObject") is None:
        # stale (run `make golden`), or the policy really mutates nothing
        print("%s: the first pass mutated nothing: its second passes not written" % case)
    return expected.get("mutatedObject")


def update(after, settings, case, edit=None):
    """The CronJob UPDATE of `after` (oldObject too), `edit` made to the
    object only; False when `after` is not there yet."""
    if after is None:
        return False
    if LISTING:
        write(case, None)
        return True
    obj = copy.deepcopy(after)
    if edit:
        edit(obj)
    write(case, request(obj, "UPDATE", old=after, namespace="batch"), settings)
    return True


def mode_changes():
    """Returns how many second passes wait for a first pass's expected.json."""
    waiting = 0
    for variant, (x, how, pairs) in VARIANTS.items():
        pick, settings = how(x)
        for mode in MODES + [DISABLED]:
            write(
                "mode-change-%s-%s" % (variant, mode),
                request(pick(mode), namespace="batch"),
                settings(mode, "nativeSidecar"),
            )
        for a, b in pairs:
            after = first_pass_result("mode-change-%s-%s" % (variant, a))
            if after is None:
                waiting += 1
                continue
            # the user's edit between the passes: what picks b
            x_a, x_b = pick(a), pick(b)

            def edit(obj, x_a=x_a, x_b=x_b):
                for on_template in (False, True):
                    was, now = (mode_annotation(o, on_template) for o in (x_a, x_b))
                    if was != now:
                        annotate(obj, MODE_KEY, now, on_template=on_template)

            update(after, settings(b, a), "mode-change-%s-%s-then-%s" % (variant, a, b), edit)

    # Records the policy cannot trust, and the mark of earlier versions, on
    # the quitEndpoint result of the plain CronJob, updated under nativeSidecar.
    quit = first_pass_result("mode-change-plain-quitEndpoint")
    native = {"mode": "nativeSidecar"}

    def unreadable(obj):
        template(obj)["metadata"]["annotations"][RECORD_KEY] = "garbage"

    def command_replaced(obj):
        template(obj)["spec"]["containers"][0]["command"] = ["/bin/report", "--since", "it's $(DAY)"]

    # A server-side apply by a tool that owns `command` writes the original
    # back and leaves the record, which it does not own, as stored.
    def command_written_back(obj):
        original = template(VARIANTS["plain"][0])["spec"]["containers"][0]["command"]
        template(obj)["spec"]["containers"][0]["command"] = copy.deepcopy(original)

    def legacy_mark(obj):
        annotations = template(obj)["metadata"]["annotations"]
        container = json.loads(annotations.pop(RECORD_KEY))["container"]
        annotations["istio-job-sidecar/quit-wrapped"] = container

    # A re-apply (kubectl apply or server-side apply) of the kube-injected
    # CronJob whose proxy the policy moved brings the classic proxy and
    # Istio's status back beside the moved proxy, which neither applier
    # owns: the policy resolves it to one, and the apply lands.
    moved = first_pass_result("mode-change-injected-nativeSidecar")

    def reapplied(obj):
        x = VARIANTS["injected"][0]
        spec = template(obj)["spec"]
        spec["containers"] = copy.deepcopy(template(x)["spec"]["containers"])
        status = x["spec"]["jobTemplate"]["metadata"]["annotations"]["sidecar.istio.io/status"]
        obj["spec"]["jobTemplate"]["metadata"]["annotations"]["sidecar.istio.io/status"] = status

    for mode, settings in [("native", native), ("quit", QUIT)]:
        if moved is None:
            waiting += 1
            continue
        update(moved, settings, "gitops-reapplied-moved-proxy-%s" % mode, reapplied)
    if moved is None:
        waiting += 1
    else:
        def reapplied_disabled(obj):
            reapplied(obj)
            annotate(obj, MODE_KEY, DISABLED, on_template=False)

        update(moved, native, "gitops-reapplied-moved-proxy-disabled", reapplied_disabled)

    for case, edit in [
        ("mode-change-unreadable-record-warns", unreadable),
        ("mode-change-command-replaced-record-goes", command_replaced),
        ("mode-change-command-written-back-record-goes", command_written_back),
        ("mode-change-legacy-mark-undone", legacy_mark),
    ]:
        if quit is None:
            waiting += 1
            continue
        update(quit, native, case, edit)
    return waiting


if __name__ == "__main__":
    main()
    waiting = mode_changes()
    if LISTING:
        print("\n".join(LISTED))
    elif waiting:
        print(
            "%d second-pass cases wait for their first pass: `make golden` "
            "writes them (it runs this script twice)" % waiting
        )
