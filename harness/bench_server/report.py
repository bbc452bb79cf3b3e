"""The report of `make bench-server`: a table per request type, the
summary of the ratios, where the time goes, and the generators' headroom."""

from .common import human, loadavg, log


class Report:
    """Bench's printed tables (a mixin of Bench)."""

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
                    if policy == "floor-accept":
                        cells.append("")
                    elif label not in self.latency_labels():
                        cells.append("- (not in the smoke)")
                    else:
                        cells.append("- (over 0.8x saturation)")
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
        if self.releases:
            log("  release = the last release (%s) in the same mode, its throughput ratio to its own row's floor "
                "in the same run: a policy ratio below it is a regression" % self.o.release)
        within = total = 0
        releases = set(self.releases.values())
        for rtype, (sat, lat) in results.items():
            for policy in [p for p in self.modules if self.is_measured(p) and p not in releases]:
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
                log("  %-18s %-26s %-9s throughput %5.2fx %-28s %-7s %s" % (
                    rtype, policy, "mutation" if mutation else "unchanged", tput, " ".join(notes),
                    "ok" if ok else "OUTSIDE", self.release_beside(rtype, sat, policy)))
        log("  %d of %d rows of the policy within target" % (within, total))
        # The three modes answer a long-running Pod by the same early skip:
        # their spread is this run's noise.
        same = [results["pod-always"][0][p]["rps"] for p in self.policies]
        log("  noise of this run: the 3 modes on pod-always (one code path, the early skip) spread %.0f%% "
            "(%.0f-%.0f req/s); read every ratio with that in mind" % (
                100 * (max(same) - min(same)) / min(same), min(same), max(same)))

    def release_beside(self, rtype, sat, policy):
        """The last release's throughput ratio in the mode of `policy`,
        to its own floor (named when the release answers otherwise)."""
        release = self.releases.get(policy)
        if release is None:
            return ""
        floor = self.floor_of(rtype, release)
        mutation = "mutation" if self.mutates[(rtype, release)] else "unchanged"
        return "| release %5.2fx %s" % (sat[release]["rps"] / sat[floor]["rps"],
                                       "" if floor == self.floor_of(rtype, policy) else "(%s)" % mutation)

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
