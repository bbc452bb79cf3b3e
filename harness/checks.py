"""The checks `server.bats` and `webhooks.bats` run: the golden cases and the
examples through a real policy-server, the settings errors an operator
sees, and the selection tables of the examples' webhooks.

Each check prints one line per item and returns the list of failures.
"""
import base64
import copy
import glob
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import yaml

from . import apiserver, controller, requests
from .json_patch import apply as apply_patch
from .policy_server import PolicyServer, StartFailed

ROOT = Path(__file__).resolve().parent.parent

BASE_EXAMPLE = ROOT / "examples" / "native-sidecar.yaml"


def load_json(path):
    with open(path) as f:
        return json.load(f)


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# --- the golden cases ----------------------------------------------------------

def cases(cases_dir):
    """Every case directory with a request.json, found now (others add cases)."""
    found = sorted(Path(p).parent for p in glob.glob(os.path.join(str(cases_dir), "*", "request.json")))
    if not found:
        raise ValueError("no case in %s" % cases_dir)
    return found


def case_settings(case_dir):
    path = case_dir / "settings.json"
    if not path.exists() or not path.read_text().strip():
        return None
    return load_json(path)


def derived_policy(name, settings, module, mode="protect", base=BASE_EXAMPLE):
    """The first policy of examples/native-sidecar.yaml renamed, with these
    settings, module and mode: a policy a user could apply."""
    policy = controller.load(base)[0]
    policy["metadata"]["name"] = name
    policy["spec"]["module"] = module
    policy["spec"]["mode"] = mode
    if settings is None:
        policy["spec"].pop("settings", None)
    else:
        policy["spec"]["settings"] = settings
    return policy


def case_policies(cases_dir, registry_module, file_module):
    """One policy per distinct settings of the cases, three times: protect
    with the registry's module, protect with the local file, monitor with the
    registry's. Returns (policies, {case name: {variant: policy id}})."""
    by_settings = {}
    for case in cases(cases_dir):
        by_settings.setdefault(canonical(case_settings(case)), []).append(case.name)
    policies, entries = [], {}
    for i, key in enumerate(sorted(by_settings)):
        settings = json.loads(key)
        base = "istio-job-sidecar-settings-%d" % i
        variants = {
            "registry": derived_policy(base, settings, registry_module),
            "file": derived_policy(base + "-file", settings, file_module),
            "monitor": derived_policy(base + "-monitor", settings, registry_module, mode="monitor"),
        }
        policies += variants.values()
        for name in by_settings[key]:
            entries[name] = {v: controller.unique_name(p) for v, p in variants.items()}
    return policies, entries


def decoded_patch(response):
    return json.loads(base64.b64decode(response["patch"]))


def response_problems(request, status, body, expected=None, monitor=False):
    """What is wrong with policy-server's answer to `request`; `expected` is
    the golden expected.json (None: not compared to one)."""
    problems = []
    if status != 200:
        return ["HTTP %s: %s" % (status, body)]
    if body.get("kind") != "AdmissionReview" or body.get("apiVersion") != "admission.k8s.io/v1":
        problems.append("not an AdmissionReview v1: %s %s" % (body.get("apiVersion"), body.get("kind")))
    response = body.get("response") or {}
    if response.get("uid") != request["uid"]:
        problems.append("uid %r, sent %r" % (response.get("uid"), request["uid"]))
    if response.get("allowed") is not True:
        problems.append("not allowed: %s" % response.get("status"))
    patch = response.get("patch")
    if (patch is None) != (response.get("patchType") is None):
        problems.append("patch %r with patchType %r" % (patch, response.get("patchType")))
    if patch is not None and response.get("patchType") != "JSONPatch":
        problems.append("patchType %r" % response.get("patchType"))
    if monitor and patch is not None:
        problems.append("monitor mode, yet a patch")
    if expected is None:
        return problems
    warnings = response.get("warnings") or []
    if warnings != expected["warnings"]:
        problems.append("warnings %s, golden %s" % (warnings, expected["warnings"]))
    if monitor:
        return problems
    want = expected["mutatedObject"]
    if want is None:
        if patch is not None:
            problems.append("patched (%s), golden: no patch" % canonical(decoded_patch(response)))
    elif patch is None:
        problems.append("no patch, golden mutatedObject is not null")
    else:
        got = apply_patch(request["object"], decoded_patch(response))
        if got != want:
            problems.append("patched object differs from the golden mutatedObject:\n  got  %s\n  want %s"
                            % (canonical(got), canonical(want)))
    return problems


