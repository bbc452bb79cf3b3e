"""`make bench-nodes`: nodeVersionCheck at cluster scale in policy-server.

examples/native-sidecar-node-check.yaml served by a real policy-server whose
Kubernetes API (harness/kube_api.py) serves N Nodes as the API server does
(managedFields and all; policy-server's reflector clears them and, from
1.33, prunes each Node to its metadata). For each N the Job names no node,
so every Node's kubelet is read; the last Node runs an old kubelet, so the
answer must be the fallback naming it. The first answer waits for the
reflector's LIST (past the policy's timeoutEvalSeconds policy-server
answers it `allowed: false`, which is printed, not failed); once an answer
is right, `--requests` requests are sent one at a time and their latency,
policy-server's CPU per request and its RSS are printed.

A measurement tool, not a test: it exits 0 when every answer was right,
whatever the figures, and nonzero when an answer was wrong or missing.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import apiserver, controller, kube_api
from .bench_server.common import cpu_seconds, rss_kib, server_pid
from .checks import INTERRUPTED, NODE_EXAMPLE, sent_variant, step_request
from .policy_server import PolicyServer, make_tls, post_json

ROOT = Path(__file__).resolve().parent.parent


def node_list(runner, count):
    """The Node list as the API server serves it (`policy-runner node-list
    --shape managed-fields`): (items, list size in bytes)."""
    out = subprocess.run([runner, "node-list", "--count", str(count), "--shape", "managed-fields"],
                         capture_output=True, check=True).stdout
    return json.loads(out)["items"], len(out)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def measure(module, items, requests, workdir):
    """(first answer's seconds, latencies in ms, CPU ms a request, RSS KiB
    before and after, problems) for one Node list."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    policies = controller.load(NODE_EXAMPLE)
    mwc = controller.webhook_configuration(policies[0])
    webhook = apiserver.Webhook(mwc["webhooks"][0])
    url_path = apiserver.webhook_url("", mwc["webhooks"][0])
    request = sent_variant(webhook, step_request("job-create-native", None))[0]
    review = apiserver.admission_review(request)
    old_node = items[-1]["metadata"]["name"]
    ca, crt, key = make_tls(work / "kube-api-tls", common_name="kubernetes.default.svc")
    api = kube_api.KubeAPI(crt, key, items).start()
    config = kube_api.kubeconfig(api.url, ca, api.token, work / "kubeconfig")
    server = PolicyServer(work / "policy-server",
                          controller.policies_yml(policies, module="file://" + os.path.abspath(module)),
                          kubeconfig=config)
    problems = []
    try:
        server.start()
        pid = server_pid(server)
        url = server.base_url + url_path

        def post():
            """(ms, what is wrong with the answer or None)"""
            began = time.monotonic()
            status, body = post_json(url, review, server.cafile, timeout=60)
            answer = (body or {}).get("response") or {}
            warnings = " ".join(answer.get("warnings") or [])
            wrong = None
            if status != 200 or not answer.get("allowed") or old_node not in warnings:
                wrong = "status %s, answer %s" % (status, json.dumps(answer)[:300])
            return (time.monotonic() - began) * 1000, wrong

        # The first request waits for the reflector's LIST; past the
        # policy's timeoutEvalSeconds policy-server answers it `allowed:
        # false`. Until a right answer comes, the answers only count time.
        began = time.monotonic()
        first_ms, first_wrong = post()
        wrong = first_wrong
        while wrong and time.monotonic() - began < 120:
            time.sleep(0.2)
            wrong = post()[1]
        if wrong:
            problems.append("no right answer in 120 s: " + wrong)
            return first_ms / 1000, first_wrong, time.monotonic() - began, [0.0], 0.0, None, None, problems
        ready = time.monotonic() - began
        rss_before = rss_kib(pid)
        cpu_before = cpu_seconds(pid)
        latencies = []
        for _ in range(requests):
            ms, wrong = post()
            latencies.append(ms)
            if wrong:
                problems.append(wrong)
        cpu = (cpu_seconds(pid) - cpu_before) * 1000 / requests
        return first_ms / 1000, first_wrong, ready, latencies, cpu, rss_before, rss_kib(pid), problems
    finally:
        server.stop()
        api.stop()


def main():
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_nodes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", default=str(ROOT / "annotated-policy.wasm"))
    parser.add_argument("--runner", default=str(ROOT / "target" / "host" / "policy-runner"))
    parser.add_argument("--counts", default="10,1000,5000")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--workdir", default=str(ROOT / "target" / "bench-nodes"))
    options = parser.parse_args()
    failed = False
    print("| Nodes | list served | first answer (waits for the LIST) | first right answer | p50 | p99 "
          "| policy-server CPU a request | RSS after / before the requests |")
    print("|---|---|---|---|---|---|---|---|")
    for count in [int(c) for c in options.counts.split(",")]:
        items, size = node_list(options.runner, count)
        first, first_wrong, ready, latencies, cpu, before, after, problems = measure(
            options.module, items, options.requests, Path(options.workdir) / str(count))
        interrupted = INTERRUPTED in (first_wrong or "")
        print("| %s | %.1f MiB | %.2f s%s | %.2f s | %.1f ms | %.1f ms | %.1f ms | %.0f / %.0f MiB |" % (
            f"{count:,}", size / 2**20, first,
            "" if not first_wrong else (", interrupted: allowed false" if interrupted else ", wrong"), ready,
            percentile(latencies, 50), percentile(latencies, 99), cpu,
            (after or 0) / 1024, (before or 0) / 1024), flush=True)
        for problem in problems[:3]:
            print("  wrong answer, %s Nodes: %s" % (count, problem))
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
