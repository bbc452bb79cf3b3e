"""What every part of `make bench-server` shares: the log and the faults,
policy-server's process (CPU, RSS, stop), the generators' pinning, one
HTTPS client, and the small helpers of the report."""
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path

from .. import controller, load

ROOT = Path(__file__).resolve().parent.parent.parent

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
            "wrk": "apt-get install wrk",
            "policy-server": "POLICY_SERVER=path", "kwctl": "KWCTL=path", "taskset": "util-linux"}[name]))
    return path


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

