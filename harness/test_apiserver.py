"""What the API server does with a mutating webhook (harness/apiserver.py):
label selectors, rules, the `request` variable and matchConditions in CEL,
the order of the filters, and every row of the selection tables of
test_data/selection/ as a test of its own.

    python3 -m pytest harness        # from the repository root (make py-check)
"""
import copy
import glob
from pathlib import Path

import pytest
import yaml

from . import apiserver, checks, controller

ROOT = Path(__file__).resolve().parent.parent

JOBS = {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"], "operations": ["CREATE"]}


def job_request(**row):
    return checks.workload(dict({"kind": "Job"}, **row))


def expression(key, operator, *values):
    req = {"key": key, "operator": operator}
    if values:
        req["values"] = list(values)
    return {"matchExpressions": [req]}


# --- label selectors ------------------------------------------------------------

@pytest.mark.parametrize("selector, labels, want", [
    ({}, {}, True),
    ({}, None, True),
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchLabels": {"a": "1"}}, None, False),
    (expression("a", "In", "x", "y"), {"a": "y"}, True),
    (expression("a", "In", "x"), {}, False),
    (expression("a", "NotIn", "x"), {}, True),
    (expression("a", "NotIn", "x"), {"a": "z"}, True),
    (expression("a", "NotIn", "x"), {"a": "x"}, False),
    (expression("a", "Exists"), {"a": ""}, True),
    (expression("a", "Exists"), {"b": "1"}, False),
    (expression("a", "DoesNotExist"), {}, True),
    (expression("a", "DoesNotExist"), {"a": ""}, False),
    # matchLabels and every expression must all hold
    (dict(expression("b", "Exists"), matchLabels={"a": "1"}), {"a": "1"}, False),
    (dict(expression("b", "Exists"), matchLabels={"a": "1"}), {"a": "1", "b": ""}, True),
])
def test_label_selector(selector, labels, want):
    assert apiserver.selector_matches(selector, labels) is want


@pytest.mark.parametrize("selector", [
    expression("a", "In"),
    expression("a", "NotIn"),
    expression("a", "Exists", "x"),
    expression("a", "DoesNotExist", "x"),
    expression("a", "Equals", "x"),
])
def test_a_malformed_selector_is_refused(selector):
    with pytest.raises(ValueError):
        apiserver.selector_matches(selector, {"a": "x"})


def test_matching_labels_are_matched_and_an_impossible_selector_fails():
    selector = {"matchLabels": {"team": "a"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                     {"key": "mesh", "operator": "Exists"},
                                     {"key": "off", "operator": "DoesNotExist"}]}
    labels = apiserver.matching_labels(selector)
    assert labels == {"team": "a", "env": "prod", "mesh": "yes"}
    assert apiserver.selector_matches(selector, labels)
    with pytest.raises(ValueError):
        apiserver.matching_labels({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]},
                                                        {"key": "a", "operator": "DoesNotExist"}]})


# --- rules -----------------------------------------------------------------------

def pod_request(operation="CREATE", sub="", namespace="team-a"):
    request = {"operation": operation, "resource": {"group": "", "version": "v1", "resource": "pods"},
               "namespace": namespace}
    if sub:
        request["subResource"] = sub
    return request


def rule(resources, operations=("CREATE",), scope=None):
    r = {"apiGroups": [""], "apiVersions": ["v1"], "resources": list(resources), "operations": list(operations)}
    if scope:
        r["scope"] = scope
    return r


@pytest.mark.parametrize("resources, sub, want", [
    (["pods"], "", True),
    (["pods"], "binding", False),  # a resource alone never matches its subresources
    (["pods/binding"], "binding", True),
    (["pods/binding"], "", False),
    (["pods/*"], "binding", True),
    (["pods/*"], "", False),  # pods/* is every subresource, not the pod itself
    (["*"], "", True),
    (["*"], "status", False),
    (["*/status"], "status", True),
    (["*/*"], "", True),
    (["*/*"], "eviction", True),
    (["jobs"], "", False),
])
def test_resources_and_subresources(resources, sub, want):
    assert apiserver.rule_matches(rule(resources), pod_request(sub=sub)) is want


