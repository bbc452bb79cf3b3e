//! The quitEndpoint wrapper, executed for real: the command comes from the
//! policy itself (`validate` on a Job request), and runs under dash (as
//! /bin/sh on Debian) and, where installed, busybox `sh` and bash as `sh`,
//! against an HTTP listener on 127.0.0.1 that stands in for pilot-agent.
//!
//! Every program writes `done` into its work directory right before it
//! exits; the listener notes whether that file existed when the quit request
//! arrived, so a request sent too early is caught. Each run has a deadline.
//!
//! Each client the wrapper can POST with (curl, wget, a bare busybox, bash,
//! perl, python3 and python) is run alone: `PATH` holds `sh` and that client,
//! the machine's own binaries, and nothing else, as in an image that has
//! only them.
//!
//! Needs: dash; bash, busybox, curl, wget, perl, python3 (the Debian
//! packages bash, busybox, curl, wget, perl-base, python3-minimal) and
//! shellcheck for the rest. A case whose tool is absent is skipped with a
//! `SKIPPED:` line on stderr; with `REQUIRE_TOOLS=1` (set by `.ci/run`) it
//! fails instead, so CI cannot skip silently.

use rstest::rstest;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(40);

// ---------------------------------------------------------------- the policy

/// The argv Kubernetes would run for the app container after the policy
/// wrapped it (command followed by args), `annotations` on the template.
fn wrapped_argv(
    command: &[&str],
    args: Option<&[&str]>,
    restart: &str,
    own_restart: Option<&Value>,
    url: &str,
    annotations: Value,
) -> Vec<String> {
    let mut container = json!({"name": "app", "image": "app:1", "command": command});
    if let Some(args) = args {
        container["args"] = json!(args);
    }
    if let Some(Value::Object(own)) = own_restart {
        for (k, v) in own {
            container[k] = v.clone();
        }
    }
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": restart, "containers": [container]}
        }}
    });
    // A container's own restart fields are read as every kubelet 1.35 or
    // later reads them: the Node list says every kubelet is one.
    let payload = json!({
        "request": {
            "uid": "u", "operation": "CREATE", "object": job,
            "kind": {"group": "batch", "version": "v1", "kind": "Job"}
        },
        "settings": {"mode": "quitEndpoint", "quitUrl": url, "nodeVersionCheck": own_restart.is_some()}
    });
    let nodes = istio_job_sidecar_policy::native_gate::node_list(&[("a", "v1.35.0")]);
    let host: istio_job_sidecar_policy::host::NativeHost =
        std::rc::Rc::new(move |_: &str, _: &str, _: &str, _: &[u8]| Ok(nodes.clone()));
    let before = istio_job_sidecar_policy::host::set_native(Some(host));
    let response = istio_job_sidecar_policy::validate(&serde_json::to_vec(&payload).unwrap())
        .expect("validate never errors");
    istio_job_sidecar_policy::host::set_native(before);
    let response: Value = serde_json::from_slice(&response).unwrap();
    let c = &response["mutated_object"]["spec"]["template"]["spec"]["containers"][0];
    let mut argv: Vec<String> = serde_json::from_value(c["command"].clone())
        .unwrap_or_else(|_| panic!("not wrapped: {response}"));
    if let Some(args) = c["args"].as_array() {
        argv.extend(args.iter().map(|a| a.as_str().unwrap().to_owned()));
    }
    assert_eq!(argv[0], "/bin/sh");
    argv
}

// ----------------------------------------------------------------- the tools

/// The first `name` on `PATH` that is a program of its own (an ELF file),
/// not a script that finds one elsewhere (pyenv's shims): a `PATH` that
/// holds only a link to it must still run it.
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            let mut magic = [0u8; 4];
            std::fs::File::open(p)
                .and_then(|mut f| f.read_exact(&mut magic))
                .is_ok_and(|()| magic == *b"\x7fELF")
        })
}

/// A tool is missing: fail where `REQUIRE_TOOLS=1`, else say so. Written
/// to stderr itself, which the test harness does not capture, so the line
/// shows without `--nocapture`.
#[track_caller]
fn skip(what: &str) {
    policy_testkit::tool_missing(what);
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
}

fn dash() -> PathBuf {
    find("dash").expect("dash must be installed: it is /bin/sh on Debian and Ubuntu")
}

