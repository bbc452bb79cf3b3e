//! The tool where an operator first trips: a reader that goes away (`|
//! head`), an input with nothing to read, files a directory holds that are
//! not read, settings and flags given wrong (each refusal says what to
//! write instead, and what it offers works), the help, and the hints that
//! depend on the subcommand or the mode.

mod common;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Output, Stdio};

use common::*;
use serde_json::Value;

// ------------------------------------------------- a reader that goes away

/// A descriptor whose reader is gone: a write to it fails with EPIPE, as
/// stdout does under `| head` once head has exited (deterministically: the
/// other end is closed before the tool starts).
fn gone() -> Stdio {
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(ours);
    Stdio::from(OwnedFd::from(theirs))
}

/// The tool with `stdin`, its stdout (and with `both`, its stderr) going
/// nowhere.
fn run_into_gone(args: &[&str], stdin: &[u8], both: bool) -> Output {
    let mut child = tool()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(gone())
        .stderr(if both { gone() } else { Stdio::piped() })
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = input.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

#[test]
fn a_reader_that_goes_away_changes_neither_the_status_nor_stderr() {
    let chart = helm_stream();
    let broken = format!("{chart}---\nkind: [Job\n");
    let cluster = data("cluster.json");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["completion", "bash"], ""),
        (vec!["completion", "zsh"], ""),
        (vec!["completion", "fish"], ""),
        (vec!["--help"], ""),
        (vec!["scan", &cluster, "--now", NOW], ""),
        (vec!["scan", &cluster, "--now", NOW, "-o", "json"], ""),
        (
            vec!["scan", &cluster, "--now", NOW, "--fail-on", "stuck"],
            "",
        ),
        (vec!["render"], &chart),
        (vec!["render", "--check"], &chart),
        (vec!["render", "--diff"], &chart),
        (vec!["render"], &broken),
        (vec!["end-stuck", &cluster, "--now", NOW], ""),
    ];
    for (args, stdin) in &cases {
        let whole = run_with_stdin(args, stdin.as_bytes());
        assert!(
            !whole.stdout.is_empty(),
            "{args:?} writes something to cut short"
        );
        let cut = run_into_gone(args, stdin.as_bytes(), false);
        assert_eq!(
            cut.status.code(),
            whole.status.code(),
            "{args:?}: {}",
            stderr(&cut)
        );
        assert_eq!(stderr(&cut), stderr(&whole), "{args:?}");
        // stdout and stderr both gone (`2>&1 | head`).
        let both = run_into_gone(args, stdin.as_bytes(), true);
        assert_eq!(both.status.code(), whole.status.code(), "{args:?}");
    }
}

// ------------------------------------------------------ nothing to read

fn said(out: &Output) -> String {
    stderr(out).replace('\n', " ")
}

