"""What the Kubernetes API server does with a mutating webhook: which
requests it sends, and the AdmissionReview it sends.

Kubernetes' semantics (k8s.io/apiserver, plugin/webhook: rules, namespace
and object matchers, matchconditions; admission/v1 types):

- the webhook's defaults: failurePolicy Fail, matchPolicy Equivalent,
  empty namespace and object selectors (they match everything),
  reinvocationPolicy Never, timeoutSeconds 10, rules' scope "*";
- a request is sent when, in this order: a rule matches its operation,
  group, version, resource and subresource; the namespaceSelector matches
  the labels of its namespace (which always carries
  `kubernetes.io/metadata.name: <name>`); the objectSelector matches the
  labels of the object or of the old object (a missing one never matches);
  and every matchCondition is true. A matchCondition that is false skips
  the webhook; one that fails (an error, a non-boolean) with none false
  rejects the request under failurePolicy Fail and skips the webhook
  under Ignore;
- label selectors: matchLabels AND matchExpressions; In needs the key with
  one of the values, NotIn matches a missing key or another value, Exists
  needs the key, DoesNotExist its absence;
- matchConditions are CEL (cel-python here; Kubernetes runs cel-go) with the
  variables `object`, `oldObject` (null on CREATE), `request` (the
  AdmissionRequest, every field present) and `authorizer`, which is not
  modelled: an expression that uses it fails here.
"""
import copy
import uuid

WEBHOOK_DEFAULTS = {
    "failurePolicy": "Fail",
    "matchPolicy": "Equivalent",
    "namespaceSelector": {},
    "objectSelector": {},
    "reinvocationPolicy": "Never",
    "timeoutSeconds": 10,
}

OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions", "CONNECT": None}


def defaulted(webhook):
    """The webhook as the API server stores it."""
    webhook = copy.deepcopy(webhook)
    for key, value in WEBHOOK_DEFAULTS.items():
        webhook.setdefault(key, copy.deepcopy(value))
    for rule in webhook.get("rules", []):
        rule.setdefault("scope", "*")
    return webhook


# --- label selectors ---------------------------------------------------------

def selector_matches(selector, labels):
    """Kubernetes' LabelSelector on a label map (None: no labels)."""
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req["key"], req["operator"], req.get("values") or []
        if op in ("In", "NotIn") and not values:
            raise ValueError("%s %s needs values" % (key, op))
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError("%s %s takes no values" % (key, op))
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError("unknown operator %s" % op)
        if not ok:
            return False
    return True


def matching_labels(selector):
    """Some labels a selector matches (each In its first value, Exists any
    value): a namespace that opted in. Fails for a selector that matches no
    label set."""
    labels = dict(selector.get("matchLabels") or {})
    for req in selector.get("matchExpressions") or []:
        if req["operator"] == "In":
            labels.setdefault(req["key"], req["values"][0])
        elif req["operator"] == "Exists":
            labels.setdefault(req["key"], "yes")
    if not selector_matches(selector, labels):
        raise ValueError("no labels match %s" % selector)
    return labels


# --- rules ------------------------------------------------------------------

def _listed(value, allowed):
    return "*" in allowed or value in allowed


def _resource_listed(resource, sub, allowed):
    for entry in allowed:
        if entry == "*/*":
            return True
        name, _, entry_sub = entry.partition("/")
        if name not in ("*", resource):
            continue
        if entry_sub == "" and sub == "":
            return True
        if entry_sub in ("*", sub) and sub != "":
            return True
    return False


# The resource of Namespace objects (k8s.io/apiserver, plugin/webhook/
# predicates/rules/rules.go: namespaceResource, v1 "namespaces" of the core
# group). The API server sets a Namespace request's namespace to the
# Namespace's own name, yet the object is cluster-scoped.
NAMESPACE_RESOURCE = {"group": "", "version": "v1", "resource": "namespaces"}


