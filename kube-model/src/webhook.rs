//! Which requests the API server sends to the webhook Kubewarden's
//! controller installs for a policy: one rule for the operator's tool and
//! the tests.
//!
//! The webhook (kubewarden-controller, `reconcileMutatingWebhookConfiguration`
//! and `namespaceSelector`): the policy's `rules`, `objectSelector`,
//! `matchConditions` and `failurePolicy`; as `namespaceSelector`, the
//! policy's `matchExpressions` only (its `matchLabels` are dropped) plus
//! `kubernetes.io/metadata.name NotIn [<Kubewarden's namespace>]`, unless
//! `allowInsideAdmissionControllerNamespace`, which keeps the policy's
//! selector as it is; an `AdmissionPolicy` sees its own namespace only.
//!
//! The API server (k8s.io/apiserver, `plugin/webhook`: rules, namespace and
//! object matchers) sends a request when a rule matches its operation,
//! group, version, resource and subresource (`*/*`, `pods/*`: subresources)
//! and scope; the namespaceSelector matches its namespace's labels (always
//! with `kubernetes.io/metadata.name`; a cluster-scoped request is not
//! filtered by it); the objectSelector matches the labels of the object or
//! of the old object. The CEL `matchConditions` come last; they are
//! evaluated by whoever holds a CEL engine (the operator's tool).

use serde_json::{Map, Value};

/// The label the API server gives every namespace: its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Whether a request reaches the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Yes,
    /// Not sent: why.
    No(String),
    /// Depends on what the caller does not know (a namespace's labels, a
    /// condition it cannot evaluate): what is missing.
    Unknown(String),
}

impl Sent {
    /// Both filters: a No wins, then an Unknown.
    pub fn and(self, other: Sent) -> Sent {
        match (self, other) {
            (Sent::No(why), _) | (_, Sent::No(why)) => Sent::No(why),
            (Sent::Unknown(a), Sent::Unknown(b)) if a != b => Sent::Unknown(format!("{a}; {b}")),
            (Sent::Unknown(why), _) | (_, Sent::Unknown(why)) => Sent::Unknown(why),
            _ => Sent::Yes,
        }
    }
}

/// A rule's `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// `*`, the API server's default.
    #[default]
    Any,
    Namespaced,
    Cluster,
}

/// One of a webhook's `rules`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub scope: Scope,
}

impl Rule {
    /// A rule as the API server stores it (`scope` defaults to `*`).
    pub fn read(value: &Value) -> Result<Rule, String> {
        let scope = match value["scope"].as_str() {
            None | Some("*") => Scope::Any,
            Some("Namespaced") => Scope::Namespaced,
            Some("Cluster") => Scope::Cluster,
            Some(other) => {
                return Err(format!(
                    "rule scope {other:?} is not *, Namespaced or Cluster"
                ))
            }
        };
        Ok(Rule {
            operations: strings(&value["operations"]),
            api_groups: strings(&value["apiGroups"]),
            api_versions: strings(&value["apiVersions"]),
            resources: strings(&value["resources"]),
            scope,
        })
    }

    /// Whether the rule covers the AdmissionRequest `request`, its resource
    /// as the request names it (k8s.io/apiserver
    /// `pkg/admission/plugin/webhook/predicates/rules/rules.go`,
    /// `Matcher.Matches`: scope, operation, group, version, resource).
    pub fn matches(&self, request: &Value) -> bool {
        let resource = &request["resource"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        self.matches_resource(
            request,
            &text(&resource["group"]),
            &text(&resource["version"]),
            &text(&resource["resource"]),
        )
    }

    /// The rule's match on `request` as if its resource were `group`,
    /// `version`, `resource` (an equivalent one under `matchPolicy:
    /// Equivalent`).
    fn matches_resource(
        &self,
        request: &Value,
        group: &str,
        version: &str,
        resource: &str,
    ) -> bool {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let namespace = request["namespace"].as_str().unwrap_or_default();
        // `Matcher.scope`: a Namespace object is cluster-scoped, though
        // its request names the namespace itself.
        let namespace_object = group.is_empty() && version == "v1" && resource == "namespaces";
        let scoped = match self.scope {
            Scope::Any => true,
            Scope::Namespaced => !namespace_object && !namespace.is_empty(),
            Scope::Cluster => namespace_object || namespace.is_empty(),
        };
        scoped
            && listed(&self.operations, &text(&request["operation"]))
            && listed(&self.api_groups, group)
            && listed(&self.api_versions, version)
            && self.resource_listed(resource, &text(&request["subResource"]))
    }

    /// `resource` or `resource/subresource` among the rule's resources:
    /// `*/*` is every resource and subresource, `pods/*` every subresource
    /// of pods (not pods itself), `*` every resource (no subresource).
    fn resource_listed(&self, resource: &str, sub: &str) -> bool {
        self.resources.iter().any(|entry| {
            if entry == "*/*" {
                return true;
            }
            let (name, entry_sub) = entry.split_once('/').unwrap_or((entry, ""));
            (name == "*" || name == resource)
                && match (entry_sub, sub) {
                    ("", "") => true,
                    ("", _) | (_, "") => false,
                    (entry_sub, sub) => entry_sub == "*" || entry_sub == sub,
                }
        })
    }
}

/// A webhook's `matchPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchPolicy {
    /// Only the rules' own resources.
    Exact,
    /// Also a request of a resource the API server serves in another group
    /// or version from the same storage (`admissionregistration/v1`'s
    /// default, and Kubewarden's).
    #[default]
    Equivalent,
}