def check_cases(server, cases_dir, entries, variant):
    """Every case through its policy id of `variant` (registry, file,
    monitor). The file variant must answer as the registry one, to the byte
    of the patch."""
    failures = []
    for case in cases(cases_dir):
        if case.name not in entries:
            failures.append("%s: no policy for its settings (the server predates the case)" % case.name)
            continue
        request = apiserver.admission_request(load_json(case / "request.json"))
        review = apiserver.admission_review(request)
        expected = load_json(case / "expected.json")
        path = "/validate/%s?timeout=10s" % entries[case.name][variant]
        status, body = server_post(server, path, review)
        problems = response_problems(request, status, body, expected, monitor=(variant == "monitor"))
        if variant == "file" and not problems:
            _, registry = server_post(server, "/validate/%s?timeout=10s" % entries[case.name]["registry"], review)
            if registry.get("response") != body.get("response"):
                problems.append("answer differs from the registry module's: %s vs %s"
                                % (canonical(body.get("response")), canonical(registry.get("response"))))
        response = body.get("response") or {}
        print("%s %s: %s" % ("ok  " if not problems else "FAIL", case.name,
                             "patch" if response.get("patch") else "no patch")
              + ("" if not response.get("warnings") else ", warnings %s" % response["warnings"]))
        failures += ["%s (%s): %s" % (case.name, variant, p) for p in problems]
    return failures


def server_post(server, path, body):
    from .policy_server import post_json

    return post_json(server["url"] + path, body, server["cafile"])


# --- the examples ----------------------------------------------------------------

def with_inject_label(request):
    """The request with `sidecar.istio.io/inject: "true"` on its pod
    template (a Pod's own labels): a workload Istio injects in a namespace
    without the istio-injection label."""
    request = copy.deepcopy(request)
    obj = request["object"]
    kind = request["kind"]["kind"]
    target = obj if kind == "Pod" else (obj["spec"]["jobTemplate"]["spec"]["template"] if kind == "CronJob"
                                        else obj["spec"]["template"])
    target.setdefault("metadata", {}).setdefault("labels", {})["sidecar.istio.io/inject"] = "true"
    return request


def sent_variant(webhook, request):
    """(request, namespace labels) the webhook sends: the request as it is
    or labelled for injection, in a namespace its selector opts in."""
    labels = apiserver.matching_labels(webhook.webhook["namespaceSelector"])
    labels.pop("kubernetes.io/metadata.name", None)
    for candidate in (request, with_inject_label(request)):
        verdict, why = webhook.decide(candidate, labels)
        if verdict == "sent":
            return candidate, labels
    raise ValueError("the webhook sends neither the request nor its labelled variant: %s" % why)


def kwctl_response(kwctl, request, settings, module, sources=None, workdir=".", extra=(), name="kwctl-request.json"):
    path = Path(workdir) / name
    path.write_text(json.dumps(request))
    cmd = [kwctl, "run", "--request-path", str(path), "--settings-json", json.dumps(settings or {}), *extra]
    if sources:
        cmd += ["--sources-path", str(sources)]
    out = subprocess.run(cmd + [module], capture_output=True, text=True, env=dict(os.environ, RUST_BACKTRACE="0"))
    lines = [line for line in out.stdout.splitlines() if '"allowed"' in line]
    if out.returncode != 0 or not lines:
        raise RuntimeError("kwctl run failed (%d): %s%s" % (out.returncode, out.stdout, out.stderr))
    return json.loads(lines[-1])


