"""The object the API server would store: a request's object with a JSONPatch
applied. Knows the operations json-patch's diff emits (add, remove, replace)
and fails on any other. Used by harness/checks.py and bats_helpers.bash.

Run: python3 -m harness.json_patch REQUEST.json < PATCH.json
prints the patched `object` of the request as JSON.
"""
import copy
import json
import sys


def apply(obj, patch):
    """`obj` (not changed) with the JSONPatch `patch` applied."""
    obj = copy.deepcopy(obj)
    for op in patch:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        parent = obj
        for k in keys[:-1]:
            parent = parent[int(k)] if isinstance(parent, list) else parent[k]
        key = keys[-1]
        if isinstance(parent, list):
            index = len(parent) if key == "-" else int(key)
            if op["op"] == "add":
                parent.insert(index, op["value"])
            elif op["op"] == "remove":
                del parent[index]
            elif op["op"] == "replace":
                parent[index] = op["value"]
            else:
                sys.exit("unexpected patch operation %s" % op["op"])
        elif op["op"] in ("add", "replace"):
            if op["op"] == "replace" and key not in parent:
                sys.exit("replace of a missing member %s" % op["path"])
            parent[key] = op["value"]
        elif op["op"] == "remove":
            del parent[key]
        else:
            sys.exit("unexpected patch operation %s" % op["op"])
    return obj


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        request = json.load(f)
    print(json.dumps(apply(request["object"], json.load(sys.stdin)), ensure_ascii=False))