fn busybox() -> Option<PathBuf> {
    let found = find("busybox");
    if found.is_none() {
        skip("busybox not installed, its variants are skipped (apt-get install busybox)");
    }
    found
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shell {
    Dash,
    Busybox,
    /// bash invoked as `sh` (POSIX mode): /bin/sh of Fedora, UBI, CentOS.
    Bash,
}

/// The shells to run with: dash always, busybox where installed.
fn shells() -> Vec<Shell> {
    let mut shells = vec![Shell::Dash];
    if busybox().is_some() {
        shells.push(Shell::Busybox);
    }
    match find("bash") {
        Some(_) => shells.push(Shell::Bash),
        None => skip("bash not installed, its variants are skipped"),
    }
    shells
}

/// What the wrapper finds to POST with: one client, or none.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Client {
    Curl,
    GnuWget,
    /// busybox's applet, a link named `wget` (Alpine).
    BusyboxWget,
    /// A busybox binary without applet links: `busybox wget`.
    BareBusybox,
    /// bash beside another `sh`, with `/dev/tcp`.
    Bash,
    /// perl with its core `IO::Socket::INET`.
    Perl,
    Python3,
    /// python3's binary under the name `python`.
    Python,
    None,
}

const CLIENTS: [Client; 8] = [
    Client::Curl,
    Client::GnuWget,
    Client::BusyboxWget,
    Client::BareBusybox,
    Client::Bash,
    Client::Perl,
    Client::Python3,
    Client::Python,
];

impl Client {
    /// The link's name in the run's `PATH` and the binary it points to;
    /// `None` when the binary is not installed.
    fn binary(self) -> Option<(&'static str, PathBuf)> {
        let (name, program) = match self {
            Client::Curl => ("curl", "curl"),
            Client::GnuWget => ("wget", "wget"),
            Client::BusyboxWget => ("wget", "busybox"),
            Client::BareBusybox => ("busybox", "busybox"),
            Client::Bash => ("bash", "bash"),
            Client::Perl => ("perl", "perl"),
            Client::Python3 => ("python3", "python3"),
            Client::Python => ("python", "python3"),
            Client::None => return None,
        };
        Some((name, find(program)?))
    }
}

/// What else the run's `PATH` holds beside `sh` and the client.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tools {
    /// `cat` and `sleep` from the shell's world, as most images have.
    Usual,
    /// Nothing: the client alone.
    Bare,
}

/// A directory that is the whole PATH of a run: `sh`, the `tools`, the
/// client, and nothing else. `None` when one of them is not installed.
fn bin_dir(dir: &Path, shell: Shell, tools: Tools, client: Client) -> Option<PathBuf> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = |target: PathBuf, name: &str| {
        std::os::unix::fs::symlink(target, bin.join(name)).unwrap();
    };
    let usual = if tools == Tools::Usual {
        &["cat", "sleep"][..]
    } else {
        &[]
    };
    match shell {
        Shell::Dash | Shell::Bash => {
            let sh = if shell == Shell::Dash {
                dash()
            } else {
                find("bash")?
            };
            link(sh, "sh");
            for tool in usual {
                link(find(tool).expect(tool), tool);
            }
        }
        Shell::Busybox => {
            for tool in std::iter::once(&"sh").chain(usual) {
                link(busybox()?, tool);
            }
        }
    }
    if client != Client::None {
        let (name, binary) = client.binary()?;
        link(binary, name);
    }
    Some(bin)
}

// ------------------------------------------------------ the pretend pilot-agent

#[derive(Clone, Copy, Debug, PartialEq)]
enum Agent {
    /// 200 to every request.
    Answers,
    /// 503 to the first request, 200 after.
    FailsOnce,
    /// Accepts connections and never answers.
    Hangs,
    /// Nothing listens on the port.
    Gone,
}

#[derive(Debug, Clone)]
struct Hit {
    method: String,
    path: String,
    /// The request's `Content-Length`, if it has one.
    content_length: Option<String>,
    program_done: bool,
}