def same_answer(got, want):
    """How policy-server's answer `got` differs from kwctl run's `want`."""
    problems = ["%s %r, kwctl run %r" % (key, got.get(key), want.get(key))
                for key in ("allowed", "patchType", "patch") if got.get(key) != want.get(key)]
    if (got.get("warnings") or []) != (want.get("warnings") or []):
        problems.append("warnings %s, kwctl run %s" % (got.get("warnings"), want.get("warnings")))
    return problems


def check_example(example, registry_module, insecure_source, workdir, kwctl, local_module, requests):
    """examples/<file> as the controller deploys it: its policies.yml (the
    module at the test registry), policy-server started on it; each policy
    answers a Job and a Pod its webhook sends as `kwctl run` of the local
    module with the policy's settings does."""
    failures = []
    policies = controller.load(example)
    text = controller.policies_yml(policies, module=registry_module)
    server = PolicyServer(Path(workdir) / Path(example).stem, text, insecure_sources=[insecure_source])
    try:
        server.start()
    except StartFailed as e:
        return ["%s: %s\n%s" % (example, e, e.log)]
    try:
        info = {"url": server.base_url, "cafile": server.cafile}
        for policy in policies:
            mwc = controller.webhook_configuration(policy)
            webhook = apiserver.Webhook(mwc["webhooks"][0])
            url_path = apiserver.webhook_url("", mwc["webhooks"][0])
            for request_file in requests:
                base = apiserver.admission_request(load_json(request_file))
                request, labels = sent_variant(webhook, base)
                status, body = server_post(info, url_path, apiserver.admission_review(request))
                problems = response_problems(request, status, body)
                if not problems:
                    want = kwctl_response(kwctl, request, policy["spec"].get("settings"), local_module,
                                          workdir=server.dir)
                    problems += same_answer(body["response"], want)
                print("%s %s %s on %s %s (namespace labels %s): %s" % (
                    "ok  " if not problems else "FAIL", example, mwc["metadata"]["name"],
                    request["kind"]["kind"], Path(request_file).parent.name, labels,
                    "patch" if (body.get("response") or {}).get("patch") else "no patch"))
                failures += ["%s %s %s: %s" % (example, policy["metadata"]["name"], Path(request_file).parent.name, p)
                             for p in problems]
    finally:
        server.stop()
    return failures


# --- nodeVersionCheck: the Nodes served by an API server ----------------------------

NODE_EXAMPLE = ROOT / "examples" / "native-sidecar-node-check.yaml"

# (Node list of test_data/nodes/, request case, the Pod's spec.nodeName,
# what the answer must be besides kwctl's). In this order, on one
# policy-server: the Node list changes between steps as a cluster's does,
# by watch events.
NATIVE = '"sidecar.istio.io/nativeSidecar":"true"'
NODE_STEPS = [
    ("all-1.33", "job-create-native", None, "native"),
    ("all-1.33", "pod-never-native", None, "native"),
    # a node pool of kubelet 1.32 joins
    ("one-1.32", "job-create-native", None, "fallback"),
    ("one-1.32", "pod-never-native", None, "fallback"),
    # Istio's rule: a Pod that names its Node is that Node's alone
    ("one-1.32", "pod-never-native", "pool-a-1", "native"),
    ("one-1.32", "pod-never-native", "pool-old-1", "fallback"),
    # the old pool drained and deleted
    ("all-1.33", "job-create-native", None, "native"),
]
OLD_NODE_WARNING = "node pool-old-1 runs kubelet v1.32.9 (< 1.33); used quitEndpoint"


def node_step_problems(want, response):
    """What the answer must be whatever kwctl says: the native form with no
    warning, or the fallback (quitEndpoint) naming the old Node."""
    patch = json.dumps(decoded_patch(response), separators=(",", ":")) if response.get("patch") else ""
    warnings = response.get("warnings") or []
    if want == "native":
        ok = NATIVE in patch and not warnings
    else:
        ok = "istio-job-sidecar-quit" in patch and NATIVE not in patch and \
            any(OLD_NODE_WARNING in w for w in warnings)
    return [] if ok else ["not the %s answer: warnings %s, patch %s" % (want, warnings, patch or None)]


def step_request(case, node_name):
    request = apiserver.admission_request(load_json(ROOT / "test_data" / "cases" / case / "request.json"))
    if node_name:
        request["object"]["spec"]["nodeName"] = node_name
    return request


