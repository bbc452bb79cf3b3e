//! What the policy is run with: its settings (`--settings`, or a policy
//! manifest's `spec.settings`), validated by the policy's own
//! `validate_settings` as policy-server does when it loads the policy; and,
//! from a `ClusterAdmissionPolicy` (or `AdmissionPolicy`) manifest, which
//! requests the API server would send it at all.
//!
//! The webhook Kubewarden's controller installs for a policy has the
//! policy's `rules`, `objectSelector` and `matchConditions`, and a
//! `namespaceSelector` made of the policy's `matchExpressions` only (its
//! `matchLabels` are dropped) plus `kubernetes.io/metadata.name NotIn
//! [<Kubewarden's namespace>]`; an `AdmissionPolicy` only sees its own
//! namespace. Its CEL `matchConditions` are evaluated as the API server
//! evaluates them (`conditions`).

use serde_json::{Map, Value};

/// The policy's settings, as policy-server hands them to every request.
#[derive(Debug, Clone)]
pub struct Config {
    pub settings: Value,
    /// The settings as the policy read them (`sidecarContainerName` names
    /// the proxy the stuck report looks for).
    pub parsed: istio_job_sidecar_policy::settings::Settings,
    pub policy: Option<PolicyManifest>,
    pub kubewarden_namespace: String,
}

/// What a policy manifest says about which requests reach the policy.
#[derive(Debug, Clone, Default)]
pub struct PolicyManifest {
    pub file: String,
    pub kind: String,
    pub name: String,
    /// An `AdmissionPolicy`'s namespace: the only one it sees.
    pub namespace: Option<String>,
    pub rules: Vec<Rule>,
    /// The `matchExpressions` of its `namespaceSelector` (what the webhook
    /// gets; Kubewarden's namespace is excluded in any case).
    pub namespace_expressions: Vec<Requirement>,
    pub object_selector: Option<Selector>,
    /// Its CEL `matchConditions`, compiled, and its `failurePolicy`.
    pub conditions: Option<std::sync::Arc<crate::conditions::Conditions>>,
    /// What the report must say about this manifest (dropped `matchLabels`,
    /// `matchConditions` not evaluated, monitor mode, `mutating: false`).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub match_labels: Vec<(String, String)>,
    pub expressions: Vec<Requirement>,
}

/// Whether a request reaches the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Yes,
    /// Not sent: why.
    No(String),
    /// Depends on labels the input does not carry: what is missing.
    Unknown(String),
}

impl Sent {
    pub fn and(self, other: Sent) -> Sent {
        match (self, other) {
            (Sent::No(why), _) | (_, Sent::No(why)) => Sent::No(why),
            (Sent::Unknown(a), Sent::Unknown(b)) if a != b => Sent::Unknown(format!("{a}; {b}")),
            (Sent::Unknown(why), _) | (_, Sent::Unknown(why)) => Sent::Unknown(why),
            _ => Sent::Yes,
        }
    }
}

pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

impl Config {
    /// Settings from `--settings` (JSON or YAML text, or a file holding it)
    /// or `--policy` (a manifest's `spec.settings`), validated by the policy.
    pub fn load(
        settings: Option<&str>,
        policy: Option<&str>,
        kubewarden_namespace: &str,
    ) -> Result<Config, String> {
        let (settings, policy) = match (settings, policy) {
            (Some(_), Some(_)) => return Err("give --settings or --policy, not both".into()),
            (Some(text), None) => (read_settings(text)?, None),
            (None, Some(file)) => {
                let manifest = PolicyManifest::read(file)?;
                (manifest.1, Some(manifest.0))
            }
            (None, None) => (Value::Object(Map::new()), None),
        };
        let parsed = validate(&settings)?;
        Ok(Config {
            settings,
            parsed,
            policy,
            kubewarden_namespace: kubewarden_namespace.to_owned(),
        })
    }

    /// Whether a request for `object` (`kind` of the policy crate's view,
    /// `operation`) reaches the policy, as far as the object tells:
    /// the rules, the object selector, Kubewarden's own namespace.
    pub fn sent_for_object(
        &self,
        resource: &str,
        group: &str,
        operation: &str,
        object: &Value,
        namespace: &str,
    ) -> Sent {
        if namespace == self.kubewarden_namespace {
            return Sent::No("Kubewarden's own namespace".into());
        }
        let Some(policy) = &self.policy else {
            return Sent::Yes;
        };
        if let Some(own) = &policy.namespace {
            if own != namespace {
                return Sent::No(format!("the AdmissionPolicy sees namespace {own} only"));
            }
        }
        let ruled = policy
            .rules
            .iter()
            .any(|r| r.matches(group, resource, operation));
        if !ruled {
            return Sent::No(format!("rules do not cover {resource} {operation}"));
        }
        if let Some(selector) = &policy.object_selector {
            let labels = object["metadata"]["labels"].as_object();
            if !selector.matches(labels) {
                return Sent::No("objectSelector does not match".into());
            }
        }
        Sent::Yes
    }

