"""The AdmissionRequests the harness sends for objects, written by the
project's one builder: kube-model's `admission-request` (Rust), which the
operator's tool and the Rust tests use too, so that the harness spells no
request of its own. `apiserver.admission_request` then writes a request as
the API server does (its members in the struct's order)."""

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_BUILDER = []


def _builder():
    """The `admission-request` binary, built (or found up to date) once per
    process by cargo, wherever its target directory is."""
    if not _BUILDER:
        out = subprocess.run(
            ["cargo", "build", "--locked", "-q", "-p", "kube-model", "--bin", "admission-request",
             "--message-format=json"],
            cwd=ROOT, check=True, capture_output=True, text=True)
        for line in out.stdout.splitlines():
            message = json.loads(line)
            if message.get("reason") == "compiler-artifact" and message.get("executable"):
                _BUILDER.append(message["executable"])
        if not _BUILDER:
            raise RuntimeError("cargo built no admission-request binary")
    return _BUILDER[0]


def requests(entries):
    """The AdmissionRequest of each `{"operation", "object", "oldObject"?,
    "namespace"?}` entry (the namespace defaults to the object's own)."""
    out = subprocess.run([_builder()], input=json.dumps(entries), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("admission-request: %s" % out.stderr.strip())
    return json.loads(out.stdout)


def request(operation, obj, old=None, namespace=None):
    """The AdmissionRequest the API server sends for `operation` on `obj`."""
    entry = {"operation": operation, "object": obj}
    if old is not None:
        entry["oldObject"] = old
    if namespace is not None:
        entry["namespace"] = namespace
    return requests([entry])[0]