def check_nodes(registry_module, insecure_source, workdir, kwctl, local_module, nodes_dir, example=NODE_EXAMPLE,
                unauthorized_seconds=0.0, settle_seconds=10.0):
    """examples/native-sidecar-node-check.yaml on one policy-server whose
    Kubernetes API (harness/kube_api.py, named by a kubeconfig) serves the
    Node lists of `nodes_dir` in turn (NODE_STEPS): each answer as
    `kwctl run --replay-host-capabilities-interactions` of the same list
    gives it. With `unauthorized_seconds`, the API server first answers 403
    to listing Nodes (a service account without the RBAC grant): no answer
    may come in that time; then the grant is given (`forbidden_phase`)."""
    from concurrent.futures import ThreadPoolExecutor

    from . import kube_api
    from .policy_server import make_tls, post_json

    failures = []
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    policies = controller.load(example)
    policy = policies[0]
    settings = policy["spec"].get("settings")
    lists = {name: kube_api.recorded_nodes(Path(nodes_dir) / ("%s.yml" % name)) for name in {s[0] for s in NODE_STEPS}}
    mwc = controller.webhook_configuration(policy)
    webhook = apiserver.Webhook(mwc["webhooks"][0])
    url_path = apiserver.webhook_url("", mwc["webhooks"][0])
    sent = {}
    for _nodes, case, node_name, _ in NODE_STEPS:
        sent[(case, node_name)] = sent_variant(webhook, step_request(case, node_name))

    def replay(key):
        nodes, case, node_name = key
        request = sent[(case, node_name or None)][0]
        return kwctl_response(kwctl, request, settings, local_module, workdir=work,
                              extra=["--allow-context-aware", "--replay-host-capabilities-interactions",
                                     str(Path(nodes_dir) / ("%s.yml" % nodes))],
                              name="kwctl-%s-%s-%s.json" % key)

    began = time.monotonic()
    keys = sorted({(n, c, node_name or "") for n, c, node_name, _ in NODE_STEPS})
    pool = ThreadPoolExecutor(max_workers=2)
    replays = {k: pool.submit(replay, k) for k in keys}

    ca, crt, key = make_tls(work / "kube-api-tls", common_name="kubernetes.default.svc")
    first = NODE_STEPS[0][0]
    api = kube_api.KubeAPI(crt, key, *lists[first], forbid=("list", "watch") if unauthorized_seconds else ())
    api.start()
    config = kube_api.kubeconfig(api.url, ca, api.token, work / "kubeconfig")
    server = PolicyServer(work / "policy-server", controller.policies_yml(policies, module=registry_module),
                          insecure_sources=[insecure_source], kubeconfig=config)
    try:
        try:
            server.start()
        except StartFailed as e:
            return ["%s: %s\n%s" % (example, e, e.log)]
        print("policy-server %s ready after %.1f s, KUBECONFIG %s: the API server at %s"
              % (server.base_url, time.monotonic() - began, config, api.url))

        def post(request, timeout=30):
            return post_json(server.base_url + url_path, apiserver.admission_review(request), server.cafile,
                             timeout=timeout)

        if unauthorized_seconds:
            failures += forbidden_phase(api, post, sent[("job-create-native", None)][0],
                                        replays[(first, "job-create-native", "")], unauthorized_seconds,
                                        settle_seconds)

        current, waited_for_kwctl, changed_at = first, False, None
        for nodes, case, node_name, want_kind in NODE_STEPS:
            request = sent[(case, node_name)][0]
            want = replays[(nodes, case, node_name or "")].result()
            if not waited_for_kwctl:
                waited_for_kwctl = [f.result() for f in replays.values()]
                print("     kwctl's replays done after %.1f s" % (time.monotonic() - began))
            waited = 0.0
            if nodes != current:
                if changed_at is None:
                    changed_at = len(api.requests)
                events = api.set_nodes(lists[nodes][0])
                current = nodes
                # The reflector applies watch events as they come: the
                # answer follows within a moment, not at once.
                deadline = time.monotonic() + settle_seconds
                start = time.monotonic()
                while True:
                    status, body = post(request)
                    got = (body.get("response") or {}) if status == 200 else {}
                    if not same_answer(got, want) or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                waited = time.monotonic() - start
                print("     Nodes now %s: %s over the watch" % (nodes, ", ".join(
                    "%s %s" % (kind, obj["metadata"]["name"]) for _, kind, obj in events)))
            status, body = post(request)
            problems = response_problems(request, status, body)
            if not problems:
                got = body["response"]
                problems = same_answer(got, want) + node_step_problems(want_kind, got)
            print("%s %s %s%s on Nodes %s: %s%s" % (
                "ok  " if not problems else "FAIL", request["kind"]["kind"], case,
                " (spec.nodeName %s)" % node_name if node_name else "", nodes, want_kind,
                ", kwctl's %.2f s after the change" % waited if waited else ""))
            failures += ["%s %s%s on Nodes %s: %s" % (
                case, request["kind"]["kind"], " (spec.nodeName %s)" % node_name if node_name else "", nodes, p)
                for p in problems]
        failures += api_call_problems(api.requests, lists[first][1], changed_at)
        failures += ["the fake API server failed: %s" % e for e in api.errors]
        print("     %.1f s in all" % (time.monotonic() - began))
    finally:
        server.stop()
        api.stop()
        pool.shutdown(wait=True)
    return failures


