"""A cluster dump of N objects for measuring the tool (not committed):

    python3 -m harness.cli_tests.make_large 20000 > /tmp/cluster-20000.json
    python3 -m harness.cli_tests.make_large 20000 yaml > /tmp/cluster-20000.yaml
    python3 -m harness.cli_tests.make_large 20000 stream > /tmp/cluster-20000-stream.yaml
    python3 -m harness.cli_tests.make_large 200000 manifests > /tmp/manifests-200000.yaml

The items of cli/tests/data/cluster.json (kubectl's objects, see make_inputs.py), copied
over 100 namespaces with unique names and uids until there are N, in the
order `kubectl get jobs,cronjobs,pods -A -o json` prints them; written as
`kubectl get -o json` writes it (a List, sorted keys, 4 spaces), as
`kubectl get -o yaml` writes it (a List, 2 spaces, lists at their key's
column), or as a multi-document YAML stream (`helm template`, a GitOps
folder): one `---` document per object. `manifests`: a YAML List of the
Jobs, CronJobs and Pods of manifests/ (as kubectl prints them, no status:
small objects the policy changes, the most objects per byte).
"""

import copy
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "cli", "tests", "data")


def manifests():
    import yaml

    items = []
    for name in sorted(os.listdir(os.path.join(HERE, "manifests"))):
        with open(os.path.join(HERE, "manifests", name)) as f:
            obj = yaml.safe_load(f)
        if obj["kind"] in ("Job", "CronJob", "Pod"):
            obj["metadata"]["namespace"] = "default"
            items.append(obj)
    return items


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    form = sys.argv[2] if len(sys.argv) > 2 else "json"
    with open(os.path.join(HERE, "cluster.json")) as f:
        items = json.load(f)["items"]
    if form == "manifests":
        items = manifests()
    out = []
    i = 0
    while len(out) < n:
        for item in items:
            if len(out) == n:
                break
            obj = copy.deepcopy(item)
            meta = obj["metadata"]
            meta["namespace"] = f"{meta['namespace']}-{i % 100}"
            meta["name"] = f"{meta['name']}-{i}"
            if "uid" in meta:
                meta["uid"] = meta["uid"][:-12] + f"{i:06d}{len(out) % 1000000:06d}"
            for ref in meta.get("ownerReferences", []):
                ref["name"] = f"{ref['name']}-{i}"
            out.append(obj)
        i += 1
    order = {"Job": 0, "CronJob": 1, "Pod": 2}
    out.sort(key=lambda o: (order[o["kind"]], o["metadata"]["namespace"], o["metadata"]["name"]))
    listed = {"apiVersion": "v1", "items": out, "kind": "List", "metadata": {"resourceVersion": ""}}
    if form == "json":
        json.dump(listed, sys.stdout, indent=4, sort_keys=True)
        sys.stdout.write("\n")
        return
    import yaml  # PyYAML: its block style is kubectl's (lists at their key's column)

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    if form == "manifests":
        form = "yaml"
    if form == "yaml":
        yaml.dump(listed, sys.stdout, Dumper=dumper, default_flow_style=False, sort_keys=True, width=1 << 20)
    elif form == "stream":
        for obj in out:
            sys.stdout.write("---\n")
            yaml.dump(obj, sys.stdout, Dumper=dumper, default_flow_style=False, sort_keys=True, width=1 << 20)
    else:
        sys.exit(f"unknown form {form!r}: json, yaml or stream")


if __name__ == "__main__":
    main()
