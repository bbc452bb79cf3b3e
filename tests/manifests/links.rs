//! The documents: every link of the Markdown pages lands (a file, a
//! directory, a heading), every reference link is defined, and every
//! pointer of a code comment to a section of docs/facts.md names one.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{files_under, read, repository, root, VERSION};
use crate::markdown;

/// The Markdown pages of the repository (not build output, corpora or
/// hidden directories), as paths relative to the root.
pub fn markdown_pages() -> Vec<PathBuf> {
    files_under("", &[".md"])
}

/// Where a link of `page` leads inside the tree: `Ok(None)` for a page
/// elsewhere (another site, a mail address, the project's releases), the
/// file or directory for a relative link and for an absolute link into the
/// project's repository at the tag of this version (`<repository>/blob/v<version>/<path>`
/// or `/tree/...`), which must exist, as must the heading an `#anchor`
/// names. An absolute link into the repository at another tag or branch
/// is an error: the usage text travels with one version of the module.
pub fn resolve_link(page: &Path, target: &str) -> Result<Option<PathBuf>, String> {
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
        if !(is_markdown
            && markdown::read(&fs::read_to_string(&full).unwrap())
                .anchors()
                .contains(anchor))
        {
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
        let read = markdown::read(&read(page.to_str().unwrap()));
        for target in &read.links {
            if let Err(why) = resolve_link(page, target) {
                broken.push(format!("{}: {target}: {why}", page.display()));
            }
        }
        for name in &read.undefined_references {
            broken.push(format!(
                "{}: [{name}] is used, never defined",
                page.display()
            ));
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// A code comment that points to a section of docs/facts.md
/// (`docs/facts.md, "The journey of a workload"`) names one of its headings.
#[test]
fn every_pointer_to_the_facts_lands() {
    let facts = read("docs/facts.md");
    let known: BTreeSet<String> = markdown::read(&facts)
        .headings
        .into_iter()
        .map(|h| h.text)
        .collect();
    let mut missing = Vec::new();
    // Wherever code or a script lives: the crates, the tests, the harness,
    // the bats files.
    for path in files_under("", &[".rs", ".py", ".sh", ".bats", ".bash"]) {
        let Ok(text) = fs::read_to_string(root().join(&path)) else {
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
    assert!(
        missing.is_empty(),
        "pointers to docs/facts.md sections it does not have:\n{}",
        missing.join("\n")
    );
}