struct Listener {
    port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Listener {
    fn start(agent: Agent, done: PathBuf) -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        if agent == Agent::Gone {
            drop(listener);
            return Listener {
                port,
                hits,
                stop,
                thread: None,
            };
        }
        listener.set_nonblocking(true).unwrap();
        let (h, s) = (hits.clone(), stop.clone());
        let thread = thread::spawn(move || {
            let mut held = Vec::new();
            let started = Instant::now();
            while !s.load(Ordering::SeqCst) && started.elapsed() < DEADLINE {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let done_now = done.exists();
                        if let Some(hit) = serve(stream, agent, &h, done_now, &mut held) {
                            h.lock().unwrap().push(hit);
                        }
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Listener {
            port,
            hits,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/quitquitquit", self.port)
    }

    fn finish(mut self) -> Vec<Hit> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let hits = self.hits.lock().unwrap().clone();
        hits
    }
}

/// Read one request head and answer it as `agent` does.
fn serve(
    mut stream: TcpStream,
    agent: Agent,
    hits: &Mutex<Vec<Hit>>,
    program_done: bool,
    held: &mut Vec<TcpStream>,
) -> Option<Hit> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let hit = Hit {
        method: first.next().unwrap_or_default().to_owned(),
        path: first.next().unwrap_or_default().to_owned(),
        content_length: lines.find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().to_owned())
        }),
        program_done,
    };
    let status = match agent {
        Agent::FailsOnce if hits.lock().unwrap().is_empty() => "503 Service Unavailable",
        Agent::Hangs => {
            held.push(stream);
            return Some(hit);
        }
        _ => "200 OK",
    };
    let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK");
    let _ = stream.write_all(reply.as_bytes());
    Some(hit)
}

// ------------------------------------------------------------------- a run

struct Outcome {
    code: Option<i32>,
    hits: Vec<Hit>,
    stderr: String,
    elapsed: Duration,
    dir: PathBuf,
}

struct Run<'r> {
    shell: Shell,
    tools: Tools,
    client: Client,
    agent: Agent,
    restart: &'r str,
    /// The app container's own `restartPolicy` and `restartPolicyRules`.
    own_restart: Option<Value>,
    /// The program's original command and args; `{dir}` is replaced by its
    /// work directory.
    command: &'r [&'r str],
    args: Option<&'r [&'r str]>,
    stdin: Option<&'r [u8]>,
    /// Sent to the wrapper once the program wrote `started`.
    signal: Option<&'r str>,
    /// The listener's port is the pod's `status.sidecar.istio.io/port`,
    /// and `quitUrl` names a port where nothing listens.
    status_port: bool,
    /// The wrapper's `when` argument instead of the one the policy wrote.
    when: Option<String>,
}

impl Default for Run<'_> {
    fn default() -> Self {
        Run {
            shell: Shell::Dash,
            tools: Tools::Usual,
            client: Client::Curl,
            agent: Agent::Answers,
            restart: "Never",
            own_restart: None,
            command: &[],
            args: None,
            stdin: None,
            signal: None,
            status_port: false,
            when: None,
        }
    }
}

static RUNS: AtomicUsize = AtomicUsize::new(0);

