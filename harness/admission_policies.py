"""The in-tree alternative of examples/mutating-admission-policy/: each
MutatingAdmissionPolicy and its binding against Kubernetes' own schemas
(kubernetes-validate, strict) at every release that serves
admissionregistration.k8s.io/v1 for them (1.36 on), and each policy's
matchConditions run by cel-python, as the API server would, on a table of
requests; its mutation expressions are only parsed (their typed Object{}
needs the API server's CEL environment, which cel-python does not have).

What each policy must do is read off the policy itself: it matches the
kinds and operations of its matchConstraints, and its conditions let a
request through exactly when the pod template does not set
sidecar.istio.io/nativeSidecar.
"""
import yaml

from . import apiserver

NATIVE = "sidecar.istio.io/nativeSidecar"
# The releases that serve MutatingAdmissionPolicy as v1 (GA in 1.36), and
# one that does not, so that the schema check is seen to refuse.
RELEASES = ("1.36.0", "1.37.0")
BEFORE_GA = "1.35.0"


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def _with_template_annotations(kind, annotations):
    """A Job or CronJob whose pod template has `annotations` (None: no
    annotations member, "no-metadata": no metadata at all)."""
    template = {"spec": {"containers": [{"name": "app", "image": "app"}]}}
    if annotations == "no-metadata":
        pass
    elif annotations is None:
        template["metadata"] = {"labels": {"app": "a"}}
    else:
        template["metadata"] = {"annotations": annotations}
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"template": template}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}}


# (what the template says, whether the policy must add the annotation)
TEMPLATES = [
    ("no metadata", "no-metadata", True),
    ("no annotations", None, True),
    ("other annotations only", {"team": "a"}, True),
    ("the user's \"false\"", {NATIVE: "false"}, False),
    ("already \"true\"", {NATIVE: "true"}, False),
    ("the user's \"yes\"", {NATIVE: "yes"}, False),
]


def _kinds(policy):
    """{(kind, operation)} the matchConstraints select, of batch/v1."""
    names = {"jobs": "Job", "cronjobs": "CronJob"}
    selected = set()
    for rule in policy["spec"]["matchConstraints"]["resourceRules"]:
        if rule.get("apiGroups") != ["batch"]:
            continue
        for resource in rule.get("resources", []):
            for operation in rule.get("operations", []):
                if resource in names:
                    selected.add((names[resource], operation))
    return selected


def _request(kind, operation, obj):
    return {"kind": {"group": "batch", "version": "v1", "kind": kind},
            "resource": {"group": "batch", "version": "v1", "resource": kind.lower() + "s"},
            "operation": operation, "namespace": "default", "name": obj["metadata"]["name"],
            "object": obj, "oldObject": obj if operation == "UPDATE" else None}


def check(path):
    """Prints a line per check; returns the failures."""
    import celpy  # cel-python
    import kubernetes_validate  # PyPI kubernetes-validate

    failures = []
    docs = load(path)
    policies = [d for d in docs if d.get("kind") == "MutatingAdmissionPolicy"]
    bindings = [d for d in docs if d.get("kind") == "MutatingAdmissionPolicyBinding"]
    if not policies:
        return ["%s: no MutatingAdmissionPolicy" % path]
    for doc in docs:
        label = "%s %s" % (doc.get("kind"), doc.get("metadata", {}).get("name"))
        for release in RELEASES:
            try:
                kubernetes_validate.validate(doc, release, strict=True)
                print("ok   %s: schema of Kubernetes %s" % (label, release))
            except kubernetes_validate.ValidationError as e:
                failures.append("%s: Kubernetes %s: %s" % (label, release, e.message))
        try:
            kubernetes_validate.validate(doc, BEFORE_GA, strict=True)
            failures.append("%s validates against Kubernetes %s, which serves no v1 of it" % (label, BEFORE_GA))
        except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError):
            print("ok   %s: refused by the schema of Kubernetes %s" % (label, BEFORE_GA))
    names = {p["metadata"]["name"] for p in policies}
    for binding in bindings:
        if binding["spec"].get("policyName") not in names:
            failures.append("binding %s names no policy of the file" % binding["metadata"]["name"])
    for name in names - {b["spec"].get("policyName") for b in bindings}:
        failures.append("policy %s has no binding: it does nothing" % name)

    env = celpy.Environment()
    covered = set()
    for policy in policies:
        name = policy["metadata"]["name"]
        for mutation in policy["spec"].get("mutations", []):
            expression = (mutation.get("applyConfiguration") or mutation.get("jsonPatch") or {}).get("expression")
            try:
                env.compile(expression)
                print("ok   %s: the mutation parses as CEL" % name)
            except Exception as e:  # celpy.CELParseError and lark's own
                failures.append("%s: the mutation does not parse: %s" % (name, e))
        conditions = apiserver.Conditions(policy["spec"].get("matchConditions"))
        for kind, operation in sorted(_kinds(policy)):
            covered.add(kind)
            for what, annotations, adds in TEMPLATES:
                request = _request(kind, operation, _with_template_annotations(kind, annotations))
                results = conditions.evaluate(request)
                errors = [r for _, r in results if not isinstance(r, bool)]
                # failurePolicy Ignore: an error leaves the object as it came
                matched = not errors and all(r for _, r in results)
                if errors and policy["spec"].get("failurePolicy") != "Ignore":
                    failures.append("%s: %s %s, %s: %s" % (name, kind, operation, what, errors))
                ok = matched == adds
                if not ok:
                    failures.append("%s: %s %s, template %s: mutated %s, want %s (%s)"
                                    % (name, kind, operation, what, matched, adds, results))
                print("%s %s: %s %s, template %s: %s"
                      % ("ok  " if ok else "FAIL", name, kind, operation, what,
                         "annotated" if matched else "left as it came"))
    for kind in ("Job", "CronJob"):
        if kind not in covered:
            failures.append("no policy of %s matches %s" % (path, kind))
    return failures
