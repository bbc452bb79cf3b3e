"""`make bench-kwctl`: the cases of `policy-runner bench` through `kwctl bench`.

kwctl bench times the whole `validate` of policy-evaluator, what
policy-server pays per request: the payload built, the guest call, the
answer parsed and, for a mutation, the returned object diffed against the
request's and the patch encoded. The cases come from
`policy-runner bench --write-cases DIR` (one request file each and
`cases.json` with route, settings, floor and target), so both benches run the
same requests.

For every case the policy and both SDK floors are benched once per round, in
a module order that rotates from round to round; after all rounds the lowest
median of each (case, module) is kept. A mutation is compared to floor (c)
(floors/sdk-mutate: parse, add one annotation, return the object), a skip to
floor (b) (floors/sdk-parse: parse, accept). With `--release`, the module
of the last release (runner/bench/) is benched in the same rounds and its
ratio to the same floor printed beside the policy's: a policy ratio above
the release's is a regression.

It is a measurement tool, not a test: it exits 0 when every run worked,
whatever the ratios, and nonzero when kwctl is missing or a run fails.
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A criterion-like block header: `validate [15.2 thousand iterations in 1.01s with 100.0 samples]:`
HEADER = re.compile(r"^(\S+) \[.* iterations in .*samples\]:")
MEDIAN = re.compile(r"med = ([0-9.]+)\s*(ps|ns|µs|us|ms|s)\b")
UNIT_US = {"ps": 1e-6, "ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def fail(message):
    print(f"bench-kwctl: {message}", file=sys.stderr)
    sys.exit(1)


def kwctl_path(name):
    path = shutil.which(name)
    if path is None:
        fail(
            f"kwctl not found ({name!r} is not an executable or on PATH). "
            "Install it (https://docs.kubewarden.io/howtos/install-kwctl) or point "
            "KWCTL at one, e.g. make bench-kwctl KWCTL=../shared/tools/kwctl/kwctl"
        )
    return path


def run_kwctl(kwctl, args):
    env = dict(os.environ, RUST_BACKTRACE="0", NO_COLOR="1")
    done = subprocess.run(
        [kwctl, *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        fail(f"kwctl {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def module_uri(path):
    return "file://" + os.path.abspath(path)


def common_args(case, cases_dir):
    return [
        "--request-path",
        os.path.join(cases_dir, case["request"]),
        "--settings-json",
        json.dumps(case["settings"]),
    ]


def patch_ops(kwctl, module, case, cases_dir):
    """`kwctl run` once: the request must be accepted; the patch's op count."""
    out = run_kwctl(kwctl, ["run", *common_args(case, cases_dir), module_uri(module)])
    response = json.loads(out.strip().splitlines()[-1])
    if not response.get("allowed"):
        fail(f"{module} rejected {case['name']}: {response}")
    patch = response.get("patch")
    return len(json.loads(base64.b64decode(patch))) if patch else 0


def validate_median_us(output):
    """The median of the `validate` block of kwctl bench's output, in µs."""
    label = None
    for line in ANSI.sub("", output).splitlines():
        header = HEADER.match(line.strip())
        if header:
            label = header.group(1)
            continue
        median = MEDIAN.search(line)
        if median and label == "validate":
            return float(median.group(1)) * UNIT_US[median.group(2)]
    return None


def bench(kwctl, module, case, cases_dir, options):
    args = [
        "bench",
        "--warm-up-time",
        str(options.warm_up_time),
        "--measurement-time",
        str(options.measurement_time),
        *common_args(case, cases_dir),
        module_uri(module),
    ]
    out = run_kwctl(kwctl, args)
    median = validate_median_us(out)
    if median is None:
        fail(f"no `validate ... med = ...` line in the output of kwctl {' '.join(args)}:\n{out}")
    return median