    /// Whether requests from `namespace` reach the policy, by its
    /// `namespaceSelector`; `labels` when the input carries the Namespace.
    pub fn sent_for_namespace(&self, namespace: &str, labels: Option<&Map<String, Value>>) -> Sent {
        let Some(policy) = &self.policy else {
            return Sent::Yes;
        };
        let mut sent = Sent::Yes;
        for requirement in &policy.namespace_expressions {
            let known = match labels {
                Some(labels) => Some(labels.get(&requirement.key).and_then(Value::as_str)),
                // The API server labels every namespace with its name.
                None if requirement.key == NAMESPACE_NAME_LABEL => Some(Some(namespace)),
                None => None,
            };
            let verdict = match known {
                Some(value) if requirement.matches(value) => Sent::Yes,
                Some(_) => Sent::No("namespaceSelector does not select it".into()),
                None => Sent::Unknown(format!(
                    "the namespaceSelector needs the labels of namespace {namespace}, not in the input"
                )),
            };
            sent = sent.and(verdict);
        }
        sent
    }
}

impl Config {
    /// Whether the policy's CEL `matchConditions` let the AdmissionRequest
    /// `request` through.
    pub fn sent_for_conditions(&self, request: &Value) -> Sent {
        use crate::conditions::Verdict;
        let Some(conditions) = self.policy.as_ref().and_then(|p| p.conditions.as_ref()) else {
            return Sent::Yes;
        };
        match conditions.evaluate(request) {
            Verdict::Pass => Sent::Yes,
            Verdict::Skipped(why) => Sent::No(why),
            Verdict::Rejected(why) => Sent::Unknown(format!("{why}: the API server rejects it")),
            Verdict::Unknown(why) => Sent::Unknown(why),
        }
    }
}

/// `--settings`: a file holding JSON or YAML, or that text itself.
fn read_settings(text: &str) -> Result<Value, String> {
    let path = std::path::Path::new(text);
    let (text, what) = if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| format!("--settings {text}: {e}"))?;
        (text, format!("--settings {}", path.display()))
    } else if [".json", ".yaml", ".yml"].iter().any(|e| text.ends_with(e)) && !text.contains('\n') {
        // A file name, not settings: say so rather than validate the name.
        return Err(format!("--settings {text}: no such file"));
    } else {
        (text.to_owned(), "--settings".to_owned())
    };
    let value = match crate::yaml::parse(&text) {
        Ok(parsed) => parsed.map(|(_, value)| value).unwrap_or(Value::Null),
        Err(e) => {
            return Err(format!(
                "{what}: neither JSON nor YAML: {} (line {})",
                e.message, e.line
            ))
        }
    };
    // A whole `settings:` block pasted from a manifest.
    match value {
        Value::Object(mut map) if map.len() == 1 && map.contains_key("settings") => {
            Ok(map.remove("settings").unwrap_or_default())
        }
        other => Ok(other),
    }
}

/// The policy's own `validate_settings`, as policy-server calls it when it
/// loads the policy: its message when the settings are refused.
fn validate(settings: &Value) -> Result<istio_job_sidecar_policy::settings::Settings, String> {
    let payload = serde_json::to_vec(settings).map_err(|e| e.to_string())?;
    let answer = istio_job_sidecar_policy::validate_settings(&payload)
        .map_err(|e| format!("validate_settings failed: {e}"))?;
    let answer: Value = serde_json::from_slice(&answer)
        .map_err(|e| format!("validate_settings answered no JSON: {e}"))?;
    if answer["valid"] != Value::Bool(true) {
        let message = answer["message"].as_str().unwrap_or("(no message)");
        return Err(format!(
            "invalid settings (the policy's validate_settings): {message}"
        ));
    }
    istio_job_sidecar_policy::settings::Settings::from_value(settings)
}