INTERRUPTED = "Policy execution interrupted because it exceeded the allowed execution time"


def forbidden_phase(api, post, request, want, seconds, settle_seconds):
    """policy-server's service account not allowed to list Nodes (403): a
    request gets no answer in `seconds`. Then the grant is given; the
    reflector the request started lists the Nodes at its next retry (the
    watcher's backoff is 30 s at the longest) and the request is answered:
    as kwctl's replay (`want`, a future of it), or rejected by policy-server's evaluation
    limit, which passed while the policy waited in the host call. Every
    later request reads that reflector."""
    failures, result = [], {}

    def call():
        try:
            result["answer"] = post(request, timeout=seconds + 30 + settle_seconds)
        except OSError as e:
            result["error"] = e

    def refused():
        return [r for r in api.requests if r["path"] == "/api/v1/nodes" and r.get("code") == 403]

    waiting = threading.Thread(target=call, daemon=True)
    waiting.start()
    waiting.join(seconds)
    if not waiting.is_alive():
        failures.append("Nodes forbidden: %s within %.0f s" % (result, seconds))
    deadline = time.monotonic() + settle_seconds
    while not refused() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not refused():
        failures.append("Nodes forbidden: policy-server never tried to list them")
    print("%s no answer in %.0f s while listing Nodes is forbidden (%d LISTs refused with 403)" % (
        "ok  " if not failures else "FAIL", seconds, len(refused())))
    api.forbid.clear()
    start = time.monotonic()
    waiting.join(30 + settle_seconds)
    status, body = result.get("answer") or (None, result.get("error", "no answer"))
    response = (body.get("response") or {}) if status == 200 else {}
    message = (response.get("status") or {}).get("message")
    if response and response.get("allowed") is False and message == INTERRUPTED:
        how = "rejected (code %s): %s" % (response["status"].get("code"), message)
    elif response and not same_answer(response, want.result()):
        how = "as kwctl's replay"
    else:
        how = None
        failures.append("Nodes granted: the waiting request answered %s %s" % (status, body))
    print("%s the grant given: the waiting request answered %.1f s later, %s" % (
        "ok  " if how else "FAIL", time.monotonic() - start, how or "otherwise"))
    return failures


