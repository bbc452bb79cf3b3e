//! metadata.yml, what `kwctl annotate` embeds: the contract's rules, what
//! kwctl needs, and one version everywhere (Cargo.toml, metadata.yml,
//! artifacthub-pkg.yml, CHANGELOG.md, the Makefile's push).

use serde_json::json;

use crate::common::{annotation, keywords, metadata, parse_author, read, yaml_file, VERSION};

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
