//! The files that travel with the module agree with each other and with the
//! crate, so they cannot drift: `metadata.yml` (what `kwctl annotate` embeds),
//! every `examples/*.yaml` ClusterAdmissionPolicy, `artifacthub-pkg.yml`,
//! `questions-ui.yml`, `CHANGELOG.md`, the Makefile's OCI repository and the
//! version in Cargo.toml; and the documents: every relative link of the
//! Markdown pages lands, every pointer to a section of docs/facts.md too.
//!
//! Run alone with `cargo test --test manifests`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use istio_job_sidecar_policy::settings::{Mode, Settings, FALLBACKS, KEYS};
use serde::Deserialize;
use serde_json::{json, Value};

/// The single source of the version: Cargo.toml's `[package] version`.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every annotation metadata.yml must carry. Not io.kubewarden.policy.usage:
/// `kwctl annotate -u README.md` adds that one from the README.
const REQUIRED_ANNOTATIONS: [&str; 13] = [
    "io.artifacthub.displayName",
    "io.artifacthub.resources",
    "io.artifacthub.keywords",
    "io.kubewarden.policy.ociUrl",
    "io.kubewarden.policy.title",
    "io.kubewarden.policy.version",
    "io.kubewarden.policy.description",
    "io.kubewarden.policy.author",
    "io.kubewarden.policy.url",
    "io.kubewarden.policy.source",
    "io.kubewarden.policy.license",
    "io.kubewarden.policy.severity",
    "io.kubewarden.policy.category",
];

/// The fields of a ClusterAdmissionPolicy `spec` that kwctl reads a manifest
/// with (kubewarden-policy-sdk 0.17 `crd::policies::ClusterAdmissionPolicySpec`,
/// `#[serde(deny_unknown_fields)]`): `kwctl run examples/<file>.yaml` refuses
/// a manifest with any other.
const CAP_SPEC_FIELDS: [&str; 17] = [
    "backgroundAudit",
    "contextAwareResources",
    "failurePolicy",
    "matchConditions",
    "matchPolicy",
    "message",
    "mode",
    "module",
    "mutating",
    "namespaceSelector",
    "objectSelector",
    "policyServer",
    "rules",
    "settings",
    "sideEffects",
    "timeoutEvalSeconds",
    "timeoutSeconds",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A YAML file as JSON (every document of it), so that values compare the
/// way the API server and kwctl see them, whatever the YAML style.
fn yaml_docs(rel: &str, text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| {
            let value = serde_yaml::Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{rel} is not valid YAML: {e}"));
            serde_json::to_value(value).unwrap_or_else(|e| panic!("{rel}: {e}"))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn yaml_file(rel: &str) -> Value {
    let mut docs = yaml_docs(rel, &read(rel));
    assert_eq!(docs.len(), 1, "{rel} must hold exactly one YAML document");
    docs.remove(0)
}

fn metadata() -> Value {
    yaml_file("metadata.yml")
}

fn annotation<'m>(metadata: &'m Value, key: &str) -> &'m str {
    metadata["annotations"][key]
        .as_str()
        .unwrap_or_else(|| panic!("metadata.yml: annotation {key} missing or not a string"))
}

/// `name <email>`, the form kwctl parses `io.kubewarden.policy.author` in.
fn parse_author(author: &str) -> (String, String) {
    let (name, rest) = author
        .split_once(" <")
        .unwrap_or_else(|| panic!("author {author:?} is not `name <email>`"));
    let email = rest
        .strip_suffix('>')
        .unwrap_or_else(|| panic!("author {author:?} is not `name <email>`"));
    assert!(
        email.contains('@') && !email.contains(' '),
        "author email {email:?} is not an address"
    );
    (name.trim().to_owned(), email.to_owned())
}

fn keywords(metadata: &Value) -> Vec<String> {
    annotation(metadata, "io.artifacthub.keywords")
        .split(',')
        .map(|k| k.trim().to_owned())
        .collect()
}

fn example_files() -> Vec<PathBuf> {
    let dir = root().join("examples");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("examples/ entry").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "examples/ holds no manifest");
    files
}

