"""Every object the policy writes, validated against Kubernetes' own
OpenAPI schemas (PyPI's kubernetes-validate, strict: an unknown field is an
error) for the newest Kubernetes release the package knows:

- each golden case's answer (`test_data/cases/*/expected.json`): its
  `mutatedObject`, or the request's object when the policy left it as it
  came;
- each journey's final Pods, written whole by `journey --pods DIR`
  (`make schema-tests`: `target/journey-pods/*.json`): every list named
  `pods`, wherever it stands in the file.

The files are found when the check runs, whatever other changes added.
"""
import glob
import json
import os
from pathlib import Path

# Cases whose input is malformed on purpose, so that what the policy gives
# back is too: it must leave such input as it came, and no schema can
# accept it. A case named here that validates, or that no longer exists,
# fails the check: the list stays true.
MALFORMED_ON_PURPOSE = {
    "wrong-shape-containers-warns": "the pod template's containers are a string, not a list",
    "wrong-shape-annotations-warns": "the pod template's annotations are a list, not a map",
    "future-fields-kept": "fields of a future Kubernetes (futureJobField, futurePodField, ...), "
                          "which the policy must keep and no schema of today knows",
}


def _load_json(path):
    with open(path) as f:
        return json.load(f)


def case_objects(cases_dir):
    """[(label, case name, object)] for every case: what the policy wrote
    (the request's object when it wrote nothing). A case without an object
    (a DELETE) writes nothing and is left out."""
    found = []
    for expected in sorted(glob.glob(os.path.join(str(cases_dir), "*", "expected.json"))):
        case = Path(expected).parent
        answer = _load_json(expected)
        written = answer.get("mutatedObject")
        if written is None:
            written = _load_json(case / "request.json").get("object")
        if written is not None:
            found.append(("case %s" % case.name, case.name, written))
    return found


def _pod_lists(value, where):
    """(where, list) for every member `pods` holding a list, at any depth."""
    if isinstance(value, dict):
        for key, member in value.items():
            if key == "pods" and isinstance(member, list):
                yield "%s.pods" % where, member
            else:
                yield from _pod_lists(member, "%s.%s" % (where, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _pod_lists(item, "%s[%d]" % (where, i))


def journey_pods(journeys_dir):
    """[(label, None, pod)] for every final Pod of every journey; a journey
    without any is an error, not a pass. A run whose Pod the API server
    refused (with and without the policy alike, as `journey::judge`
    allows) is null in the list: nothing was stored, nothing to validate."""
    found = []
    for path in sorted(glob.glob(os.path.join(str(journeys_dir), "*.json"))):
        name = Path(path).stem
        lists = list(_pod_lists(_load_json(path), "$"))
        if not lists:
            raise ValueError("journey %s: no list named pods" % path)
        for where, pods in lists:
            for i, pod in enumerate(pods):
                if pod is not None:
                    found.append(("journey %s %s[%d]" % (name, where, i), None, pod))
    return found


def problem(validator, obj, version):
    """None when `obj` validates, else what the schema says of it."""
    try:
        validator.validate(obj, version, strict=True)
    except validator.ValidationError as e:
        at = ".".join(str(p) for p in e.path) or "(the object)"
        return "%s: %s" % (at, e.message)
    except (validator.SchemaNotFoundError, validator.InvalidSchemaError) as e:
        return e.message
    except (KeyError, TypeError, AttributeError) as e:
        return "not a Kubernetes object (%s: %s)" % (type(e).__name__, e)
    return None


def check(cases_dir="test_data/cases", journeys_dir="target/journey-pods"):
    """Prints a line per object; returns (failures, summary line)."""
    import kubernetes_validate  # PyPI kubernetes-validate, only needed here

    version = kubernetes_validate.latest_version()
    objects = case_objects(cases_dir) + journey_pods(journeys_dir)
    if not objects:
        raise ValueError("no object to validate in %s and %s" % (cases_dir, journeys_dir))
    failures, passed, exempt = [], 0, 0
    seen_cases = set()
    for label, case, obj in objects:
        seen_cases.add(case)
        wrong = problem(kubernetes_validate, obj, version)
        if case in MALFORMED_ON_PURPOSE:
            if wrong is None:
                failures.append("%s validates, yet is listed as malformed on purpose (%s)"
                                % (label, MALFORMED_ON_PURPOSE[case]))
            else:
                exempt += 1
                print("exempt %s: %s (malformed on purpose: %s)" % (label, wrong, MALFORMED_ON_PURPOSE[case]))
            continue
        if wrong is None:
            passed += 1
            print("ok   %s" % label)
        else:
            failures.append("%s: %s" % (label, wrong))
            print("FAIL %s: %s" % (label, wrong))
    for case in sorted(set(MALFORMED_ON_PURPOSE) - seen_cases):
        failures.append("case %s is listed as malformed on purpose but is no case of %s" % (case, cases_dir))
    summary = ("schemas: %d passed, %d failed, %d skipped (Kubernetes %s, kubernetes-validate %s, strict; "
               "skipped: malformed on purpose)"
               % (passed, len(failures), exempt, version, kubernetes_validate.__version__))
    return failures, summary
