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

use istio_job_sidecar_policy::settings::{Mode, Settings, KEYS};
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
    assert_eq!(meta["contextAwareResources"], json!([]));
    assert_eq!(
        meta["hostCapabilities"],
        json!([]),
        "the policy calls no host capability (kwctl >= 1.35 annotate checks the module against this list)"
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
    let install = pkg["install"].as_str().unwrap_or("");
    assert!(
        install.contains(&format!("kwctl pull {image}"))
            && install.contains(&format!("registry://{image}")),
        "install text names another module than {image} {hint}"
    );

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

/// The targets of the inline links `[text](target)` of a Markdown text.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
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

/// Every relative link of every Markdown page names a file or directory
/// that exists and, with `#anchor`, a heading of that page: moving a
/// section of the README, or renaming a heading, fails here until every
/// link to it follows.
#[test]
fn every_relative_link_of_the_documents_lands() {
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
        let dir = page.parent().unwrap_or(Path::new(""));
        for target in link_targets(&text) {
            if target.is_empty()
                || target.contains("://")
                || target.starts_with("mailto:")
                || target.starts_with('<')
            {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                dir.join(path)
            };
            let full = root().join(&file);
            if !full.exists() {
                broken.push(format!(
                    "{}: {target}: no {}",
                    page.display(),
                    file.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                let is_markdown = full.extension().is_some_and(|e| e == "md");
                let known =
                    is_markdown && anchors(&fs::read_to_string(&full).unwrap()).contains(anchor);
                if !known {
                    broken.push(format!(
                        "{}: {target}: no heading #{anchor} in {}",
                        page.display(),
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// A code comment that points to a section of docs/facts.md
/// (`docs/facts.md, "The journey of a workload"`) names one of its headings.
#[test]
fn every_pointer_to_the_facts_lands() {
    let facts = read("docs/facts.md");
    let known: BTreeSet<String> = headings(&facts).into_iter().collect();
    let mut missing = Vec::new();
    for dir in [
        "src", "testkit", "tests", "runner", "cli", "fuzz/src", "harness",
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