#[test]
fn no_input_at_all_is_an_error_unless_allowed() {
    for args in [
        &["render"][..],
        &["render", "--check"],
        &["render", "--diff"],
        &["scan", "-"],
        &["end-stuck", "-"],
    ] {
        let out = run_with_stdin(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let text = said(&out);
        assert!(
            text.contains("error: nothing read from -: 0 bytes"),
            "{args:?}: {text}"
        );
        assert!(text.contains("--allow-empty"), "{args:?}: {text}");
        let mut allowed = args.to_vec();
        allowed.push("--allow-empty");
        let out = run_with_stdin(&allowed, b"");
        assert_eq!(out.status.code(), Some(0), "{allowed:?}: {}", stderr(&out));
    }
    // A failed `helm template` (no pipefail) leaves only comments.
    let comments = "# Source: x\n---\n\n";
    let out = run_with_stdin(&["render"], comments.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    let expected = format!(
        "nothing but comments and blank lines in - ({} bytes)",
        comments.len()
    );
    assert!(said(&out).contains(&expected), "{}", said(&out));
}

#[test]
fn an_input_with_no_kubernetes_object_is_an_error_that_says_what_was_read() {
    let dir = tempdir("no-object");
    let notes = dir.join("notes.yaml");
    std::fs::write(&notes, "just some text\n---\nkey: value\n").unwrap();
    let notes = notes.display().to_string();
    for command in ["scan", "render", "end-stuck"] {
        let out = run(&[command, &notes]);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        let text = said(&out);
        assert!(
            text.contains(&format!(
                "no Kubernetes object in {notes} (30 bytes, 2 documents, none with apiVersion and kind)"
            )),
            "{command}: {text}"
        );
        let example = text.split('`').nth(1).unwrap_or_default().to_owned();
        assert!(example.contains("kubectl istio-job-sidecar"), "{text}");
        let out = run(&[command, &notes, "--allow-empty"]);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
    }
    // JSON that is no object of Kubernetes either.
    let out = run_with_stdin(&["scan", "-"], br#"{"name": "x"} [1, 2]"#);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(said(&out).contains("2 documents"), "{}", said(&out));
}

/// What a cluster answers when it has no Job, CronJob or Pod is an input:
/// a List, empty.
#[test]
fn an_empty_list_is_a_kubernetes_object() {
    for list in [
        r#"{"apiVersion": "v1", "items": [], "kind": "List", "metadata": {"resourceVersion": ""}}"#,
        "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
    ] {
        for command in ["scan", "render", "end-stuck"] {
            let out = run_with_stdin(&[command, "-"], list.as_bytes());
            assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
        }
    }
}

#[test]
fn files_a_directory_holds_and_that_are_not_read_are_listed() {
    let dir = tempdir("skipped");
    let job = std::fs::read_to_string(data("manifests/job-pi.yaml")).unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join("sub/job.yaml"), &job).unwrap();
    std::fs::write(dir.join("README.md"), "# manifests\n").unwrap();
    std::fs::write(dir.join("job.yaml.orig"), &job).unwrap();
    std::fs::write(dir.join(".draft.yaml"), &job).unwrap();
    std::fs::write(dir.join(".git/config"), "").unwrap();
    let root = dir.display().to_string();
    for command in ["scan", "render"] {
        let out = run(&[command, &root]);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
        let text = stderr(&out);
        for (file, why) in [
            (".draft.yaml", "hidden"),
            (".git", "hidden"),
            ("README.md", "not .yaml, .yml or .json"),
            ("job.yaml.orig", "not .yaml, .yml or .json"),
        ] {
            let line = format!("skipped: {} ({why})", dir.join(file).display());
            assert!(text.lines().any(|l| l == line), "{command}: {line}\n{text}");
        }
        assert!(!text.contains("sub/job.yaml"), "{text}");
    }
    // A directory with nothing to read says so.
    let out = run(&["scan", &tempdir("nothing").display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said(&out).contains("error: nothing in the directories given. Give manifests"),
        "{}",
        said(&out)
    );
    let empty = tempdir("skipped-empty");
    std::fs::write(empty.join("notes.txt"), "x").unwrap();
    let out = run(&["scan", &empty.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said(&out).contains("no .yaml, .yml or .json file in the directories given (1 other entry skipped, listed above)"),
        "{}",
        said(&out)
    );
}

// ---------------------------------- every refusal says what to write instead

/// The `--settings '...'` a message offers, which must work.
fn offered_settings(text: &str) -> String {
    let at = text
        .find("--settings '")
        .unwrap_or_else(|| panic!("no --settings example in: {text}"));
    let rest = &text[at + "--settings '".len()..];
    rest[..rest.find('\'').unwrap()].to_owned()
}

#[test]
fn bad_settings_are_refused_with_settings_that_work() {
    let manifests = data("manifests");
    for given in [
        "mode=quitEndpoint",
        "mode=quitEndpoint,workloadOverride=false",
        "nofile.yaml",
        "mode: native",
        "{mode: [",
    ] {
        let out = run(&["scan", &manifests, "--settings", given]);
        assert_eq!(out.status.code(), Some(2), "{given}");
        let text = said(&out);
        assert!(!text.contains("validate_settings"), "{given}: {text}");
        let offered = offered_settings(&text);
        let works = run(&["scan", &manifests, "--settings", &offered]);
        assert_eq!(
            works.status.code(),
            Some(0),
            "{given} -> {offered}: {}",
            stderr(&works)
        );
    }
    let out = run(&["scan", &manifests, "--settings", "mode=quitEndpoint"]);
    assert!(
        said(&out).contains("--settings: settings must be an object, got a string; write them as YAML or JSON: --settings 'mode: quitEndpoint'"),
        "{}",
        said(&out)
    );
    let out = run(&["render", "--settings", "nofile.yaml"]);
    let text = said(&out);
    assert!(
        text.contains("--settings nofile.yaml: no such file; --settings takes a file or the settings themselves as JSON or YAML"),
        "{text}"
    );
}

#[test]
fn other_refusals_offer_a_command_that_works() {
    let cluster = data("cluster.json");
    let out = run(&["scan", &cluster, "--now", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    let text = said(&out);
    let offered = text.split("e.g. --now ").nth(1).unwrap().trim().to_owned();
    let works = run(&["scan", &cluster, "--now", &offered]);
    assert_eq!(works.status.code(), Some(0), "{offered}");

    let out = run(&["scan", "deploy.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said(&out).contains(
            "deploy.yaml: no such file or directory; give files, directories or - for stdin, e.g."
        ),
        "{}",
        said(&out)
    );

    let policy = root().join("README.md").display().to_string();
    let out = run(&["scan", &cluster, "--policy", &policy]);
    assert_eq!(out.status.code(), Some(2));
    let text = said(&out);
    let offered = text
        .split("e.g. --policy ")
        .nth(1)
        .unwrap()
        .trim()
        .to_owned();
    let offered = root().join(offered).display().to_string();
    let works = run(&["scan", &cluster, "--now", NOW, "--policy", &offered]);
    assert_eq!(
        works.status.code(),
        Some(0),
        "{offered}: {}",
        stderr(&works)
    );
}

/// A kubectl that fails as one without a cluster does.
fn failing_kubectl() -> std::path::PathBuf {
    let dir = tempdir("failing-kubectl");
    let kubectl = dir.join("kubectl");
    std::fs::write(
        &kubectl,
        "#!/bin/sh\necho 'error: no configuration has been provided' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Without a cluster each subcommand says what it does without one.
#[test]
fn the_hint_without_a_cluster_is_the_subcommands_own() {
    let failing = failing_kubectl();
    for path in [Path::new("/nonexistent"), failing.as_path()] {
        let run_in = |command: &str| {
            tool()
                .arg(command)
                .env("PATH", path)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        };
        let scan = said(&run_in("scan"));
        assert!(
            scan.contains("give files, directories or - for stdin, e.g. `kubectl istio-job-sidecar scan deploy/`"),
            "{path:?}: {scan}"
        );
        let end = said(&run_in("end-stuck"));
        assert!(!end.contains("to scan"), "{path:?}: {end}");
        assert!(
            end.contains("give the Pods as `kubectl get pods -A -o json` prints them to print the commands, e.g. `kubectl istio-job-sidecar end-stuck pods.json`"),
            "{path:?}: {end}"
        );
    }
    // The example works.
    let out = run(&["end-stuck", &data("cluster.json"), "--now", NOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

// ---------------------------------------------------------- what it says

#[test]
fn the_help_says_to_start_with_scan_and_shows_three_examples() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert!(help.contains("Start with `scan`"), "{help}");
    let examples: Vec<&str> = help
        .split("Examples:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Examples: {help}"))
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("kubectl istio-job-sidecar"))
        .collect();
    assert_eq!(examples.len(), 3, "{examples:?}");
    for example in examples {
        // The tool's part of each line parses: its arguments and --help.
        let words: Vec<&str> = example
            .rsplit("kubectl istio-job-sidecar")
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        let mut args = words.clone();
        args.push("--help");
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{example}: {}", stderr(&out));
    }
}

#[test]
fn render_check_names_each_change_once() {
    let out = run_with_stdin(&["render", "--check"], helm_stream().as_bytes());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let both = format!("{}{}", stdout(&out), stderr(&out));
    for who in ["CronJob/report", "Job/pi"] {
        let lines = both.lines().filter(|l| l.contains(who)).count();
        assert_eq!(lines, 1, "{who}:\n{both}");
    }
}

#[test]
fn stuck_pods_are_counted_in_words_that_agree() {
    let out = run(&["end-stuck", &data("cluster.json"), "--now", NOW]);
    let text = stdout(&out);
    assert!(
        text.starts_with("3 Pods are stuck: their app containers ended while istio-proxy runs."),
        "{text}"
    );
}

/// quitEndpoint without the manifest wraps in every namespace; the report
/// says that the shipped manifests select fewer, and which to give.
#[test]
fn quit_endpoint_without_policy_points_to_the_shipped_manifests() {
    let manifests = data("manifests");
    let note = "quitEndpoint without --policy";
    let out = run(&[
        "scan",
        &manifests,
        "--settings",
        "mode: quitEndpoint",
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let notes = report["notes"].to_string();
    assert!(notes.contains(note), "{notes}");
    let offered = notes
        .split("e.g. --policy ")
        .nth(1)
        .unwrap()
        .trim_end_matches(['"', ']'])
        .to_owned();
    let policy = root().join(&offered).display().to_string();
    let out = run(&["scan", &manifests, "--policy", &policy, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{offered}: {}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(!report["notes"].to_string().contains(note));
    // nativeSidecar selects in the same way everywhere: no note.
    let out = run(&["scan", &manifests, "-o", "json"]);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(!report["notes"].to_string().contains(note));
}

/// scan and render pass the policy's warning on: exitOnJobCompletion is
/// applied, and upstream Istio ignores it.
#[test]
fn exit_on_job_completion_carries_the_policys_warning() {
    let warning = "exitOnJobCompletion: upstream Istio ignores it";
    let settings = "mode: exitOnJobCompletion";
    let out = run(&[
        "scan",
        &data("manifests"),
        "--settings",
        settings,
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut changed = 0;
    for ns in report["namespaces"].as_array().unwrap() {
        for o in ns["objects"].as_array().unwrap() {
            for e in o["evaluations"].as_array().unwrap() {
                if e["patch"].as_array().is_some_and(|p| !p.is_empty()) {
                    changed += 1;
                    assert!(e["warnings"].to_string().contains(warning), "{e}");
                }
            }
        }
    }
    assert!(changed > 0, "{report}");
    let out = run_with_stdin(
        &["render", "--settings", settings],
        helm_stream().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("Warning: Job/pi: istio-job-sidecar: {warning}")),
        "{}",
        stderr(&out)
    );
}
