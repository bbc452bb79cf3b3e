//! What the quitEndpoint wrapper's script must do, checked by running it,
//! not by its text: the oracle (`quit_expectation`) expects the README's
//! wrapper with `SCRIPT` in the script's place, and the script the policy
//! wrote is held to its behaviour here (`judged`), once per text in a run.
//!
//! Run as the kubelet runs the wrapped command (`/bin/sh -c SCRIPT NAME URL
//! WHEN ARGV...`), with stdin, against a local HTTP server standing in for
//! pilot-agent, the script must:
//! - run ARGV itself, every element intact (spaces, quotes, `$`, globs),
//!   with the container's stdin, and exit with its exit code;
//! - POST the URL's path to the URL's host and port once ARGV has ended:
//!   after any exit with `always`, after a success only with `on-success`.
//!
//! It needs `/bin/sh` and one HTTP client the script can use (curl, wget,
//! busybox, bash, perl or python); `tests/quit_wrapper.rs` runs it with
//! each client and each shell. Without one, the check is skipped
//! (`REQUIRE_TOOLS=1`: failed).

use policy_testkit::journey::QUIT_NAME;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What the oracle expects in the script's place of a wrapped command.
pub const SCRIPT: &str = "<the quitEndpoint script, held to what it does by quit_script::check>";

/// The script's verdict, once per text.
pub fn check(script: &str) -> Result<(), String> {
    static SEEN: OnceLock<Mutex<HashMap<String, Result<(), String>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(verdict) = seen.lock().unwrap().get(script) {
        return verdict.clone();
    }
    let verdict = behaves(script);
    seen.lock()
        .unwrap()
        .insert(script.to_owned(), verdict.clone());
    verdict
}

/// `containers` with the script of each command the oracle expects the
/// policy to have wrapped (`SCRIPT` in `expected`'s command) checked and
/// replaced by `SCRIPT`, so that the rest is compared with the oracle's
/// expectation as it is. A wrapper the oracle expects kept as it was (an
/// earlier version's, left alone) is compared as it is.
pub fn judged(
    containers: &[serde_json::Value],
    expected: &[serde_json::Value],
) -> Result<Vec<serde_json::Value>, String> {
    let mut out = containers.to_vec();
    for (c, want) in out.iter_mut().zip(expected) {
        if want["command"][2] != SCRIPT {
            continue;
        }
        let command = &c["command"];
        let ours = command[0] == "/bin/sh" && command[1] == "-c" && command[3] == QUIT_NAME;
        if let (true, Some(script)) = (ours, command[2].as_str()) {
            check(script).map_err(|e| format!("the quitEndpoint script: {e}"))?;
            c["command"][2] = SCRIPT.into();
        }
    }
    Ok(out)
}

/// One run of the wrapper: its exit code, its stdout, and the request
/// lines the server got, each with whether ARGV had ended by then.
struct Run {
    code: Option<i32>,
    stdout: String,
    requests: Vec<(String, bool)>,
}

fn behaves(script: &str) -> Result<(), String> {
    if !std::path::Path::new("/bin/sh").exists() {
        policy_testkit::tool_missing("no /bin/sh to run the quitEndpoint script");
        return Ok(());
    }
    let clients = [
        "curl", "wget", "busybox", "bash", "perl", "python3", "python",
    ];
    if !clients.iter().any(|c| on_path(c)) {
        policy_testkit::tool_missing(format!(
            "none of {clients:?} to POST with: the quitEndpoint script is not run"
        ));
        return Ok(());
    }
    let argv = ["a b", "'q\"", "$HOME", "*", "$(x)", ""];
    // (when, the program's exit code, whether it must POST)
    for (when, code, posts) in [
        ("always", 0, true),
        ("always", 3, true),
        ("on-success", 0, true),
        ("on-success", 5, false),
    ] {
        let run = run(script, when, code, &argv)?;
        let what = format!("with {when}, a program that exits {code}");
        let echoed: String = argv.iter().map(|a| format!("[{a}]")).collect();
        let want_out = format!("{echoed}line from stdin");
        if run.stdout != want_out {
            return Err(format!(
                "{what}: the program did not get its argv and stdin intact: printed {:?}, expected {want_out:?}",
                run.stdout
            ));
        }
        if run.code != Some(code) {
            return Err(format!("{what}: exited {:?}", run.code));
        }
        match (&run.requests[..], posts) {
            ([], false) => {}
            ([(line, ended)], true) => {
                if line != "POST /quit/it?now=1 HTTP/1.0" && line != "POST /quit/it?now=1 HTTP/1.1"
                {
                    return Err(format!("{what}: asked {line:?}, not POST /quit/it?now=1"));
                }
                if !ended {
                    return Err(format!("{what}: POSTed before the program ended"));
                }
            }
            (requests, _) => {
                return Err(format!(
                    "{what}: {} request(s) {requests:?}, expected {}",
                    requests.len(),
                    if posts { "one POST" } else { "none" }
                ))
            }
        }
    }
    Ok(())
}

fn run(script: &str, when: &str, code: i32, argv: &[&str]) -> Result<Run, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let dir = scratch()?;
    let ended = dir.join("ended");
    let requests = Arc::new(Mutex::new(Vec::new()));
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let (seen, marker) = (Arc::clone(&requests), ended.clone());
    let stop = Arc::new(Mutex::new(false));
    let stopped = Arc::clone(&stop);
    let server = std::thread::spawn(move || {
        while !*stopped.lock().unwrap() {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let was_over = marker.exists();
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => break,
                        }
                    }
                    let text = String::from_utf8_lossy(&head);
                    let line = text.lines().next().unwrap_or_default().to_owned();
                    seen.lock().unwrap().push((line, was_over));
                    let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    // The program: prints each argument in brackets, then a line of its
    // stdin, waits a little (a POST before it ends is seen), marks its end.
    let program = format!(
        "for a in \"$@\"; do printf '[%s]' \"$a\"; done; read l; printf '%s' \"$l\"; sleep 0.2; : > '{}'; exit {code}",
        ended.display()
    );
    let url = format!("http://127.0.0.1:{port}/quit/it?now=1");
    let mut child = Command::new("/bin/sh")
        .args(["-c", script, QUIT_NAME, &url, when])
        .args(["/bin/sh", "-c", &program, "program"])
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("/bin/sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"line from stdin\n");
    }
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    *stop.lock().unwrap() = true;
    let _ = server.join();
    let _ = std::fs::remove_dir_all(&dir);
    let Some(status) = status else {
        return Err(format!("with {when}: still running after 20 s"));
    };
    let requests = requests.lock().unwrap().clone();
    Ok(Run {
        code: status.code(),
        stdout,
        requests,
    })
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// A directory of its own for one run.
fn scratch() -> Result<PathBuf, String> {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("quit-script-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

#[test]
fn the_oracle_judges_what_a_script_does() {
    // A script that runs the program but never POSTs.
    let silent = "shift 2; exec \"$@\"";
    assert!(check(silent).is_err());
    // One that POSTs before the program has ended.
    let early = "u=$1; w=$2; shift 2; curl -q -sf -m 2 -d '' \"$u\" >/dev/null 2>&1; exec \"$@\"";
    if on_path("curl") {
        let verdict = check(early);
        assert!(
            verdict.as_ref().is_err_and(|e| e.contains("before")),
            "{verdict:?}"
        );
    }
}
