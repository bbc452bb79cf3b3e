//! What the policy is run with: its settings (`--settings`, or a policy
//! manifest's `spec.settings`), validated by the policy's own
//! `validate_settings` as policy-server does when it loads the policy; and,
//! from a `ClusterAdmissionPolicy` (or `AdmissionPolicy`) manifest, which
//! requests the API server would send it at all.
//!
//! Which requests reach the webhook Kubewarden's controller installs for a
//! policy is kube-model's rule (`kube_model::webhook`), the one the tests
//! hold to `test_data/selection/`; its CEL `matchConditions` are evaluated
//! here, as the API server evaluates them (`conditions`).

pub use kube_model::webhook::Sent;
use kube_model::webhook::Webhook;
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
    /// The webhook Kubewarden's controller installs for it.
    pub webhook: Webhook,
    /// Its CEL `matchConditions`, compiled, and its `failurePolicy`.
    pub conditions: Option<std::sync::Arc<crate::conditions::Conditions>>,
    /// What the report must say about this manifest (dropped `matchLabels`,
    /// `matchConditions` not evaluated, monitor mode, `mutating: false`).
    pub notes: Vec<String>,
}

impl Config {
    /// Settings from `--settings` (JSON or YAML text, or a file holding it)
    /// or `--policy` (a manifest's `spec.settings`), validated by the policy.
    pub fn load(
        settings: Option<&str>,
        policy: Option<&str>,
        kubewarden_namespace: &str,
    ) -> Result<Config, String> {
        let (settings, policy) = match (settings, policy) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "give --settings or --policy, not both: the manifest's spec.settings are \
                     its settings, e.g. --policy examples/quit-endpoint.yaml alone ({SETTINGS_EXAMPLE} without a manifest)"
                ))
            }
            (Some(text), None) => (read_settings(text)?, None),
            (None, Some(file)) => {
                let manifest = PolicyManifest::read(file, kubewarden_namespace)?;
                (manifest.1, Some(manifest.0))
            }
            (None, None) => (Value::Object(Map::new()), None),
        };
        let parsed = validate(&settings).map_err(|why| {
            let from = match policy.as_ref() {
                Some(p) => format!("--policy {}: spec.settings", p.file),
                None => "--settings".to_owned(),
            };
            format!("{from}: {why}; {}", settings_hint(&settings))
        })?;
        Ok(Config {
            settings,
            parsed,
            policy,
            kubewarden_namespace: kubewarden_namespace.to_owned(),
        })
    }

    /// Whether the AdmissionRequest `request` reaches the policy, as far as
    /// the request tells: Kubewarden's own namespace, the rules, the object
    /// selector (`kube_model::webhook`).
    pub fn sent_for_object(&self, request: &Value) -> Sent {
        match &self.policy {
            Some(policy) => policy.webhook.sent_for_request(request),
            None if request["namespace"] == self.kubewarden_namespace.as_str() => {
                Sent::No("Kubewarden's own namespace".into())
            }
            None => Sent::Yes,
        }
    }

    /// Whether requests from `namespace` reach the policy, by its
    /// `namespaceSelector`; `labels` when the input carries the Namespace.
    pub fn sent_for_namespace(&self, namespace: &str, labels: Option<&Map<String, Value>>) -> Sent {
        match &self.policy {
            Some(policy) => policy.webhook.sent_for_namespace(namespace, labels),
            None => Sent::Yes,
        }
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

/// A working `--policy`, for the messages that refuse one.
const POLICY_EXAMPLE: &str = "give the ClusterAdmissionPolicy manifest you apply, \
    e.g. --policy examples/native-sidecar.yaml";

/// A working `--settings`, for the messages that refuse one.
const SETTINGS_EXAMPLE: &str =
    r#"--settings 'mode: quitEndpoint' or --settings '{"mode": "quitEndpoint"}'"#;

/// `--settings`: a file holding JSON or YAML, or that text itself.
fn read_settings(text: &str) -> Result<Value, String> {
    let path = std::path::Path::new(text);
    let (text, what) = if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--settings {text}: {e}; give a readable file, or the settings themselves: {SETTINGS_EXAMPLE}"))?;
        (text, format!("--settings {}", path.display()))
    } else if [".json", ".yaml", ".yml"].iter().any(|e| text.ends_with(e)) && !text.contains('\n') {
        // A file name, not settings: say so rather than validate the name.
        return Err(format!(
            "--settings {text}: no such file; --settings takes a file or the settings themselves \
             as JSON or YAML, e.g. {SETTINGS_EXAMPLE}"
        ));
    } else {
        (text.to_owned(), "--settings".to_owned())
    };
    let value = match crate::yaml::parse(&text) {
        Ok(parsed) => parsed.map(|(_, value)| value).unwrap_or(Value::Null),
        Err(e) => {
            return Err(format!(
                "{what}: neither JSON nor YAML: {} (line {}); e.g. {SETTINGS_EXAMPLE}",
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

/// What to write instead of refused settings: the `key=value` pairs of a
/// command-line habit rewritten as YAML when the policy accepts that,
/// else the general example.
fn settings_hint(settings: &Value) -> String {
    if let Some(text) = settings.as_str().filter(|t| t.contains('=')) {
        let pairs: Option<Vec<String>> = text
            .split(',')
            .map(|pair| {
                let (key, value) = pair.split_once('=')?;
                Some(format!("{}: {}", key.trim(), value.trim()))
            })
            .collect();
        if let Some(pairs) = pairs {
            let yaml = match pairs.as_slice() {
                [one] => one.clone(),
                many => format!("{{{}}}", many.join(", ")),
            };
            let works = crate::yaml::parse(&yaml)
                .ok()
                .flatten()
                .is_some_and(|(_, value)| validate(&value).is_ok());
            if works {
                return format!("write them as YAML or JSON: --settings '{yaml}'");
            }
        }
    }
    if settings.is_object() {
        format!("e.g. {SETTINGS_EXAMPLE}")
    } else {
        format!("write them as YAML or JSON, e.g. {SETTINGS_EXAMPLE}")
    }
}

/// The policy's own `validate_settings`, as policy-server calls it when it
/// loads the policy: its message when the settings are refused.
fn validate(settings: &Value) -> Result<istio_job_sidecar_policy::settings::Settings, String> {
    let payload = serde_json::to_vec(settings).map_err(|e| e.to_string())?;
    let answer = istio_job_sidecar_policy::validate_settings(&payload)
        .map_err(|e| format!("the policy could not check them: {e}"))?;
    let answer: Value = serde_json::from_slice(&answer)
        .map_err(|e| format!("the policy's check answered no JSON: {e}"))?;
    if answer["valid"] != Value::Bool(true) {
        let message = answer["message"].as_str().unwrap_or("(no message)");
        return Err(message.to_owned());
    }
    istio_job_sidecar_policy::settings::Settings::from_value(settings)
}

impl PolicyManifest {
    /// The first `ClusterAdmissionPolicy` or `AdmissionPolicy` of `file`,
    /// and its settings; Kubewarden installed in `kubewarden_namespace`.
    pub fn read(file: &str, kubewarden_namespace: &str) -> Result<(PolicyManifest, Value), String> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("--policy {file}: {e}; {POLICY_EXAMPLE}"))?;
        let documents = crate::input::YamlDocuments::new(text.as_bytes());
        for document in documents {
            let document =
                document.map_err(|e| format!("--policy {file}: {e}; {POLICY_EXAMPLE}"))?;
            let parsed = document.parse().map_err(|(line, why)| {
                format!(
                    "--policy {file}, line {}: {why}; {POLICY_EXAMPLE}",
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
                return PolicyManifest::from_value(file, &value, kubewarden_namespace);
            }
        }
        Err(format!(
            "--policy {file}: no ClusterAdmissionPolicy or AdmissionPolicy in it; {POLICY_EXAMPLE}"
        ))
    }

    fn from_value(
        file: &str,
        value: &Value,
        kubewarden_namespace: &str,
    ) -> Result<(PolicyManifest, Value), String> {
        let spec = &value["spec"];
        let webhook = Webhook::of_policy(value, kubewarden_namespace)
            .map_err(|why| format!("--policy {file}: {why}; {POLICY_EXAMPLE}"))?;
        let mut manifest = PolicyManifest {
            file: file.to_owned(),
            name: value["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            kind: value["kind"].as_str().unwrap_or_default().to_owned(),
            notes: webhook.notes.clone(),
            ..PolicyManifest::default()
        };
        if !webhook.match_conditions.is_empty() {
            let compiled = crate::conditions::Conditions::new(
                &webhook.match_conditions,
                webhook.ignore_failures,
            );
            manifest.conditions = Some(std::sync::Arc::new(compiled));
        }
        manifest.webhook = webhook;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_validated_by_the_policy() {
        let err = Config::load(Some("mode: native"), None, "kubewarden").unwrap_err();
        assert!(err.contains("mode: unknown value \"native\""), "{err}");
        let ok = Config::load(Some("{\"mode\": \"quitEndpoint\"}"), None, "kubewarden").unwrap();
        let missing = Config::load(Some("settigns.yaml"), None, "kubewarden").unwrap_err();
        assert!(
            missing.starts_with("--settings settigns.yaml: no such file; --settings takes a file or the settings themselves"),
            "{missing}"
        );
        assert!(missing.contains(SETTINGS_EXAMPLE), "{missing}");
        assert_eq!(ok.parsed.mode.as_str(), "quitEndpoint");
    }

    /// Every refusal says what to write instead, with settings that work.
    #[test]
    fn refused_settings_come_with_settings_that_work() {
        let err = Config::load(Some("mode=quitEndpoint"), None, "kubewarden").unwrap_err();
        assert_eq!(
            err,
            "--settings: settings must be an object, got a string; \
             write them as YAML or JSON: --settings 'mode: quitEndpoint'"
        );
        let err = Config::load(
            Some("mode=quitEndpoint,workloadOverride=false"),
            None,
            "kubewarden",
        )
        .unwrap_err();
        assert!(
            err.ends_with("--settings '{mode: quitEndpoint, workloadOverride: false}'"),
            "{err}"
        );
        // A pair the policy refuses is not offered: the general example is.
        let err = Config::load(Some("mode=native"), None, "kubewarden").unwrap_err();
        assert!(err.ends_with(SETTINGS_EXAMPLE), "{err}");
        // The examples themselves are accepted.
        for example in ["mode: quitEndpoint", r#"{"mode": "quitEndpoint"}"#] {
            assert!(SETTINGS_EXAMPLE.contains(example));
            Config::load(Some(example), None, "kubewarden").unwrap();
        }
    }
}
