//! `end-stuck` against a kubectl on PATH that records its arguments and
//! answers as kubectl does: `get pods -A -o json` with the cluster dump
//! (`tests/data/cluster.json`), `get pod -n NS NAME -o json` with the Pod
//! as it is now, `exec` as pilot-agent answers (nothing on stdout).

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

/// A directory with the fake `kubectl`, the Pods it answers with (by
/// `NS_NAME.json`) and the log of its calls (one line of arguments each).
struct Fake {
    dir: PathBuf,
}

const FAKE: &str = r#"#!/bin/sh
# Answers as kubectl does, for the calls end-stuck makes; logs each call.
here=$(dirname "$0")
printf '%s\n' "$*" >> "$here/calls.log"
# kubectl's global flags may come first.
case "$1" in --context=*) shift ;; esac
case "$1 $2" in
  "get pods")
    cat "$here/dump.json" ;;
  "get pod")
    # get pod -n NS NAME -o json
    file="$here/$4_$5.json"
    if [ -f "$file" ]; then cat "$file"
    else echo "Error from server (NotFound): pods \"$5\" not found" >&2; exit 1; fi ;;
  *)
    case "$*" in
      *" exec "*|exec*) [ -f "$here/exec-fails" ] && { echo 'error: unable to upgrade connection: pod does not exist' >&2; exit 1; }
            exit 0 ;;
    esac
    echo "fake kubectl: unexpected $*" >&2; exit 1 ;;
esac
"#;

impl Fake {
    fn new(name: &str) -> Fake {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempdir(name);
        let kubectl = dir.join("kubectl");
        std::fs::write(&kubectl, FAKE).unwrap();
        std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dump = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cluster.json"),
        )
        .unwrap();
        std::fs::write(dir.join("dump.json"), &dump).unwrap();
        // Each Pod, now, as the dump has it.
        let list: Value = serde_json::from_str(&dump).unwrap();
        for item in list["items"].as_array().unwrap() {
            if item["kind"] == "Pod" {
                let meta = &item["metadata"];
                let file = format!(
                    "{}_{}.json",
                    meta["namespace"].as_str().unwrap(),
                    meta["name"].as_str().unwrap()
                );
                std::fs::write(dir.join(file), item.to_string()).unwrap();
            }
        }
        Fake { dir }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let path = format!(
            "{}:{}",
            self.dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        tool().args(args).env("PATH", path).output().unwrap()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The Pod `namespace/name` as it is now.
    fn now_is(&self, namespace: &str, name: &str, pod: Option<Value>) {
        let file = self.dir.join(format!("{namespace}_{name}.json"));
        match pod {
            Some(pod) => std::fs::write(file, pod.to_string()).unwrap(),
            None => std::fs::remove_file(file).unwrap(),
        }
    }

    fn pod(&self, namespace: &str, name: &str) -> Value {
        let text =
            std::fs::read_to_string(self.dir.join(format!("{namespace}_{name}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

const QUIT: &str = "-c istio-proxy -- pilot-agent request --debug-port=15020 POST quitquitquit";

/// Without --yes every command is printed with the Pod's own namespace and
/// name, and nothing but the read of the Pods is run.
#[test]
fn without_yes_it_prints_and_runs_nothing() {
    let fake = Fake::new("end-dry");
    let out = fake.run(&["end-stuck", "--now", NOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for (ns, pod) in [
        ("batch", "nightly-q8w2d"),
        ("batch", "report-29420000-x7k2p"),
        ("default", "once"),
    ] {
        assert!(
            text.contains(&format!("  kubectl exec -n {ns} {pod} {QUIT}\n")),
            "{text}"
        );
    }
    assert!(text.starts_with("3 Pods are stuck"), "{text}");
    assert!(
        text.contains("Nothing was run: --yes runs these commands"),
        "{text}"
    );
    assert_eq!(
        fake.calls(),
        ["get pods -A -o json --request-timeout=5s"],
        "only the Pods are read"
    );
}

/// With --yes each Pod is read again and, if still stuck, ended through
/// kubectl exec with exactly the printed command; one no longer stuck, or
/// gone, is left alone.
#[test]
fn with_yes_it_ends_the_pods_still_stuck_and_leaves_the_others() {
    let fake = Fake::new("end-yes");
    // `once` ended on its own meanwhile; the report's Pod was deleted.
    let mut once = fake.pod("default", "once");
    once["status"]["phase"] = json!("Succeeded");
    fake.now_is("default", "once", Some(once));
    fake.now_is("batch", "report-29420000-x7k2p", None);
    let out = fake.run(&["end-stuck", "--now", NOW, "--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(
        text.contains("ended: pilot-agent was asked to quit"),
        "{text}"
    );
    assert!(
        text.contains("left alone: no longer stuck (its status no longer says stuck)"),
        "{text}"
    );
    assert!(
        text.contains("pods \"report-29420000-x7k2p\" not found"),
        "{text}"
    );
    assert_eq!(
        fake.calls(),
        [
            "get pods -A -o json --request-timeout=5s".to_owned(),
            "get pod -n batch nightly-q8w2d -o json".to_owned(),
            format!("exec -n batch nightly-q8w2d {QUIT}"),
            "get pod -n batch report-29420000-x7k2p -o json".to_owned(),
            "get pod -n default once -o json".to_owned(),
        ]
    );
}

/// `--context` goes to every command; a failing exec is an error (exit 2).
#[test]
fn the_context_is_passed_on_and_a_failure_is_an_error() {
    let fake = Fake::new("end-fail");
    std::fs::write(fake.dir.join("exec-fails"), "").unwrap();
    let out = fake.run(&[
        "end-stuck",
        &data("cluster.json"),
        "--now",
        NOW,
        "--yes",
        "--context",
        "prod",
        "-n",
        "default",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.starts_with("1 Pod is stuck"), "{text}");
    assert!(
        text.contains(&format!(
            "  kubectl --context=prod exec -n default once {QUIT}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "failed: kubectl failed (exit status: 1): error: unable to upgrade connection"
        ),
        "{text}"
    );
    assert_eq!(
        fake.calls(),
        [
            "--context=prod get pod -n default once -o json".to_owned(),
            format!("--context=prod exec -n default once {QUIT}"),
        ],
        "the dump is the input: the cluster is only asked about the Pod"
    );
}

/// A Pod's own status port (`status.sidecar.istio.io/port`) is the one
/// asked; none (`"0"`) is said, not guessed.
#[test]
fn the_pods_own_status_port() {
    let fake = Fake::new("end-port");
    let mut list: Value =
        serde_json::from_str(&std::fs::read_to_string(fake.dir.join("dump.json")).unwrap())
            .unwrap();
    for item in list["items"].as_array_mut().unwrap() {
        let name = item["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let port = match name.as_str() {
            "once" => "15030",
            "nightly-q8w2d" => "0",
            _ => continue,
        };
        item["metadata"]["annotations"]["status.sidecar.istio.io/port"] = json!(port);
    }
    std::fs::write(fake.dir.join("dump.json"), list.to_string()).unwrap();
    let out = fake.run(&["end-stuck", "--now", NOW]);
    let text = stdout(&out);
    assert!(text.contains("kubectl exec -n default once -c istio-proxy -- pilot-agent request --debug-port=15030 POST quitquitquit"), "{text}");
    assert!(
        text.contains("no status server (status.sidecar.istio.io/port \"0\")"),
        "{text}"
    );
    let table = stdout(&run_with_stdin(
        &["scan", "-", "--now", NOW],
        list.to_string().as_bytes(),
    ));
    assert!(table.contains("--debug-port=15030"), "{table}");
}
