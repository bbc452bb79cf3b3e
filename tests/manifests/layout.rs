//! DEVELOPING.md's layout table is the policy crate's: it lists every file
//! of src/ once, and every import of a module of the crate (a `use` or a
//! path through `crate::`, `super::`, `self::` or a child module) points
//! down the table, from `lib.rs` to `json.rs`, so that a request flows one
//! way and no two modules import each other. Test modules may import
//! anything.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{files_under, read};
use crate::markdown;

/// The table's rows, top first: the src/ files of each (`modes/change.rs`).
fn layout_rows(developing: &str) -> Vec<Vec<String>> {
    let page = markdown::read(developing);
    let table = page
        .tables
        .iter()
        .find(|t| {
            t.first()
                .and_then(|h| h.first())
                .is_some_and(|c| c.text == "module")
        })
        .expect("DEVELOPING.md has no table whose first column is `module`");
    table[1..]
        .iter()
        .map(|row| {
            row.first()
                .map(|cell| {
                    cell.code
                        .iter()
                        .filter(|c| c.ends_with(".rs"))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

/// The module path of a file of src/ (`modes/mod.rs` is `modes`, `lib.rs`
/// the crate's root).
fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let mut path: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// A Rust source without its comments and its inline test module (from
/// `#[cfg(test)]` before `mod ... {` to the end of the file, where the
/// house keeps it).
fn module_code(source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut code = String::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
        if line.trim() == "#[cfg(test)]"
            && next.is_some_and(|n| {
                let n = n.trim_start();
                (n.starts_with("mod ") || n.starts_with("pub mod ")) && n.trim_end().ends_with('{')
            })
        {
            break;
        }
        let line = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The modules a file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn child_modules(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a use tree at `text` names, each as its segments: `a::{b, c::d}`
/// is `a::b` and `a::c::d`; it stops at the first character no path holds.
fn use_tree(text: &[char], at: &mut usize) -> Vec<Vec<String>> {
    let skip_space = |at: &mut usize| {
        while text.get(*at).is_some_and(|c| c.is_whitespace()) {
            *at += 1;
        }
    };
    let mut prefix = Vec::new();
    loop {
        skip_space(at);
        if text.get(*at) == Some(&'{') {
            *at += 1;
            let mut paths = Vec::new();
            loop {
                skip_space(at);
                match text.get(*at) {
                    Some('}') => {
                        *at += 1;
                        break;
                    }
                    Some(',') => *at += 1,
                    None => break,
                    _ => {
                        let before = *at;
                        for tail in use_tree(text, at) {
                            let mut path = prefix.clone();
                            path.extend(tail);
                            paths.push(path);
                        }
                        if *at == before {
                            *at += 1;
                        }
                    }
                }
            }
            return paths;
        }
        let start = *at;
        while text.get(*at).is_some_and(|c| is_ident(*c)) {
            *at += 1;
        }
        if *at == start {
            return vec![prefix];
        }
        prefix.push(text[start..*at].iter().collect());
        if text.get(*at) == Some(&':') && text.get(*at + 1) == Some(&':') {
            *at += 2;
        } else {
            return vec![prefix];
        }
    }
}

/// The absolute module paths a file's code names: `crate::`, `super::`,
/// `self::` and its child modules' paths, in `use` and in expressions.
fn named_paths(file: &str, code: &str) -> Vec<Vec<String>> {
    let here = module_of(file);
    let children = child_modules(code);
    let text: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let starts =
            is_ident(text[i]) && (i == 0 || !(is_ident(text[i - 1]) || text[i - 1] == ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut at = i;
        for path in use_tree(&text, &mut at) {
            // `pub(crate)`, `pub(super)`: a visibility, not a path.
            if path.len() < 2 {
                continue;
            }
            let first = &path[0];
            let mut absolute = match first.as_str() {
                "crate" => Vec::new(),
                "self" => here.clone(),
                "super" => here[..here.len().saturating_sub(1)].to_vec(),
                name if children.contains(name) => here.clone(),
                _ => continue,
            };
            let mut rest = &path[if children.contains(first.as_str()) {
                0
            } else {
                1
            }..];
            while rest.first().is_some_and(|s| s == "super") {
                absolute.pop();
                rest = &rest[1..];
            }
            absolute.extend(rest.iter().cloned());
            out.push(absolute);
        }
        i = at.max(i + 1);
    }
    out
}

/// Every edge file -> file of src/ that the module code makes. A path
/// inside an inline module (`mod native { .. }`) is read as the file's: a
/// `super::` there names a module one level too high, an import the test
/// then reports rather than misses.
fn imports(files: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<Vec<String>, &String> =
        files.iter().map(|f| (module_of(f), f)).collect();
    let mut edges = BTreeMap::new();
    for file in files {
        let code = module_code(&read(&format!("src/{file}")));
        let mut to = BTreeSet::new();
        for path in named_paths(file, &code) {
            // The file of the longest prefix that is a module of its own.
            let target = (0..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]))
                .copied();
            if let Some(target) = target.filter(|t| *t != file) {
                to.insert(target.clone());
            }
        }
        edges.insert(file.clone(), to);
    }
    edges
}

/// The circles of a graph: its strongly connected parts of more than one
/// file (Tarjan's algorithm).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        edges: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[v].min(s.low[w.as_str()]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w.as_str()) {
                let low = s.low[v].min(s.index[w.as_str()]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                part.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.out.push(part);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}

/// DEVELOPING.md is a guide to building, testing, changing and releasing:
/// measurements go to docs/performance.md, history to git.
const DEVELOPING_MAX_LINES: usize = 300;

#[test]
fn developing_md_stays_a_guide() {
    let lines = read("DEVELOPING.md").lines().count();
    assert!(
        lines <= DEVELOPING_MAX_LINES,
        "DEVELOPING.md has {lines} lines, more than {DEVELOPING_MAX_LINES}: \
         move measurements to docs/performance.md, history to git"
    );
}

/// The imports against the table that the crate still has, as (from, to):
/// the test fails on any other, and on one of these once it is gone, so
/// that the list only shrinks. None is left.
const KNOWN_AGAINST: [(&str, &str); 0] = [];

#[test]
fn the_layout_table_is_the_crate_and_every_import_points_down_it() {
    let rows = layout_rows(&read("DEVELOPING.md"));
    let mut rank = BTreeMap::new();
    let mut twice = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        for file in row {
            if rank.insert(file.clone(), i).is_some() {
                twice.push(file.clone());
            }
        }
    }
    let files: Vec<String> = files_under("src", &[".rs"])
        .into_iter()
        .map(|p| p.strip_prefix("src").unwrap().display().to_string())
        .collect();
    let listed: BTreeSet<&String> = rank.keys().collect();
    let present: BTreeSet<&String> = files.iter().collect();
    let unlisted: Vec<_> = present.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&present).collect();
    assert!(
        twice.is_empty() && unlisted.is_empty() && gone.is_empty(),
        "DEVELOPING.md's layout table: listed twice {twice:?}; files of src/ it leaves out {unlisted:?}; \
         files it names that src/ does not have {gone:?}"
    );

    let edges = imports(&files);
    let mut against = Vec::new();
    let mut known_seen = BTreeSet::new();
    for (from, targets) in &edges {
        for to in targets {
            if rank[to] > rank[from] {
                continue;
            }
            if KNOWN_AGAINST.contains(&(from.as_str(), to.as_str())) {
                known_seen.insert((from.as_str(), to.as_str()));
            } else {
                against.push(format!(
                    "{from} (row {}) imports {to} (row {})",
                    rank[from] + 1,
                    rank[to] + 1
                ));
            }
        }
    }
    let circles = circles(&edges);
    assert!(
        against.is_empty(),
        "imports that do not point down DEVELOPING.md's layout table:\n{}\nimport circles: {circles:?}",
        against.join("\n")
    );
    let gone: Vec<_> = KNOWN_AGAINST
        .iter()
        .filter(|edge| !known_seen.contains(*edge))
        .collect();
    assert!(
        gone.is_empty(),
        "known imports against the table that the crate no longer has: {gone:?}; take them out of KNOWN_AGAINST"
    );
}

// --- The reading of imports, on small sources ---------------------------------

#[test]
fn reads_use_trees_and_paths() {
    let code = module_code(concat!(
        "use crate::json::{Node, ShapeError};\n",
        "use crate::modes::{apply, target::Target};\n",
        "use super::restarts; // crate::names in a comment\n",
        "mod child;\n",
        "fn f() { crate::host::call(); child::g(); self::h(); }\n",
        "#[cfg(test)]\n",
        "mod tests {\n    use crate::policy::evaluate;\n}\n",
    ));
    let paths: Vec<String> = named_paths("modes/quit_endpoint.rs", &code)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "json::Node",
            "json::ShapeError",
            "modes::apply",
            "modes::target::Target",
            "modes::restarts",
            "host::call",
            "modes::quit_endpoint::child::g",
            "modes::quit_endpoint::h",
        ]
    );
}

#[test]
fn finds_circles() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"]),
        ("c", &["a", "d"]),
        ("d", &[]),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_owned(), to.iter().map(|t| t.to_string()).collect()))
    .collect();
    assert_eq!(circles(&edges), [["a", "b", "c"]]);
}