fn work_dir() -> PathBuf {
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("quit-wrapper-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Run<'_> {
    /// Runs and checks the wrapper's exit code; `None` when a tool this run
    /// needs is not installed.
    fn exits(&self, code: i32) -> Option<Outcome> {
        let out = self.go()?;
        let (shell, client) = (self.shell, self.client);
        let signal = self.signal.unwrap_or("no signal");
        assert_eq!(
            out.code,
            Some(code),
            "{shell:?} {client:?} {signal}: {}",
            out.stderr
        );
        Some(out)
    }

    /// Runs, and checks the exit code and one quit request after the
    /// program; a missing tool skips the case.
    fn quits_once(&self, code: i32) {
        let Some(out) = self.exits(code) else {
            let (shell, client) = (self.shell, self.client);
            skip(&format!(
                "{shell:?} {client:?}: not installed, the case is skipped"
            ));
            return;
        };
        out.assert_quit_once_after();
        out.clean();
    }

    /// Runs against an agent that cannot be reached: the program's exit
    /// code, `tries` requests, within `bound`, and the message.
    fn gives_up(&self, code: i32, tries: usize, bound: Duration) {
        let client = self.client;
        let Some(out) = self.exits(code) else {
            skip(&format!("{client:?} not installed, this case is skipped"));
            return;
        };
        assert_eq!(out.hits.len(), tries, "{client:?}: one hit per try");
        assert!(out.elapsed < bound, "{client:?}: {:?}", out.elapsed);
        assert!(out.stderr.contains("could not POST"), "{}", out.stderr);
        out.clean();
    }

    /// `None` when a tool this run needs is not installed.
    fn go(&self) -> Option<Outcome> {
        let dir = work_dir();
        let bin = bin_dir(&dir, self.shell, self.tools, self.client)?;
        let listener = Listener::start(self.agent, dir.join("done"));
        let fill = |s: &&str| s.replace("{dir}", dir.to_str().unwrap());
        let command: Vec<String> = self.command.iter().map(fill).collect();
        let args: Option<Vec<String>> = self.args.map(|a| a.iter().map(fill).collect());
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let args: Option<Vec<&str>> = args
            .as_ref()
            .map(|a| a.iter().map(String::as_str).collect());
        let (url, annotations) = if self.status_port {
            let port = listener.port.to_string();
            let closed = Listener::start(Agent::Gone, PathBuf::new()).url();
            (closed, json!({"status.sidecar.istio.io/port": port}))
        } else {
            (listener.url(), json!({}))
        };
        let mut argv = wrapped_argv(
            &command,
            args.as_deref(),
            self.restart,
            self.own_restart.as_ref(),
            &url,
            annotations,
        );
        if let Some(when) = &self.when {
            argv[5].clone_from(when);
        }

        let mut cmd = match self.shell {
            Shell::Dash => Command::new(dash()),
            Shell::Busybox => {
                let mut c = Command::new(busybox()?);
                c.arg("sh");
                c
            }
            Shell::Bash => {
                let mut c = Command::new(find("bash")?);
                c.arg0("sh");
                c
            }
        };
        // A container's first process starts with every signal at its
        // default. A test run from a background job of a non-interactive
        // shell (a CI script's `cmd &`) inherits SIGINT and SIGQUIT ignored,
        // one run under `nohup` SIGHUP, and a shell cannot trap a signal
        // ignored on entry (POSIX): put every signal the wrapper forwards
        // back, or those cases would test the CI runner.
        // SAFETY: signal() is async-signal-safe; nothing else runs here.
        unsafe {
            cmd.pre_exec(|| {
                for signal in [
                    libc::SIGTERM,
                    libc::SIGINT,
                    libc::SIGHUP,
                    libc::SIGQUIT,
                    libc::SIGUSR1,
                    libc::SIGUSR2,
                ] {
                    if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let stderr_path = dir.join("stderr");
        cmd.args(&argv[1..])
            .env_clear()
            .env("PATH", &bin)
            .env("HOME", "/home-of-the-test")
            // A proxy in the environment must not catch the quit request.
            .env("http_proxy", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .current_dir(&dir)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        let started = Instant::now();
        let mut child = cmd.spawn().unwrap();
        if let Some(input) = self.stdin {
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(input).unwrap();
        }
        let mut signalled = self.signal.is_none();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > DEADLINE {
                let _ = child.kill();
                let files: Vec<String> = std::fs::read_dir(&dir)
                    .map(|d| {
                        d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                            .collect()
                    })
                    .unwrap_or_default();
                panic!(
                    "{:?} {:?}: the wrapper did not end within {DEADLINE:?}; files: {files:?}",
                    self.shell, self.signal
                );
            }
            if !signalled && dir.join("started").exists() {
                let pid = child.id().to_string();
                let sig = format!("-{}", self.signal.unwrap());
                let sent = Command::new(dash())
                    .args(["-c", "kill \"$1\" \"$2\"", "kill", &sig, &pid])
                    .status()
                    .unwrap();
                assert!(sent.success());
                signalled = true;
            }
            thread::sleep(Duration::from_millis(10));
        };
        let elapsed = started.elapsed();
        let hits = listener.finish();
        Some(Outcome {
            code: status.code(),
            hits,
            stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
            elapsed,
            dir,
        })
    }
}

impl Outcome {
    /// Exactly one quit request, a POST to /quitquitquit, after the program.
    fn assert_quit_once_after(&self) {
        assert_eq!(
            self.hits.len(),
            1,
            "{:?}\nstderr: {}",
            self.hits,
            self.stderr
        );
        self.assert_hits_after();
    }

    fn assert_hits_after(&self) {
        for hit in &self.hits {
            assert_eq!(hit.method, "POST", "{hit:?}");
            assert_eq!(hit.path, "/quitquitquit", "{hit:?}");
            assert_eq!(hit.content_length.as_deref(), Some("0"), "{hit:?}");
            assert!(hit.program_done, "quit request before the program ended");
        }
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(name)).unwrap_or_default()
    }

    fn clean(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A program that waits a little (a quit request sent before it ended would
/// be seen), writes `done`, then exits with `$1`.
const EXITS_WITH: &str = "sleep 0.3; : > \"$0/done\"; exit \"$1\"";

// ------------------------------------------------------------------- tests

#[test]
fn exit_codes_are_kept_and_quit_follows_the_program() {
    for shell in shells() {
        for code in [0, 1, 42] {
            let code_text = code.to_string();
            let out = Run {
                shell,
                command: &["sh", "-c", EXITS_WITH, "{dir}", &code_text],
                ..Run::default()
            }
            .exits(code)
            .unwrap();
            out.assert_quit_once_after();
            out.clean();
        }
    }
}

#[test]
fn death_by_signal_is_128_plus_n() {
    for shell in shells() {
        for (signal, code) in [("KILL", 137), ("TERM", 143)] {
            let script = format!(": > \"$0/done\"; kill -{signal} $$");
            let out = Run {
                shell,
                command: &["sh", "-c", &script, "{dir}"],
                ..Run::default()
            }
            .exits(code)
            .unwrap();
            out.assert_quit_once_after();
            out.clean();
        }
    }
}

/// A program that needs nothing on `PATH`: EXITS_WITH by absolute paths.
fn program_alone(code: &str) -> Vec<String> {
    let sleep = find("sleep").expect("sleep");
    let script = format!("{} 0.3; : > \"$0/done\"; exit \"$1\"", sleep.display());
    let sh = dash().to_str().unwrap().to_owned();
    vec![sh, "-c".into(), script, "{dir}".into(), code.into()]
}

/// Each client alone beside `sh` (and nothing else, not even `sleep`):
/// one POST of the quit path with `Content-Length: 0`, after the program,
/// and the program's exit code. Under bash as `sh`, bash itself comes
/// before perl and python.
#[test]
fn every_client_posts_alone() {
    let program = program_alone("3");
    let command: Vec<&str> = program.iter().map(String::as_str).collect();
    for shell in shells() {
        for client in CLIENTS {
            Run {
                shell,
                tools: Tools::Bare,
                client,
                command: &command,
                ..Run::default()
            }
            .quits_once(3);
        }
    }
}

/// pilot-agent listens on the pod's own status port, which the policy
/// puts in the wrapper's URL in place of `quitUrl`'s.
#[test]
fn the_quit_goes_to_the_pods_status_port() {
    for client in CLIENTS {
        Run {
            client,
            status_port: true,
            command: &["sh", "-c", EXITS_WITH, "{dir}", "0"],
            ..Run::default()
        }
        .quits_once(0);
    }
}

/// Where `sh` is bash, the wrapper needs no other client: it uses bash's
/// own `/dev/tcp`.
#[test]
fn bash_as_sh_posts_by_itself() {
    let program = program_alone("5");
    let command: Vec<&str> = program.iter().map(String::as_str).collect();
    Run {
        shell: Shell::Bash,
        tools: Tools::Bare,
        client: Client::None,
        command: &command,
        ..Run::default()
    }
    .quits_once(5);
}

/// No client at all: the message names every client tried and says what
/// to do, and the program's exit code is kept.
#[test]
fn without_a_client_the_programs_code_is_kept_and_the_clients_named() {
    let program = program_alone("42");
    let command: Vec<&str> = program.iter().map(String::as_str).collect();
    for shell in shells().into_iter().filter(|s| *s != Shell::Bash) {
        for tools in [Tools::Usual, Tools::Bare] {
            let out = Run {
                shell,
                tools,
                client: Client::None,
                command: &command,
                ..Run::default()
            }
            .exits(42)
            .unwrap();
            assert!(out.hits.is_empty());
            for said in [
                "no curl, wget, busybox, bash, perl or python to POST http://127.0.0.1:",
                "/quitquitquit; use another mode",
            ] {
                assert!(out.stderr.contains(said), "{shell:?}: {}", out.stderr);
            }
            assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
            assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
            out.clean();
        }
    }
}

/// A shell program that, on signal `$1`, notes it in `signal`, stops its
/// sleep, goes on a moment and exits with `$2`: the wrapper has to pass the
/// signal on, keep waiting and ask to quit only after. `started` is written
/// once the trap is set and the sleep runs (a shell runs traps only between
/// commands, hence `sleep & wait`).
const SH_HANDLES: &str = "trap 'kill $! 2>/dev/null; echo \"$1\" >> \"$0/signal\"' \"$1\"; \
    sleep 30 & : > \"$0/started\"; wait; sleep 0.2; : > \"$0/done\"; exit \"$2\"";

/// The same in perl, for INT and QUIT: a non-interactive shell starts
/// background programs with both ignored (POSIX), so only a program that
/// sets its own handler sees them (perl, Go, Node, Python do; a shell
/// script cannot).
const PERL_HANDLES: &str = "my ($dir, $sig, $code) = @ARGV; my $got; \
    $SIG{$sig} = sub { $got = 1 }; open(my $s, '>', \"$dir/started\") or die; close($s); \
    sleep 1 until $got; open(my $f, '>>', \"$dir/signal\") or die; print $f \"$sig\\n\"; \
    close($f); select(undef, undef, undef, 0.2); open(my $d, '>', \"$dir/done\"); exit $code";

/// Sends `signal` to the wrapper of a program that handles it and then
/// exits with `code`: the program saw the signal once, the wrapper exits
/// with `code`, and asks to quit once, after the program. `false` when perl,
/// which the INT and QUIT cases need, is missing.
fn forwarded_then_exits(shell: Shell, signal: &str, code: i32) -> bool {
    let code_text = code.to_string();
    let perl = find("perl");
    let command = if matches!(signal, "INT" | "QUIT") {
        let Some(perl) = perl.as_deref().and_then(Path::to_str) else {
            return false;
        };
        [perl, "-e", PERL_HANDLES, "{dir}", signal, &code_text]
    } else {
        ["sh", "-c", SH_HANDLES, "{dir}", signal, &code_text]
    };
    let out = Run {
        shell,
        command: &command,
        signal: Some(signal),
        ..Run::default()
    }
    .exits(code)
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.read("signal")),
        format!("{signal}\n"),
        "{shell:?} {signal}"
    );
    out.assert_quit_once_after();
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    out.clean();
    true
}

/// The program decides what a signal means: the wrapper forwards each of
/// TERM, INT, HUP, QUIT, USR1, USR2 and neither ends nor quits because of
/// it.
#[test]
fn every_forwarded_signal_reaches_the_program_which_decides() {
    let signals = [
        ("TERM", 41),
        ("INT", 42),
        ("HUP", 43),
        ("QUIT", 44),
        ("USR1", 45),
        ("USR2", 46),
    ];
    let mut skipped = false;
    for shell in shells() {
        for (signal, code) in signals {
            skipped |= !forwarded_then_exits(shell, signal, code);
        }
    }
    if skipped {
        skip("perl not installed, the INT and QUIT cases are skipped");
    }
}

/// 127 after a forwarded signal is the program's own code, not the sign
/// of a status collected already: a wait that the signal cut short does
/// not count.
#[test]
fn a_program_that_exits_127_on_a_forwarded_signal_keeps_127() {
    for shell in shells() {
        for signal in ["TERM", "HUP", "USR2"] {
            assert!(forwarded_then_exits(shell, signal, 127));
        }
    }
}

/// A program that does not handle the signal dies of it: 128+N (Linux
/// numbers), and the quit request still follows.
#[test]
fn death_by_a_forwarded_signal_is_128_plus_n() {
    let program = ": > \"$0/done\"; : > \"$0/started\"; exec sleep 30";
    for shell in shells() {
        for (signal, code) in [("TERM", 143), ("HUP", 129), ("USR1", 138), ("USR2", 140)] {
            let out = Run {
                shell,
                command: &["sh", "-c", program, "{dir}"],
                signal: Some(signal),
                ..Run::default()
            }
            .exits(code)
            .unwrap();
            out.assert_quit_once_after();
            assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
            out.clean();
        }
    }
}

#[test]
fn argv_arrives_byte_for_byte() {
    let tricky = [
        "two words",
        "",
        "'single' \"double\"",
        "$HOME",
        "${HOME}",
        "$(HOME)",
        "$$",
        "`id`",
        "back\\slash\\n",
        "new\nline",
        "tab\there",
        "*",
        "-c",
        "--",
        " padded ",
        "é ünïcode",
    ];
    // Each argument, NUL-terminated, into argv.
    let program = "printf '%s\\0' \"$@\" > \"$0/argv\"; : > \"$0/done\"";
    for shell in shells() {
        for split in [tricky.len(), 5, 0] {
            // Some of the tricky ones in command, the rest in args.
            let mut command = vec!["sh", "-c", program, "{dir}"];
            command.extend_from_slice(&tricky[..split]);
            let args = &tricky[split..];
            let out = Run {
                shell,
                command: &command,
                args: (!args.is_empty()).then_some(args),
                ..Run::default()
            }
            .exits(0)
            .unwrap();
            let expected: Vec<u8> = tricky.iter().flat_map(|a| a.bytes().chain([0])).collect();
            assert_eq!(
                String::from_utf8_lossy(&out.read("argv")),
                String::from_utf8_lossy(&expected),
                "{shell:?} split {split}"
            );
            out.assert_quit_once_after();
            out.clean();
        }
    }
}

#[test]
fn stdin_reaches_the_program() {
    let input = b"line one\nline two\n\0binary\xff";
    for shell in shells() {
        let out = Run {
            shell,
            command: &["sh", "-c", "cat > \"$0/stdin\"; : > \"$0/done\"", "{dir}"],
            stdin: Some(input),
            ..Run::default()
        }
        .exits(0)
        .unwrap();
        assert_eq!(out.read("stdin"), input);
        out.assert_quit_once_after();
        out.clean();
    }
}

#[test]
fn on_failure_pods_quit_only_after_success() {
    for shell in shells() {
        for (code, quits) in [(0, true), (1, false), (137, false)] {
            let code_text = code.to_string();
            let out = Run {
                shell,
                restart: "OnFailure",
                command: &["sh", "-c", EXITS_WITH, "{dir}", &code_text],
                ..Run::default()
            }
            .exits(code)
            .unwrap();
            assert_eq!(out.hits.len(), usize::from(quits), "{shell:?} {code}");
            out.assert_hits_after();
            out.clean();
        }
    }
}

/// A container's own restartPolicy and restartPolicyRules decide, as the
/// kubelet's `ContainerShouldRestart` does: the proxy is asked to quit
/// only after an exit the container is not started again after.
#[test]
fn container_restart_rules_decide_when_to_quit() {
    let retry_42 = json!({"restartPolicy": "Never", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
    ]});
    let retry_all_but_0_and_3 = json!({"restartPolicy": "Never", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0, 3]}}
    ]});
    let never = json!({"restartPolicy": "Never"});
    let cases = [
        (
            "Never",
            &retry_42,
            [(0, true), (1, true), (42, false), (142, true)],
        ),
        (
            "Never",
            &retry_all_but_0_and_3,
            [(0, true), (3, true), (4, false), (30, false)],
        ),
        (
            "OnFailure",
            &never,
            [(0, true), (1, true), (42, true), (137, true)],
        ),
    ];
    for shell in shells() {
        for (restart, own, codes) in &cases {
            for (code, quits) in codes {
                let code_text = code.to_string();
                let Some(out) = (Run {
                    shell,
                    restart,
                    own_restart: Some((*own).clone()),
                    command: &["sh", "-c", EXITS_WITH, "{dir}", &code_text],
                    ..Run::default()
                })
                .exits(*code) else {
                    skip(&format!("{shell:?}: not installed, the case is skipped"));
                    continue;
                };
                assert_eq!(
                    out.hits.len(),
                    usize::from(*quits),
                    "{shell:?} {own} {code}"
                );
                out.assert_hits_after();
                out.clean();
            }
        }
    }
}