def api_call_problems(requests, list_version, changed_at=None):
    """The calls policy-server made: discovery of the core group, LISTs of
    the Nodes (refused ones, 403, first when RBAC forbade them), WATCHes
    from a version a LIST returned, no LIST after the Nodes changed (the
    `changed_at`th call): the changes came by the watch; every call with
    the token. Printed, and what is wrong with them returned."""
    problems = []
    seen = []
    for r in requests:
        query = "&".join("%s=%s" % kv for kv in sorted(r["query"].items()))
        line = "GET %s%s -> %s" % (r["path"], "?" + query if query else "", r.get("code"))
        if line not in seen:
            seen.append(line)
    print("     the calls policy-server made, in order (repeats left out):\n       " + "\n       ".join(seen))
    if not all(r["authorized"] for r in requests):
        problems.append("a call without the kubeconfig's token")
    paths = [r["path"] for r in requests]
    if not paths or paths[0] != "/api/v1":
        problems.append("the first call is not the core group's discovery (/api/v1): %s" % paths[:1])
    nodes = [r for r in requests if r["path"] == "/api/v1/nodes"]
    lists = [r for r in nodes if r["query"].get("watch") != "true" and r.get("code") == 200]
    watches = [r for r in nodes if r["query"].get("watch") == "true"]
    if not lists:
        problems.append("no LIST of the Nodes answered")
    if changed_at is not None and any(r in requests[changed_at:] for r in lists):
        problems.append("a LIST after the Nodes changed: the changes came otherwise than by the watch")
    versions = {r.get("resourceVersion") for r in lists}
    if str(list_version) not in versions:
        problems.append("the LIST's resourceVersion %s is not the recorded list's %s" % (versions, list_version))
    if not watches or any(w["query"].get("resourceVersion") not in versions for w in watches):
        problems.append("a WATCH not from the LIST's resourceVersion: %s" % [w["query"] for w in watches])
    others = sorted({p for p in paths if p not in ("/api/v1", "/api/v1/nodes")})
    if others:
        problems.append("calls not modelled: %s" % others)
    return problems


# --- settings errors ----------------------------------------------------------

def check_bad_settings(settings_files, module, workdir):
    """Each invalid settings file as a policy's settings: policy-server, as
    the controller runs it, refuses to start, and its log carries the
    policy's own message."""
    failures = []
    for path in settings_files:
        case = load_json(path)
        name = Path(path).stem
        policy = derived_policy("istio-job-sidecar-" + name, case["settings"], module)
        server = PolicyServer(Path(workdir) / name, controller.policies_yml([policy]), ready_timeout=60)
        try:
            server.start()
        except StartFailed as e:
            if e.returncode in (None, 0):
                failures.append("%s: %s" % (name, e))
                continue
            lines = [line.strip() for line in e.log.splitlines() if line.strip()]
            last = lines[-1] if lines else ""
            if isinstance(case["settings"], dict):
                # the policy's validate_settings message, as policy-server reports it
                ok = last.startswith("Error: Policy settings are invalid: ") and case["message"] in last
            else:
                # not a mapping: the CRD (settings: type object) refuses it at
                # kubectl apply; policy-server cannot even read such a file
                ok = last.startswith("Error: error while loading policies")
            print("%s %s: exit status %d, last line: %s" % ("ok  " if ok else "FAIL", name, e.returncode, last))
            if not ok:
                failures.append("%s: not refused with the policy's message %r:\n%s" % (name, case["message"], e.log))
            continue
        server.stop()
        failures.append("%s: policy-server started with settings %s" % (name, canonical(case["settings"])))
    return failures


