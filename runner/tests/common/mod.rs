//! Shared by the tests that need the built module.

// Each test crate that includes this module uses only part of it.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use policy_runner::{workspace_root, Policy};

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()))
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// `policy.wasm`, checked to be newer than every source it is built from.
pub fn built_module() -> Policy {
    Policy::load(&built_module_path()).unwrap_or_else(|e| panic!("policy.wasm: {e}"))
}

/// The path of `policy.wasm`, after the same checks.
pub fn built_module_path() -> PathBuf {
    let root = workspace_root();
    let wasm = root.join("policy.wasm");
    assert!(
        wasm.is_file(),
        "{} is missing: run `make policy.wasm` (or `make wasm-tests`) first",
        wasm.display()
    );
    let built = mtime(&wasm);
    let mut sources = vec![root.join("Cargo.toml")];
    files_under(&root.join("src"), &mut sources);
    for source in &sources {
        assert!(
            mtime(source) <= built,
            "{} is older than {}: run `make policy.wasm` (or `make wasm-tests`)",
            wasm.display(),
            source.display()
        );
    }
    wasm
}
