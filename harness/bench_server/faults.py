"""The faults of `make bench-server`: the mix at saturation with every
answer checked, hostile bodies, a body over the limit, SIGTERM and the
restart."""
import collections
import csv
import http.client
import json
import os
import random
import signal
import ssl
import subprocess
import threading
import time

from .. import load
from ..policy_server import PolicyServer
from .common import (
    MODES,
    POLICY_TIMEOUT_S,
    ROOT,
    Client,
    answer_summary,
    expected_outcome,
    fail,
    human,
    loadavg,
    log,
    path_of,
    pct,
    pinned,
    rss_kib,
    stop,
)


class Faults:
    """Bench's fault runs (a mixin of Bench)."""

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
        log("\n== 3b. hostile bodies, each to the policy in each mode, while wrk offers the mix's commonest "
            "request (pod-always) at 300 req/s; time = the whole HTTPS round trip, margin = 2 s - time")
        bg_body = self.body_file("pod-always", "istio-job-sidecar-native")
        bg_seconds = 3600
        bg_csv = self.work / "hostile-background.csv"
        bg = subprocess.Popen(pinned([self.o.wrk, "-t1", "-c4", "-d%ds" % bg_seconds, "--timeout", "10s",
                                      "-s", str(ROOT / "runner" / "wrk_rate.lua"),
                                      server.base_url + path_of("istio-job-sidecar-native"), "--",
                                      "300", str(bg_body), str(bg_seconds), str(bg_csv)],
                                     self.o.generator_cpus),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        worst = None
        timeouts = []
        log("  policy-server interrupts a policy when its epoch, advanced by a 1 s ticker, passes the call's "
            "start + %d ticks: after 1 to 2 s of guest time. Margins: to 1 s (the worst case) / to 2 s"
            % POLICY_TIMEOUT_S)
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
                            # The policy answers every such body in milliseconds: interrupted, it made
                            # the API server reject an object it should have admitted. Sent again
                            # alone, for the report, then a failure of the run.
                            again = self.once_more(server, policy, body)
                            timeouts.append((name, mode, dt, again))
                            verdict = "TIMEOUT: " + verdict
                        elif status != 200 or not json.loads(answer)["response"].get("allowed"):
                            fail("%s (%s): %s %s" % (name, mode, status, verdict))
                        else:
                            # Kept for the flood: its bodies' answers, and how long each took alone.
                            self.hostile_answers[(name, mode)] = (dt, answer)
                            if worst is None or dt > worst[0]:
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
            rows = list(csv.DictReader(bg_csv.open()))
            codes = collections.Counter(r["status"] for r in rows if r["status"] != "0")
            ms = sorted(float(r["request-duration"]) * 1e3 for r in rows if r["status"] == "200")
            log("  background (pod-always at 300 req/s meanwhile): %s answers, p50/p99 %.1f/%.1f ms, "
                "%d unanswered when it was stopped" % (dict(codes), pct(ms, 50), pct(ms, 99),
                                                      len(rows) - sum(codes.values())))
        except (OSError, ValueError, KeyError):
            log("  background: no rows written")
        if worst:
            log("  slowest answered: %s (%s) %.0f ms: margin %+.0f ms to 1 s, %+.0f ms to 2 s" % (
                worst[1], worst[2], worst[0] * 1e3, (1.0 - worst[0]) * 1e3, (POLICY_TIMEOUT_S - worst[0]) * 1e3))
        for name, mode, dt, again in timeouts:
            log("  TIMEOUT: %s (%s) interrupted after %.0f ms: policy-server answered allowed: false, so the API "
                "server rejects the object; sent again alone: %s" % (name, mode, dt * 1e3, again))
        if timeouts:
            fail("the policy timed out on %d hostile body/bodies it answers in milliseconds: %s" % (
                len(timeouts), ", ".join("%s (%s)" % (name, mode) for name, mode, _, _ in timeouts)))

    def once_more(self, server, policy, body):
        """`body` sent to `policy` once more, on a connection of its own: how
        it went, for the report of a timeout."""
        client = Client(server.port, server.cafile)
        t0 = time.monotonic()
        try:
            status, answer = client.post(path_of(policy), body)
            what = "%s %s" % (status, answer_summary(status, answer))
        except Exception as e:
            what = "connection closed, no answer (%s)" % type(e).__name__
        client.close()
        return "%s in %.0f ms" % (what, (time.monotonic() - t0) * 1e3)

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

        def count(rs, what):
            return sum(1 for r in rs if r[2] == what)

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

