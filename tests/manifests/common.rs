//! What every check reads: the repository's files, YAML as the API server
//! and kwctl see it, metadata.yml's annotations.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The single source of the version: Cargo.toml's `[package] version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A YAML file as JSON (every document of it), so that values compare the
/// way the API server and kwctl see them, whatever the YAML style.
pub fn yaml_docs(rel: &str, text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| {
            let value = serde_yaml::Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{rel} is not valid YAML: {e}"));
            serde_json::to_value(value).unwrap_or_else(|e| panic!("{rel}: {e}"))
        })
        .filter(|v| !v.is_null())
        .collect()
}

pub fn yaml_file(rel: &str) -> Value {
    let mut docs = yaml_docs(rel, &read(rel));
    assert_eq!(docs.len(), 1, "{rel} must hold exactly one YAML document");
    docs.remove(0)
}

pub fn metadata() -> Value {
    yaml_file("metadata.yml")
}

pub fn annotation<'m>(metadata: &'m Value, key: &str) -> &'m str {
    metadata["annotations"][key]
        .as_str()
        .unwrap_or_else(|| panic!("metadata.yml: annotation {key} missing or not a string"))
}

/// `name <email>`, the form kwctl parses `io.kubewarden.policy.author` in.
pub fn parse_author(author: &str) -> (String, String) {
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

pub fn keywords(metadata: &Value) -> Vec<String> {
    annotation(metadata, "io.artifacthub.keywords")
        .split(',')
        .map(|k| k.trim().to_owned())
        .collect()
}

/// The project's repository, as metadata.yml names its source.
pub fn repository() -> String {
    annotation(&metadata(), "io.kubewarden.policy.source")
        .trim_end_matches('/')
        .to_owned()
}

pub fn example_files() -> Vec<PathBuf> {
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

pub fn rel_name(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The files under `dir` (relative to the root) whose name ends in one of
/// `suffixes`, build output and hidden directories left out, sorted, as
/// paths relative to the root.
pub fn files_under(dir: &str, suffixes: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, suffixes: &[&str], out: &mut Vec<PathBuf>) {
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
                walk(&path, suffixes, out);
            } else if suffixes.iter().any(|s| name.ends_with(s)) {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join(dir), suffixes, &mut files);
    files
        .into_iter()
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect()
}