fn rel_name(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn metadata_has_the_contract_rules_and_what_kwctl_needs() {
    let meta = metadata();
    // Exactly the contract: a Job's template is immutable after creation, so
    // jobs are CREATE only; CronJob templates are mutable; Pod containers are
    // immutable.
    let expected_rules = json!([
        {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"], "operations": ["CREATE"]},
        {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["cronjobs"], "operations": ["CREATE", "UPDATE"]},
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]},
    ]);
    assert_eq!(meta["rules"], expected_rules, "metadata.yml rules");
    assert_eq!(meta["mutating"], json!(true), "metadata.yml mutating");
    assert_eq!(meta["executionMode"], json!("kubewarden-wapc"));
    // nodeVersionCheck lists the Nodes, and nothing else is read.
    assert_eq!(
        meta["contextAwareResources"],
        json!([{"apiVersion": "v1", "kind": "Node"}])
    );
    assert_eq!(
        meta["hostCapabilities"],
        json!(["kubernetes/list_resources_all"]),
        "the policy lists the Nodes and calls no other host capability (kwctl >= 1.35 annotate checks the module against this list)"
    );
    assert_eq!(
        meta["backgroundAudit"],
        json!(false),
        "a policy that never rejects gives the audit scanner nothing to report"
    );
    for key in REQUIRED_ANNOTATIONS {
        assert!(
            !annotation(&meta, key).trim().is_empty(),
            "metadata.yml: annotation {key} is empty"
        );
    }
    assert!(
        meta["annotations"]
            .get("io.kubewarden.policy.usage")
            .is_none(),
        "io.kubewarden.policy.usage comes from README.md via `kwctl annotate -u`"
    );
    // kwctl rejects empty keywords ("a,,b") and malformed authors.
    assert!(keywords(&meta).iter().all(|k| !k.is_empty()));
    parse_author(annotation(&meta, "io.kubewarden.policy.author"));
    for key in ["io.kubewarden.policy.url", "io.kubewarden.policy.source"] {
        assert!(
            annotation(&meta, key).starts_with("https://"),
            "{key} must be an https URL"
        );
    }
    let title = annotation(&meta, "io.kubewarden.policy.title");
    assert_eq!(title, "istio-job-sidecar", "the policy's name");
    assert!(
        annotation(&meta, "io.kubewarden.policy.ociUrl").ends_with(&format!("/{title}")),
        "ociUrl should end with the policy title"
    );
    assert!(
        ["info", "low", "medium", "high", "critical"]
            .contains(&annotation(&meta, "io.kubewarden.policy.severity")),
        "severity must be one of info, low, medium, high, critical"
    );
}

#[test]
fn one_version_everywhere() {
    let meta = metadata();
    assert_eq!(
        annotation(&meta, "io.kubewarden.policy.version"),
        VERSION,
        "metadata.yml io.kubewarden.policy.version vs Cargo.toml version"
    );

    let pkg = yaml_file("artifacthub-pkg.yml");
    assert_eq!(
        pkg["version"].as_str(),
        Some(VERSION),
        "artifacthub-pkg.yml version vs Cargo.toml version (run `make artifacthub`)"
    );

    // Keep a Changelog: the newest released entry is the first `## [x.y.z]`.
    let changelog = read("CHANGELOG.md");
    let newest = changelog
        .lines()
        .filter_map(|l| l.strip_prefix("## ["))
        .filter_map(|l| l.split_once(']').map(|(v, _)| v))
        .find(|v| !v.eq_ignore_ascii_case("unreleased"))
        .expect("CHANGELOG.md has no `## [x.y.z]` entry");
    assert_eq!(newest, VERSION, "newest CHANGELOG.md entry vs Cargo.toml");
}

#[test]
fn makefile_pushes_where_metadata_points() {
    let makefile = read("Makefile");
    let repo = makefile
        .lines()
        .find_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix("OCI_REPOSITORY")?;
            let value = rest.trim_start().strip_prefix("?=").or_else(|| {
                rest.trim_start()
                    .strip_prefix(":=")
                    .or(rest.trim_start().strip_prefix('='))
            })?;
            Some(value.trim().to_owned())
        })
        .expect("Makefile defines no OCI_REPOSITORY");
    assert_eq!(
        repo,
        annotation(&metadata(), "io.kubewarden.policy.ociUrl"),
        "Makefile OCI_REPOSITORY vs metadata.yml io.kubewarden.policy.ociUrl"
    );
    assert!(
        makefile.contains("registry://$(OCI_REPOSITORY):v$(VERSION)"),
        "make push must push to registry://$(OCI_REPOSITORY):v$(VERSION)"
    );
}