def check_continue_on_errors(settings_files, module, workdir, valid_request):
    """policy-server's hidden --continue-on-errors (KUBEWARDEN_CONTINUE_ON_ERRORS,
    which the controller does not set): it starts, each policy with invalid
    settings rejects every request (allowed false, code 500) with the
    policy's message; a valid policy beside them answers as usual."""
    failures = []
    policies, messages = [], {}
    for path in settings_files:
        case = load_json(path)
        if not isinstance(case["settings"], dict):
            continue
        policy = derived_policy("istio-job-sidecar-" + Path(path).stem, case["settings"], module)
        policies.append(policy)
        messages[controller.unique_name(policy)] = case["message"]
    valid = derived_policy("istio-job-sidecar", {}, module)
    policies.append(valid)
    server = PolicyServer(Path(workdir) / "continue-on-errors", controller.policies_yml(policies),
                          extra_env={"KUBEWARDEN_CONTINUE_ON_ERRORS": "true"})
    try:
        server.start()
    except StartFailed as e:
        return ["did not start with KUBEWARDEN_CONTINUE_ON_ERRORS: %s\n%s" % (e, e.log)]
    try:
        info = {"url": server.base_url, "cafile": server.cafile}
        request = apiserver.admission_request(load_json(valid_request))
        review = apiserver.admission_review(request)
        for policy_id, message in sorted(messages.items()):
            status, body = server_post(info, "/validate/%s?timeout=10s" % policy_id, review)
            response = body.get("response") or {}
            status_message = (response.get("status") or {}).get("message") or ""
            ok = (status == 200 and response.get("allowed") is False and response.get("uid") == request["uid"]
                  and (response.get("status") or {}).get("code") == 500
                  and status_message.startswith("Policy settings are invalid: ") and message in status_message)
            if not ok:
                failures.append("%s: HTTP %s %s, expected a rejection with code 500 and %r"
                                % (policy_id, status, canonical(body), message))
            print("%s %s: HTTP %s, allowed %s, %s" % ("ok  " if ok else "FAIL", policy_id, status,
                                                     response.get("allowed"), canonical(response.get("status"))))
        status, body = server_post(info, "/validate/%s?timeout=10s" % controller.unique_name(valid), review)
        failures += ["%s: %s" % (controller.unique_name(valid), p) for p in response_problems(request, status, body)]
    finally:
        server.stop()
    return failures


# --- webhook configurations -----------------------------------------------------

def check_webhooks(path, release=None):
    """The webhook configuration of each policy of `path` as the controller
    of `release` installs it: its name and path, one webhook that is called
    with AdmissionReview v1, no side effects, no reinvocation, Kubewarden's
    namespace excluded, the policy's own filters (matchLabels excepted,
    which the controller drops: none may be written), matchConditions that
    compile, and called where Kubewarden's release notes say: before
    Istio's injector up to 1.37.1, after it from 1.37.2 on."""
    failures = []
    istio_first = controller.kw_cap(release)
    for policy in controller.load(path):
        spec = policy["spec"]
        name = controller.unique_name(policy, release)
        mwc = controller.webhook_configuration(policy, release=release)
        webhooks = mwc["webhooks"]
        problems = []
        if mwc["metadata"]["name"] != name or len(webhooks) != 1:
            problems.append("not one webhook in %s" % mwc["metadata"]["name"])
        w = webhooks[0]
        stored = apiserver.defaulted(w)
        want = {
            "name": controller.webhook_name(policy, release),
            "path": "/validate/" + name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "reinvocationPolicy": "Never",
            "failurePolicy": spec.get("failurePolicy", "Fail"),
            "timeoutSeconds": spec["timeoutSeconds"],
        }
        got = dict(stored, path=w["clientConfig"]["service"]["path"])
        for key, value in want.items():
            if got.get(key) != value:
                problems.append("%s %r, expected %r" % (key, got.get(key), value))
        if "reinvocationPolicy" in w:
            problems.append("the controller sets no reinvocationPolicy")
        selector = spec.get("namespaceSelector") or {}
        if selector.get("matchLabels"):
            problems.append("namespaceSelector.matchLabels %s: the controller drops it" % selector["matchLabels"])
        expressions = w["namespaceSelector"]["matchExpressions"]
        if expressions[0] != {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                              "values": [controller.DEPLOYMENTS_NAMESPACE]}:
            problems.append("Kubewarden's namespace not excluded first: %s" % expressions[0])
        if expressions[1:] != (selector.get("matchExpressions") or []):
            problems.append("namespaceSelector %s, the policy says %s" % (expressions[1:], selector))
        if w.get("objectSelector") != spec.get("objectSelector"):
            problems.append("objectSelector %s, the policy says %s"
                            % (w.get("objectSelector"), spec.get("objectSelector")))
        if w.get("matchConditions") != spec.get("matchConditions"):
            problems.append("matchConditions differ from the policy's")
        try:
            apiserver.Webhook(w)
        except ValueError as e:
            problems.append(str(e))
        if w["rules"] != spec["rules"]:
            problems.append("rules differ from the policy's")
        before = apiserver.called_before(mwc["metadata"]["name"])
        if before != (sorted(apiserver.ISTIO_INJECTORS) if istio_first else []):
            problems.append("called after %s, expected %s Istio's %s" % (
                before or "none of Istio's injectors", "after" if istio_first else "before",
                " and ".join(apiserver.ISTIO_INJECTORS)))
        print("%s %s: webhook %s, path %s, namespaceSelector %s, called %s Istio's injector" % (
            "ok  " if not problems else "FAIL", path, w["name"], w["clientConfig"]["service"]["path"],
            canonical(w["namespaceSelector"]), "after" if before else "before"))
        failures += ["%s (%s): %s" % (path, name, p) for p in problems]
    return failures