/// The script reads its `when` argument as the policy's type says it does
/// (`restarts::When::quits_after`): each form the policy writes, and a word
/// it does not know (quit after any exit), under each shell.
#[test]
fn the_script_reads_when_as_the_policy_means_it() {
    use istio_job_sidecar_policy::modes::restarts::When;
    let forms = [
        When::Always,
        When::OnSuccess,
        When::Unless(vec![42]),
        When::Unless(vec![1, 2, 255]),
        When::Only(vec![0, 3]),
    ];
    for shell in shells() {
        for when in &forms {
            for code in [0u8, 1, 2, 3, 42, 255] {
                let code_text = code.to_string();
                let Some(out) = (Run {
                    shell,
                    command: &["sh", "-c", EXITS_WITH, "{dir}", &code_text],
                    when: Some(when.arg().into_owned()),
                    ..Run::default()
                })
                .exits(i32::from(code)) else {
                    skip(&format!("{shell:?}: not installed, the case is skipped"));
                    continue;
                };
                let quits = when.quits_after(code);
                assert_eq!(
                    out.hits.len(),
                    usize::from(quits),
                    "{shell:?} {when:?} {code}"
                );
                out.clean();
            }
        }
    }
}

#[test]
fn a_missing_program_exits_127_and_still_quits() {
    for shell in shells() {
        let out = Run {
            shell,
            command: &["/no/such/program", "x"],
            ..Run::default()
        }
        .exits(127)
        .unwrap();
        assert_eq!(out.hits.len(), 1);
        out.clean();
    }
}