@pytest.mark.parametrize("operations, operation, want", [
    (["CREATE"], "CREATE", True),
    (["CREATE"], "UPDATE", False),
    (["CREATE", "UPDATE"], "UPDATE", True),
    (["*"], "DELETE", True),
])
def test_operations(operations, operation, want):
    assert apiserver.rule_matches(rule(["pods"], operations), pod_request(operation)) is want


def test_groups_and_versions():
    request = pod_request()
    assert not apiserver.rule_matches(dict(rule(["pods"]), apiGroups=["batch"]), request)
    assert apiserver.rule_matches(dict(rule(["pods"]), apiGroups=["*"]), request)
    assert not apiserver.rule_matches(dict(rule(["pods"]), apiVersions=["v1beta1"]), request)
    assert apiserver.rule_matches(dict(rule(["pods"]), apiVersions=["*"]), request)


@pytest.mark.parametrize("scope, namespace, want", [
    (None, "team-a", True), (None, "", True), ("*", "", True),
    ("Namespaced", "team-a", True), ("Namespaced", "", False),
    ("Cluster", "", True), ("Cluster", "team-a", False),
])
def test_scope(scope, namespace, want):
    assert apiserver.rule_matches(rule(["pods"], scope=scope), pod_request(namespace=namespace)) is want


@pytest.mark.parametrize("scope, want", [
    (None, True), ("*", True), ("Namespaced", False), ("Cluster", True),
])
def test_scope_of_a_namespace_object(scope, want):
    """A Namespace request carries the Namespace's name as its namespace,
    and is cluster-scoped all the same."""
    request = dict(pod_request(namespace="team-a"),
                   resource={"group": "", "version": "v1", "resource": "namespaces"})
    assert apiserver.rule_matches(rule(["namespaces"], scope=scope), request) is want


def test_defaults_are_the_api_servers_and_the_webhook_given_is_not_changed():
    webhook = {"name": "w", "rules": [rule(["pods"])], "failurePolicy": "Ignore"}
    given = copy.deepcopy(webhook)
    stored = apiserver.defaulted(webhook)
    assert webhook == given
    assert stored["failurePolicy"] == "Ignore"
    assert stored["matchPolicy"] == "Equivalent"
    assert stored["namespaceSelector"] == {} and stored["objectSelector"] == {}
    assert stored["reinvocationPolicy"] == "Never" and stored["timeoutSeconds"] == 10
    assert stored["rules"][0]["scope"] == "*"


# --- the `request` variable and matchConditions ----------------------------------------------

def test_the_request_variable_has_every_field():
    request = apiserver.cel_request({"operation": "CREATE", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                                     "resource": {"group": "batch", "version": "v1", "resource": "jobs"}})
    assert set(request) == {"uid", "kind", "resource", "subResource", "requestKind", "requestResource",
                            "requestSubResource", "name", "namespace", "operation", "userInfo", "dryRun", "options"}
    assert request["requestKind"] == request["kind"] == {"group": "batch", "version": "v1", "kind": "Job"}
    assert request["requestResource"] == request["resource"]
    assert request["subResource"] == request["requestSubResource"] == request["name"] == ""
    assert request["userInfo"] == {"username": "", "uid": "", "groups": [], "extra": {}}
    assert request["dryRun"] is False and request["options"] == {}
    bare = apiserver.cel_request({"operation": "CONNECT"})
    assert bare["kind"] == {"group": "", "version": "", "kind": ""}
    assert bare["resource"] == {"group": "", "version": "", "resource": ""}


def conditions(*expressions):
    return apiserver.Conditions([{"name": "c%d" % i, "expression": e} for i, e in enumerate(expressions)])


def values(*expressions, request=None):
    return [value for _, value in conditions(*expressions).evaluate(request or job_request())]


@pytest.mark.parametrize("expr, want", [
    ("true", True),
    ("false", False),
    ("request.operation == 'CREATE'", True),
    ("request.resource.resource == 'jobs' && request.kind.kind == 'Job'", True),
    ("request.namespace == 'team-a'", True),
    ("request.subResource == ''", True),
    ("request.dryRun", False),
    ("object.metadata.name == 'work'", True),
    ("has(object.spec.template)", True),
    ("has(object.spec.nothing)", False),
    ("oldObject == null", True),  # a CREATE has no old object
    ("'batch.kubernetes.io/job-name' in object.metadata", False),
    ("request.userInfo.groups.exists(g, g == 'system:masters')", True),
    ("true || object.spec.nothing.here == 1", True),  # || short-circuits past an error
    ("false && object.spec.nothing.here == 1", False),
])
def test_a_condition_is_true_or_false(expr, want):
    assert values(expr) == [want]


