//! The tool in the pipelines the README recommends, on inputs as kubectl
//! 1.37, kustomize and Helm write them (`harness/cli_tests/make_inputs.py`): one
//! test per way it used to break them. Each output is read back by kubectl
//! itself (go-yaml v2), PyYAML (YAML 1.1) and serde_yaml (YAML 1.2), which
//! must all read the policy's edit and nothing else.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// What `scan -o json` says the policy's patch of each object's CREATE is.
fn patches(input: &str, settings: &str) -> Vec<Value> {
    let out = run_with_stdin(
        &["scan", "-", "--settings", settings, "-o", "json"],
        input.as_bytes(),
    );
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    report["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|ns| ns["objects"].as_array().unwrap().clone())
        .map(|o| o["evaluations"][0]["patch"].clone())
        .collect()
}

/// Every reader reads `output` as `input` with the policy's patches
/// applied, document by document: the edit means the same to all of them,
/// and nothing else changed for any of them.
fn every_reader_agrees(input: &str, output: &str, patches: &[Value]) {
    let mut readers: Vec<(&str, Vec<Value>, Vec<Value>)> =
        vec![("YAML 1.2", yaml12_reads(input), yaml12_reads(output))];
    if let (Some(a), Some(b)) = (pyyaml_reads(input), pyyaml_reads(output)) {
        readers.push(("PyYAML", a, b));
    }
    if let (Some(a), Some(b)) = (kubectl_reads(input), kubectl_reads(output)) {
        readers.push(("kubectl", a, b));
    }
    for (reader, before, after) in readers {
        assert_eq!(before.len(), after.len(), "{reader}: documents");
        let changed: Vec<&Value> = patches.iter().filter(|p| p != &&json!([])).collect();
        let mut k = 0;
        for (b, a) in before.iter().zip(&after) {
            let diff = serde_json::to_value(json_patch::diff(b, a)).unwrap();
            if diff == json!([]) {
                continue;
            }
            assert_eq!(
                Some(&&diff),
                changed.get(k),
                "{reader} reads another change than the policy's"
            );
            k += 1;
        }
        assert_eq!(k, changed.len(), "{reader}: every change read");
    }
}

// ------------------------------------------------------------ several files

/// `render job.yaml secret.yaml`, the Job's file without a trailing line
/// break, and `render dir/`: one stream with every object, as kubectl reads it.
#[test]
fn several_files_and_a_directory_make_one_stream_of_every_object() {
    let dir = tempdir("files");
    let job = read("tests/data/manifests/job-pi.yaml");
    std::fs::write(dir.join("job.yaml"), job.trim_end()).unwrap();
    std::fs::write(dir.join("secret.yaml"), read("tests/data/secret-db.yaml")).unwrap();
    let (job_file, secret_file) = (dir.join("job.yaml"), dir.join("secret.yaml"));
    let out = run(&[
        "render",
        job_file.to_str().unwrap(),
        secret_file.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stream = stdout(&out);
    let kinds: Vec<String> = yaml12_reads(&stream)
        .iter()
        .map(|v| {
            format!(
                "{}/{}",
                v["kind"].as_str().unwrap(),
                v["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(kinds, ["Job/pi", "Secret/db"]);
    if let Some(read) = kubectl_reads(&stream) {
        assert_eq!(read.len(), 2, "kubectl reads both objects");
    }
    // A directory: its six files, six documents.
    let out = run(&["render", &data("manifests"), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let documents = yaml12_reads(&stdout(&out));
    assert_eq!(documents.len(), 6, "{}", stdout(&out));
    if let Some(read) = kubectl_reads(&stdout(&out)) {
        assert_eq!(read.len(), 6, "kubectl reads the six objects");
    }
    // A JSON file first, then YAML: the stream stays YAML (kubectl reads a
    // stream that starts with `{` as JSON only).
    let json_file = dir.join("job.json");
    let value: Value = serde_yaml::from_str(&job).unwrap();
    std::fs::write(&json_file, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let out = run(&[
        "render",
        json_file.to_str().unwrap(),
        secret_file.to_str().unwrap(),
        "-q",
    ]);
    assert!(stdout(&out).starts_with("---\n{"), "{}", stdout(&out));
    if let Some(read) = kubectl_reads(&stdout(&out)) {
        assert_eq!(read.len(), 2, "kubectl reads both objects");
    }
}

// ---------------------------------------------------------------- quoting

/// kustomize quotes `on`, `yes`, `n`, `1_000`, `0o17`, `~`...: render's
/// output means the same to kubectl, PyYAML and YAML 1.2, and the quotes
/// stay as kustomize wrote them.
#[test]
fn kustomize_quoted_values_mean_the_same_to_every_reader() {
    let input = read("tests/data/kustomize-quoted.yaml");
    for settings in ["{}", "mode: quitEndpoint", "mode: exitOnJobCompletion"] {
        let out = run_with_stdin(&["render", "--settings", settings, "-q"], input.as_bytes());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let output = stdout(&out);
        assert_ne!(output, input, "{settings}: the policy changes the Job");
        for kept in [
            "value: \"on\"",
            "value: \"yes\"",
            "value: \"n\"",
            "value: \"1_000\"",
            "value: \"0o17\"",
            "value: \"~\"",
            "example.com/tier: \"no\"",
        ] {
            assert!(output.contains(kept), "{settings}: {kept} lost:\n{output}");
        }
        every_reader_agrees(&input, &output, &patches(&input, settings));
    }
}

// ------------------------------------------------------ byte-order mark

/// A file saved with a UTF-8 byte-order mark is read as kubectl reads it.
#[test]
fn a_byte_order_mark_is_read_as_kubectl_reads_it() {
    let input = format!("\u{FEFF}{}", read("tests/data/manifests/job-pi.yaml"));
    let out = run_with_stdin(&["scan", "-", "-o", "json"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["totals"]["jobs"], 1);
    let out = run_with_stdin(&["render", "-q"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let output = stdout(&out);
    assert!(
        output.starts_with('\u{FEFF}'),
        "the mark stays where it was"
    );
    every_reader_agrees(&input, &output, &patches(&input, "{}"));
    // kubectl's JSON saved with a mark.
    let json = format!("\u{FEFF}{}", read("tests/data/cluster.json"));
    let out = run_with_stdin(&["scan", "-", "--now", NOW, "-o", "json"], json.as_bytes());
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["totals"]["objects"], 13, "{}", stderr(&out));
    let out = run_with_stdin(&["render", "-q"], json.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("\u{FEFF}{"));
    // Two such files: one stream, the second mark dropped.
    let dir = tempdir("bom");
    std::fs::write(dir.join("a.yaml"), &input).unwrap();
    std::fs::write(
        dir.join("b.yaml"),
        format!("\u{FEFF}{}", read("tests/data/secret-db.yaml")),
    )
    .unwrap();
    let out = run(&["render", dir.to_str().unwrap(), "-q"]);
    assert_eq!(stdout(&out).matches('\u{FEFF}').count(), 1);
    assert_eq!(yaml12_reads(&stdout(&out)).len(), 2);
}

// ------------------------------------------------------------ merge keys

const MERGED: &str = "# Two containers of one template, the second merged from the first.
apiVersion: batch/v1
kind: Job
metadata:
  name: merged
spec:
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - &base
        name: prepare
        image: registry.example.com/report:1.4
        command: [sh, -c, echo prepare]
      containers:
      - <<: *base
        name: report
        command:
        - /app/report
        - --all
";

/// A container brought by a merge key is seen, as kubectl expands it.
#[test]
fn merge_keys_are_expanded_as_kubectl_expands_them() {
    let out = run_with_stdin(
        &[
            "scan",
            "-",
            "--settings",
            "mode: quitEndpoint",
            "-o",
            "json",
        ],
        MERGED.as_bytes(),
    );
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let evaluation = &report["namespaces"][0]["objects"][0]["evaluations"][0];
    assert_eq!(
        evaluation["summary"], "quitEndpoint (wrap): 2 changes",
        "{evaluation}"
    );
    assert_eq!(evaluation["warnings"], json!([]));
    if let Some(read) = kubectl_reads(MERGED) {
        let containers = &read[0]["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "registry.example.com/report:1.4");
    }
    let out = run_with_stdin(
        &["render", "--settings", "mode: quitEndpoint", "-q"],
        MERGED.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let output = stdout(&out);
    assert!(
        output.contains("      - &base\n"),
        "the anchor stays: {output}"
    );
    if let (Some(before), Some(after)) = (kubectl_reads(MERGED), kubectl_reads(&output)) {
        let diff = serde_json::to_value(json_patch::diff(&before[0], &after[0])).unwrap();
        assert_eq!(diff, patches(MERGED, "mode: quitEndpoint")[0]);
    }
}

// ------------------------------------------------- long-running, finished

/// A Deployment's Pod between a crash and its restart is not stuck: the
/// kubelet restarts it (restartPolicy Always).
#[test]
fn a_long_running_pod_between_crash_and_restart_is_not_stuck() {
    let out = run(&[
        "scan",
        &data("history.json"),
        "--now",
        NOW,
        "--fail-on",
        "stuck",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["totals"]["stuck"], 0);
    assert_eq!(report["totals"]["longRunningPods"], 1);
    let table = stdout(&run(&["scan", &data("history.json"), "--now", NOW]));
    assert!(table.contains("STUCK NOW: no Pod"), "{table}");
}

/// A CronJob's finished Jobs make no more Pods: their "next Pods" is no
/// change, and `--fail-on change` does not fail on CronJob history.
#[test]
fn a_finished_jobs_next_pods_are_no_change() {
    let text = read("tests/data/history.json");
    let mut list: Value = serde_json::from_str(&text).unwrap();
    let out = run(&["scan", &data("history.json"), "--now", NOW, "-o", "json"]);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let jobs: Vec<(String, bool, usize)> = report["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|ns| ns["objects"].as_array().unwrap().clone())
        .filter(|o| o["kind"] == "Job")
        .map(|o| {
            let finished = o["finished"].as_bool().unwrap();
            assert_eq!(o["wouldChange"], !finished, "{}", o["name"]);
            (
                o["name"].as_str().unwrap().to_owned(),
                finished,
                o["evaluations"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        jobs,
        [
            ("digest-29420114".into(), true, 1),
            ("digest-29420115".into(), true, 1),
            ("digest-29420116".into(), false, 2)
        ]
    );
    // Only the history: nothing would change.
    list["items"]
        .as_array_mut()
        .unwrap()
        .retain(|o| o["kind"] != "Job" || o["status"]["conditions"].is_array());
    let out = run_with_stdin(
        &["scan", "-", "--now", NOW, "--fail-on", "change"],
        list.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("next Pods  none: the Job has finished"),
        "{}",
        stdout(&out)
    );
}

// --------------------------------------------- render --policy it cannot evaluate

/// `render --policy` evaluates the manifest's CEL matchConditions as the
/// API server does (an unlabelled Job never reaches
/// `quit-endpoint-labelled-pods.yaml`, a labelled one does), and leaves
/// alone, saying why, an object whose request it cannot decide: a condition
/// it cannot evaluate, a namespaceSelector on labels the input lacks.
#[test]
fn render_applies_a_policy_only_where_the_cluster_would() {
    let job = read("tests/data/manifests/job-pi.yaml");
    let labelled_pods = root().join("examples/quit-endpoint-labelled-pods.yaml");
    let labelled_pods = labelled_pods.to_str().unwrap();
    let out = run_with_stdin(&["render", "--policy", labelled_pods], job.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), job, "written back unchanged");
    assert!(
        stderr(&out).contains("Job/pi: not sent to the policy: matchCondition jobs-labelled-for-injection-or-kube-injected is false"),
        "{}",
        stderr(&out)
    );
    // Labelled for injection, in a namespace without the istio-injection label.
    let labelled = job.replacen(
        "  template:\n    metadata: {}\n",
        "  template:\n    metadata:\n      labels:\n        sidecar.istio.io/inject: \"true\"\n",
        1,
    );
    assert_ne!(labelled, job);
    let stream =
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n---\n{labelled}");
    let out = run_with_stdin(&["render", "--policy", labelled_pods], stream.as_bytes());
    assert!(
        stderr(&out).contains("Job/pi: quitEndpoint (wrap)"),
        "{}",
        stderr(&out)
    );
    // Without the Namespace the selector cannot be applied: left alone.
    let out = run_with_stdin(&["render", "--policy", labelled_pods], labelled.as_bytes());
    assert_eq!(stdout(&out), labelled);
    assert!(
        stderr(&out).contains("needs the labels of namespace default"),
        "{}",
        stderr(&out)
    );

    let dir = tempdir("policy");
    let policy = |extra: &str| {
        let file = dir.join(format!("policy-{}.yaml", extra.len()));
        std::fs::write(
            &file,
            format!(
                "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nmetadata: {{name: istio-job-sidecar}}\n\
                 spec:\n  mutating: true\n  settings: {{}}\n  rules:\n  - {{apiGroups: [batch], apiVersions: [v1], resources: [jobs], operations: [CREATE]}}\n{extra}"
            ),
        )
        .unwrap();
        file.display().to_string()
    };
    let unknowable = policy("  matchConditions:\n  - name: allowed\n    expression: authorizer.requestResource.check('create').allowed()\n");
    let out = run_with_stdin(&["render", "--policy", &unknowable], job.as_bytes());
    assert_eq!(stdout(&out), job);
    assert!(
        stderr(&out).contains("matchCondition allowed cannot be evaluated here"),
        "{}",
        stderr(&out)
    );
    let selective = policy("  namespaceSelector:\n    matchExpressions:\n    - {key: istio-injection, operator: In, values: [enabled]}\n");
    let namespaced = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n  labels: {{istio-injection: enabled}}\n---\n{job}"
    );
    let out = run_with_stdin(
        &["render", "--policy", &selective, "-q"],
        namespaced.as_bytes(),
    );
    assert_ne!(
        stdout(&out),
        namespaced,
        "the namespace's labels are in the stream: applied"
    );
}

// ------------------------------------------------------------- smaller ones

/// Piped output keeps every name whole (no `~`), as `-o wide` does.
#[test]
fn piped_output_and_wide_keep_every_name_whole() {
    let mut list: Value = serde_json::from_str(&read("tests/data/cluster.json")).unwrap();
    let long = "nightly-reconciliation-of-every-ledger-q8w2d";
    for item in list["items"].as_array_mut().unwrap() {
        if item["metadata"]["name"] == "nightly-q8w2d" {
            item["metadata"]["name"] = json!(long);
        }
    }
    for args in [
        vec!["scan", "-", "--now", NOW],
        vec!["scan", "-", "--now", NOW, "-o", "wide"],
    ] {
        let out = run_with_stdin(&args, list.to_string().as_bytes());
        let text = stdout(&out);
        assert!(
            text.contains(&format!("batch      {long}  Job/nightly")),
            "{text}"
        );
        assert!(
            text.contains(&format!("kubectl exec -n batch {long} -c istio-proxy")),
            "{text}"
        );
    }
}

/// The fix hint names the stuck Pods themselves, not `NS POD`.
#[test]
fn the_hint_names_each_stuck_pod() {
    let text = stdout(&run(&["scan", &data("cluster.json"), "--now", NOW]));
    assert!(!text.contains("NS POD"), "{text}");
    for (ns, pod) in [
        ("batch", "nightly-q8w2d"),
        ("batch", "report-29420000-x7k2p"),
        ("default", "once"),
    ] {
        assert!(
            text.contains(&format!("kubectl exec -n {ns} {pod} -c istio-proxy -- \\")),
            "{text}"
        );
    }
}

/// `cat dump.json | kubectl istio-job-sidecar scan` reads stdin, without `-`
/// and without asking a cluster.
#[test]
fn piped_stdin_is_the_input_without_a_dash() {
    let text = read("tests/data/cluster.json");
    let out = tool()
        .args(["scan", "--now", NOW, "-o", "json"])
        .env("PATH", "/nonexistent")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sources"], json!(["-"]));
    assert_eq!(report["totals"]["stuck"], 3);
}

/// No INPUT, nothing on stdin and no kubectl on PATH: scan and end-stuck
/// say what to give instead of reading a cluster.
#[test]
fn no_input_and_no_kubectl_says_what_to_give() {
    for command in ["scan", "end-stuck"] {
        let out = tool()
            .arg(command)
            .env("PATH", "/nonexistent")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(
                "no INPUT given and kubectl is not on PATH: put kubectl on PATH to read the cluster, or give "
            ),
            "{command}: {stderr}"
        );
    }
}

/// `-n` keeps a file's objects of that namespace only, as `kubectl get -n`.
#[test]
fn the_namespace_flag_filters_files() {
    let out = run(&[
        "scan",
        &data("cluster.json"),
        "--now",
        NOW,
        "-n",
        "batch",
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = report["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ns| ns["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["batch"]);
    let table = stdout(&run(&[
        "scan",
        &data("cluster.json"),
        "--now",
        NOW,
        "-n",
        "batch",
    ]));
    assert!(
        table.contains("7 objects of other namespaces left out"),
        "{table}"
    );
}

/// "4 Namespaces", "2 Deployments": counts of other kinds read as English.
#[test]
fn other_kinds_are_counted_in_plural() {
    let namespace =
        |n: &str| format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {n}\n---\n");
    let mut stream: String = ["a", "b", "c", "d"].iter().map(|n| namespace(n)).collect();
    let deployment = read("tests/data/manifests/deployment-web.yaml");
    stream.push_str(&format!("{deployment}---\n{deployment}---\n"));
    stream.push_str(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: deny}\n",
    );
    let text = stdout(&run_with_stdin(&["scan", "-"], stream.as_bytes()));
    assert!(
        text.contains("ignored: 2 Deployments, 4 Namespaces, 1\nNetworkPolicy"),
        "{text}"
    );
}

/// Markdown says a Job has finished, as the table does.
#[test]
fn markdown_says_finished() {
    let text = stdout(&run(&[
        "scan",
        &data("cluster.json"),
        "--now",
        NOW,
        "-o",
        "markdown",
    ]));
    assert!(text.contains("| Job/pi (finished) |"), "{text}");
}

/// Objects read from a cluster (`kubectl get -o yaml`): a stored Job's
/// template and a stored Pod's containers are immutable, so render writes
/// them back unchanged and says so; a stored CronJob's template is not.
#[test]
fn render_leaves_stored_jobs_and_pods_and_says_so() {
    let out = run(&["render", &data("cluster.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("Warning: Job/report-29420000: written back unchanged: read from a cluster"),
        "{said}"
    );
    assert!(
        said.contains("Warning: Pod/once: written back unchanged"),
        "{said}"
    );
    let before: Value = serde_json::from_str(&read("tests/data/cluster.json")).unwrap();
    let after: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for (b, a) in before["items"]
        .as_array()
        .unwrap()
        .iter()
        .zip(after["items"].as_array().unwrap())
    {
        if b["kind"] != "CronJob" {
            assert_eq!(a, b, "{}", b["metadata"]["name"]);
        }
    }
}

// --------------------------------------------------------- --check, --diff

/// `render --check` and `render --diff` for a GitOps review: exit 1 and a
/// summary, or a unified diff per object that `patch` applies to give
/// render's own output; exit 0 once rendered.
#[test]
fn render_check_and_diff_for_ci() {
    let dir = tempdir("review");
    let file = dir.join("kustomized.yaml");
    std::fs::write(&file, read("tests/data/kustomized.yaml")).unwrap();
    let path = file.to_str().unwrap();
    let check = run(&["render", path, "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let summary = stdout(&check);
    assert!(summary.contains("Job/pi ("), "{summary}");
    assert!(
        summary.contains("render --check: 2 of 2 Jobs, CronJobs and Pods would change"),
        "{summary}"
    );
    let diff = run(&["render", path, "--diff"]);
    assert_eq!(diff.status.code(), Some(1));
    let diff = stdout(&diff);
    assert_eq!(
        diff.matches("\n@@ ").count() + usize::from(diff.starts_with("@@ ")),
        2,
        "{diff}"
    );
    assert!(
        diff.contains(" @@ Job/pi: nativeSidecar (annotation): 2 changes\n"),
        "{diff}"
    );
    let rendered = stdout(&run(&["render", path, "-q"]));
    let patched = std::process::Command::new("patch")
        .args(["-s", "-o", "-", path])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(diff.as_bytes())?;
            child.wait_with_output()
        });
    match patched {
        Ok(out) => assert_eq!(String::from_utf8_lossy(&out.stdout), rendered, "{diff}"),
        Err(_) => missing("patch", "apt-get install patch"),
    }
    std::fs::write(&file, &rendered).unwrap();
    let again = run(&["render", path, "--check", "--diff"]);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
}

// ------------------------------------------------------------ completion

#[test]
fn shell_completion_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completion", shell]);
        assert_eq!(out.status.code(), Some(0));
        let script = stdout(&out);
        for word in ["scan", "render", "end-stuck", "fail-on"] {
            assert!(script.contains(word), "{shell}: {word}");
        }
    }
    assert_ne!(run(&["completion", "powershell-9"]).status.code(), Some(0));
}
