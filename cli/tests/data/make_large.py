#!/usr/bin/env python3
"""A cluster dump of N objects for measuring the scan (not committed):

    python3 cli/tests/data/make_large.py 20000 > /tmp/cluster-20000.json

The items of cluster.json (kubectl's objects, see make_inputs.py), copied
over 100 namespaces with unique names and uids until there are N, in the
order `kubectl get jobs,cronjobs,pods -A -o json` prints them.
"""

import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    with open(os.path.join(HERE, "cluster.json")) as f:
        items = json.load(f)["items"]
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
            meta["uid"] = meta["uid"][:-12] + f"{i:06d}{len(out) % 1000000:06d}"
            for ref in meta.get("ownerReferences", []):
                ref["name"] = f"{ref['name']}-{i}"
            out.append(obj)
        i += 1
    order = {"Job": 0, "CronJob": 1, "Pod": 2}
    out.sort(key=lambda o: (order[o["kind"]], o["metadata"]["namespace"], o["metadata"]["name"]))
    json.dump({"apiVersion": "v1", "items": out, "kind": "List", "metadata": {"resourceVersion": ""}},
              sys.stdout, indent=4, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
