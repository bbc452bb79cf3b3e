//! artifacthub-pkg.yml (`make artifacthub`) and questions-ui.yml (Rancher's
//! form) agree with metadata.yml and with the policy's settings.

use std::collections::BTreeSet;

use istio_job_sidecar_policy::settings::{Mode, Settings, FALLBACKS, KEYS};
use serde_json::{json, Value};

use crate::common::{
    annotation, keywords, metadata, parse_author, read, yaml_docs, yaml_file, VERSION,
};

#[test]
fn artifacthub_pkg_matches_metadata() {
    let meta = metadata();
    let pkg = yaml_file("artifacthub-pkg.yml");
    let a = |key: &str| annotation(&meta, key).to_owned();
    let image = format!("{}:v{VERSION}", a("io.kubewarden.policy.ociUrl"));
    let source = a("io.kubewarden.policy.source");
    let (author_name, author_email) = parse_author(&a("io.kubewarden.policy.author"));

    let hint = "(regenerate with `make artifacthub`)";
    assert_eq!(pkg["version"], json!(VERSION), "version {hint}");
    for (field, key) in [
        ("name", "io.kubewarden.policy.title"),
        ("displayName", "io.artifacthub.displayName"),
        ("description", "io.kubewarden.policy.description"),
        ("license", "io.kubewarden.policy.license"),
        ("homeURL", "io.kubewarden.policy.url"),
    ] {
        assert_eq!(
            pkg[field],
            json!(a(key)),
            "{field} vs metadata.yml {key} {hint}"
        );
    }
    assert!(pkg["createdAt"].is_string(), "createdAt {hint}");
    assert_eq!(
        pkg["containersImages"],
        json!([{"name": "policy", "image": image}]),
        "containersImages {hint}"
    );
    assert_eq!(pkg["keywords"], json!(keywords(&meta)), "keywords {hint}");
    let mut links = Vec::new();
    if source.starts_with("https://github.com/") {
        links.push(json!({"name": "policy", "url": format!("{source}/releases/download/v{VERSION}/policy.wasm")}));
    }
    links.push(json!({"name": "source", "url": source}));
    assert_eq!(pkg["links"], Value::Array(links), "links {hint}");
    assert_eq!(
        pkg["maintainers"],
        json!([{"name": author_name, "email": author_email}]),
        "maintainers {hint}"
    );
    assert_eq!(
        pkg["provider"],
        json!({"name": "kubewarden"}),
        "provider {hint}"
    );
    // The install text: one_install_route_monitor_then_protect.

    let annotations = pkg["annotations"]
        .as_object()
        .unwrap_or_else(|| panic!("artifacthub-pkg.yml has no annotations {hint}"));
    assert_eq!(
        annotations.get("kubewarden/mutation"),
        Some(&json!(meta["mutating"].to_string())),
        "kubewarden/mutation {hint}"
    );
    assert_eq!(
        annotations.get("kubewarden/resources"),
        Some(&json!(a("io.artifacthub.resources"))),
        "kubewarden/resources {hint}"
    );
    let rules_text = annotations
        .get("kubewarden/rules")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("kubewarden/rules missing {hint}"));
    assert_eq!(
        yaml_docs("artifacthub-pkg.yml kubewarden/rules", rules_text),
        vec![meta["rules"].clone()],
        "kubewarden/rules {hint}"
    );
    assert_eq!(
        annotations
            .get("kubewarden/questions-ui")
            .and_then(Value::as_str),
        Some(read("questions-ui.yml").as_str()),
        "kubewarden/questions-ui must be questions-ui.yml verbatim {hint}"
    );
    // kwctl writes kubewarden/contextAwareResources only when there are some.
    assert_eq!(
        annotations.contains_key("kubewarden/contextAwareResources"),
        meta["contextAwareResources"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "kubewarden/contextAwareResources {hint}"
    );
    let known: BTreeSet<&str> = [
        "kubewarden/mutation",
        "kubewarden/resources",
        "kubewarden/rules",
        "kubewarden/questions-ui",
        "kubewarden/contextAwareResources",
        "kubewarden/hidden-ui",
    ]
    .into();
    for key in annotations.keys() {
        assert!(
            known.contains(key.as_str()),
            "unexpected annotation {key} {hint}"
        );
    }
}

#[test]
fn questions_ui_covers_every_setting() {
    let questions = yaml_file("questions-ui.yml");
    let list = questions["questions"]
        .as_array()
        .expect("questions-ui.yml: `questions` is not a list");
    let defaults = Settings::default();

    let variables: Vec<&str> = list
        .iter()
        .map(|q| q["variable"].as_str().expect("a question without variable"))
        .collect();
    let unique: BTreeSet<&str> = variables.iter().copied().collect();
    assert_eq!(unique.len(), variables.len(), "a setting asked twice");
    assert_eq!(
        unique,
        KEYS.into_iter().collect::<BTreeSet<_>>(),
        "questions-ui.yml variables vs settings::KEYS"
    );

    let mut answers = serde_json::Map::new();
    for q in list {
        let var = q["variable"].as_str().unwrap();
        for field in ["label", "tooltip", "description", "group", "type"] {
            assert!(
                q[field].as_str().is_some_and(|s| !s.trim().is_empty()),
                "questions-ui.yml: {var} has no {field}"
            );
        }
        let default = q["default"].clone();
        match var {
            "mode" => {
                assert_eq!(q["type"], json!("enum"), "mode is an enum");
                let options: Vec<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
                assert_eq!(q["options"], json!(options), "mode options vs Mode::ALL");
                assert_eq!(default, json!(defaults.mode.as_str()), "mode default");
            }
            "sidecarContainerName" => {
                assert_eq!(q["type"], json!("string"));
                assert_eq!(default, json!(defaults.sidecar_container_name));
            }
            "workloadOverride" => {
                assert_eq!(q["type"], json!("boolean"));
                assert_eq!(default, json!(defaults.workload_override));
            }
            "quitUrl" => {
                assert_eq!(q["type"], json!("string"));
                assert_eq!(default, json!(defaults.quit_url));
            }
            "fallbackMode" => {
                assert_eq!(q["type"], json!("enum"), "fallbackMode is an enum");
                let mut options = vec![""];
                options.extend(FALLBACKS.iter().map(|m| m.as_str()));
                assert_eq!(
                    q["options"],
                    json!(options),
                    "fallbackMode options vs FALLBACKS"
                );
                assert_eq!(defaults.fallback_mode, None);
                assert_eq!(default, json!(""), "fallbackMode default: none");
            }
            "nodeVersionCheck" => {
                assert_eq!(q["type"], json!("boolean"));
                assert_eq!(default, json!(defaults.node_version_check));
            }
            other => panic!("questions-ui.yml: no check for {other}; add one here"),
        }
        answers.insert(var.to_owned(), default);
    }
    // What Rancher submits when the user keeps every default is valid.
    assert_eq!(
        Settings::from_value(&Value::Object(answers)),
        Ok(defaults),
        "questions-ui.yml defaults vs Settings::default()"
    );
}
