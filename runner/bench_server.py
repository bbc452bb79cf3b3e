#!/usr/bin/env python3
"""`make bench-server`: the policy under concurrent load in a real policy-server.

One policy-server (1.35, configured as Kubewarden's controller configures
it: harness/) hosts at once the policy in each mode (`istio-job-sidecar-native`,
`-exit`, `-quit`), the floors (`floor-sdk-mutate`, `floor-sdk-parse`,
`floor-accept`, annotated with kwctl: policy-server loads only annotated
modules) and any `--extra NAME=MODULE[:SETTINGS_JSON]`, all from one
policies.yml. AdmissionReviews as the API server sends them (harness/load.py)
are POSTed over HTTPS:

1. rows: for each request type and module, requests/s at saturation (wrk,
   closed loop) and p50/p95/p99 at a fixed offered load (oha -q with latency
   correction: 300 req/s and half the saturation of the row's floor), with
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
   server against the floors'.

policy-server runs on --server-cpus, the generators on --generator-cpus
(taskset). A measurement, not a test: ratios are printed, never enforced.
It exits nonzero only when a tool is missing, policy-server fails, or an
answer is wrong, lost without a fault injected, or not an accept.
"""
import argparse
import csv
import http.client
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import controller, load  # noqa: E402
from harness.policy_server import PolicyServer  # noqa: E402

MODES = ["native", "exit", "quit"]
FLOORS = ["sdk-mutate", "sdk-parse", "accept"]
POLICY_TIMEOUT_S = 2.0
CLK_TCK = os.sysconf("SC_CLK_TCK")

failures = []


def log(*args):
    print(*args, flush=True)


def fail(message):
    """A fault that makes the run fail (a wrong or lost answer), printed where
    it happens and again at the end."""
    failures.append(message)
    log("FAIL: " + message)


def die(message):
    print("bench-server: " + message, file=sys.stderr)
    sys.exit(2)


# --- processes -------------------------------------------------------------------

def cpu_seconds(pid):
    """utime + stime of a process and its threads, in seconds (None if gone)."""
    try:
        fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid):
    try:
        for line in Path("/proc/%d/status" % pid).read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def server_pid(server):
    """policy-server's own pid (the harness starts it under coreutils timeout,
    and here under taskset, which execs)."""
    for _ in range(50):
        try:
            children = Path("/proc/%d/task/%d/children" % (server.process.pid, server.process.pid)).read_text().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
        time.sleep(0.05)
    return server.process.pid


def stop(server):
    """Stops a policy-server and keeps the last lines of its log (it logs
    every request at its default level: hundreds of MB in a full run)."""
    server.stop()
    try:
        lines = server.log_path.read_bytes().splitlines(keepends=True)
        server.log_path.write_bytes(b"".join(lines[-300:]))
    except OSError:
        pass


def pinned(cmd, cpus):
    return (["taskset", "-c", cpus] + cmd) if cpus else cmd


class Meter:
    """CPU use of policy-server and of a generator over one run."""

    def __init__(self, server_pid):
        self.server_pid = server_pid

    def __enter__(self):
        self.t0 = time.monotonic()
        self.s0 = cpu_seconds(self.server_pid)
        return self

    def stop(self, generator_cpu):
        wall = time.monotonic() - self.t0
        s1 = cpu_seconds(self.server_pid)
        self.server_cpu = s1 - self.s0 if s1 is not None else 0.0
        self.generator_cpu = generator_cpu or 0.0
        self.server_util = self.server_cpu / wall
        self.generator_util = self.generator_cpu / wall

    def __exit__(self, *exc):
        return False


def run_child(cmd, timeout):
    """Runs a generator; (stdout, its CPU seconds)."""
    start = os.times()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    end = os.times()
    if done.returncode != 0:
        die("%s failed (%d): %s" % (" ".join(cmd[:6]), done.returncode, done.stderr[-1500:]))
    cpu = (end.children_user - start.children_user) + (end.children_system - start.children_system)
    return done.stdout, cpu


# --- one request at a time ----------------------------------------------------------

class Client:
    """One keep-alive HTTPS connection, checked against the test CA."""

    def __init__(self, port, cafile, timeout=30):
        self.port, self.timeout = port, timeout
        self.context = ssl.create_default_context(cafile=str(cafile))
        self.conn = None

    def post(self, path, body):
        """(status, body bytes); raises OSError / http.client errors."""
        if self.conn is None:
            self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=self.timeout,
                                                    context=self.context)
        try:
            self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            r = self.conn.getresponse()
            return r.status, r.read()
        except Exception:
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def path_of(policy):
    return "/validate/" + controller.policy_id(policy)


# --- the run -------------------------------------------------------------------------