#[test]
fn examples_match_metadata_and_settings() {
    let meta = metadata();
    let module = format!(
        "registry://{}:v{VERSION}",
        annotation(&meta, "io.kubewarden.policy.ociUrl")
    );
    let mut modes_seen = BTreeSet::new();
    let mut namespace_selector_seen = false;
    let mut names_seen = BTreeSet::new();
    let mut node_check_seen = false;

    for path in example_files() {
        let rel = rel_name(&path);
        let docs = yaml_docs(&rel, &read(&rel));
        assert!(!docs.is_empty(), "{rel} is empty");
        for doc in docs {
            let name = doc["metadata"]["name"].as_str().unwrap_or("?");
            let at = format!("{rel} ({name})");
            assert_eq!(
                doc["apiVersion"],
                json!("policies.kubewarden.io/v1"),
                "{at}"
            );
            assert_eq!(doc["kind"], json!("ClusterAdmissionPolicy"), "{at}");
            let spec = &doc["spec"];
            let fields = spec
                .as_object()
                .unwrap_or_else(|| panic!("{at}: spec is not a mapping"));
            for key in fields.keys() {
                assert!(
                    CAP_SPEC_FIELDS.contains(&key.as_str()),
                    "{at}: spec.{key} is not a ClusterAdmissionPolicy field kwctl knows"
                );
            }

            assert_eq!(spec["rules"], meta["rules"], "{at}: rules vs metadata.yml");
            assert_eq!(spec["mutating"], json!(true), "{at}: mutating");
            assert_eq!(
                spec["backgroundAudit"], meta["backgroundAudit"],
                "{at}: backgroundAudit vs metadata.yml"
            );
            assert_eq!(spec["module"], json!(module), "{at}: module");
            assert!(
                matches!(spec["mode"].as_str(), Some("protect" | "monitor")),
                "{at}: spec.mode must be protect or monitor"
            );
            if let Some(fp) = spec.get("failurePolicy") {
                assert!(
                    matches!(fp.as_str(), Some("Ignore" | "Fail")),
                    "{at}: failurePolicy"
                );
            }
            for key in [
                "io.kubewarden.policy.severity",
                "io.kubewarden.policy.category",
            ] {
                assert_eq!(
                    doc["metadata"]["annotations"][key].as_str(),
                    Some(annotation(&meta, key)),
                    "{at}: {key} vs metadata.yml (kwctl scaffold manifest copies it)"
                );
            }

            let settings = spec.get("settings").cloned().unwrap_or(Value::Null);
            let parsed = Settings::from_value(&settings)
                .unwrap_or_else(|e| panic!("{at}: settings rejected: {e}"));
            modes_seen.insert(parsed.mode.as_str());
            // nodeVersionCheck lists the Nodes: the policy must be granted
            // them (kwctl and policy-server refuse a call for a resource the
            // policy's contextAwareResources do not name).
            if parsed.node_version_check {
                node_check_seen = true;
                assert_eq!(
                    spec["contextAwareResources"], meta["contextAwareResources"],
                    "{at}: nodeVersionCheck without the Nodes in contextAwareResources"
                );
            }

            // Engine-side filtering: long-running Pods never reach the
            // policy-server; injection opt-outs are skipped.
            let conditions = spec["matchConditions"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: no matchConditions"));
            assert!(
                conditions.iter().any(|c| {
                    let e = c["expression"].as_str().unwrap_or("");
                    e.contains("restartPolicy") && e.contains("'Always'") && e.contains("pods")
                }),
                "{at}: no matchCondition skipping Pods with restartPolicy Always"
            );
            for c in conditions {
                assert!(
                    c["name"].as_str().is_some_and(|n| !n.is_empty()),
                    "{at}: every matchCondition needs a name"
                );
            }
            assert!(
                spec["objectSelector"]["matchExpressions"]
                    .as_array()
                    .is_some_and(|exprs| exprs.iter().any(|e| e
                        == &json!({"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}))),
                "{at}: no objectSelector skipping sidecar.istio.io/inject=false"
            );
            if let Some(selector) = spec.get("namespaceSelector") {
                namespace_selector_seen = true;
                // Kubewarden's controller installs only the matchExpressions
                // of a ClusterAdmissionPolicy's namespaceSelector: matchLabels
                // would be dropped, and the policy act in every namespace.
                assert!(
                    selector.get("matchLabels").is_none(),
                    "{at}: namespaceSelector.matchLabels is dropped by Kubewarden's controller; write matchExpressions"
                );
                assert!(
                    selector["matchExpressions"]
                        .as_array()
                        .is_some_and(|e| !e.is_empty()),
                    "{at}: a namespaceSelector without matchExpressions selects every namespace"
                );
            }
            // When the API server calls the webhook beside Istio's injector
            // depends on Kubewarden's release, not on this name: webhooks.bats.
            names_seen.insert(name.to_owned());
        }
    }

    let all: BTreeSet<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(modes_seen, all, "every mode needs an example in examples/");
    // The example of nodeVersionCheck, and the RBAC its policy-server needs.
    assert!(
        node_check_seen,
        "examples/ needs a nodeVersionCheck example"
    );
    let rbac = yaml_docs(
        "examples/rbac/policy-server-lists-nodes.yaml",
        &read("examples/rbac/policy-server-lists-nodes.yaml"),
    );
    assert!(
        rbac.iter().any(|doc| doc["kind"] == "ClusterRole"
            && doc["rules"]
                .as_array()
                .is_some_and(|rules| rules.iter().any(|r| {
                    // policy-server's list_resources_all: a LIST, then a
                    // WATCH that keeps its copy (docs/server-tests.md); no
                    // more than that.
                    r["resources"] == json!(["nodes"]) && r["verbs"] == json!(["list", "watch"])
                }))),
        "examples/rbac/: a ClusterRole that lists and watches nodes, and no more"
    );
    assert!(
        rbac.iter().any(|doc| doc["kind"] == "ClusterRoleBinding"),
        "examples/rbac/: the binding to the policy-server's service account"
    );
    assert!(
        namespace_selector_seen,
        "examples/ needs a namespaceSelector example for namespace-by-namespace roll-out"
    );
    // Every example is the policy `istio-job-sidecar` (the title), but the
    // second quitEndpoint policy, for Pods labelled for injection in
    // namespaces without the istio-injection label.
    let title = annotation(&meta, "io.kubewarden.policy.title");
    assert_eq!(
        names_seen,
        BTreeSet::from([title.to_owned(), format!("{title}-labelled-pods")]),
        "policy names in examples/"
    );
    // The companion of quit-endpoint.yaml differs from it only in where it acts.
    let quit = yaml_file("examples/quit-endpoint.yaml");
    let labelled = yaml_file("examples/quit-endpoint-labelled-pods.yaml");
    for key in [
        "module",
        "settings",
        "rules",
        "mode",
        "mutating",
        "failurePolicy",
        "objectSelector",
    ] {
        assert_eq!(
            labelled["spec"][key], quit["spec"][key],
            "examples/quit-endpoint-labelled-pods.yaml: spec.{key} vs examples/quit-endpoint.yaml"
        );
    }
}

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

// --- Documents: every relative link lands ---------------------------------

/// The Markdown pages of the repository (not build output, corpora or
/// hidden directories), as paths relative to the root.
fn markdown_pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if name.starts_with('.') || ["target", "corpus", "artifacts"].contains(&name) {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(&root(), &mut pages);
    pages
        .into_iter()
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect()
}

/// The text of a page outside fenced code blocks, one entry per line.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// A line with its inline code spans blanked out (so that `a](b)` inside
/// backticks is no link), keeping the brackets of the link around them.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push('x');
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, every character but letters,
/// digits, spaces, `-` and `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The headings of a Markdown text, as written (without the `#`s).
fn headings(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|line| {
            let hashes = line.len() - line.trim_start_matches('#').len();
            (1..=6).contains(&hashes).then_some(())?;
            let rest = &line[hashes..];
            rest.starts_with(' ').then(|| rest.trim().to_owned())
        })
        .collect()
}

/// The anchors GitHub gives a page's headings; a repeated heading gets
/// `-1`, `-2`...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut out = BTreeSet::new();
    for heading in headings(text) {
        let base = slug(&heading);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of the links of a Markdown text: inline links
/// `[text](target)` and the definitions `[name]: target` of reference links.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        if let Some((_, target)) = reference_definition(line) {
            targets.push(target.to_owned());
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].trim().to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// `[name]: target`, a reference link's definition (CommonMark: at most
/// three spaces before it), as (name, target).
fn reference_definition(line: &str) -> Option<(&str, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line.strip_prefix(&" ".repeat(indent))?.strip_prefix('[')?;
    if indent > 3 {
        return None;
    }
    let (name, after) = rest.split_once("]:")?;
    let target = after.trim();
    (!name.is_empty() && !target.is_empty() && !target.contains(' ')).then_some((name, target))
}

/// The names of the reference links `[text][name]` a Markdown text uses
/// (outside code), which must be defined or they show as brackets.
fn references_used(text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for line in prose_lines(text) {
        if reference_definition(line).is_some() {
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("][") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(']') else { break };
            used.insert(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    used
}

/// The project's repository, as metadata.yml names its source.
fn repository() -> String {
    annotation(&metadata(), "io.kubewarden.policy.source")
        .trim_end_matches('/')
        .to_owned()
}

/// Where a link of `page` leads inside the tree: `Ok(None)` for a page
/// elsewhere (another site, a mail address, the project's releases), the
/// file or directory for a relative link and for an absolute link into the
/// project's repository at the tag of this version (`<repository>/blob/v<version>/<path>`
/// or `/tree/...`), which must exist, as must the heading an `#anchor`
/// names. An absolute link into the repository at another tag or branch
/// is an error: the usage text travels with one version of the module.
fn resolve_link(page: &Path, target: &str) -> Result<Option<PathBuf>, String> {
    if target.is_empty() {
        return Err("an empty link".to_owned());
    }
    let repository = repository();
    let (file, anchor) = if let Some(in_repo) = target.strip_prefix(&format!("{repository}/")) {
        let (kind, rest) = in_repo.split_once('/').unwrap_or((in_repo, ""));
        if !matches!(kind, "blob" | "tree") {
            return Ok(None);
        }
        let tag = format!("v{VERSION}");
        let Some(path) = rest.strip_prefix(&format!("{tag}/")) else {
            return Err(format!(
                "a link into the repository at another version than {tag} (a version bump carries the README's links)"
            ));
        };
        let (path, anchor) = match path.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (path, None),
        };
        let file = PathBuf::from(path);
        let is_dir = root().join(&file).is_dir();
        if (kind == "tree") != is_dir {
            return Err(format!(
                "/{kind}/ names {}, which is {}",
                file.display(),
                if is_dir {
                    "a directory"
                } else {
                    "no directory"
                }
            ));
        }
        (file, anchor)
    } else if target.contains("://") || target.starts_with("mailto:") {
        return Ok(None);
    } else {
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target, None),
        };
        let file = if path.is_empty() {
            page.to_path_buf()
        } else {
            page.parent().unwrap_or(Path::new("")).join(path)
        };
        (file, anchor)
    };
    let full = root().join(&file);
    if !full.exists() {
        return Err(format!("no {}", file.display()));
    }
    if let Some(anchor) = anchor {
        let is_markdown = full.extension().is_some_and(|e| e == "md");
        if !(is_markdown && anchors(&fs::read_to_string(&full).unwrap()).contains(anchor)) {
            return Err(format!("no heading #{anchor} in {}", file.display()));
        }
    }
    Ok(Some(file))
}

/// Every link of every Markdown page lands: a relative one, or an absolute
/// one into the project's repository at this version, names a file or
/// directory that exists and, with `#anchor`, a heading of that page; every
/// reference link is defined. Moving a section, or renaming a heading,
/// fails here until every link to it follows.
#[test]
fn every_link_of_the_documents_lands() {
    let pages = markdown_pages();
    for must in [
        "README.md",
        "DEVELOPING.md",
        "docs/facts.md",
        "docs/performance.md",
    ] {
        assert!(
            pages.iter().any(|p| p == Path::new(must)),
            "{must} is missing"
        );
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = read(page.to_str().unwrap());
        for target in link_targets(&text) {
            if let Err(why) = resolve_link(page, &target) {
                broken.push(format!("{}: {target}: {why}", page.display()));
            }
        }
        let defined: BTreeSet<String> = prose_lines(&text)
            .into_iter()
            .filter_map(reference_definition)
            .map(|(name, _)| name.to_owned())
            .collect();
        for name in references_used(&text).difference(&defined) {
            broken.push(format!(
                "{}: [{name}] is used, never defined",
                page.display()
            ));
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

// --- The usage text: README.md as kwctl inspect and Artifact Hub show it ----

/// README.md is the usage text `kwctl annotate -u` embeds: read in
/// `kwctl inspect` on a terminal and on Artifact Hub, it says what an
/// operator needs and leaves the rest to docs/.
const README_MAX_LINES: usize = 250;
/// The width kwctl inspect (1.35) renders Markdown to when its output is no
/// terminal: a code line or a table row wider than this wraps.
const INSPECT_COLUMNS: usize = 80;
/// The most lines `kwctl inspect` of the annotated module may print.
const INSPECT_MAX_LINES: usize = 400;
/// The lines kwctl inspect prints besides the usage text for this
/// metadata.yml (details, annotations, rules, the Usage heading and its
/// rules): 54 with kwctl 1.35.
const INSPECT_OWN_LINES: usize = 60;

/// The tables of a Markdown text: each a list of rows, each a list of
/// cells as rendered (code spans and emphasis marks dropped), the
/// delimiter row left out.
fn tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables: Vec<Vec<Vec<String>>> = Vec::new();
    let mut in_table = false;
    for line in prose_lines(text) {
        let row = line.trim();
        if !(row.starts_with('|') && row.ends_with('|') && row.len() > 1) {
            in_table = false;
            continue;
        }
        let cells: Vec<String> = row[1..row.len() - 1]
            .split('|')
            .map(|c| c.trim().replace(['`', '*'], ""))
            .collect();
        if cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
        {
            continue;
        }
        if !in_table {
            tables.push(Vec::new());
            in_table = true;
        }
        tables.last_mut().unwrap().push(cells);
    }
    tables
}

/// A table's width as kwctl inspect draws it: the widest cell of each
/// column, and a border between and around them.
fn table_width(table: &[Vec<String>]) -> usize {
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let widest: usize = (0..columns)
        .map(|i| {
            table
                .iter()
                .filter_map(|row| row.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .sum();
    widest + columns + 1
}

/// The fenced code blocks of a Markdown text, as (info string, content).
fn code_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The lines the usage text takes in `kwctl inspect`: each line at least
/// one, a longer one as many as it wraps into.
fn rendered_lines(text: &str) -> usize {
    text.lines()
        .map(|l| l.chars().count().div_ceil(INSPECT_COLUMNS).max(1))
        .sum()
}

/// `kwctl inspect` of the module annotated with README.md, where kwctl and
/// a built policy.wasm are at hand (`make annotated-policy.wasm` builds
/// both): its output, or why it could not run.
fn kwctl_inspect() -> Result<String, String> {
    let module = root().join("policy.wasm");
    if !module.exists() {
        return Err("no policy.wasm (make policy.wasm)".to_owned());
    }
    let dir = std::env::temp_dir().join(format!("manifests-inspect-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let annotated = dir.join("annotated.wasm");
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new("kwctl")
            .args(args)
            .current_dir(root())
            .output()
            .map_err(|e| format!("kwctl: {e}"))
    };
    let annotate = run(&[
        "annotate".as_ref(),
        "-m".as_ref(),
        "metadata.yml".as_ref(),
        "-u".as_ref(),
        "README.md".as_ref(),
        "-o".as_ref(),
        annotated.as_os_str(),
        module.as_os_str(),
    ]);
    let inspect = annotate.and_then(|out| {
        if out.status.success() {
            run(&["inspect".as_ref(), annotated.as_os_str()])
        } else {
            Err(format!(
                "kwctl annotate: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    let _ = fs::remove_dir_all(&dir);
    let out = inspect?;
    if !out.status.success() {
        return Err(format!(
            "kwctl inspect: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

#[test]
fn readme_fits_kwctl_inspect_and_artifact_hub() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move detail to docs/"
    );
    for table in tables(&readme) {
        let width = table_width(&table);
        assert!(
            width <= INSPECT_COLUMNS,
            "README.md: a table {width} columns wide (more than {INSPECT_COLUMNS}) wraps in kwctl inspect: {:?}",
            table[0]
        );
    }
    for (info, body) in code_blocks(&readme) {
        for line in body.lines() {
            assert!(
                line.chars().count() <= INSPECT_COLUMNS,
                "README.md: a {info} line wider than {INSPECT_COLUMNS} columns wraps in kwctl inspect: {line}"
            );
        }
    }
    for line in readme.lines() {
        // kwctl inspect drops the indentation of a code block in a list
        // item: its YAML would read wrong there.
        assert!(
            !(line.starts_with(' ') && line.trim_start().starts_with("```")),
            "README.md: a fenced block indented (in a list item) loses its indentation in kwctl inspect: {line:?}"
        );
    }
    let estimate = rendered_lines(&readme) + INSPECT_OWN_LINES;
    assert!(
        estimate <= INSPECT_MAX_LINES,
        "README.md would take about {estimate} lines of kwctl inspect, more than {INSPECT_MAX_LINES}"
    );
    match kwctl_inspect() {
        Ok(out) => {
            let printed = out.lines().count();
            assert!(
                printed <= INSPECT_MAX_LINES,
                "kwctl inspect prints {printed} lines, more than {INSPECT_MAX_LINES}"
            );
            assert!(
                printed <= estimate,
                "kwctl inspect prints {printed} lines, more than the {estimate} this test estimates: raise INSPECT_OWN_LINES"
            );
        }
        Err(why) => eprintln!("kwctl inspect not run ({why}): the estimate stands"),
    }
}

/// Every link of the README is absolute, so that it works in `kwctl
/// inspect` and on Artifact Hub, where a relative link or an `#anchor`
/// leads nowhere; into the repository, it names this version's tag. Every
/// page of docs/ is reachable from it.
#[test]
fn readme_links_are_absolute_and_reach_every_page_of_docs() {
    let readme = read("README.md");
    let targets = link_targets(&readme);
    assert!(!targets.is_empty(), "README.md has no link");
    for target in &targets {
        assert!(
            target.starts_with("https://") || target.starts_with("http://"),
            "README.md: {target} is not an absolute URL: it leads nowhere in kwctl inspect and on Artifact Hub"
        );
    }
    let mut seen: BTreeSet<PathBuf> = BTreeSet::from([PathBuf::from("README.md")]);
    let mut queue = vec![PathBuf::from("README.md")];
    while let Some(page) = queue.pop() {
        let text = read(page.to_str().unwrap());
        for target in link_targets(&text) {
            if let Ok(Some(file)) = resolve_link(&page, &target) {
                let file = PathBuf::from(
                    file.to_str()
                        .unwrap()
                        .split('/')
                        .fold(Vec::<&str>::new(), |mut parts, part| {
                            match part {
                                ".." => {
                                    parts.pop();
                                }
                                "." | "" => {}
                                _ => parts.push(part),
                            }
                            parts
                        })
                        .join("/"),
                );
                if file.extension().is_some_and(|e| e == "md") && seen.insert(file.clone()) {
                    queue.push(file);
                }
            }
        }
    }
    let unreached: Vec<String> = markdown_pages()
        .into_iter()
        .filter(|p| p.starts_with("docs") && !seen.contains(p))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        unreached.is_empty(),
        "pages of docs/ no link from README.md leads to: {unreached:?}"
    );
}

// --- One install route: the manifest of examples/, monitor then protect ----

/// The manifest the install texts give: the default mode, cluster-wide.
const INSTALLED_EXAMPLE: &str = "examples/native-sidecar.yaml";

/// The README's Install section, from its heading to the next `## `.
fn readme_install_section(readme: &str) -> String {
    let mut lines = readme.lines().skip_while(|l| *l != "## Install");
    assert!(
        lines.next().is_some(),
        "README.md has no `## Install` section"
    );
    lines
        .take_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A console block's commands, a line ending in `\` joined with the next.
fn commands(console: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in console.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

/// RFC 7386 JSON merge patch, what `kubectl patch --type merge` applies.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let object = target.as_object_mut().unwrap();
    for (key, value) in fields {
        if value.is_null() {
            object.remove(key);
        } else {
            merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// What an install text has an operator apply: its one
/// ClusterAdmissionPolicy (a YAML block) and the merge patch of the
/// `kubectl patch clusteradmissionpolicy` that follows it.
fn install_steps(at: &str, text: &str) -> (Value, Value) {
    let blocks = code_blocks(text);
    let mut policies: Vec<Value> = blocks
        .iter()
        .filter(|(info, _)| info == "yaml")
        .flat_map(|(_, body)| yaml_docs(at, body))
        .filter(|doc| doc["kind"] == json!("ClusterAdmissionPolicy"))
        .collect();
    assert_eq!(
        policies.len(),
        1,
        "{at}: one ClusterAdmissionPolicy to apply"
    );
    let policy = policies.remove(0);
    let name = policy["metadata"]["name"].as_str().unwrap_or_default();
    let patches: Vec<Value> = blocks
        .iter()
        .filter(|(info, _)| info == "console")
        .flat_map(|(_, body)| commands(body))
        .filter_map(|command| {
            let words: Vec<&str> = command.split_whitespace().collect();
            let at_patch = words.windows(3).position(|w| {
                w[0] == "kubectl" && w[1] == "patch" && w[2] == "clusteradmissionpolicy"
            })?;
            assert_eq!(
                words.get(at_patch + 3).copied(),
                Some(name),
                "{at}: `{command}` patches another policy than {name}"
            );
            assert!(
                command.contains("--type merge"),
                "{at}: `{command}` is not a merge patch"
            );
            let quoted = command.split_once("-p '")?.1.split_once('\'')?.0;
            Some(serde_json::from_str(quoted).unwrap_or_else(|e| panic!("{at}: `{command}`: {e}")))
        })
        .collect();
    assert_eq!(
        patches.len(),
        1,
        "{at}: one `kubectl patch clusteradmissionpolicy {name} --type merge -p '...'`"
    );
    (policy, patches[0].clone())
}

/// The README and Artifact Hub's install text give one route, and a safe
/// one: the ClusterAdmissionPolicy of examples/ (failurePolicy Ignore,
/// matchConditions, selectors), first in monitor mode, then switched to
/// protect, which makes it the example exactly. Not `kwctl scaffold
/// manifest`: kwctl writes none of those fields.
#[test]
fn one_install_route_monitor_then_protect() {
    let example = yaml_file(INSTALLED_EXAMPLE);
    assert_eq!(
        example["spec"]["mode"],
        json!("protect"),
        "{INSTALLED_EXAMPLE}"
    );
    let readme = readme_install_section(&read("README.md"));
    let pkg = yaml_file("artifacthub-pkg.yml");
    let hub = pkg["install"]
        .as_str()
        .expect("artifacthub-pkg.yml has no install text")
        .to_owned();
    for (at, text) in [
        ("README.md, Install", &readme),
        ("artifacthub-pkg.yml, install", &hub),
    ] {
        assert!(
            !text.contains("kwctl scaffold manifest"),
            "{at}: offers kwctl scaffold manifest, whose manifest has no failurePolicy, matchConditions or objectSelector"
        );
        let (mut policy, patch) = install_steps(at, text);
        assert_eq!(
            policy["spec"]["mode"],
            json!("monitor"),
            "{at}: the policy is applied in monitor mode first"
        );
        assert_eq!(
            patch,
            json!({"spec": {"mode": "protect"}}),
            "{at}: then switched to protect, and nothing else"
        );
        merge_patch(&mut policy, &patch);
        assert_eq!(
            policy, example,
            "{at}: the manifest, in protect mode, is not {INSTALLED_EXAMPLE}"
        );
    }
    // Artifact Hub's text is the README's section (`make artifacthub`):
    // the same blocks, YAML compared as parsed.
    let parsed = |at: &str, text: &str| -> Vec<(String, Value)> {
        code_blocks(text)
            .into_iter()
            .map(|(info, body)| {
                let value = if info == "yaml" {
                    Value::Array(yaml_docs(at, &body))
                } else {
                    Value::String(body)
                };
                (info, value)
            })
            .collect()
    };
    assert_eq!(
        parsed("artifacthub-pkg.yml, install", &hub),
        parsed("README.md, Install", &readme),
        "artifacthub-pkg.yml's install text is not the README's Install section (make artifacthub)"
    );
}

/// A code comment that points to a section of docs/facts.md
/// (`docs/facts.md, "The journey of a workload"`) names one of its headings.
#[test]
fn every_pointer_to_the_facts_lands() {
    let facts = read("docs/facts.md");
    let known: BTreeSet<String> = headings(&facts).into_iter().collect();
    let mut missing = Vec::new();
    for dir in [
        "src",
        "testkit",
        "tests",
        "runner",
        "cli",
        "fuzz/src",
        "fuzz/harness",
        "harness",
    ] {
        let mut stack = vec![root().join(dir)];
        while let Some(path) = stack.pop() {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "target") {
                    continue;
                }
                stack.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            let mut rest = text.as_str();
            while let Some(at) = rest.find("facts.md, \"") {
                let after = &rest[at + "facts.md, \"".len()..];
                let heading = after.split('"').next().unwrap_or_default();
                if !known.contains(heading) {
                    missing.push(format!("{}: \"{heading}\"", path.display()));
                }
                rest = after;
            }
        }
    }
    assert!(
        missing.is_empty(),
        "pointers to docs/facts.md sections it does not have:\n{}",
        missing.join("\n")
    );
}

/// The README, the users' page, documents every setting and every mode.
#[test]
fn readme_documents_every_setting_and_mode() {
    let readme = read("README.md");
    for key in KEYS {
        assert!(
            readme.contains(&format!("| `{key}` |")),
            "README.md: the settings table has no row for `{key}`"
        );
    }
    for mode in Mode::ALL {
        assert!(
            readme.contains(&format!("`{}`", mode.as_str())),
            "README.md does not name the mode `{}`",
            mode.as_str()
        );
    }
}