def main():
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_kwctl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kwctl", default=os.environ.get("KWCTL", "kwctl"))
    parser.add_argument("--cases", required=True, help="directory written by policy-runner bench --write-cases")
    parser.add_argument("--policy", default="policy.wasm")
    parser.add_argument("--floor-sdk-parse", default="target/wasm32-wasip1/release/floor_sdk_parse.wasm")
    parser.add_argument("--floor-sdk-mutate", default="target/wasm32-wasip1/release/floor_sdk_mutate.wasm")
    parser.add_argument("--release", help="the last release's module, measured beside the policy")
    parser.add_argument("--rounds", type=int, default=3)
    # kwctl takes whole seconds; both apply to validate_settings too, which kwctl benches first.
    parser.add_argument("--warm-up-time", type=int, default=1, help="whole seconds, per kwctl bench run")
    parser.add_argument("--measurement-time", type=int, default=2, help="whole seconds, per kwctl bench run")
    parser.add_argument("--filter", help="only cases whose name contains this")
    parser.add_argument("--json", help="also write every round's medians to this file")
    options = parser.parse_args()

    kwctl = kwctl_path(options.kwctl)
    with open(os.path.join(options.cases, "cases.json"), encoding="utf-8") as f:
        cases = [c for c in json.load(f) if not options.filter or options.filter in c["name"]]
    modules = {
        "policy": options.policy,
        "sdk-mutate": options.floor_sdk_mutate,
        "sdk-parse": options.floor_sdk_parse,
    }
    if options.release:
        modules["release"] = options.release
    for path in modules.values():
        if not os.path.isfile(path):
            fail(f"{path} is missing (make policy.wasm floors)")

    version = run_kwctl(kwctl, ["--version"]).strip().splitlines()[0]
    load_before = os.getloadavg()
    print(f"bench-kwctl: {version} ({kwctl}), {len(cases)} cases x {len(modules)} modules x "
          f"{options.rounds} rounds, kwctl bench --warm-up-time {options.warm_up_time} "
          f"--measurement-time {options.measurement_time}")
    print(f"load average at start: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)

    # Each row is checked once with kwctl run: accepted, and the floors do
    # what they stand for (floor (c) one patch op, floor (b) none).
    did = {}
    for case in cases:
        ops = {name: patch_ops(kwctl, path, case, options.cases) for name, path in modules.items()}
        if ops["sdk-mutate"] != 1 or ops["sdk-parse"] != 0:
            fail(f"floors misbehave on {case['name']}: {ops}")
        did[case["name"]] = f"{ops['policy']} op(s)" if ops["policy"] else "unchanged"

    names = list(modules)
    medians = {(c["name"], m): [] for c in cases for m in names}
    started = time.monotonic()
    for r in range(options.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for case in cases:
            for name in order:
                median = bench(kwctl, modules[name], case, options.cases, options)
                medians[(case["name"], name)].append(median)
                print(f"  round {r + 1}/{options.rounds} {case['name']:<34} {name:<10} "
                      f"{median:9.1f} us", file=sys.stderr, flush=True)
    load_after = os.getloadavg()

    print()
    print("times: lowest median over the rounds of kwctl bench's `validate`, in microseconds; "
          "ratio = policy / its floor; per round = that ratio in each round")
    header = (f"{'case':<34} {'route':<8} {'policy did':<10} {'policy':>9} {'floor c':>9} "
              f"{'floor b':>9} {'floor':<10} {'ratio':>6} {'per round':>11} {'target':>6}      {'vs b':>6}"
              + (f" | {'release':>9} {'ratio':>6}" if "release" in modules else ""))
    print(header)
    over = 0
    for case in cases:
        n = case["name"]
        best = {m: min(medians[(n, m)]) for m in names}
        floor = case["floor"]
        ratio = best["policy"] / best[floor]
        per_round = [p / f for p, f in zip(medians[(n, "policy")], medians[(n, floor)])]
        verdict = "ok" if ratio <= case["target"] else "OVER"
        over += verdict == "OVER"
        release = (f" | {best['release']:9.1f} {best['release'] / best[floor]:5.2f}x"
                   if "release" in modules else "")
        print(f"{n:<34} {case['route']:<8} {did[n]:<10} {best['policy']:9.1f} {best['sdk-mutate']:9.1f} "
              f"{best['sdk-parse']:9.1f} {floor:<10} {ratio:5.2f}x {min(per_round):5.2f}-{max(per_round):4.2f}x "
              f"{case['target']:5.1f}x {verdict:<4} {best['policy'] / best['sdk-parse']:5.2f}x{release}")
    print(f"\n{len(cases) - over} of {len(cases)} rows within target; "
          f"{(time.monotonic() - started) / 60:.1f} min; load average at end: "
          f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if options.json:
        with open(options.json, "w", encoding="utf-8") as f:
            json.dump([{"case": n, "module": m, "medians_us": v} for (n, m), v in medians.items()], f, indent=1)


if __name__ == "__main__":
    main()