/// Resources the API server serves from one storage under several groups
/// or versions (its `EquivalentResourceRegistry`, filled by the REST
/// storage of each group; Kubernetes 1.33): a rule for one of them matches
/// a request for another under `matchPolicy: Equivalent`
/// (k8s.io/apiserver `pkg/admission/plugin/webhook/generic/webhook.go`,
/// `ShouldCallHook`), which is then sent converted to the rule's version.
/// The kinds this policy handles (Pods, Jobs, CronJobs) are served in one
/// version each.
const EQUIVALENT_RESOURCES: [&[(&str, &str, &str)]; 2] = [
    &[("", "v1", "events"), ("events.k8s.io", "v1", "events")],
    &[
        ("autoscaling", "v1", "horizontalpodautoscalers"),
        ("autoscaling", "v2", "horizontalpodautoscalers"),
    ],
];

/// The resources equivalent to (`group`, `version`, `resource`), itself
/// left out.
fn equivalents(
    group: &str,
    version: &str,
    resource: &str,
) -> Vec<(&'static str, &'static str, &'static str)> {
    EQUIVALENT_RESOURCES
        .iter()
        .filter(|class| class.contains(&(group, version, resource)))
        .flat_map(|class| class.iter().copied())
        .filter(|gvr| *gvr != (group, version, resource))
        .collect()
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

impl Requirement {
    /// `value`: the label's value, `None` when the label is absent.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let listed = value.is_some_and(|v| self.values.iter().any(|x| x == v));
        match self.operator {
            Operator::In => listed,
            Operator::NotIn => !listed,
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

/// A label selector: every `matchLabels` pair and every expression must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub match_labels: Vec<(String, String)>,
    pub expressions: Vec<Requirement>,
}

impl Selector {
    /// A `LabelSelector`, refused as the API server refuses it (an unknown
    /// operator; `In`/`NotIn` without values; `Exists`/`DoesNotExist` with).
    pub fn read(value: &Value) -> Result<Selector, String> {
        let mut selector = Selector::default();
        if let Some(labels) = value["matchLabels"].as_object() {
            for (key, v) in labels {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("matchLabels.{key} is not a string"))?;
                selector.match_labels.push((key.clone(), v.to_owned()));
            }
        }
        for expression in value["matchExpressions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let key = expression["key"]
                .as_str()
                .ok_or("a matchExpression without key")?
                .to_owned();
            let values = strings(&expression["values"]);
            let operator = match expression["operator"].as_str() {
                Some("In") => Operator::In,
                Some("NotIn") => Operator::NotIn,
                Some("Exists") => Operator::Exists,
                Some("DoesNotExist") => Operator::DoesNotExist,
                other => return Err(format!("matchExpression {key}: unknown operator {other:?}")),
            };
            let needs_values = matches!(operator, Operator::In | Operator::NotIn);
            if needs_values == values.is_empty() {
                return Err(format!(
                    "matchExpression {key}: {operator:?} {}",
                    if needs_values {
                        "needs values"
                    } else {
                        "takes no values"
                    }
                ));
            }
            selector.expressions.push(Requirement {
                key,
                operator,
                values,
            });
        }
        Ok(selector)
    }

    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.expressions.is_empty()
    }

    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.match_labels
            .iter()
            .all(|(k, v)| get(k) == Some(v.as_str()))
            && self.expressions.iter().all(|r| r.matches(get(&r.key)))
    }

    /// Whether `namespace`, with `labels` when they are known, is selected.
    /// Without its labels only the name label is known (the API server sets
    /// it on every namespace): a requirement on another label is Unknown.
    pub fn selects_namespace(&self, namespace: &str, labels: Option<&Map<String, Value>>) -> Sent {
        let label = |key: &str| -> Option<Option<&str>> {
            if key == NAMESPACE_NAME_LABEL {
                return Some(Some(namespace));
            }
            labels.map(|l| l.get(key).and_then(Value::as_str))
        };
        let mut sent = Sent::Yes;
        let pairs = self
            .match_labels
            .iter()
            .map(|(k, v)| label(k).map(|have| have == Some(v.as_str())));
        let expressions = self
            .expressions
            .iter()
            .map(|r| label(&r.key).map(|have| r.matches(have)));
        for verdict in pairs.chain(expressions) {
            sent = sent.and(match verdict {
                Some(true) => Sent::Yes,
                Some(false) => Sent::No("namespaceSelector does not select it".into()),
                None => Sent::Unknown(format!(
                    "the namespaceSelector needs the labels of namespace {namespace}, not in the input"
                )),
            });
        }
        sent
    }
}

