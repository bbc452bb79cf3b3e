"""A real policy-server on loopback, with TLS from a throwaway CA,
configured as Kubewarden's controller configures it.

`PolicyServer(workdir, policies)` writes policies.yml (and sources.yml when
there are insecure sources) into `workdir`, starts policy-server with the
environment of the controller's Deployment (`controller.policy_server_environment`),
bound to 127.0.0.1 on free ports, and waits for its readiness endpoint
(plain http, as the Deployment's readinessProbe). `stop()` ends it (SIGTERM,
then SIGKILL); so does leaving a `with` block, and a hard lifetime limit
(coreutils `timeout`) ends it even when nobody does.

The CA and server certificate are made with the openssl command line:
`make_tls(dir)`.

`kubeconfig=PATH` gives policy-server a Kubernetes API to call (KUBECONFIG,
read by its client before the in-cluster configuration a Pod has) in place
of `KUBEWARDEN_IGNORE_KUBERNETES_CONNECTION_FAILURE`, which the controller
never sets.
"""
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import controller

BINARY = os.environ.get("POLICY_SERVER", "policy-server")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tls(directory, common_name="policy-server-default.kubewarden.svc"):
    """A throwaway CA (`ca.crt`) and a server certificate for 127.0.0.1 and
    localhost signed by it (`tls.crt`, `tls.key`, the names of the
    controller's secret). Returns the three paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def run(*args):
        return subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "1", "-subj", "/CN=istio-job-sidecar throwaway test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
        "-subj", "/CN=" + common_name)
    (d / "tls.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                               "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "tls.crt", "-days", "1", "-extfile", "tls.ext")
    return d / "ca.crt", d / "tls.crt", d / "tls.key"


class StartFailed(Exception):
    """policy-server exited, or was not ready in time; `log` is its output."""

    def __init__(self, message, returncode, log):
        super().__init__(message)
        self.returncode = returncode
        self.log = log


class PolicyServer:
    """policy-server serving `policies_yml` (the text the controller writes)
    from `workdir`. `extra_env` adds to the controller's environment."""

    def __init__(self, workdir, policies_yml, insecure_sources=(), extra_env=None,
                 ready_timeout=120.0, lifetime=1800, binary=None, kubeconfig=None):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.policies_yml = policies_yml
        self.insecure_sources = list(insecure_sources)
        self.extra_env = dict(extra_env or {})
        self.ready_timeout = ready_timeout
        self.lifetime = lifetime
        self.binary = binary or BINARY
        self.kubeconfig = kubeconfig
        self.process = None
        self.port = self.readiness_port = None
        self.log_path = self.dir / "policy-server.log"

    # -- configuration -----------------------------------------------------
    def configure(self):
        tls = self.dir / "tls"
        if not (tls / "tls.crt").exists():
            make_tls(tls)
        self.cafile = tls / "ca.crt"
        (self.dir / "policies.yml").write_text(self.policies_yml)
        sources = None
        if self.insecure_sources:
            sources = self.dir / "sources.yml"
            sources.write_text(controller.sources_yml(self.insecure_sources))
        for sub in ("store", "sigstore-data"):
            (self.dir / sub).mkdir(exist_ok=True)
        self.port, self.readiness_port = free_port(), free_port()
        env = controller.policy_server_environment(
            policies_path=self.dir / "policies.yml", download_dir=self.dir / "store",
            sigstore_cache_dir=self.dir / "sigstore-data", cert_file=tls / "tls.crt", key_file=tls / "tls.key",
            port=self.port, readiness_port=self.readiness_port, sources_path=sources)
        # Not the controller's: loopback only (its default is 0.0.0.0), and
        # no Kubernetes API to connect to, or one named by a kubeconfig (a
        # Pod's client finds its service account's instead).
        env["KUBEWARDEN_BIND_ADDRESS"] = "127.0.0.1"
        if self.kubeconfig is None:
            env["KUBEWARDEN_IGNORE_KUBERNETES_CONNECTION_FAILURE"] = "true"
        else:
            env["KUBECONFIG"] = str(self.kubeconfig)
        env["NO_COLOR"] = "true"
        env.update(self.extra_env)
        return env

    # -- life ----------------------------------------------------------------
    def start(self):
        env = dict(os.environ)
        for key in list(env_of_interest(env)):
            del env[key]
        env.update(self.configure())
        (self.dir / "environment.json").write_text(json.dumps(env_of_interest(env), indent=1, sort_keys=True))
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                ["timeout", "--kill-after=5", str(self.lifetime), self.binary],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=self.dir, start_new_session=True, close_fds=True)
        (self.dir / "policy-server.pid").write_text("%d\n" % self.process.pid)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartFailed("policy-server exited with status %d before it was ready"
                                  % self.process.returncode, self.process.returncode, self.log())
            if self.ready():
                return self
            time.sleep(0.1)
        self.stop()
        raise StartFailed("policy-server not ready after %.0f s" % self.ready_timeout, None, self.log())

    def ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readiness" % self.readiness_port, timeout=2) as r:
                return r.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def base_url(self):
        return "https://127.0.0.1:%d" % self.port

    # -- requests ------------------------------------------------------------
    def post(self, path, body):
        """POST JSON `body` to `path` over TLS checked against the test CA:
        (HTTP status, parsed JSON answer)."""
        return post_json(self.base_url + path, body, self.cafile)


def env_of_interest(env):
    return {k: v for k, v in env.items() if k.startswith("KUBEWARDEN_") or k == "KUBECONFIG"}


_contexts = {}


def post_json(url, body, cafile, timeout=30):
    context = _contexts.get(str(cafile))
    if context is None:
        context = _contexts[str(cafile)] = ssl.create_default_context(cafile=str(cafile))
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"body": text.decode(errors="replace")}


def stop_pidfile(path):
    """Ends the process group whose leader's pid is in `path` (what
    `PolicyServer.start` wrote), if it is still a policy-server's."""
    try:
        pid = int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return False
    try:
        cmdline = Path("/proc/%d/cmdline" % pid).read_bytes()
    except OSError:
        return False
    if b"policy-server" not in cmdline:
        return False
    os.killpg(pid, signal.SIGTERM)
    for _ in range(100):
        if not Path("/proc/%d" % pid).exists():
            return True
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    os.killpg(pid, signal.SIGKILL)
    return True
