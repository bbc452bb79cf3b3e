"""The flood of `make bench-server`: ordinary traffic at a fixed rate,
alone, then while connections loop the worst hostile bodies as fast as
policy-server answers them; what the flood did to the ordinary requests'
throughput and latency, how long the hostile ones took against the policy
timeout, and policy-server alive at the end."""
import collections
import json
import os
import threading
import time

from .. import load
from . import common
from .common import MODES, POLICY_TIMEOUT_S, Client, fail, log, path_of, pct

# The ordinary traffic: a benign Job CREATE (the mix's Job, mutated in
# nativeSidecar mode), as the rows measure it.
ORDINARY = ("job-create", "istio-job-sidecar-native")
# The shapes at their worst: the largest alias bomb and the deepest
# nesting, through the workload's override and through a forged record.
WORST_CONFIGS = ("config-alias-bomb-255kib-override", "config-alias-bomb-255kib-record",
                 "config-yaml-nesting-100000-override", "config-yaml-nesting-100000-record")
# Their shapes (harness/load.py `config_shapes`), for benign configs of
# the same sizes.
WORST_SHAPES = ("alias-bomb-255kib", "yaml-nesting-100000")
# The flood each hostile one is compared with: what any tenant may send.
BASELINE = ("the benign requests of the same sizes (an ordinary proxy config as large as each worst shape, read "
            "and merged through the override), in each mode")
INTERRUPTED = "exceeded the allowed execution time"


def verdict(status, answer, want):
    """What an answer to a flood body is: `ok` (the answer it got alone),
    `interrupted` (the policy timeout), `denied`, `status N`, `differs`."""
    if status != 200:
        return "status %d" % status
    try:
        response = json.loads(answer)["response"]
    except (ValueError, KeyError, TypeError):
        return "differs"
    if INTERRUPTED in str((response.get("status") or {}).get("message", "")):
        return "interrupted"
    if not response.get("allowed"):
        return "denied"
    return "ok" if answer == want else "differs"