def _scope_matches(scope, request):
    """rules.go, Matcher.scope: "Namespaced" takes a request in a namespace
    that is not about a Namespace object, "Cluster" one outside any
    namespace or about a Namespace object, "*" (the default) both."""
    resource = request["resource"]
    is_namespace = {k: resource.get(k, "") for k in NAMESPACE_RESOURCE} == NAMESPACE_RESOURCE
    namespaced = bool(request.get("namespace"))
    if scope == "Namespaced":
        return namespaced and not is_namespace
    if scope == "Cluster":
        return is_namespace or not namespaced
    return True


def rule_matches(rule, request):
    """rules.go, Matcher.Matches: operation, group, version, resource with
    subresource, then scope. The request's resource is the one the webhook
    is called for: under matchPolicy Equivalent the API server converts a
    request for an equivalent resource to one a rule names (the policy's
    resources, pods and batch/v1 jobs and cronjobs, are served in one
    version each since Kubernetes 1.25, so here the two policies agree)."""
    resource = request["resource"]
    return (_listed(request["operation"], rule.get("operations", []))
            and _listed(resource.get("group", ""), rule.get("apiGroups", []))
            and _listed(resource["version"], rule.get("apiVersions", []))
            and _resource_listed(resource["resource"], request.get("subResource", ""), rule.get("resources", []))
            and _scope_matches(rule.get("scope", "*"), request))


# --- matchConditions (CEL) ----------------------------------------------------

def cel_request(request):
    """The `request` variable: the AdmissionRequest with every field present
    (the typed object's zero values where the request has none)."""
    def gvk(v):
        v = v or {}
        return {"group": v.get("group", ""), "version": v.get("version", ""), "kind": v.get("kind", "")}

    def gvr(v):
        v = v or {}
        return {"group": v.get("group", ""), "version": v.get("version", ""), "resource": v.get("resource", "")}

    user = request.get("userInfo") or {}
    return {
        "uid": request.get("uid", ""),
        "kind": gvk(request.get("kind")),
        "resource": gvr(request.get("resource")),
        "subResource": request.get("subResource", ""),
        "requestKind": gvk(request.get("requestKind") or request.get("kind")),
        "requestResource": gvr(request.get("requestResource") or request.get("resource")),
        "requestSubResource": request.get("requestSubResource", request.get("subResource", "")),
        "name": request.get("name", ""),
        "namespace": request.get("namespace", ""),
        "operation": request["operation"],
        "userInfo": {"username": user.get("username", ""), "uid": user.get("uid", ""),
                     "groups": user.get("groups") or [], "extra": user.get("extra") or {}},
        "dryRun": bool(request.get("dryRun", False)),
        "options": request.get("options") or {},
    }


class Conditions:
    """A webhook's matchConditions, compiled once."""

    def __init__(self, conditions):
        import celpy  # cel-python, only needed here

        self._celpy = celpy
        env = celpy.Environment()
        self.programs = []
        for condition in conditions or []:
            try:
                ast = env.compile(condition["expression"])
            except celpy.CELParseError as e:
                raise ValueError("matchCondition %s does not compile: %s" % (condition["name"], e)) from e
            self.programs.append((condition["name"], env.program(ast)))

    def evaluate(self, request):
        """[(name, True | False | 'error: ...')] for every condition."""
        celpy = self._celpy
        activation = {
            "object": celpy.json_to_cel(request.get("object")),
            "oldObject": celpy.json_to_cel(request.get("oldObject")),
            "request": celpy.json_to_cel(cel_request(request)),
        }
        results = []
        for name, program in self.programs:
            try:
                value = program.evaluate(activation)
            except Exception as e:  # CELEvalError and the evaluator's own
                results.append((name, "error: %s" % (e,)))
                continue
            if isinstance(value, celpy.celtypes.BoolType):
                results.append((name, bool(value)))
            else:
                results.append((name, "error: %r is not a boolean" % (value,)))
        return results


# --- the decision -----------------------------------------------------------

def object_labels(obj):
    if not isinstance(obj, dict):
        return None
    return (obj.get("metadata") or {}).get("labels") or {}


