"""The rows of `make bench-server`: each request type and module at
saturation (wrk) and at fixed loads (wrk with runner/wrk_rate.lua), with
the ratios to its floor."""
import csv
import json
import math
import random

from .common import ROOT, Meter, die, fail, log, path_of, pct, pinned, run_child


class Rows:
    """Bench's generators and rows (a mixin of Bench)."""

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

    def fixed_rate(self, server, path, body_file, rate, seconds, slack=5, connections=None, warm=None):
        """p50/p95/p99/max (s) at `rate` req/s on `connections` (else
        --rate-connections), requests of the first --warm-up seconds left
        out (the connections' TLS handshakes); wrk waits at most `slack`
        seconds past the schedule for the last answers. `in_window`: the
        answers that came within the `seconds` measured, a second."""
        out_file = self.work / "rate.csv"
        warm = self.o.warm_up if warm is None else warm
        # wrk with runner/wrk_rate.lua: oha's -q RATE --latency-correction -w,
        # its CSV columns; whole seconds for -d, a bound it exits before
        # once every request has its answer
        cmd = pinned([self.o.wrk, "-t1", "-c%d" % (connections or self.o.rate_connections),
                      "-d%ds" % (math.ceil(seconds + warm) + slack), "--timeout", "10s",
                      "-s", str(ROOT / "runner" / "wrk_rate.lua"), server.base_url + path, "--",
                      "%.1f" % rate, str(body_file), "%.2f" % (seconds + warm), str(out_file)],
                     self.o.generator_cpus)
        with Meter(server.pid) as meter:
            _, cpu = run_child(cmd, timeout=seconds + warm + slack + 120)
            meter.stop(cpu)
        rows = list(csv.DictReader(out_file.open()))
        out_file.unlink()
        ok = [r for r in rows if r.get("status") == "200"]
        steady = sorted(float(r["request-duration"]) for r in ok if float(r["request-start"]) >= warm)
        # An answer's time: its slot (request-start) and its latency, counted
        # from that slot whenever the request went out late.
        in_window = sum(1 for r in ok if warm <= float(r["request-start"])
                        and float(r["request-start"]) + float(r["request-duration"]) <= warm + seconds)
        errors = len(rows) - len(ok)
        return {"n": len(steady), "errors": errors, "p50": pct(steady, 50), "p95": pct(steady, 95),
                "p99": pct(steady, 99), "max": steady[-1] if steady else 0.0,
                "achieved": len(steady) / seconds if seconds else 0,
                "in_window": in_window / seconds if seconds else 0,
                "server_util": meter.server_util}

    # -- phases --
    def is_measured(self, policy):
        """The policy's modes and the extra modules get ratios to a floor."""
        return policy in self.policies or policy in [e[0] for e in self.extra]

    def latency_labels(self):
        """The fixed loads: 300 req/s and half the floor's saturation; the
        smoke runs the first only (the same code, half the time)."""
        return ("300",) if self.o.smoke else ("300", "half")

    def rows(self, server):
        o = self.o
        log("\n== 1. per request type and module, interleaved: saturation (wrk -t1 -c%d, %d round(s) of %d s), "
            "fixed load (wrk -c%d at a constant rate%s, latency-corrected, %d round(s) of %.1f s "
            "after %.1f s of warm-up)"
            % (o.connections, o.saturation_rounds, o.saturation_seconds, o.rate_connections,
               ", 300 req/s only in the smoke" if o.smoke else "", o.rounds, o.latency_seconds, o.warm_up))
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
            for label in self.latency_labels():
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
                        r = self.fixed_rate(server, path_of(policy), self.body_file(rtype, policy), rate,
                                            o.latency_seconds)
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