impl PolicyManifest {
    /// The first `ClusterAdmissionPolicy` or `AdmissionPolicy` of `file`,
    /// and its settings.
    pub fn read(file: &str) -> Result<(PolicyManifest, Value), String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("--policy {file}: {e}"))?;
        let documents = crate::input::YamlDocuments::new(text.as_bytes());
        for document in documents {
            let document = document.map_err(|e| format!("--policy {file}: {e}"))?;
            let parsed = document.parse().map_err(|(line, why)| {
                format!(
                    "--policy {file}, line {}: {why}",
                    line.unwrap_or(document.line)
                )
            })?;
            let Some((_, value)) = parsed else { continue };
            let kind = value["kind"].as_str().unwrap_or_default();
            if value["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("policies.kubewarden.io/"))
                && (kind == "ClusterAdmissionPolicy" || kind == "AdmissionPolicy")
            {
                return PolicyManifest::from_value(file, &value);
            }
        }
        Err(format!(
            "--policy {file}: no ClusterAdmissionPolicy or AdmissionPolicy in it"
        ))
    }

    fn from_value(file: &str, value: &Value) -> Result<(PolicyManifest, Value), String> {
        let spec = &value["spec"];
        let kind = value["kind"].as_str().unwrap_or_default().to_owned();
        let mut manifest = PolicyManifest {
            file: file.to_owned(),
            name: value["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            namespace: (kind == "AdmissionPolicy").then(|| {
                value["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default")
                    .to_owned()
            }),
            kind,
            ..PolicyManifest::default()
        };
        let bad = |why: String| format!("--policy {file}: {why}");
        for rule in spec["rules"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            manifest.rules.push(Rule {
                api_groups: strings(&rule["apiGroups"]),
                resources: strings(&rule["resources"]),
                operations: strings(&rule["operations"]),
            });
        }
        let namespace_selector = &spec["namespaceSelector"];
        if !namespace_selector.is_null() {
            let selector = Selector::read(namespace_selector)
                .map_err(|e| bad(format!("namespaceSelector: {e}")))?;
            if !selector.match_labels.is_empty() {
                manifest.notes.push(
                    "namespaceSelector.matchLabels is dropped by Kubewarden's controller: \
                     only its matchExpressions select namespaces"
                        .into(),
                );
            }
            manifest.namespace_expressions = selector.expressions;
        }
        if !spec["objectSelector"].is_null() {
            let selector = Selector::read(&spec["objectSelector"])
                .map_err(|e| bad(format!("objectSelector: {e}")))?;
            manifest.object_selector = Some(selector);
        }
        let conditions: Vec<(String, String)> = spec["matchConditions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|c| {
                let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                (text("name"), text("expression"))
            })
            .collect();
        if !conditions.is_empty() {
            let ignore = spec["failurePolicy"] == "Ignore";
            let compiled = crate::conditions::Conditions::new(&conditions, ignore);
            manifest.conditions = Some(std::sync::Arc::new(compiled));
        }
        if spec["mode"] == "monitor" {
            manifest.notes.push(
                "mode: monitor: policy-server only logs these patches, it applies none".into(),
            );
        }
        if spec["mutating"] != Value::Bool(true) {
            manifest.notes.push(
                "mutating is not true: policy-server rejects every request this policy mutates"
                    .into(),
            );
        }
        let settings = match &spec["settings"] {
            Value::Null => Value::Object(Map::new()),
            other => other.clone(),
        };
        Ok((manifest, settings))
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

impl Rule {
    fn matches(&self, group: &str, resource: &str, operation: &str) -> bool {
        let has = |list: &[String], want: &str| list.iter().any(|v| v == "*" || v == want);
        has(&self.api_groups, group)
            && has(&self.resources, resource)
            && has(&self.operations, operation)
    }
}

impl Selector {
    fn read(value: &Value) -> Result<Selector, String> {
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
            let operator = match expression["operator"].as_str() {
                Some("In") => Operator::In,
                Some("NotIn") => Operator::NotIn,
                Some("Exists") => Operator::Exists,
                Some("DoesNotExist") => Operator::DoesNotExist,
                other => return Err(format!("matchExpression {key}: unknown operator {other:?}")),
            };
            selector.expressions.push(Requirement {
                key,
                operator,
                values: strings(&expression["values"]),
            });
        }
        Ok(selector)
    }

    /// Label selector semantics: every `matchLabels` pair and every
    /// expression must hold.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.match_labels
            .iter()
            .all(|(k, v)| get(k) == Some(v.as_str()))
            && self.expressions.iter().all(|r| r.matches(get(&r.key)))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_read_as_kubernetes_reads_them() {
        let selector = Selector::read(&json!({"matchLabels": {"a": "1"}, "matchExpressions": [
            {"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}]}))
        .unwrap();
        let labels = |v: Value| v.as_object().cloned();
        assert!(selector.matches(labels(json!({"a": "1"})).as_ref()));
        assert!(!selector
            .matches(labels(json!({"a": "1", "sidecar.istio.io/inject": "false"})).as_ref()));
        assert!(!selector.matches(None));
    }

    #[test]
    fn settings_are_validated_by_the_policy() {
        let err = Config::load(Some("mode: native"), None, "kubewarden").unwrap_err();
        assert!(err.contains("mode: unknown value \"native\""), "{err}");
        let ok = Config::load(Some("{\"mode\": \"quitEndpoint\"}"), None, "kubewarden").unwrap();
        let missing = Config::load(Some("settigns.yaml"), None, "kubewarden").unwrap_err();
        assert_eq!(missing, "--settings settigns.yaml: no such file");
        assert_eq!(ok.parsed.mode.as_str(), "quitEndpoint");
    }
}
