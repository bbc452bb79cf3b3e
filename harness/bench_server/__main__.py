"""`make bench-server` (python3 -m harness.bench_server): the policy under concurrent load in a real policy-server.

One policy-server (1.35, configured as Kubewarden's controller configures
it: harness/) hosts at once the policy in each mode (`istio-job-sidecar-native`,
`-exit`, `-quit`), the floors (`floor-sdk-mutate`, `floor-sdk-parse`,
`floor-accept`, annotated with kwctl: policy-server loads only annotated
modules), with `--release MODULE` the last release's module in each mode
with the same settings (`release-native`, `-exit`, `-quit`, whose ratios
are printed beside the policy's: a regression shows in the same run), and
any `--extra NAME=MODULE[:SETTINGS_JSON]`, all from one policies.yml.
AdmissionReviews as the API server sends them (harness/load.py) are POSTed
over HTTPS:

1. rows: for each request type and module, requests/s at saturation (wrk,
   closed loop) and p50/p95/p99 at a fixed offered load (wrk with
   runner/wrk_rate.lua, latency-corrected as oha -q --latency-correction:
   300 req/s and half the saturation of the row's floor), with
   the ratios to the row's floor: a mutation (the policy's answer has a
   patch) to floor-sdk-mutate, an unchanged answer to floor-sdk-parse;
2. where the time goes: the accept floor (TLS, HTTP, policy-server's JSON,
   the waPC call) against the parse floor (+ the guest's SDK parse) and the
   mutating floor (+ the guest's mutation, policy-server's diff and encoding);
3. faults: the mix at saturation for --soak seconds, every answer compared
   byte for byte with the answer to the same body sent alone; hostile bodies
   under a background load, each timed against policy-server's 2 s policy
   timeout, and a body over the limit; SIGTERM in the middle of the load
   (answered / refused / lost) and the restart (first good answer after how
   long); RSS after --memory-requests requests of the mix, the policy's
   server against the floors'; the flood (3e): a benign Job CREATE at
   --flood-rate req/s alone, then while --flood-connections connections
   loop benign requests as large as the worst config shapes (the
   baseline), then the worst hostile bodies (closed loop): the ordinary
   requests' throughput and p50/p99 alone, under each flood and against
   the baseline's, the hostile ones' latency
   against the policy timeout and their answers, policy-server's pid,
   readiness and RSS before and after.

policy-server runs on --server-cpus, the generators on --generator-cpus
(taskset). A measurement, not a test: ratios are printed, never enforced.
It exits nonzero only when a tool is missing, policy-server fails, or an
answer is wrong, lost without a fault injected, or not an accept.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .. import controller, load
from ..policy_server import PolicyServer
from .common import (
    FLOORS,
    MODES,
    ROOT,
    Client,
    cpu_model,
    die,
    fail,
    failures,
    loadavg,
    log,
    parse_extra,
    path_of,
    pinned,
    rss_kib,
    server_pid,
    stop,
    tool,
    worker_count,
)
from .faults import Faults
from .flood import Flood
from .report import Report
from .rows import Rows

# --- the run -------------------------------------------------------------------------

class Bench(Rows, Report, Faults, Flood):
    def __init__(self, options):
        self.o = options
        self.work = Path(options.workdir).resolve()
        if self.work.exists():
            shutil.rmtree(self.work)
        (self.work / "bodies").mkdir(parents=True)
        (self.work / "answers").mkdir()
        self.types = load.request_types()
        self.extra = [parse_extra(e) for e in options.extra]
        self.policies = ["istio-job-sidecar-" + m for m in MODES]
        # The last release in each mode, with the settings of the policy's
        # own example for that mode: an extra module, reported beside the
        # policy's row of the same mode.
        self.releases = {}
        if options.release:
            module = "file://" + str(Path(options.release).resolve())
            for mode in MODES:
                settings = controller.load(str(ROOT / load.MODES[mode][0]))[0]["spec"].get("settings")
                self.extra.append(("release-" + mode, module, settings))
                self.releases["istio-job-sidecar-" + mode] = "release-" + mode
        self.modules = self.policies + ["floor-" + f for f in FLOORS] + [name for name, _, _ in self.extra]
        self.bodies = {}      # (type, policy) -> body file
        self.answers = {}     # (type, policy) -> answer file
        self.mutates = {}     # (type, policy) -> the answer has a patch
        self.hostile_answers = {}  # (hostile body, mode) -> (seconds alone, its allowed answer)

    # -- modules and servers --
    def annotate_floors(self):
        out = {}
        for floor in FLOORS:
            src = Path(getattr(self.o, "floor_" + floor.replace("-", "_")))
            if not src.is_file():
                die("%s is missing (make floors)" % src)
            dst = self.work / ("floor_%s.annotated.wasm" % floor.replace("-", "_"))
            done = subprocess.run([self.o.kwctl, "annotate", "-m", str(ROOT / "floors" / "metadata.yml"),
                                   "-o", str(dst), str(src)], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                die("kwctl annotate %s failed: %s" % (src, done.stderr[-1000:]))
            out[floor] = "file://" + str(dst)
        return out

    def policies_yml(self, which):
        policy = "file://" + str(Path(self.o.policy).resolve())
        floors = {f: m for f, m in self.floor_modules.items() if "floor-" + f in which}
        extra = [e for e in self.extra if e[0] in which]
        docs = [d for d in load.bench_policies(policy, floors, extra) if d["metadata"]["name"] in which]
        return controller.policies_yml(docs)

    def start(self, name, which):
        wrapper = self.work / "policy-server-pinned"
        if not wrapper.exists():
            wrapper.write_text('#!/bin/sh\n# policy-server on its own cores (%s)\nexec %s "$@"\n' % (
                self.o.server_cpus or "any", " ".join(pinned([self.o.policy_server], self.o.server_cpus))))
            wrapper.chmod(0o755)
        server = PolicyServer(self.work / name, self.policies_yml(which), binary=str(wrapper),
                              lifetime=3600)
        t0 = time.monotonic()
        server.start()
        server.startup_s = time.monotonic() - t0
        server.pid = server_pid(server)
        return server

    # -- bodies and their single-request answers --
    def body_file(self, rtype, policy):
        key = (rtype, policy)
        if key not in self.bodies:
            f = self.work / "bodies" / ("%s.%s.json" % (rtype, policy))
            f.write_bytes(load.review_bytes(self.types[rtype], "%s.%s" % (rtype, policy)))
            self.bodies[key] = f
        return self.bodies[key]

    def reference_answers(self, server):
        client = Client(server.port, server.cafile)
        for rtype in self.types:
            for policy in self.modules:
                body = self.body_file(rtype, policy).read_bytes()
                status, answer = client.post(path_of(policy), body)
                again = client.post(path_of(policy), body)
                if status != 200 or again != (status, answer):
                    die("%s on %s: status %d, or a second answer differs" % (policy, rtype, status))
                response = json.loads(answer)["response"]
                if not response.get("allowed"):
                    fail("%s rejects %s: %s" % (policy, rtype, response.get("status")))
                f = self.work / "answers" / ("%s.%s.json" % (rtype, policy))
                f.write_bytes(answer)
                self.answers[(rtype, policy)] = f
                self.mutates[(rtype, policy)] = bool(response.get("patch"))
        client.close()

    def floor_of(self, rtype, policy):
        return "floor-sdk-mutate" if self.mutates[(rtype, policy)] else "floor-sdk-parse"


def main():
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="annotated-policy.wasm")
    parser.add_argument("--floor-accept", default="target/wasm32-wasip1/release/floor_accept.wasm")
    parser.add_argument("--floor-sdk-parse", default="target/wasm32-wasip1/release/floor_sdk_parse.wasm")
    parser.add_argument("--floor-sdk-mutate", default="target/wasm32-wasip1/release/floor_sdk_mutate.wasm")
    parser.add_argument("--release", default=None,
                        help="the last release's (annotated) module (runner/bench/), hosted in each mode beside the "
                             "policy; its ratios are printed beside the policy's")
    parser.add_argument("--extra", action="append", default=[],
                        help="NAME=MODULE[:SETTINGS_JSON], another (annotated) module in the same policy-server: "
                             "its rows are measured and compared to the floors like the policy's; repeatable")
    parser.add_argument("--policy-server", default=os.environ.get("POLICY_SERVER", "policy-server"))
    parser.add_argument("--kwctl", default=os.environ.get("KWCTL", "kwctl"))
    parser.add_argument("--wrk", default="wrk")
    parser.add_argument("--workdir", default="target/bench-server")
    parser.add_argument("--server-cpus", default=None, help="taskset list for policy-server (default: the last core)")
    parser.add_argument("--generator-cpus", default=None, help="taskset list for the generators (default: the others)")
    parser.add_argument("--connections", type=int, default=16, help="wrk's, at saturation")
    parser.add_argument("--rate-connections", type=int, default=4, help="wrk's, at a fixed load")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every row at a fixed load")
    parser.add_argument("--saturation-rounds", type=int, default=4,
                        help="interleaved rounds of every row at saturation (the best counts)")
    parser.add_argument("--saturation-seconds", type=int, default=1, help="a round, whole seconds (wrk's)")
    parser.add_argument("--latency-seconds", type=float, default=1.2, help="a round, after the warm-up")
    parser.add_argument("--warm-up", type=float, default=0.3, help="seconds of each fixed-load run left out")
    parser.add_argument("--soak", type=int, default=60)
    parser.add_argument("--memory-requests", type=int, default=100000)
    parser.add_argument("--sigterm-clients", type=int, default=8)
    parser.add_argument("--sigterm-after", type=float, default=3.0)
    parser.add_argument("--smoke", action="store_true",
                        help="seconds, not minutes: every row once, short runs, the faults at small counts")
    parser.add_argument("--flood-seconds", type=float, default=10.0,
                        help="the flood: seconds of ordinary traffic alone, then as many under the flood")
    parser.add_argument("--flood-rate", type=float, default=300.0, help="the flood: the ordinary traffic's req/s")
    parser.add_argument("--flood-rate-connections", type=int, default=64,
                        help="the flood: wrk's connections for the ordinary traffic (an API server opens as many "
                             "as it needs)")
    parser.add_argument("--flood-warm-up", type=float, default=1.0,
                        help="the flood: seconds of the ordinary traffic left out (its connections' handshakes)")
    parser.add_argument("--flood-connections", type=int, default=4,
                        help="the flood: connections looping hostile bodies (closed loop)")
    parser.add_argument("--flood-slowest", type=int, default=4,
                        help="the flood: how many of the slowest other hostile bodies (alone, in 3b) join the "
                             "issue's worst config shapes")
    parser.add_argument("--skip", action="append", default=[],
                        choices=["rows", "soak", "hostile", "flood", "sigterm"])
    o = parser.parse_args()
    if o.smoke:
        o.rounds, o.saturation_rounds, o.saturation_seconds, o.latency_seconds, o.warm_up = 1, 1, 1, 0.3, 0.2
        o.soak, o.memory_requests, o.sigterm_after = 2, 2000, 1.0
        o.flood_seconds, o.flood_warm_up = 1.0, 0.5
    o.policy_server = tool("policy-server", o.policy_server, o.smoke)
    o.kwctl = tool("kwctl", o.kwctl, o.smoke)
    o.wrk = tool("wrk", o.wrk, o.smoke)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2 and shutil.which("taskset"):
        o.server_cpus = o.server_cpus or str(cpus[-1])
        o.generator_cpus = o.generator_cpus or ",".join(str(c) for c in cpus[:-1])
    if not Path(o.policy).is_file():
        die("%s is missing (make annotated-policy.wasm)" % o.policy)
    if o.release and not Path(o.release).is_file():
        die("%s is missing (runner/bench/README.md)" % o.release)

    started = time.monotonic()
    bench = Bench(o)
    versions = [subprocess.run([t, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[0]
                for t in (o.policy_server, o.wrk)]
    log("bench-server: %s; %s" % tuple(versions))
    log("host: %d cores (%s), load average at start %s; policy-server on cores %s, generators on cores %s%s" % (
        os.cpu_count(), cpu_model(), loadavg(), o.server_cpus or "any", o.generator_cpus or "any",
        "; SMOKE (short runs, small counts: no figure to quote)" if o.smoke else ""))
    bench.floor_modules = bench.annotate_floors()
    server = bench.start("main", bench.modules)
    log("policy-server pid %d, %d policies, ready in %.1f s (modules compiled); workers: %s" % (
        server.pid, len(bench.modules), server.startup_s, worker_count(server)))
    try:
        bench.reference_answers(server)
        results = None
        if "rows" not in o.skip:
            results = bench.rows(server)
            bench.summary(results)
            bench.breakdown(results)
            bench.generator_proof(results)
        if "hostile" not in o.skip:
            bench.hostile(server)
        if "flood" not in o.skip:
            bench.flood(server)
        log("\n  main policy-server: RSS %s KiB at the end of its runs, still %s" % (
            rss_kib(server.pid), "alive" if server.process.poll() is None else "GONE"))
    finally:
        stop(server)
    if "soak" not in o.skip:
        log("\n== 3a/3c. the mix at saturation (wrk -t1 -c%d) for at least %d s and %d requests, every answer "
            "compared with the answer to its body alone; RSS after each step: a policy-server hosting the policy "
            "in its 3 modes, then one hosting the 3 floors, each sent the mix across its 3 modules"
            % (o.connections, o.soak, o.memory_requests))
        log("  mix per 200 requests: %s" % ", ".join("%s %d" % kv for kv in load.MIX.items()))
        policy_server = bench.soak("policy", bench.policies, o.soak, o.memory_requests)
        try:
            if "sigterm" not in o.skip:
                bench.sigterm(policy_server)
        finally:
            stop(policy_server)
        floors = bench.soak("floors", ["floor-" + f for f in FLOORS], 0, o.memory_requests)
        stop(floors)
    log("\nbench-server: %.1f min; load average at end %s" % ((time.monotonic() - started) / 60, loadavg()))
    if failures:
        log("%d fault(s):" % len(failures))
        for f in failures:
            log("  " + f)
        sys.exit(1)



if __name__ == "__main__":
    main()
