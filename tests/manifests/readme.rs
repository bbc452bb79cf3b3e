//! README.md, the usage text `kwctl annotate -u` embeds: it fits where it
//! is read (`kwctl inspect` on a terminal, Artifact Hub), its links work
//! there, it documents every setting and mode, and it states no figure a
//! build moves.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

use istio_job_sidecar_policy::settings::{Mode, KEYS};

use crate::common::{read, root};
use crate::links::{markdown_pages, resolve_link};
use crate::markdown::{self, Cell};

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

/// A table's width as kwctl inspect draws it: the widest cell of each
/// column, and a border between and around them.
fn table_width(table: &[Vec<Cell>]) -> usize {
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let widest: usize = (0..columns)
        .map(|i| {
            table
                .iter()
                .filter_map(|row| row.get(i))
                .map(|c| c.source.replace(['`', '*'], "").chars().count())
                .max()
                .unwrap_or(0)
        })
        .sum();
    widest + columns + 1
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
    let page = markdown::read(&readme);
    for table in &page.tables {
        let width = table_width(table);
        assert!(
            width <= INSPECT_COLUMNS,
            "README.md: a table {width} columns wide (more than {INSPECT_COLUMNS}) wraps in kwctl inspect: {:?}",
            table[0].iter().map(|c| &c.text).collect::<Vec<_>>()
        );
    }
    for block in &page.code_blocks {
        for line in block.body.lines() {
            assert!(
                line.chars().count() <= INSPECT_COLUMNS,
                "README.md: a {} line wider than {INSPECT_COLUMNS} columns wraps in kwctl inspect: {line}",
                block.info
            );
        }
        // kwctl inspect drops the indentation of a code block in a list
        // item: its YAML would read wrong there.
        assert!(
            !(block.fenced && (block.in_list_item || block.indented)),
            "README.md: a fenced block indented (in a list item) loses its indentation in kwctl inspect: {:?}",
            block.body
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
    let targets = markdown::read(&read("README.md")).links;
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
        for target in markdown::read(&read(page.to_str().unwrap())).links {
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

/// The units of a figure a build moves: the module's size, a time, a ratio
/// of times.
const BUILD_UNITS: [&str; 12] = [
    "bytes", "B", "KiB", "MiB", "kB", "KB", "MB", "ms", "µs", "ns", "x", "×",
];

/// The figures of a text that carry one of [`BUILD_UNITS`] (`362 KiB`,
/// `0.84x`, `1 ms`), as written.
fn build_figures(text: &str) -> Vec<String> {
    let mut figures = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < chars.len()
            && (chars[end].is_ascii_digit()
                || (matches!(chars[end], ',' | '.')
                    && chars.get(end + 1).is_some_and(char::is_ascii_digit)))
        {
            end += 1;
        }
        let mut unit_at = end;
        if chars.get(unit_at) == Some(&' ') {
            unit_at += 1;
        }
        let mut unit_end = unit_at;
        while unit_end < chars.len() && (chars[unit_end].is_alphabetic()) {
            unit_end += 1;
        }
        let unit: String = chars[unit_at..unit_end].iter().collect();
        if BUILD_UNITS.contains(&unit.as_str()) {
            figures.push(chars[i..unit_end].iter().collect());
        }
        i = end.max(i + 1);
    }
    figures
}

/// The README travels inside the module and on Artifact Hub, where it
/// cannot follow a rebuild: it states no module size, time or ratio of
/// times (docs/performance.md keeps those, each with the command that
/// measured it). A code block's command (`--timeout=180s`) is no figure.
#[test]
fn readme_states_no_figure_a_build_moves() {
    let page = markdown::read(&read("README.md"));
    let figures: Vec<String> = page.prose.iter().flat_map(|t| build_figures(t)).collect();
    assert!(
        figures.is_empty(),
        "README.md states figures a build moves, which no test holds to the build: {figures:?}; \
         give them in docs/performance.md"
    );
}

#[test]
fn finds_the_figures_a_build_moves() {
    assert_eq!(
        build_figures(
            "0.84x to 0.97x of the floor; a 362 KiB module, 370,366 bytes; p50 about 1 ms"
        ),
        ["0.84x", "0.97x", "362 KiB", "370,366 bytes", "1 ms"]
    );
    assert!(
        build_figures("Kubernetes 1.33, Istio 1.24 to 1.30, port 15020, v0.2.0, 2 boxes")
            .is_empty()
    );
}