@pytest.mark.parametrize("expr", [
    "object.spec.nothing.here == 1",  # a missing field
    "request.operation",  # not a boolean
    "1 + 1",
    "authorizer.group('').resource('jobs').check('create').allowed()",  # not modelled
])
def test_a_condition_that_fails_is_an_error(expr):
    [value] = values(expr)
    assert isinstance(value, str) and value.startswith("error: ")


def test_an_update_sees_its_old_object():
    request = job_request(operation="UPDATE", labels={"a": "1"})
    assert values("oldObject.metadata.labels['a'] == '1'", "request.operation == 'UPDATE'",
                  request=request) == [True, True]


def test_a_condition_that_does_not_compile_is_refused():
    with pytest.raises(ValueError, match="c0 does not compile"):
        conditions("object.metadata.name ==")


def test_no_conditions_no_results():
    assert apiserver.Conditions(None).evaluate(job_request()) == []


# --- the decision: filters in the API server's order -----------------------------------

def webhook(**fields):
    return apiserver.Webhook(dict({"name": "w", "rules": [JOBS]}, **fields))


def test_no_rule_no_request():
    # no rule matches: the other filters are not even evaluated (a failing
    # condition does not reject what no rule selects)
    w = webhook(matchConditions=[{"name": "fails", "expression": "object.spec.nothing.here"}])
    assert w.decide(job_request(kind="Pod")) == ("skipped", "no rule matches")


def test_the_namespace_carries_its_name_label():
    w = webhook(namespaceSelector=expression("kubernetes.io/metadata.name", "NotIn", "kubewarden"))
    assert w.decide(job_request())[0] == "sent"
    assert w.decide(job_request(namespace="kubewarden"))[0] == "skipped"
    w = webhook(namespaceSelector=expression("istio-injection", "In", "enabled"))
    assert w.decide(job_request(), {"istio-injection": "enabled"})[0] == "sent"
    verdict, why = w.decide(job_request())
    assert verdict == "skipped" and why.startswith("namespaceSelector")


def test_a_cluster_scoped_request_skips_the_namespace_selector():
    w = apiserver.Webhook({"name": "w", "namespaceSelector": expression("a", "Exists"),
                           "rules": [rule(["namespaces"])]})
    request = {"operation": "CREATE", "resource": {"group": "", "version": "v1", "resource": "namespaces"},
               "object": {"metadata": {"name": "n"}}}
    assert w.decide(request)[0] == "sent"


def test_the_object_selector_reads_the_object_or_the_old_object():
    w = webhook(objectSelector=expression("sidecar.istio.io/inject", "In", "true"),
                rules=[dict(JOBS, operations=["CREATE", "UPDATE"])])
    assert w.decide(job_request(labels={"sidecar.istio.io/inject": "true"}))[0] == "sent"
    assert w.decide(job_request())[0] == "skipped"
    # only the pod template carries the label: the Job's own labels are read
    assert w.decide(job_request(podLabels={"sidecar.istio.io/inject": "true"}))[0] == "skipped"
    update = job_request(operation="UPDATE")
    update["oldObject"]["metadata"]["labels"] = {"sidecar.istio.io/inject": "true"}
    assert w.decide(update)[0] == "sent"


def test_an_empty_object_selector_matches_an_object_without_labels():
    assert webhook(objectSelector={}).decide(job_request())[0] == "sent"


FAILING = {"name": "fails", "expression": "object.spec.nothing.here == 1"}


@pytest.mark.parametrize("policy, want", [("Fail", "rejected"), ("Ignore", "skipped")])
def test_a_failing_condition_under_each_failure_policy(policy, want):
    verdict, why = webhook(failurePolicy=policy, matchConditions=[FAILING]).decide(job_request())
    assert verdict == want
    assert "failurePolicy %s" % policy in why and "fails" in why


def test_the_default_failure_policy_is_fail():
    assert webhook(matchConditions=[FAILING]).decide(job_request())[0] == "rejected"


def test_a_false_condition_wins_over_a_failing_one():
    w = webhook(failurePolicy="Fail", matchConditions=[FAILING, {"name": "no", "expression": "false"}])
    assert w.decide(job_request()) == ("skipped", "matchCondition false: no")