# --- selection tables -----------------------------------------------------------

def workload(row):
    """The AdmissionRequest of a table row: a Job, CronJob or Pod (the
    row's kind) with the labels and annotations it names."""
    kind = row["kind"]
    operation = row.get("operation", "CREATE")
    namespace = row.get("namespace", "team-a")
    pod_meta = {}
    if row.get("podLabels"):
        pod_meta["labels"] = dict(row["podLabels"])
    if row.get("podAnnotations"):
        pod_meta["annotations"] = dict(row["podAnnotations"])
    pod_spec = {"containers": [{"name": "work", "image": "busybox", "command": ["sh", "-c", "true"]}]}
    restart = row.get("restartPolicy", "Never")
    if restart is not None:
        pod_spec["restartPolicy"] = restart
    meta = {"name": "work", "namespace": namespace}
    labels, annotations = dict(row.get("labels") or {}), dict(row.get("annotations") or {})
    if kind == "Pod":
        # a Pod's own metadata is its pod template
        labels = dict(row.get("podLabels") or {}, **labels)
        annotations = dict(row.get("podAnnotations") or {}, **annotations)
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    template = {"spec": pod_spec}
    if pod_meta or not row.get("noTemplateMetadata"):
        template["metadata"] = dict(pod_meta, creationTimestamp=None)
    if kind == "Pod":
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    elif kind == "Job":
        obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": template}}
    elif kind == "CronJob":
        job_template = {"spec": {"template": template}}
        if row.get("jobTemplateAnnotations"):
            job_template["metadata"] = {"annotations": dict(row["jobTemplateAnnotations"])}
        obj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
               "spec": {"schedule": "0 2 * * *", "jobTemplate": job_template}}
    elif kind == "Deployment":
        obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {"template": template}}
    else:
        raise ValueError("unknown kind %s" % kind)
    old = copy.deepcopy(obj) if operation == "UPDATE" else None
    request = requests.request(operation, obj, old=old, namespace=namespace)
    if row.get("subResource"):
        request["subResource"] = row["subResource"]
    return apiserver.admission_request(request)


def check_table(table_path):
    """A selection table (test_data/selection/*.yaml): for each row, whether
    the API server sends the request to the example's webhook as the
    controller installs it."""
    with open(table_path) as f:
        table = yaml.safe_load(f)
    example = ROOT / table["example"]
    policies = {p["metadata"]["name"]: p for p in controller.load(example)}
    failures = []
    webhooks = {}
    for row in table["rows"]:
        name = row.get("policy", table.get("policy"))
        supported = row.get("matchConditionsSupported", True)
        key = (name, supported)
        if key not in webhooks:
            if name not in policies:
                failures.append("%s: no policy %s in %s" % (table_path, name, example))
                continue
            mwc = controller.webhook_configuration(policies[name], match_conditions=supported)
            webhooks[key] = apiserver.Webhook(mwc["webhooks"][0])
        verdict, why = webhooks[key].decide(workload(row), row.get("namespaceLabels") or {})
        want = row["expect"]
        ok = verdict == want
        print("%s %-8s %s%s: %s (%s)" % ("ok  " if ok else "FAIL", want, row["case"],
                                          "" if supported else " [no matchConditions]", verdict, why))
        if not ok:
            failures.append("%s: %s: %s, expected %s (%s)" % (Path(table_path).name, row["case"], verdict, want, why))
    return failures
