//! The runner's own behaviour against tiny hand-written waPC guests (WAT):
//! traps, guest errors, host calls and bad answers must come back as errors
//! with a message, never as a panic of the runner.

use policy_runner::{Error, Policy};
use serde_json::json;

/// A waPC guest whose `__guest_call` runs `body` (WAT instructions) with
/// strings laid out in memory by `data` (offset, text) pairs.
fn guest(body: &str, data: &[(u32, &str)]) -> Policy {
    let segments: String = data
        .iter()
        .map(|(offset, text)| format!("(data (i32.const {offset}) {text:?})\n"))
        .collect();
    let wat = format!(
        r#"(module
          (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
          (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
          (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
          (import "wapc" "__host_call" (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
          (import "wapc" "__host_error_len" (func $host_error_len (result i32)))
          (import "wapc" "__host_error" (func $host_error (param i32)))
          (memory (export "memory") 1)
          {segments}
          (func (export "__guest_call") (param i32 i32) (result i32)
            {body}))"#
    );
    Policy::from_bytes(wat.as_bytes()).expect("the test guest loads")
}

const ACCEPT: &str = r#"{"accepted":true,"message":null,"code":null,"mutated_object":null,"audit_annotations":null,"warnings":null}"#;

#[test]
fn a_trap_is_an_error_with_the_engine_message() {
    let policy = guest("unreachable", &[]);
    match policy.call("validate", b"{}") {
        Err(Error::Call { function, message }) => {
            assert_eq!(function, "validate");
            assert!(message.contains("unreachable"), "{message}");
        }
        other => panic!("expected a call error, got {other:?}"),
    }
    // The instance is still usable after a trap: the next call errs again, cleanly.
    assert!(policy.call("validate", b"{}").is_err());
}

#[test]
fn a_guest_error_carries_the_guest_message() {
    let policy = guest(
        "(call $guest_error (i32.const 0) (i32.const 13)) (i32.const 0)",
        &[(0, "settings: bad")],
    );
    let err = policy.check_settings(&json!({})).expect_err("guest error");
    assert!(err.to_string().contains("settings: bad"), "{err}");
}

#[test]
fn unknown_host_capabilities_are_refused_to_the_guest() {
    // Ask for kubewarden/kubernetes/list_resources_by_namespace; on failure,
    // hand the host's error message back as the guest error.
    let body = r#"
        (if (i32.eqz (call $host_call (i32.const 0) (i32.const 10) (i32.const 16) (i32.const 10)
                                      (i32.const 32) (i32.const 27) (i32.const 64) (i32.const 2)))
          (then
            (call $host_error (i32.const 1024))
            (call $guest_error (i32.const 1024) (call $host_error_len))
            (return (i32.const 0))))
        (i32.const 0)"#;
    let policy = guest(
        body,
        &[
            (0, "kubewarden"),
            (16, "kubernetes"),
            (32, "list_resources_by_namespace"),
            (64, "{}"),
        ],
    );
    let err = policy.call("validate", b"{}").expect_err("refused");
    assert!(
        err.to_string().contains("not available in policy-runner"),
        "{err}"
    );
}

#[test]
fn log_host_calls_are_collected_and_answers_parsed() {
    let log = r#"{"level":"info","message":"hello from the guest"}"#;
    let body = format!(
        r#"(drop (call $host_call (i32.const 0) (i32.const 10) (i32.const 16) (i32.const 7)
                                 (i32.const 32) (i32.const 3) (i32.const 64) (i32.const {})))
           (call $guest_response (i32.const 512) (i32.const {}))
           (i32.const 1)"#,
        log.len(),
        ACCEPT.len()
    );
    let policy = guest(
        &body,
        &[
            (0, "kubewarden"),
            (16, "tracing"),
            (32, "log"),
            (64, log),
            (512, ACCEPT),
        ],
    );
    let request = json!({"uid": "abc", "operation": "CREATE", "object": {"kind": "Pod"}});
    let evaluation = policy.validate(&request, &json!({})).expect("validate");
    assert!(evaluation.allowed());
    assert!(evaluation.patch.is_none());
    assert_eq!(evaluation.logs.len(), 1);
    assert_eq!(evaluation.logs[0].message, "hello from the guest");
    let response = evaluation.admission_response().expect("response");
    assert_eq!(response.uid, "abc");
}

#[test]
fn an_answer_that_is_not_json_is_a_bad_response() {
    let body = "(call $guest_response (i32.const 0) (i32.const 8)) (i32.const 1)";
    let policy = guest(body, &[(0, "not json")]);
    match policy.validate(&json!({"object": {}}), &json!({})) {
        Err(Error::BadResponse { message, .. }) => {
            assert!(message.contains("not json"), "{message}")
        }
        other => panic!("expected a bad response, got {other:?}"),
    }
}

#[test]
fn a_module_that_does_not_compile_is_a_load_error() {
    match Policy::from_bytes(b"\0asm garbage") {
        Err(Error::Load(message)) => assert!(!message.is_empty()),
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn a_guest_that_loops_is_interrupted_like_policy_server_does() {
    let policy = guest("(loop $forever (br $forever)) (i32.const 0)", &[]);
    let started = std::time::Instant::now();
    let err = policy.call("validate", b"{}").expect_err("interrupted");
    assert!(err.to_string().contains("deadline exceeded"), "{err}");
    // Interrupted at the engine's deadline (2 s, or what
    // POLICY_RUNNER_TIMEOUT_SECONDS sets), not left to hang: the bound
    // leaves a loaded machine its room past the deadline.
    let bound = policy_runner::host::call_deadline() + std::time::Duration::from_secs(8);
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
}