class Bench:
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
        self.modules = self.policies + ["floor-" + f for f in FLOORS] + [name for name, _, _ in self.extra]
        self.bodies = {}      # (type, policy) -> body file
        self.answers = {}     # (type, policy) -> answer file
        self.mutates = {}     # (type, policy) -> the answer has a patch

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

    # -- generators --
    def wrk(self, server, manifest_lines, seconds, connections=None, check=True, timeout_s=10):
        manifest = self.work / ("manifest-%d.tsv" % random.randrange(1 << 30))
        manifest.write_text("".join("%s\t%s\t%s\n" % (p, b, a if check else "-") for p, b, a in manifest_lines))
        wrong_file = self.work / "wrong-answers.txt"
        duration = int(seconds)
        cmd = pinned([self.o.wrk, "-t1", "-c%d" % (connections or self.o.connections), "-d%ds" % duration,
                      "--timeout", "%ds" % timeout_s, "-s", str(ROOT / "runner" / "wrk_mix.lua"),
                      server.base_url, "--", str(manifest), str(wrong_file)],
                     self.o.generator_cpus)
        with Meter(server.pid) as meter:
            out, cpu = run_child(cmd, timeout=duration + 120)
            meter.stop(cpu)
        manifest.unlink()
        for line in out.splitlines():
            if line.startswith("WRK_RESULT "):
                result = json.loads(line[len("WRK_RESULT "):])
                result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
                result["server_util"], result["generator_util"] = meter.server_util, meter.generator_util
                result["server_cpu"], result["generator_cpu"] = meter.server_cpu, meter.generator_cpu
                return result
        die("no WRK_RESULT in wrk's output:\n" + out[-2000:])

    def oha(self, server, path, body_file, rate, seconds):
        """p50/p95/p99 (ms) at `rate` req/s, requests of the first
        --warm-up seconds left out (the connections' TLS handshakes)."""
        out_file = self.work / "oha.csv"
        warm = self.o.warm_up
        cmd = pinned([self.o.oha, "--no-tui", "--insecure", "-z", "%.2fs" % (seconds + warm),
                      "-c", str(self.o.rate_connections), "-q", "%.1f" % rate, "--latency-correction", "-w",
                      "-m", "POST", "-H", "Content-Type: application/json", "-D", str(body_file),
                      "--output-format", "csv", "-o", str(out_file), server.base_url + path],
                     self.o.generator_cpus)
        with Meter(server.pid) as meter:
            _, cpu = run_child(cmd, timeout=seconds + warm + 120)
            meter.stop(cpu)
        rows = list(csv.DictReader(out_file.open()))
        out_file.unlink()
        ok = [r for r in rows if r.get("status") == "200"]
        steady = sorted(float(r["request-duration"]) for r in ok if float(r["request-start"]) >= warm)
        errors = len(rows) - len(ok)
        return {"n": len(steady), "errors": errors, "p50": pct(steady, 50), "p95": pct(steady, 95),
                "p99": pct(steady, 99), "achieved": len(steady) / seconds if seconds else 0,
                "server_util": meter.server_util}

    # -- phases --
    def is_measured(self, policy):
        """The policy's modes and the extra modules get ratios to a floor."""
        return policy in self.policies or policy in [e[0] for e in self.extra]

    def rows(self, server):
        o = self.o
        log("\n== 1. per request type and module, interleaved: saturation (wrk -t1 -c%d, %d round(s) of %d s), "
            "fixed load (oha -q -c%d, latency-corrected, %d round(s) of %.1f s after %.1f s of warm-up)"
            % (o.connections, o.saturation_rounds, o.saturation_seconds, o.rate_connections, o.rounds,
               o.latency_seconds, o.warm_up))
        log("  req/s = requests / policy-server's CPU seconds in the best round (its capacity on one core whoever "
            "else runs there; the best, as a benchmark takes the least time, since other work only slows a round); "
            "wall = the best round's requests / wall second; p50/p95/p99 = the lowest of the rounds")
        results = {}
        for rtype in self.types:
            order = list(self.modules)
            random.Random(rtype).shuffle(order)
            sat = {p: {"requests": 0, "server_cpu": 0.0, "generator_cpu": 0.0, "wall_rps": 0.0, "util": [],
                       "rps": 0.0} for p in order}
            for rnd in range(o.saturation_rounds):
                for policy in order[rnd % len(order):] + order[:rnd % len(order)]:
                    line = [(path_of(policy), self.body_file(rtype, policy), self.answers[(rtype, policy)])]
                    r = self.wrk(server, line, seconds=o.saturation_seconds)
                    if r["wrong"] or r["bad_status"] or r["timeouts"] or r["read_errors"] or r["connect_errors"]:
                        fail("%s on %s at saturation: %s" % (policy, rtype, r))
                    s = sat[policy]
                    s["requests"] += r["requests"]
                    s["server_cpu"] += r["server_cpu"]
                    s["generator_cpu"] += r["generator_cpu"]
                    s["wall_rps"] = max(s["wall_rps"], r["rps"])
                    if r["server_cpu"]:
                        s["rps"] = max(s["rps"], r["requests"] / r["server_cpu"])
                    s["util"].append(r["server_util"])
            for s in sat.values():
                s["server_util"] = sum(s["util"]) / len(s["util"])
            lat = {p: {} for p in order if p != "floor-accept"}
            for label in ("300", "half"):
                for rnd in range(o.rounds):
                    for policy in order[rnd % len(order):] + order[:rnd % len(order)]:
                        if policy == "floor-accept":
                            continue
                        floor = self.floor_of(rtype, policy) if self.is_measured(policy) else policy
                        # Half of what the floor reached here, in wall time (on a shared
                        # core, less than its CPU-second capacity).
                        rate = 300.0 if label == "300" else sat[floor]["wall_rps"] / 2
                        # At or over what the server can take, a fixed load only measures the queue.
                        if rate > 0.8 * min(sat[policy]["wall_rps"], sat[floor]["wall_rps"]):
                            lat[policy][label] = None
                            continue
                        r = self.oha(server, path_of(policy), self.body_file(rtype, policy), rate, o.latency_seconds)
                        r["rate"] = rate
                        if r["errors"]:
                            fail("%s on %s at %.0f req/s: %d requests failed" % (policy, rtype, rate, r["errors"]))
                        best = lat[policy].get(label)
                        if best is None:
                            lat[policy][label] = r
                        else:
                            for k in ("p50", "p95", "p99"):
                                best[k] = min(best[k], r[k])
                            best["n"] += r["n"]
            results[rtype] = (sat, lat)
            self.print_type(rtype, sat, lat)
        return results

    def print_type(self, rtype, sat, lat):
        size = self.body_file(rtype, self.policies[0]).stat().st_size
        log("\n%s (%s per body), load average %s" % (rtype, human(size), loadavg()))
        log("  %-26s %-9s %7s %6s %6s %7s | %-24s %-24s | %-11s %s" % (
            "module", "answer", "req/s", "ratio", "wall", "srvCPU", "p50/p95/p99 ms @300 req/s",
            "p50/p95/p99 ms @half", "p99 ratios", "floor"))
        for policy in self.modules:
            s = sat[policy]
            floor = self.floor_of(rtype, policy) if self.is_measured(policy) else None
            answer = "patch" if self.mutates[(rtype, policy)] else "unchanged"
            ratio = "%5.2fx" % (s["rps"] / sat[floor]["rps"]) if floor else "    - "
            cells, p99r = [], []
            for label in ("300", "half"):
                r = (lat.get(policy) or {}).get(label)
                if r is None:
                    cells.append("" if policy == "floor-accept" else "- (over 0.8x saturation)")
                    p99r.append("-")
                    continue
                cells.append("%.2f/%.2f/%.2f @%d" % (r["p50"] * 1e3, r["p95"] * 1e3, r["p99"] * 1e3, r["rate"]))
                f = (lat.get(floor) or {}).get(label) if floor else None
                p99r.append("%.2fx" % (r["p99"] / f["p99"]) if f and f["p99"] else "-")
            log("  %-26s %-9s %7.0f %6s %6.0f %6.0f%% | %-24s %-24s | %-11s %s" % (
                policy, answer, s["rps"], ratio, s["wall_rps"], 100 * s["server_util"], cells[0], cells[1],
                "/".join(p99r) if floor else "", floor or ""))

    def summary(self, results):
        log("\n== targets (printed, not enforced): mutation rows throughput >= 0.95x and p99 <= 1.1x "
            "floor-sdk-mutate; unchanged rows throughput >= 1.0x floor-sdk-parse")
        within = total = 0
        for rtype, (sat, lat) in results.items():
            for policy in [p for p in self.modules if self.is_measured(p)]:
                floor = self.floor_of(rtype, policy)
                tput = sat[policy]["rps"] / sat[floor]["rps"]
                mutation = self.mutates[(rtype, policy)]
                notes, ok = [], True
                if mutation:
                    ok &= tput >= 0.95
                    for label in ("300", "half"):
                        r, f = (lat.get(policy) or {}).get(label), (lat.get(floor) or {}).get(label)
                        if r and f and f["p99"]:
                            ok &= r["p99"] / f["p99"] <= 1.1
                            notes.append("p99@%s %.2fx" % (label, r["p99"] / f["p99"]))
                else:
                    ok &= tput >= 1.0
                if policy in self.policies:
                    total += 1
                    within += ok
                log("  %-18s %-26s %-9s throughput %5.2fx %-28s %s" % (
                    rtype, policy, "mutation" if mutation else "unchanged", tput, " ".join(notes),
                    "ok" if ok else "OUTSIDE"))
        log("  %d of %d rows of the policy within target" % (within, total))
        # The three modes answer a long-running Pod by the same early skip:
        # their spread is this run's noise.
        same = [results["pod-always"][0][p]["rps"] for p in self.policies]
        log("  noise of this run: the 3 modes on pod-always (one code path, the early skip) spread %.0f%% "
            "(%.0f-%.0f req/s); read every ratio with that in mind" % (
                100 * (max(same) - min(same)) / min(same), min(same), max(same)))

    def breakdown(self, results):
        log("\n== 2. where the time goes: policy-server's CPU per request at saturation, in us")
        log("  accept = TLS, HTTP, policy-server's JSON (parse the review, build the payload), the waPC call, "
            "its answer and log line; +parse = the guest's SDK parse (floor-sdk-parse - accept); +mutate = "
            "the guest's one-annotation mutation, policy-server's clone, diff and base64 of the patch "
            "(floor-sdk-mutate - floor-sdk-parse); the policy's columns: its cost over accept")
        log("  %-18s %8s %8s %8s | %8s %8s %8s" % ("type", "accept", "+parse", "+mutate", "native", "exit", "quit"))
        for rtype, (sat, _) in results.items():
            us = {p: 1e6 / sat[p]["rps"] for p in sat}
            a, p, m = us["floor-accept"], us["floor-sdk-parse"], us["floor-sdk-mutate"]
            log("  %-18s %8.0f %+8.0f %+8.0f | %+8.0f %+8.0f %+8.0f" % (
                rtype, a, p - a, m - p, us["istio-job-sidecar-native"] - a, us["istio-job-sidecar-exit"] - a,
                us["istio-job-sidecar-quit"] - a))

    def generator_proof(self, results):
        """wrk's CPU per request against policy-server's, on the accept floor
        (the cheapest module): how fast wrk could go on its core."""
        log("\n== the generator is not the bottleneck: wrk's CPU per request against policy-server's, each on "
            "its own core")
        log("  %-18s %12s %12s %12s %14s" % ("type", "accept req/s", "wrk us/req", "server us/req",
                                            "wrk could do"))
        worst = None
        for rtype, (sat, _) in results.items():
            s = sat["floor-accept"]
            gen_us = 1e6 * s["generator_cpu"] / max(1, s["requests"])
            srv_us = 1e6 * s["server_cpu"] / max(1, s["requests"])
            could = 1e6 / gen_us if gen_us else float("inf")
            fastest = max(v["rps"] for v in sat.values())
            log("  %-18s %12.0f %12.1f %12.1f %10.0f req/s (%.1fx the fastest module here)" % (
                rtype, s["rps"], gen_us, srv_us, could, could / fastest))
            if worst is None or could / fastest < worst[1]:
                worst = (rtype, could / fastest)
        log("  the smallest headroom: %.1fx (%s)" % (worst[1], worst[0]))

    def mix_lines(self, policies):
        """The mix (load.MIX) across `policies`, shuffled, each body with the
        answer it must get."""
        lines = []
        for policy in policies:
            for rtype, weight in load.MIX.items():
                lines += [(path_of(policy), self.body_file(rtype, policy), self.answers[(rtype, policy)])] * weight
        random.Random(7).shuffle(lines)
        return lines

    def soak(self, label, which, seconds, min_requests):
        """The mix across `which` at saturation on a policy-server of their
        own, in steps, RSS after each, every answer checked: at least
        `seconds` and `min_requests`. Returns the server, still running."""
        server = self.start("soak-" + label, which)
        client = Client(server.port, server.cafile)
        for policy in which:
            for rtype in self.types:
                client.post(path_of(policy), self.body_file(rtype, policy).read_bytes())
        client.close()
        rss = [("started", rss_kib(server.pid))]
        lines = self.mix_lines(which)
        totals = {k: 0 for k in ("requests", "ok", "wrong", "bad_status", "unchecked", "connect_errors",
                                 "read_errors", "write_errors", "timeouts")}
        wall = server_cpu = 0.0
        p99s = []
        step = max(1, min(10, seconds))
        while wall < seconds or totals["requests"] < min_requests:
            r = self.wrk(server, lines, seconds=step)
            for k in totals:
                totals[k] += r[k]
            wall += r["duration_us"] / 1e6
            server_cpu += r["server_cpu"]
            p99s.append(r["p99_us"] / 1e3)
            rss.append((totals["requests"], rss_kib(server.pid)))
            if totals["requests"] >= min_requests and wall >= seconds:
                break
            if wall >= seconds:  # more requests wanted: steps of about a tenth of them
                step = max(1, min(30, int(round(min_requests / 10 / max(r["rps"], 1)))))
        lost = totals["connect_errors"] + totals["read_errors"] + totals["write_errors"] + totals["timeouts"]
        log("  %-7s %d requests in %.0f s: %.0f req/s wall, %.0f per CPU second of policy-server; p99 per step "
            "%.0f-%.0f ms (closed loop, 16 connections); load average %s" % (
                label, totals["requests"], wall, totals["requests"] / wall, totals["requests"] / server_cpu,
                min(p99s), max(p99s), loadavg()))
        log("  %-7s answers: %d right, %d wrong, %d not 200, %d lost (connect %d, read %d, write %d, timeout %d)" % (
            label, totals["ok"], totals["wrong"], totals["bad_status"], lost, totals["connect_errors"],
            totals["read_errors"], totals["write_errors"], totals["timeouts"]))
        log("  %-7s RSS KiB after N requests: %s" % (label, ", ".join("%s: %s" % kv for kv in rss)))
        # After the first tenth of the requests: the least-squares slope of
        # RSS against requests, and the range of the second half.
        steps = [(n, kib) for n, kib in rss[1:] if n >= totals["requests"] // 10]
        if len(steps) >= 3:
            mean_n = sum(n for n, _ in steps) / len(steps)
            mean_k = sum(k for _, k in steps) / len(steps)
            var = sum((n - mean_n) ** 2 for n, _ in steps)
            slope = sum((n - mean_n) * (k - mean_k) for n, k in steps) / var * 1024 if var else 0.0
            second = [k for n, k in steps if n >= totals["requests"] // 2]
            log("  %-7s RSS slope over the steps after %d requests: %+.1f bytes/request; second half %d-%d KiB; "
                "peak %d KiB" % (label, steps[0][0], slope, min(second), max(second), max(k for _, k in rss)))
        if totals["wrong"] or totals["bad_status"] or lost or totals["unchecked"]:
            fail("%s: the mix at saturation: %d wrong, %d not 200, %d lost, %d unchecked (see %s)" % (
                label, totals["wrong"], totals["bad_status"], lost, totals["unchecked"],
                self.work / "wrong-answers.txt"))
        return server

    def hostile(self, server):
        log("\n== 3b. hostile bodies, each to the policy in each mode, while oha offers the mix's commonest "
            "request (pod-always) at 300 req/s; time = the whole HTTPS round trip, margin = 2 s - time")
        bg_body = self.body_file("pod-always", "istio-job-sidecar-native")
        bg_seconds = 3600
        bg = subprocess.Popen(pinned([self.o.oha, "--no-tui", "--insecure", "-z", "%ds" % bg_seconds, "-c", "4",
                                      "-q", "300", "-m", "POST", "-H", "Content-Type: application/json",
                                      "-D", str(bg_body), "--output-format", "json", "-o",
                                      str(self.work / "hostile-background.json"),
                                      server.base_url + path_of("istio-job-sidecar-native")],
                                     self.o.generator_cpus),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        worst = None
        timeouts = []
        log("  policy-server interrupts a policy when its epoch, advanced by a 1 s ticker, passes the call's "
            "start + %d ticks: after 1 to 2 s of guest time. Margins: to 1 s (the worst case) / to 2 s" % POLICY_TIMEOUT_S)
        log("  %-30s %10s %-7s %6s %9s %15s  %s" % ("body", "size", "mode", "status", "time", "margin 1s/2s",
                                                   "answer"))
        try:
            for name, body in load.hostile_requests():
                expect = expected_outcome(name, body)
                for mode in MODES:
                    policy = "istio-job-sidecar-" + mode
                    # One connection per body: policy-server closes it after a 413.
                    client = Client(server.port, server.cafile)
                    t0 = time.monotonic()
                    try:
                        status, answer = client.post(path_of(policy), body)
                        verdict = answer_summary(status, answer)
                    except Exception as e:  # closed while the body was being sent
                        status, answer, verdict = None, b"", "connection closed, no answer (%s)" % type(e).__name__
                    client.close()
                    dt = time.monotonic() - t0
                    if expect == "answer":
                        message = "" if status != 200 else str(
                            (json.loads(answer)["response"].get("status") or {}).get("message", ""))
                        if status == 200 and "exceeded the allowed execution time" in message:
                            # Timing, not a wrong answer: reported, never fails the run.
                            timeouts.append((name, mode, dt))
                            verdict = "TIMEOUT: " + verdict
                        elif status != 200 or not json.loads(answer)["response"].get("allowed"):
                            fail("%s (%s): %s %s" % (name, mode, status, verdict))
                        elif worst is None or dt > worst[0]:
                            worst = (dt, name, mode)
                    elif expect == "too large" and status not in (413, None):
                        fail("%s (%s): over policy-server's body limit, yet %s %s" % (name, mode, status, verdict))
                    elif expect == "too deep" and status != 400:
                        fail("%s (%s): past 128 levels, yet %s %s" % (name, mode, status, verdict))
                    if not server.ready():
                        fail("%s (%s): policy-server not ready after it" % (name, mode))
                    log("  %-30s %10s %-7s %6s %7.0fms %15s  %s%s" % (
                        name, human(len(body)), mode, status or "-", dt * 1e3,
                        "%+.0f/%+.0fms" % ((1.0 - dt) * 1e3, (POLICY_TIMEOUT_S - dt) * 1e3)
                        if expect == "answer" else "",
                        verdict, "" if expect == "answer" else "  [refused by policy-server: %s]" % expect))
            self.over_limit(server)
        finally:
            bg.send_signal(signal.SIGINT)
            try:
                bg.wait(timeout=10)
            except subprocess.TimeoutExpired:
                bg.kill()
                bg.wait()
        try:
            summary = json.load(open(self.work / "hostile-background.json"))
            codes = summary.get("statusCodeDistribution") or {}
            p = summary.get("latencyPercentiles") or {}
            log("  background (pod-always at 300 req/s meanwhile): %s answers, p50/p99 %.1f/%.1f ms, errors %s" % (
                codes, (p.get("p50") or 0) * 1e3, (p.get("p99") or 0) * 1e3, summary.get("errorDistribution")))
        except (OSError, ValueError):
            log("  background: no summary written")
        if worst:
            log("  slowest answered: %s (%s) %.0f ms: margin %+.0f ms to 1 s, %+.0f ms to 2 s" % (
                worst[1], worst[2], worst[0] * 1e3, (1.0 - worst[0]) * 1e3, (POLICY_TIMEOUT_S - worst[0]) * 1e3))
        for name, mode, dt in timeouts:
            log("  TIMEOUT (reported, not a failure of the run: timing on a shared machine): %s (%s) interrupted "
                "after %.0f ms: policy-server answered allowed: false, so the API server rejects the object"
                % (name, mode, dt * 1e3))

    def over_limit(self, server):
        """Bodies about policy-server's limit and far over it: refused (413,
        or the connection closed while the body is still coming), and
        policy-server answers the next request."""
        limit = load.POLICY_SERVER_BODY_LIMIT
        for size in (limit, limit + 1, 3 << 20, 16 << 20, 64 << 20):
            body = load.sized_request(size)
            client = Client(server.port, server.cafile)
            t0 = time.monotonic()
            try:
                status, answer = client.post(path_of("istio-job-sidecar-native"), body)
                what = "%d %s" % (status, answer_summary(status, answer))
            except Exception as e:
                status, what = None, "connection closed, no answer (%s)" % type(e).__name__
            client.close()
            dt = time.monotonic() - t0
            good = Client(server.port, server.cafile)
            try:
                st, _ = good.post(path_of("istio-job-sidecar-native"),
                                  self.body_file("job-create", "istio-job-sidecar-native").read_bytes())
            except Exception as e:
                st = "none (%r)" % (e,)
            good.close()
            alive = server.process.poll() is None and server.ready()
            log("  body of %d bytes (%s): %s in %.0f ms; policy-server %s, next request: %s" % (
                size, human(size), what, dt * 1e3, "alive" if alive else "GONE", st))
            if size <= limit and status != 200:
                fail("a body of %d bytes, within policy-server's limit, got %s" % (size, what))
            if size > limit and status not in (413, None):
                fail("a body of %d bytes, over policy-server's limit, got %s" % (size, what))
            if not alive or st != 200:
                fail("a %s body took policy-server down" % human(size))

    def sigterm(self, server):
        log("\n== 3d. SIGTERM in the middle of the load (the policy's soak server), then a restart")
        lines = self.mix_lines(self.policies)
        records = []  # (start, end, outcome)
        stop_at = [None]
        lock = threading.Lock()

        def worker(k):
            client = Client(server.port, server.cafile, timeout=10)
            i = k * 31
            while stop_at[0] is None or time.monotonic() < stop_at[0]:
                path, body_file, answer_file = lines[i % len(lines)]
                i += 1
                t0 = time.monotonic()
                sent = False
                try:
                    if client.conn is None:
                        client.conn = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=10,
                                                                  context=client.context)
                        client.conn.connect()
                    client.conn.request("POST", path, body=body_file.read_bytes(),
                                        headers={"Content-Type": "application/json"})
                    sent = True
                    r = client.conn.getresponse()
                    data = r.read()
                    outcome = "answered" if r.status == 200 and data == answer_file.read_bytes() else \
                        ("refused" if r.status == 503 else "wrong")
                except (ConnectionRefusedError, ConnectionResetError, ssl.SSLError, OSError,
                        http.client.HTTPException) as e:
                    client.close()
                    if isinstance(e, ConnectionRefusedError):
                        outcome = "refused"
                    else:
                        outcome = "lost" if sent else "refused"
                with lock:
                    records.append((t0, time.monotonic(), outcome))
                if outcome == "refused":
                    time.sleep(0.01)

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(self.o.sigterm_clients)]
        for t in threads:
            t.start()
        time.sleep(self.o.sigterm_after)
        t_term = time.monotonic()
        os.kill(server.pid, signal.SIGTERM)
        exit_status = None
        for _ in range(400):
            try:
                pid, status = os.waitpid(server.process.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                exit_status = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.025)
        t_exit = time.monotonic()
        stop_at[0] = t_exit + 0.5
        for t in threads:
            t.join(timeout=15)
        server.process.returncode = exit_status
        in_flight = [r for r in records if r[0] < t_term < r[1]]
        after = [r for r in records if r[0] >= t_term]
        before = [r for r in records if r[1] <= t_term]
        count = lambda rs, what: sum(1 for r in rs if r[2] == what)
        log("  %d clients posting the mix to the 3 modes; SIGTERM after %.1f s; policy-server exited %.2f s later "
            "(status %s)" % (self.o.sigterm_clients, self.o.sigterm_after, t_exit - t_term, exit_status))
        for label, rs in (("finished before", before), ("in flight at SIGTERM", in_flight),
                          ("sent after SIGTERM", after)):
            log("  %-22s %5d: answered %d, refused %d, lost %d, wrong %d" % (
                label, len(rs), count(rs, "answered"), count(rs, "refused"), count(rs, "lost"), count(rs, "wrong")))
        if count(before, "wrong") + count(before, "lost") + count(before, "refused"):
            fail("before SIGTERM: %d requests not answered right" % (len(before) - count(before, "answered")))
        if count(in_flight + after, "wrong"):
            fail("a wrong answer around SIGTERM")
        # The restart: the same configuration, a new process.
        t0 = time.monotonic()
        again = PolicyServer(self.work / "sigterm-restart", server.policies_yml,
                             binary=str(self.work / "policy-server-pinned"), lifetime=600)
        env = dict(os.environ)
        for key in [k for k in env if k.startswith("KUBEWARDEN_")]:
            del env[key]
        env.update(again.configure())
        with open(again.log_path, "wb") as logf:
            again.process = subprocess.Popen(["timeout", "--kill-after=5", "600", again.binary],
                                             stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                             env=env, cwd=again.dir, start_new_session=True)
        body = self.body_file("job-create", "istio-job-sidecar-native").read_bytes()
        want = self.answers[("job-create", "istio-job-sidecar-native")].read_bytes()
        first_good = ready_at = None
        tries = 0
        while time.monotonic() - t0 < 120 and first_good is None:
            if ready_at is None and again.ready():
                ready_at = time.monotonic() - t0
            c = Client(again.port, again.cafile, timeout=5)
            try:
                tries += 1
                status, answer = c.post(path_of("istio-job-sidecar-native"), body)
                if status == 200 and answer == want:
                    first_good = time.monotonic() - t0
            except Exception:
                time.sleep(0.02)
            finally:
                c.close()
        # The readiness endpoint may report later than the first answer:
        # policy-server serves as soon as its policies are compiled.
        while first_good is not None and ready_at is None and time.monotonic() - t0 < first_good + 10:
            if again.ready():
                ready_at = time.monotonic() - t0
            else:
                time.sleep(0.02)
        stop(again)
        stop(server)
        log("  restart: first good answer %.2f s after the start (%d tries), readiness %s s; "
            "outage from SIGTERM %.2f s" % (first_good or -1, tries, "%.2f" % ready_at if ready_at else "-",
                                            (t_exit - t_term) + (first_good or 0)))
        if first_good is None:
            fail("no good answer within 120 s of the restart")


def parse_extra(text):
    """NAME=MODULE[:SETTINGS_JSON] (MODULE a path or a file:// or registry:// URI)."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        die("--extra %r: want NAME=MODULE[:SETTINGS_JSON]" % text)
    settings = None
    if ":{" in rest:
        rest, settings_text = rest.split(":{", 1)
        settings = json.loads("{" + settings_text)
    module = rest
    if "://" not in module:
        if not Path(module).is_file():
            die("--extra %s: %s is not a file" % (name, module))
        module = "file://" + str(Path(module).resolve())
    return name, module, settings


def expected_outcome(name, body):
    """What policy-server does with a hostile body before any policy runs:
    refuses one over its body limit (413) or nested past serde_json's 128
    levels (400); every other one must be answered, allowed."""
    if len(body) > load.POLICY_SERVER_BODY_LIMIT:
        return "too large"
    if name.startswith("nested-") and int(name.split("-")[1]) > 128:
        return "too deep"
    return "answer"


def pct(sorted_values, p):
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def human(n):
    return "%.1f KiB" % (n / 1024) if n < 1 << 20 else "%.2f MiB" % (n / (1 << 20))


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def answer_summary(status, answer):
    try:
        response = json.loads(answer)["response"]
    except (ValueError, KeyError, TypeError):
        return answer[:100].decode(errors="replace").replace("\n", " ")
    parts = ["allowed" if response.get("allowed") else "denied"]
    if response.get("patch"):
        parts.append("patched")
    if response.get("status"):
        parts.append(str(response["status"].get("message", ""))[:90])
    for w in response.get("warnings") or []:
        parts.append("warning: " + w[:70])
        break
    return ", ".join(parts)


def tool(name, option, smoke=False):
    path = shutil.which(option)
    if path is None and smoke and os.environ.get("REQUIRE_TOOLS") != "1":
        print("bench-server smoke: skipped, %s not found (%r); REQUIRE_TOOLS=1 makes this a failure" % (name, option))
        sys.exit(0)
    if path is None:
        die("%s not found (%r): %s" % (name, option, {
            "wrk": "apt-get install wrk", "oha": "cargo install oha --locked",
            "policy-server": "POLICY_SERVER=path", "kwctl": "KWCTL=path", "taskset": "util-linux"}[name]))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="annotated-policy.wasm")
    parser.add_argument("--floor-accept", default="target/wasm32-wasip1/release/floor_accept.wasm")
    parser.add_argument("--floor-sdk-parse", default="target/wasm32-wasip1/release/floor_sdk_parse.wasm")
    parser.add_argument("--floor-sdk-mutate", default="target/wasm32-wasip1/release/floor_sdk_mutate.wasm")
    parser.add_argument("--extra", action="append", default=[],
                        help="NAME=MODULE[:SETTINGS_JSON], another (annotated) module in the same policy-server: "
                             "its rows are measured and compared to the floors like the policy's; repeatable")
    parser.add_argument("--policy-server", default=os.environ.get("POLICY_SERVER", "policy-server"))
    parser.add_argument("--kwctl", default=os.environ.get("KWCTL", "kwctl"))
    parser.add_argument("--wrk", default="wrk")
    parser.add_argument("--oha", default="oha")
    parser.add_argument("--workdir", default="target/bench-server")
    parser.add_argument("--server-cpus", default=None, help="taskset list for policy-server (default: the last core)")
    parser.add_argument("--generator-cpus", default=None, help="taskset list for the generators (default: the others)")
    parser.add_argument("--connections", type=int, default=16, help="wrk's, at saturation")
    parser.add_argument("--rate-connections", type=int, default=4, help="oha's, at a fixed load")
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
    parser.add_argument("--skip", action="append", default=[], choices=["rows", "soak", "hostile", "sigterm"])
    o = parser.parse_args()
    if o.smoke:
        o.rounds, o.saturation_rounds, o.saturation_seconds, o.latency_seconds, o.warm_up = 1, 1, 1, 0.3, 0.2
        o.soak, o.memory_requests, o.sigterm_after = 2, 2000, 1.0
    o.policy_server = tool("policy-server", o.policy_server, o.smoke)
    o.kwctl = tool("kwctl", o.kwctl, o.smoke)
    o.wrk = tool("wrk", o.wrk, o.smoke)
    o.oha = tool("oha", o.oha, o.smoke)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2 and shutil.which("taskset"):
        o.server_cpus = o.server_cpus or str(cpus[-1])
        o.generator_cpus = o.generator_cpus or ",".join(str(c) for c in cpus[:-1])
    if not Path(o.policy).is_file():
        die("%s is missing (make annotated-policy.wasm)" % o.policy)

    started = time.monotonic()
    bench = Bench(o)
    versions = [subprocess.run([t, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[0]
                for t in (o.policy_server, o.wrk, o.oha)]
    log("bench-server: %s; %s; %s" % tuple(versions))
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


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def worker_count(server):
    text = server.log()
    for line in text.splitlines():
        if "worker" in line.lower() and ("pool" in line.lower() or "size" in line.lower()):
            return line.strip()[-120:]
    return "policy-server's default (one per core it may run on)"


if __name__ == "__main__":
    main()