class Webhook:
    """One webhook of a MutatingWebhookConfiguration, as the API server
    stores it, ready to decide on requests."""

    def __init__(self, webhook):
        self.webhook = defaulted(webhook)
        self.conditions = Conditions(self.webhook.get("matchConditions"))

    def decide(self, request, namespace_labels=None):
        """('sent' | 'skipped' | 'rejected', why) for an AdmissionRequest
        made in a namespace with these labels (its name label added)."""
        w = self.webhook
        if not any(rule_matches(rule, request) for rule in w.get("rules", [])):
            return "skipped", "no rule matches"
        namespace = request.get("namespace") or ""
        if namespace:
            labels = dict(namespace_labels or {})
            labels["kubernetes.io/metadata.name"] = namespace
            if not selector_matches(w["namespaceSelector"], labels):
                return "skipped", "namespaceSelector does not match %s" % labels
        selector = w["objectSelector"]
        if selector:
            candidates = [o for o in (request.get("object"), request.get("oldObject")) if isinstance(o, dict)]
            if not any(selector_matches(selector, object_labels(o)) for o in candidates):
                return "skipped", "objectSelector does not match"
        results = self.conditions.evaluate(request)
        false = [name for name, value in results if value is False]
        if false:
            return "skipped", "matchCondition false: %s" % ", ".join(false)
        errors = ["%s (%s)" % (name, value) for name, value in results if value is not True]
        if errors:
            if w["failurePolicy"] == "Fail":
                return "rejected", "matchCondition failed, failurePolicy Fail: %s" % "; ".join(errors)
            return "skipped", "matchCondition failed, failurePolicy Ignore: %s" % "; ".join(errors)
        return "sent", "every filter matches"


# Istio's mutating webhook configurations (istioctl install, the istiod
# chart): the default revision's injector and the revision tag `default`,
# which calls the same injector.
ISTIO_INJECTORS = ("istio-sidecar-injector", "istio-revision-tag-default")


def call_order(names):
    """The order in which the API server calls mutating webhook
    configurations: by name (`mutating_webhook_manager.go`, sorted with
    `MutatingWebhookConfigurationSorter.ByName`)."""
    return sorted(names)


def called_before(name, others=ISTIO_INJECTORS):
    """Those of `others` the API server calls before the webhook
    configuration `name`."""
    order = call_order([name, *others])
    return order[:order.index(name)]


# --- the AdmissionReview ------------------------------------------------------

REQUEST_ORDER = ("uid", "kind", "resource", "subResource", "requestKind", "requestResource",
                 "requestSubResource", "name", "namespace", "operation", "userInfo", "object",
                 "oldObject", "dryRun", "options")


def admission_request(request, uid=None):
    """An AdmissionRequest as the API server writes it (admission/v1
    AdmissionRequest): its members in the struct's order, the omitempty ones
    only when set, requestKind/requestResource, oldObject, dryRun and
    options filled in when the given request lacks them."""
    r = dict(request)
    r.setdefault("uid", uid or str(uuid.uuid4()))
    r.setdefault("requestKind", r["kind"])
    r.setdefault("requestResource", r["resource"])
    if r.get("subResource"):
        r.setdefault("requestSubResource", r["subResource"])
    r.setdefault("userInfo", {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]})
    r.setdefault("oldObject", None)
    r.setdefault("dryRun", False)
    kind = OPTIONS_KIND.get(r["operation"])
    r.setdefault("options", {"kind": kind, "apiVersion": "meta.k8s.io/v1"} if kind else None)
    unknown = set(r) - set(REQUEST_ORDER)
    if unknown:
        raise ValueError("not AdmissionRequest members: %s" % sorted(unknown))
    out = {}
    for key in REQUEST_ORDER:
        if key in r and (key not in ("subResource", "requestSubResource", "name", "namespace") or r[key]):
            out[key] = r[key]
    return out


def admission_review(request, uid=None):
    """The body the API server POSTs: AdmissionReview v1 (TypeMeta first)."""
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
            "request": admission_request(request, uid)}


def webhook_url(base, webhook):
    """Where the API server POSTs: the service's path, with the `timeout`
    query it adds."""
    webhook = defaulted(webhook)
    return "%s%s?timeout=%ds" % (base, webhook["clientConfig"]["service"]["path"], webhook["timeoutSeconds"])
