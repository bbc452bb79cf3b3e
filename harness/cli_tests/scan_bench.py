#!/usr/bin/env python3
"""`make scan-bench`: the operator's tool on about 100 MB of input in each
form it reads, its wall clock, CPU and peak memory measured by
/usr/bin/time, and peak memory as a ratio of the input's size (the bound:
3x). The inputs come from harness/cli_tests/make_large.py (kubectl's objects of
tests/data/cluster.json, copied):

- a JSON List, as `kubectl get -o json` writes it;
- a YAML List, as `kubectl get -o yaml` writes it (one document);
- a multi-document YAML stream, as `helm template` or a GitOps folder;
- a YAML List of small manifests (kubectl's `create job|cronjob` and Pods,
  no status): the most objects per byte, each changed by the policy.

Each is scanned as a table and with `-o json`, and rendered.

    python3 cli/scan_bench.py --cli target/release/kubectl-istio_job_sidecar
"""

import argparse
import os
import re
import subprocess
import sys

# the repository's root: harness/cli_tests/ is two levels below it
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOW = "2025-12-08T16:32:00Z"

# Objects per form for about 100 MB (JSON's 4-space indentation is the
# widest of the three).
FORMS = [("JSON List", "json", 12000, "list.json"),
         ("YAML List", "yaml", 30000, "list.yaml"),
         ("YAML stream", "stream", 32000, "stream.yaml"),
         ("YAML List of manifests", "manifests", 290000, "manifests.yaml")]

RUNS = [("scan, table", ["scan", "{input}", "--now", NOW]),
        ("scan, -o json", ["scan", "{input}", "--now", NOW, "-o", "json"]),
        ("render", ["render", "{input}", "-q"])]


def measure(cli, args, out_path):
    """Wall clock (s), CPU (s), peak RSS (bytes) and exit status of one run."""
    with open(out_path, "wb") as out:
        done = subprocess.run(["/usr/bin/time", "-v", cli, *args], stdout=out, stderr=subprocess.PIPE, text=True)
    report = done.stderr
    def field(name):
        m = re.search(rf"{re.escape(name)}: (.+)", report)
        return m.group(1).strip() if m else ""
    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    parts = [float(p) for p in wall.split(":")]
    seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    cpu = float(field("User time (seconds)") or 0) + float(field("System time (seconds)") or 0)
    rss = int(field("Maximum resident set size (kbytes)") or 0) * 1024
    status = int(field("Exit status") or done.returncode)
    return seconds, cpu, rss, status


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--workdir", default="target/scan-bench")
    parser.add_argument("--scale", type=float, default=1.0, help="objects per form times this (smoke: 0.05)")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    bad = []
    for form, kind, objects, name in FORMS:
        path = os.path.join(args.workdir, name)
        n = max(1, int(objects * args.scale))
        with open(path, "w") as f:
            subprocess.run([sys.executable, "-m", "harness.cli_tests.make_large", str(n), kind],
                           stdout=f, check=True, cwd=ROOT)
        size = os.path.getsize(path)
        for run, template in RUNS:
            argv = [a.replace("{input}", path) for a in template]
            out = os.path.join(args.workdir, "run.out")
            seconds, cpu, rss, status = measure(args.cli, argv, out)
            ratio = rss / size
            rows.append((form, n, size, run, seconds, cpu, rss, ratio, os.path.getsize(out), status))
            if status != 0 or ratio > 3:
                bad.append(f"{form} {run}: exit {status}, peak memory {ratio:.2f}x the input")
            os.remove(out)
        os.remove(path)
    print("| input | objects | size | run | wall clock | CPU | MB/s | peak memory | x input | output |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for form, n, size, run, seconds, cpu, rss, ratio, out, _ in rows:
        print(f"| {form} | {n:,} | {size / 1e6:.1f} MB | {run} | {seconds:.1f} s | {cpu:.1f} s | "
              f"{size / 1e6 / max(seconds, 0.01):.1f} | {rss / 1e6:.0f} MB | {ratio:.2f} | {out / 1e6:.1f} MB |")
    if bad:
        sys.exit("over the bound (3x the input) or failed: " + "; ".join(bad))


if __name__ == "__main__":
    main()