/// The webhook Kubewarden's controller installs for a policy, but for its
/// CEL `matchConditions`, kept as written for a CEL engine.
#[derive(Debug, Clone, Default)]
pub struct Webhook {
    pub rules: Vec<Rule>,
    pub namespace_selector: Selector,
    pub object_selector: Selector,
    /// `(name, expression)` of each `matchConditions` entry.
    pub match_conditions: Vec<(String, String)>,
    /// `failurePolicy: Ignore` (else `Fail`, Kubewarden's default).
    pub ignore_failures: bool,
    /// An `AdmissionPolicy`'s namespace: the only one it sees.
    pub own_namespace: Option<String>,
    /// The policy's `matchPolicy` (Kubewarden copies it to the webhook).
    pub match_policy: MatchPolicy,
    /// What a reader of the policy should know: dropped `matchLabels`.
    pub notes: Vec<String>,
}

impl Webhook {
    /// The webhook for a `ClusterAdmissionPolicy` or `AdmissionPolicy`
    /// (`policy`, the whole manifest), Kubewarden installed in
    /// `kubewarden_namespace`.
    pub fn of_policy(policy: &Value, kubewarden_namespace: &str) -> Result<Webhook, String> {
        let spec = &policy["spec"];
        let match_policy = match spec["matchPolicy"].as_str() {
            None | Some("Equivalent") => MatchPolicy::Equivalent,
            Some("Exact") => MatchPolicy::Exact,
            Some(other) => return Err(format!("matchPolicy {other:?} is not Exact or Equivalent")),
        };
        let mut webhook = Webhook {
            ignore_failures: spec["failurePolicy"] == "Ignore",
            match_policy,
            ..Webhook::default()
        };
        if policy["kind"] == "AdmissionPolicy" {
            let namespace = policy["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default");
            webhook.own_namespace = Some(namespace.to_owned());
        }
        for rule in spec["rules"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            webhook.rules.push(Rule::read(rule)?);
        }
        let selector = Selector::read(&spec["namespaceSelector"])
            .map_err(|e| format!("namespaceSelector: {e}"))?;
        webhook.namespace_selector = if spec["allowInsideAdmissionControllerNamespace"] == true
            || webhook.own_namespace.is_some()
        {
            selector
        } else {
            if !selector.match_labels.is_empty() {
                webhook.notes.push(
                    "namespaceSelector.matchLabels is dropped by Kubewarden's controller: \
                     only its matchExpressions select namespaces"
                        .into(),
                );
            }
            let mut expressions = vec![Requirement {
                key: NAMESPACE_NAME_LABEL.into(),
                operator: Operator::NotIn,
                values: vec![kubewarden_namespace.into()],
            }];
            expressions.extend(selector.expressions);
            Selector {
                match_labels: Vec::new(),
                expressions,
            }
        };
        webhook.object_selector =
            Selector::read(&spec["objectSelector"]).map_err(|e| format!("objectSelector: {e}"))?;
        webhook.match_conditions = spec["matchConditions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|c| {
                let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                (text("name"), text("expression"))
            })
            .collect();
        Ok(webhook)
    }

    /// `rule` on `request`, or on a resource equivalent to its own under
    /// `matchPolicy: Equivalent`.
    fn rule_matches(&self, rule: &Rule, request: &Value) -> bool {
        if rule.matches(request) {
            return true;
        }
        let resource = &request["resource"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let (group, version, name) = (
            text(&resource["group"]),
            text(&resource["version"]),
            text(&resource["resource"]),
        );
        self.match_policy == MatchPolicy::Equivalent
            && equivalents(&group, &version, &name)
                .into_iter()
                .any(|(g, v, r)| rule.matches_resource(request, g, v, r))
    }

    /// Whether the AdmissionRequest `request` passes the rules, the
    /// namespace (an `AdmissionPolicy`'s own) and the objectSelector.
    pub fn sent_for_request(&self, request: &Value) -> Sent {
        let namespace = request["namespace"].as_str().unwrap_or_default();
        if let Some(own) = &self.own_namespace {
            if own != namespace {
                return Sent::No(format!("the AdmissionPolicy sees namespace {own} only"));
            }
        }
        if !self.rules.iter().any(|r| self.rule_matches(r, request)) {
            let resource = &request["resource"]["resource"];
            let operation = &request["operation"];
            return Sent::No(format!(
                "rules do not cover {} {}",
                resource.as_str().unwrap_or_default(),
                operation.as_str().unwrap_or_default()
            ));
        }
        if !self.object_selector.is_empty() {
            let labels = |o: &Value| o["metadata"]["labels"].as_object().cloned();
            let matched = [&request["object"], &request["oldObject"]]
                .into_iter()
                .filter(|o| o.is_object())
                .any(|o| self.object_selector.matches(labels(o).as_ref()));
            if !matched {
                return Sent::No("objectSelector does not match".into());
            }
        }
        Sent::Yes
    }

    /// Whether requests of `namespace` (its `labels` when known) pass the
    /// namespaceSelector; a cluster-scoped request (`""`) is not filtered.
    pub fn sent_for_namespace(&self, namespace: &str, labels: Option<&Map<String, Value>>) -> Sent {
        if namespace.is_empty() {
            return Sent::Yes;
        }
        self.namespace_selector.selects_namespace(namespace, labels)
    }

    /// Whether the selector needs labels of a namespace other than its name.
    pub fn needs_namespace_labels(&self) -> bool {
        !self.namespace_selector.match_labels.is_empty()
            || self
                .namespace_selector
                .expressions
                .iter()
                .any(|r| r.key != NAMESPACE_NAME_LABEL)
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(operation: &str, resource: &str, sub: &str, namespace: &str) -> Value {
        json!({"operation": operation, "namespace": namespace, "subResource": sub,
               "resource": {"group": "", "version": "v1", "resource": resource}})
    }

    fn rule(resources: Value, scope: Value) -> Rule {
        Rule::read(
            &json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": resources, "scope": scope}),
        )
        .unwrap()
    }

    #[test]
    fn rules_match_as_the_api_server_matches_them() {
        let pods = request("CREATE", "pods", "", "team-a");
        let binding = request("CREATE", "pods", "binding", "team-a");
        assert!(rule(json!(["pods"]), Value::Null).matches(&pods));
        assert!(!rule(json!(["pods"]), Value::Null).matches(&binding));
        assert!(!rule(json!(["pods/*"]), Value::Null).matches(&pods));
        assert!(rule(json!(["pods/*"]), Value::Null).matches(&binding));
        assert!(rule(json!(["*/*"]), Value::Null).matches(&binding));
        assert!(rule(json!(["*"]), Value::Null).matches(&pods));
        assert!(!rule(json!(["*"]), Value::Null).matches(&binding));
        assert!(!rule(json!(["pods"]), json!("Cluster")).matches(&pods));
        assert!(rule(json!(["pods"]), json!("Namespaced")).matches(&pods));
        assert!(!rule(json!(["pods"]), Value::Null).matches(&request("UPDATE", "pods", "", "a")));
        let mut v2 = pods.clone();
        v2["resource"]["version"] = json!("v2");
        assert!(!rule(json!(["pods"]), Value::Null).matches(&v2));
        assert!(Rule::read(&json!({"scope": "Everywhere"})).is_err());
    }

    /// `Matcher.scope`: a Namespace object is cluster-scoped, though its
    /// request names the namespace itself.
    #[test]
    fn a_namespace_object_is_cluster_scoped() {
        let namespace = request("CREATE", "namespaces", "", "team-a");
        let namespaces = |scope| rule(json!(["namespaces"]), scope);
        assert!(namespaces(json!("Cluster")).matches(&namespace));
        assert!(!namespaces(json!("Namespaced")).matches(&namespace));
        assert!(namespaces(json!("*")).matches(&namespace));
        let pod = request("CREATE", "pods", "", "team-a");
        assert!(!rule(json!(["*"]), json!("Cluster")).matches(&pod));
        let node = request("CREATE", "nodes", "", "");
        assert!(rule(json!(["*"]), json!("Cluster")).matches(&node));
        assert!(!rule(json!(["*"]), json!("Namespaced")).matches(&node));
    }

    /// `matchPolicy`: under `Equivalent` (the default) a rule for one
    /// version of a resource served from the same storage as another
    /// matches a request for the other; under `Exact` it does not.
    #[test]
    fn equivalent_resources_match_unless_exact() {
        let policy = |match_policy: Value| {
            json!({"kind": "ClusterAdmissionPolicy", "spec": {"matchPolicy": match_policy,
                "rules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
                           "apiVersions": ["v2"], "resources": ["horizontalpodautoscalers"]}]}})
        };
        let mut v1 = request("CREATE", "horizontalpodautoscalers", "", "a");
        v1["resource"]["group"] = json!("autoscaling");
        let equivalent = Webhook::of_policy(&policy(Value::Null), "kw").unwrap();
        assert_eq!(equivalent.match_policy, MatchPolicy::Equivalent);
        assert_eq!(equivalent.sent_for_request(&v1), Sent::Yes);
        let exact = Webhook::of_policy(&policy(json!("Exact")), "kw").unwrap();
        assert!(matches!(exact.sent_for_request(&v1), Sent::No(_)));
        assert!(Webhook::of_policy(&policy(json!("Loose")), "kw").is_err());
        // Pods have no equivalent: the same either way.
        let pods = request("CREATE", "pods", "", "a");
        let mut v2 = pods.clone();
        v2["resource"]["version"] = json!("v2");
        let rule_v2 = json!({"kind": "ClusterAdmissionPolicy", "spec": {
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v2"], "resources": ["pods"]}]}});
        let webhook = Webhook::of_policy(&rule_v2, "kw").unwrap();
        assert!(matches!(webhook.sent_for_request(&pods), Sent::No(_)));
    }

    #[test]
    fn selectors_are_refused_as_the_api_server_refuses_them() {
        for bad in [
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}),
        ] {
            assert!(Selector::read(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_controller_excludes_its_namespace_unless_allowed_inside() {
        let policy = |allow: bool| {
            json!({"kind": "ClusterAdmissionPolicy", "spec": {
                "allowInsideAdmissionControllerNamespace": allow,
                "namespaceSelector": {"matchLabels": {"team": "a"},
                    "matchExpressions": [{"key": "mesh", "operator": "Exists"}]}}})
        };
        let labels = json!({"mesh": "yes"}).as_object().cloned();
        let webhook = Webhook::of_policy(&policy(false), "kubewarden").unwrap();
        assert!(!webhook.notes.is_empty(), "matchLabels dropped is noted");
        assert_eq!(
            webhook.sent_for_namespace("team-b", labels.as_ref()),
            Sent::Yes
        );
        assert!(matches!(
            webhook.sent_for_namespace("kubewarden", labels.as_ref()),
            Sent::No(_)
        ));
        assert!(matches!(
            webhook.sent_for_namespace("team-b", None),
            Sent::Unknown(_)
        ));
        assert_eq!(webhook.sent_for_namespace("", None), Sent::Yes);
        let inside = Webhook::of_policy(&policy(true), "kubewarden").unwrap();
        let team_a = json!({"mesh": "yes", "team": "a"}).as_object().cloned();
        assert_eq!(
            inside.sent_for_namespace("kubewarden", team_a.as_ref()),
            Sent::Yes
        );
        assert!(matches!(
            inside.sent_for_namespace("kubewarden", labels.as_ref()),
            Sent::No(_)
        ));
    }

    #[test]
    fn the_object_selector_reads_the_object_or_the_old_one() {
        let webhook = Webhook::of_policy(
            &json!({"kind": "ClusterAdmissionPolicy", "spec": {
                "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}],
                "objectSelector": {"matchLabels": {"app": "x"}}}}),
            "kubewarden",
        )
        .unwrap();
        let mut r = request("UPDATE", "pods", "", "a");
        r["object"] = json!({"metadata": {}});
        assert!(matches!(webhook.sent_for_request(&r), Sent::No(_)));
        r["oldObject"] = json!({"metadata": {"labels": {"app": "x"}}});
        assert_eq!(webhook.sent_for_request(&r), Sent::Yes);
    }
}