#[test]
fn a_failed_quit_request_is_retried() {
    for shell in shells() {
        for client in CLIENTS {
            let Some(out) = (Run {
                shell,
                client,
                agent: Agent::FailsOnce,
                command: &["sh", "-c", EXITS_WITH, "{dir}", "0"],
                ..Run::default()
            })
            .exits(0) else {
                skip(&format!(
                    "{client:?} not installed, its retry case is skipped"
                ));
                continue;
            };
            assert_eq!(out.hits.len(), 2, "{shell:?} {client:?}: {:?}", out.hits);
            out.assert_hits_after();
            out.clean();
        }
    }
}

/// An agent already gone (the pod is stopping) or one that accepts and never
/// answers cannot hold the pod: each try is cut after 2 s (curl's `-m`,
/// bash's `read -t`, perl's `alarm`, python's socket timeout; a watchdog
/// for wget, which may lack `-T`), 5 tries 1 s apart.
#[rstest]
fn an_unreachable_agent_cannot_hold_the_pod(
    #[values(Agent::Gone, Agent::Hangs)] agent: Agent,
    #[values(
        Client::Curl,
        Client::GnuWget,
        Client::BusyboxWget,
        Client::BareBusybox,
        Client::Bash,
        Client::Perl,
        Client::Python3
    )]
    client: Client,
) {
    let tries = if agent == Agent::Hangs { 5 } else { 0 };
    Run {
        client,
        agent,
        command: &["sh", "-c", EXITS_WITH, "{dir}", "4"],
        ..Run::default()
    }
    .gives_up(4, tries, Duration::from_secs(25));
}

/// Without `sleep` the clients that time themselves out are still cut
/// after 2 s a try (the tries then follow each other at once).
#[rstest]
fn a_hanging_agent_cannot_hold_the_pod_without_sleep(
    #[values(
        Client::Curl,
        Client::BareBusybox,
        Client::Bash,
        Client::Perl,
        Client::Python3
    )]
    client: Client,
) {
    let program = program_alone("6");
    let command: Vec<&str> = program.iter().map(String::as_str).collect();
    Run {
        tools: Tools::Bare,
        client,
        agent: Agent::Hangs,
        command: &command,
        ..Run::default()
    }
    .gives_up(6, 5, Duration::from_secs(20));
}

/// Lint the script the policy embeds, where shellcheck is installed.
#[test]
fn the_script_passes_shellcheck() {
    let Some(shellcheck) = find("shellcheck") else {
        skip("shellcheck not installed, the lint is skipped (apt-get install shellcheck)");
        return;
    };
    let argv = wrapped_argv(
        &["true"],
        None,
        "Never",
        None,
        "http://127.0.0.1:1/q",
        json!({}),
    );
    let mut child = Command::new(shellcheck)
        .args(["--shell=sh", "--severity=warning", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(argv[2].as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
