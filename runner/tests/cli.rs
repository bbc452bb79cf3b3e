//! The `policy-runner` binary as a user (or e2e script) runs it: kwctl's
//! flags in, a kwctl-shaped AdmissionResponse out, errors on stderr with a
//! non-zero exit.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use common::built_module_path;
use policy_runner::workspace_root;
use serde_json::{json, Value};

fn runner(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_policy-runner"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("policy-runner starts")
}

fn classic_job() -> String {
    workspace_root()
        .join("runner/demo/job-kube-injected-classic.json")
        .display()
        .to_string()
}

fn response(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "policy-runner failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout.lines().next().unwrap_or_default();
    serde_json::from_str(first).unwrap_or_else(|e| panic!("not a JSON response ({e}): {stdout}"))
}

#[test]
fn run_prints_a_kwctl_shaped_response_whose_patch_applies() {
    let wasm = built_module_path().display().to_string();
    let request = classic_job();
    let settings = r#"{"mode":"nativeSidecar"}"#;
    let out = runner(&[
        "run",
        "--wasm",
        &wasm,
        "--request-path",
        &request,
        "--settings-json",
        settings,
    ]);
    let response = response(&out);
    assert_eq!(response["uid"], "7c1d3a9e-2b6f-4c8e-9f10-c1a551c00001");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    assert!(response.get("warnings").is_some() && response.get("auditAnnotations").is_some());

    let patch = BASE64
        .decode(response["patch"].as_str().expect("a base64 patch"))
        .expect("valid base64");
    let patch: json_patch::Patch = serde_json::from_slice(&patch).expect("a JSONPatch");
    let text = std::fs::read_to_string(Path::new(&request)).expect("request file");
    let mut object = serde_json::from_str::<Value>(&text).expect("JSON")["object"].clone();
    json_patch::patch(&mut object, &patch).expect("the patch applies");
    let init = object["spec"]["template"]["spec"]["initContainers"]
        .as_array()
        .expect("initContainers");
    assert!(
        init.iter()
            .any(|c| c["name"] == "istio-proxy" && c["restartPolicy"] == "Always"),
        "istio-proxy is a native sidecar after the patch: {init:?}"
    );

    // kwctl's positional module argument works too, and --summary adds the readable part.
    let out = runner(&[
        "run",
        &wasm,
        "-r",
        &request,
        "--settings-json",
        settings,
        "--summary",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The move (out of containers, into initContainers), the status, the
    // record and the annotation that keeps a re-injection native.
    assert!(stdout.contains("patch: 5 operation(s)"), "{stdout}");
    assert!(
        stdout.contains("mutated pod template (/spec/template):"),
        "{stdout}"
    );
}

#[test]
fn an_admission_review_is_accepted_as_input() {
    let wasm = built_module_path().display().to_string();
    let text = std::fs::read_to_string(classic_job()).expect("request file");
    let request: Value = serde_json::from_str(&text).expect("JSON");
    let review =
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
    let dir = std::env::temp_dir().join(format!("policy-runner-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("review.json");
    std::fs::write(&path, review.to_string()).expect("write review");
    let out = runner(&[
        "run",
        "--wasm",
        &wasm,
        "--request-path",
        &path.display().to_string(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        response(&out)["uid"],
        "7c1d3a9e-2b6f-4c8e-9f10-c1a551c00001"
    );
}

#[test]
fn invalid_settings_fail_with_the_module_message() {
    let wasm = built_module_path().display().to_string();
    let out = runner(&[
        "run",
        "--wasm",
        &wasm,
        "--request-path",
        &classic_job(),
        "--settings-json",
        r#"{"mode":"bogus"}"#,
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("settings rejected by the module: mode"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_module_is_an_error_not_a_panic() {
    let out = runner(&[
        "run",
        "--wasm",
        "/nonexistent/policy.wasm",
        "--request-path",
        &classic_job(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: cannot read /nonexistent/policy.wasm"),
        "{stderr}"
    );
}

#[test]
fn demo_runs_every_sample() {
    let wasm = built_module_path().display().to_string();
    let out = runner(&["demo", "--wasm", &wasm]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "=== CronJob",
        "=== Job `pi`",
        "--- mode nativeSidecar",
        "--- mode exitOnJobCompletion",
    ] {
        assert!(stdout.contains(needle), "{needle} missing from:\n{stdout}");
    }
}