class Flood:
    """Bench's flood (a mixin of Bench)."""

    def answers_alone(self, server, bodies, answers):
        """Each of `bodies` ({name: body}) sent once to each mode, alone:
        its time and answer into `answers` ({(name, mode): (s, answer)})."""
        for name, body in bodies.items():
            for mode in MODES:
                client = Client(server.port, server.cafile)
                t0 = time.monotonic()
                try:
                    status, answer = client.post(path_of("istio-job-sidecar-" + mode), body)
                    what = verdict(status, answer, answer)
                except Exception as e:
                    answer, what = b"", "lost (%s)" % type(e).__name__
                client.close()
                if what != "ok":
                    fail("%s (%s), alone: %s" % (name, mode, what))
                    continue
                answers[(name, mode)] = (time.monotonic() - t0, answer)

    def flood_answers(self, server):
        """{name: body} of the hostile bodies policy-server answers; their
        answers alone, in each mode, come from 3b (each body sent once,
        alone) or, 3b skipped, from a pass of their own here."""
        bodies = {name: body for name, body in load.hostile_requests()
                  if common.expected_outcome(name, body) == "answer"}
        if not self.hostile_answers:
            log("  (3b skipped: each hostile body sent once to each mode first, for its answer)")
            self.answers_alone(server, bodies, self.hostile_answers)
        return bodies

    def flood_manifests(self, server):
        """[(what, [(name, mode, body, answer, seconds alone)])]: the
        baseline, ordinary configs as large as the worst shapes, in each
        mode; the issue's worst config shapes in each mode; the
        --flood-slowest other hostile bodies that took longest alone."""
        bodies = self.flood_answers(server)
        benign = {name: load.review_bytes(request, "benign-" + name)
                  for name, request in load.benign_config_requests(WORST_SHAPES)}
        benign_answers = {}
        self.answers_alone(server, benign, benign_answers)

        def entry(key, answers=self.hostile_answers, bodies=bodies):
            alone, answer = answers[key]
            return (key[0], key[1], bodies[key[0]], answer, alone)

        baseline = [entry(k, benign_answers, benign) for k in sorted(benign_answers)]
        configs = [entry((name, mode)) for name in WORST_CONFIGS for mode in MODES
                   if (name, mode) in self.hostile_answers]
        others = sorted((k for k in self.hostile_answers if k[0] not in WORST_CONFIGS and k[0] in bodies),
                        key=lambda k: -self.hostile_answers[k][0])
        return [(BASELINE, baseline),
                ("the issue's config shapes at their worst (alias bomb at the annotations' limit, nesting 100,000; "
                 "through the override and a forged record), in each mode", configs),
                ("the %d other hostile bodies slowest alone" % self.o.flood_slowest,
                 [entry(k) for k in others[:self.o.flood_slowest]])]

    def flood(self, server):
        o = self.o
        log("\n== 3e. flood: %s to %s at %d req/s (wrk -c%d, runner/wrk_rate.lua, latency-corrected) for %.0f s "
            "alone, then for %.0f s while %d connections loop hostile bodies as fast as policy-server answers them "
            "(closed loop), for each set of bodies; policy timeout %.0f s" % (
                ORDINARY[0], ORDINARY[1], o.flood_rate, o.flood_rate_connections, o.flood_seconds,
                o.flood_seconds, o.flood_connections, POLICY_TIMEOUT_S))
        pid0, rss0 = server.pid, common.rss_kib(server.pid)
        manifests = self.flood_manifests(server)
        path, body_file = path_of(ORDINARY[1]), self.body_file(*ORDINARY)

        def ordinary():
            return self.fixed_rate(server, path, body_file, o.flood_rate, o.flood_seconds, slack=30,
                                   connections=o.flood_rate_connections, warm=o.flood_warm_up)

        alone = ordinary()
        self.print_ordinary("alone", alone)
        peak = common.rss_kib(server.pid) or 0
        baseline = None
        for what, manifest in manifests:
            if not manifest:
                fail("flood: none of %s was answered alone, nothing to flood with" % what)
                continue
            log("\n  flood of %s: each connection sends them in turn, from its own place in the list:" % what)
            for name, mode, body, _, alone_s in manifest:
                log("    %-40s %-7s %10s %7.0f ms alone (3b)" % (name, mode, common.human(len(body)), alone_s * 1e3))
            under, records, flood_s, flood_peak = self.one_flood(server, manifest, ordinary)
            peak = max(peak, flood_peak)
            self.print_ordinary("under the flood", under, alone, baseline)
            self.print_hostile(manifest, records, flood_s)
            if what == BASELINE:
                baseline = under
        rss1 = common.rss_kib(server.pid)
        alive = server.process.poll() is None
        ready = alive and server.ready()
        same = alive and common.server_pid(server) == pid0
        log("\n  policy-server after the floods: %s, %s, pid %d %s; RSS %s KiB before, %s KiB after, %d KiB peak "
            "during the floods; load average %s" % (
                "alive" if alive else "GONE", "ready" if ready else "NOT READY", pid0,
                "(the same)" if same else "(NOT the same)", rss0, rss1, peak, common.loadavg()))
        if not (alive and ready and same):
            fail("flood: policy-server not alive, ready and the same process at the end")

    def one_flood(self, server, manifest, ordinary):
        """`ordinary()` while --flood-connections threads loop `manifest`:
        (its result, [(name, mode, seconds, verdict)], the flood's seconds,
        policy-server's peak RSS)."""
        o = self.o
        records = []
        lock = threading.Lock()
        stop = threading.Event()
        peak = [common.rss_kib(server.pid) or 0]

        def worker(k):
            # Each connection's thread on the generators' cores, as wrk is.
            if o.generator_cpus:
                os.sched_setaffinity(0, {int(c) for c in o.generator_cpus.split(",")})
            client = Client(server.port, server.cafile, timeout=30)
            i = k * max(1, len(manifest) // o.flood_connections)
            while not stop.is_set():
                name, mode, body, want, _ = manifest[i % len(manifest)]
                i += 1
                t0 = time.monotonic()
                try:
                    status, answer = client.post(path_of("istio-job-sidecar-" + mode), body)
                    what = verdict(status, answer, want)
                except Exception as e:  # a lost answer: the connection closed, or 30 s without one
                    what = "lost (%s)" % type(e).__name__
                with lock:
                    records.append((name, mode, time.monotonic() - t0, what))
            client.close()

        def sampler():
            while not stop.wait(0.2):
                peak[0] = max(peak[0], common.rss_kib(server.pid) or 0)

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(o.flood_connections)]
        threads.append(threading.Thread(target=sampler, daemon=True))
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.5)  # the flood's connections made and busy before the ordinary traffic starts
        under = ordinary()
        stop.set()
        for t in threads:
            t.join(timeout=60)
        return under, records, time.monotonic() - t0, peak[0]

    def print_ordinary(self, label, r, alone=None, baseline=None):
        o = self.o
        log("  ordinary %-16s %d answered of %d offered (%d not 200): %.0f/s answered within the %.0f s; "
            "p50/p99/max %.1f/%.1f/%.1f ms; policy-server's CPU %.0f%% of a core" % (
                label, r["n"], int(o.flood_rate * o.flood_seconds), r["errors"], r["in_window"], o.flood_seconds,
                r["p50"] * 1e3, r["p99"] * 1e3, r["max"] * 1e3, 100 * r["server_util"]))
        def ratio(a, b):
            return "%.2fx" % (a / b) if b else "-"

        for against, other in (("alone", alone), ("under the benign flood", baseline)):
            if other is None:
                continue
            log("  ordinary under the flood / %s: throughput within the window %s, p50 %s, p99 %s, max %s "
                "(printed, not enforced; %d connections answer at most %.0f req/s at that p50)" % (
                    against, ratio(r["in_window"], other["in_window"]), ratio(r["p50"], other["p50"]),
                    ratio(r["p99"], other["p99"]), ratio(r["max"], other["max"]), o.flood_rate_connections,
                    o.flood_rate_connections / r["p50"] if r["p50"] else 0))
        if r["errors"]:
            fail("flood: %d ordinary requests %s not answered 200" % (r["errors"], label))

    def print_hostile(self, manifest, records, flood_s):
        times = sorted(dt for _, _, dt, _ in records)
        verdicts = collections.Counter(what for _, _, _, what in records)
        over = sum(1 for dt in times if dt > POLICY_TIMEOUT_S)
        log("  hostile: %d requests on %d connections in %.1f s (%.1f/s); p50/p99/max %.0f/%.0f/%.0f ms; "
            "%d over the %.0f s policy timeout (queued: none interrupted unless said); answers: %s" % (
                len(records), self.o.flood_connections, flood_s, len(records) / flood_s if flood_s else 0,
                pct(times, 50) * 1e3, pct(times, 99) * 1e3, (times[-1] if times else 0) * 1e3, over,
                POLICY_TIMEOUT_S, ", ".join("%s %d" % kv for kv in sorted(verdicts.items()))))
        by_body = collections.defaultdict(list)
        for name, mode, dt, _ in records:
            by_body[(name, mode)].append(dt)
        for name, mode, _, _, alone_s in manifest:
            dts = sorted(by_body.get((name, mode), []))
            if dts:
                log("    %-40s %-7s %4d sent, p50/max %6.0f/%6.0f ms (alone %.0f ms), margin to %.0f s %+.0f ms" % (
                    name, mode, len(dts), pct(dts, 50) * 1e3, dts[-1] * 1e3, alone_s * 1e3, POLICY_TIMEOUT_S,
                    (POLICY_TIMEOUT_S - dts[-1]) * 1e3))
        wrong = {what: n for what, n in verdicts.items() if what != "ok"}
        if wrong:
            examples = sorted({"%s (%s): %s" % (name, mode, what) for name, mode, _, what in records
                               if what != "ok"})[:6]
            fail("flood: %d hostile answers not the allowed answer each got alone (%s): %s" % (
                sum(wrong.values()), ", ".join("%s %d" % kv for kv in sorted(wrong.items())), "; ".join(examples)))
        if not records:
            fail("flood: no hostile request was answered")