def test_every_condition_true_sends():
    w = webhook(matchConditions=[{"name": "a", "expression": "true"},
                                 {"name": "b", "expression": "request.kind.kind == 'Job'"}])
    assert w.decide(job_request()) == ("sent", "every filter matches")


# --- the examples' own condition, as the controller installs it ------------------------------

def native_sidecar_webhook(match_conditions=True):
    [policy] = controller.load(ROOT / "examples" / "native-sidecar.yaml")
    mwc = controller.webhook_configuration(policy, match_conditions=match_conditions)
    return apiserver.Webhook(mwc["webhooks"][0])


@pytest.mark.parametrize("restart, want", [("Never", "sent"), ("OnFailure", "sent"), ("Always", "skipped"),
                                           (None, "skipped")])
def test_only_pods_that_run_to_completion_reach_the_policy(restart, want):
    assert native_sidecar_webhook().decide(checks.workload({"kind": "Pod", "restartPolicy": restart}))[0] == want


def test_without_match_conditions_every_pod_reaches_the_policy():
    request = checks.workload({"kind": "Pod", "restartPolicy": "Always"})
    assert native_sidecar_webhook(match_conditions=False).decide(request)[0] == "sent"


# --- the order of the webhooks and the AdmissionReview -------------------------------------

def test_the_order_is_bytewise_by_name():
    assert apiserver.call_order(["b", "B", "a", "kw.cap.x", "clusterwide-x"]) == [
        "B", "a", "b", "clusterwide-x", "kw.cap.x"]
    assert apiserver.called_before("kw.cap.x") == sorted(apiserver.ISTIO_INJECTORS)
    assert apiserver.called_before("clusterwide-x") == []


def test_the_admission_request_as_the_api_server_writes_it():
    given = {"kind": {"group": "", "version": "v1", "kind": "Pod"},
             "resource": {"group": "", "version": "v1", "resource": "pods"},
             "namespace": "", "name": "p", "operation": "CREATE", "object": {"kind": "Pod"}}
    request = apiserver.admission_request(given, uid="u")
    assert list(request) == ["uid", "kind", "resource", "requestKind", "requestResource", "name", "operation",
                             "userInfo", "object", "oldObject", "dryRun", "options"]
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert request["oldObject"] is None and request["dryRun"] is False
    connect = apiserver.admission_request(dict(given, operation="CONNECT", subResource="exec"))
    assert connect["options"] is None and connect["requestSubResource"] == "exec"
    with pytest.raises(ValueError, match="not AdmissionRequest members"):
        apiserver.admission_request(dict(given, patch="x"))


def test_the_review_and_the_url():
    review = apiserver.admission_review(pod_request() | {"kind": {"kind": "Pod"}}, uid="u")
    assert list(review) == ["kind", "apiVersion", "request"] and review["request"]["uid"] == "u"
    w = {"name": "w", "clientConfig": {"service": {"path": "/validate/kw.cap.p"}}}
    assert apiserver.webhook_url("https://h:1", w) == "https://h:1/validate/kw.cap.p?timeout=10s"
    assert apiserver.webhook_url("https://h:1", dict(w, timeoutSeconds=3)).endswith("?timeout=3s")


# --- the selection tables of test_data/selection/ ------------------------------------------

def table_rows():
    rows = []
    for path in sorted(glob.glob(str(ROOT / "test_data" / "selection" / "*.yaml"))):
        with open(path) as f:
            table = yaml.safe_load(f)
        for row in table["rows"]:
            rows.append(pytest.param(table, row, id="%s: %s" % (Path(path).stem, row["case"])))
    return rows


def test_there_are_selection_tables():
    assert len(table_rows()) > 20


@pytest.mark.parametrize("table, row", table_rows())
def test_selection_table_row(table, row):
    name = row.get("policy", table.get("policy"))
    policies = {p["metadata"]["name"]: p for p in controller.load(ROOT / table["example"])}
    assert name in policies, "no policy %s in %s" % (name, table["example"])
    supported = row.get("matchConditionsSupported", True)
    mwc = controller.webhook_configuration(policies[name], match_conditions=supported)
    verdict, why = apiserver.Webhook(mwc["webhooks"][0]).decide(checks.workload(row), row.get("namespaceLabels") or {})
    assert verdict == row["expect"], why
