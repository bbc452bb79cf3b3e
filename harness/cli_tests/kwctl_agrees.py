"""Every patch and warning `kubectl istio-job-sidecar scan -o json` reports
for a CREATE or UPDATE of an object of its input, compared with what kwctl
answers when it runs the policy module on the same request (e2e.bats).

    python3 -m harness.cli_tests.kwctl_agrees SCAN.json SETTINGS_JSON MODULE

The requests are built as the tool builds them (policy_testkit's
admission_request: the API server's AdmissionRequest for the object, an
UPDATE's old object the object itself). A Job's next Pods and a CronJob's
next Jobs are objects the tool derives, so they are left to cli/tests/cli.rs.
"""

import base64
import json
import subprocess
import sys
import tempfile

import yaml


def objects_of(path):
    """The documents of a file as the tool numbers them (1-based), a List's items by index."""
    text = open(path).read()
    if text.lstrip().startswith(("{", "[")):
        decoder, docs, i = json.JSONDecoder(), [], 0
        while i < len(text):
            while i < len(text) and text[i].isspace():
                i += 1
            if i == len(text):
                break
            value, i = decoder.raw_decode(text, i)
            docs.append(value)
        return docs
    return list(yaml.safe_load_all(text))


def request(operation, obj, namespace):
    api_version = obj.get("apiVersion", "v1")
    group, version = api_version.split("/") if "/" in api_version else ("", api_version)
    kind = obj["kind"]
    resource = {"Job": "jobs", "CronJob": "cronjobs", "Pod": "pods"}[kind]
    req = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": obj.get("metadata", {}).get("name", ""),
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
        "object": obj,
        "dryRun": False,
    }
    if operation == "UPDATE":
        req["oldObject"] = obj
    return req


def kwctl(req, settings, module):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(req, f)
        f.flush()
        out = subprocess.run(["kwctl", "run", "--request-path", f.name, "--settings-json", settings, module],
                             capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kwctl failed: {out.stderr}")
    line = [text for text in out.stdout.splitlines() if '"allowed"' in text][-1]
    response = json.loads(line)
    patch = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    return patch, response.get("warnings") or []


def main():
    scan_path, settings, module = sys.argv[1:4]
    scan = json.load(open(scan_path))
    cache, checked, bad = {}, 0, []
    for ns in scan["namespaces"]:
        for o in ns["objects"]:
            source = o["source"]
            docs = cache.setdefault(source["file"], objects_of(source["file"]))
            doc = docs[source["document"] - 1]
            obj = doc["items"][source["item"]] if source["item"] is not None else doc
            for e in o["evaluations"]:
                if e["at"] not in ("create", "update") or e["sent"]["sent"] is False:
                    continue
                patch, warnings = kwctl(request(e["operation"], obj, ns["name"]), settings, module)
                checked += 1
                if patch != e["patch"] or warnings != e["warnings"]:
                    bad.append(f"{o['kind']}/{o['name']} {e['at']}: kwctl {json.dumps(patch)[:300]} {warnings}"
                               f" / scan {json.dumps(e['patch'])[:300]} {e['warnings']}")
    print(f"{checked} requests compared with kwctl, {len(bad)} differ")
    for b in bad:
        print(b)
    sys.exit(1 if bad or checked == 0 else 0)


if __name__ == "__main__":
    main()
