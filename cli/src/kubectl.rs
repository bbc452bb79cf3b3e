//! `kubectl get jobs,cronjobs,pods -A -o json`, read-only, its output read
//! as it comes. kubectl retries discovery several times, each for the full
//! `--request-timeout`, before it gives up on an unreachable cluster (7
//! tries: 21 s with 3 s), so kubectl is also stopped when the cluster has
//! sent nothing in `first_byte` seconds: a clear error, never a hang.

use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::input::{read_stream, Found};

#[derive(Debug, Clone)]
pub struct Kubectl {
    pub program: PathBuf,
    pub context: Option<String>,
    /// `-n`; all namespaces (`-A`) without it.
    pub namespace: Option<String>,
    /// kubectl's `--request-timeout`, as kubectl reads it (`5s`, `1m`).
    pub request_timeout: String,
    /// Seconds kubectl may go without a first byte of output.
    pub first_byte: u64,
    /// What the subcommand does without a cluster, with an example: said
    /// when kubectl is missing or fails.
    pub offline: &'static str,
}

/// `kubectl` on PATH.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())
}

impl Kubectl {
    /// The kubectl at `program` that reads the cluster when the user gave
    /// no INPUT; without one on PATH, the error that says what to give
    /// (`offline`: what the subcommand does without a cluster).
    pub fn for_cluster(
        program: Option<PathBuf>,
        context: &Option<String>,
        namespace: &Option<String>,
        request_timeout: &str,
        first_byte: u64,
        offline: &'static str,
    ) -> Result<Kubectl, String> {
        let program = program.ok_or_else(|| {
            format!("no INPUT given and kubectl is not on PATH: put kubectl on PATH to read the cluster, or {offline}")
        })?;
        Ok(Kubectl {
            program,
            context: context.clone(),
            namespace: namespace.clone(),
            request_timeout: request_timeout.to_owned(),
            first_byte,
            offline,
        })
    }

    /// The command line, as the report names its source.
    pub fn describe(&self, resources: &str) -> String {
        self.args(resources).join(" ").replace("\n", " ")
    }

    fn args(&self, resources: &str) -> Vec<String> {
        let mut args = vec!["kubectl".to_owned(), "get".to_owned(), resources.to_owned()];
        match &self.namespace {
            Some(ns) => args.extend(["-n".to_owned(), ns.clone()]),
            None if ["namespaces", "nodes", "mutatingadmissionpolicies"].contains(&resources) => {}
            None => args.push("-A".to_owned()),
        }
        args.extend(["-o".to_owned(), "json".to_owned()]);
        args.push(format!("--request-timeout={}", self.request_timeout));
        if let Some(context) = &self.context {
            args.push(format!("--context={context}"));
        }
        args
    }

    /// Runs `kubectl get <resources>` and hands every object to `sink`.
    pub fn get(&self, resources: &str, sink: &mut dyn FnMut(Found)) -> Result<(), String> {
        let args = self.args(resources);
        let mut child = Command::new(&self.program)
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let stdout = child.stdout.take().ok_or("kubectl: no stdout")?;
        let mut stderr = child.stderr.take().ok_or("kubectl: no stderr")?;
        let child = Arc::new(Mutex::new(child));
        let answered = Arc::new(AtomicBool::new(false));
        let killed = Arc::new(AtomicBool::new(false));
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let watchdog = {
            let (child, answered, killed) = (child.clone(), answered.clone(), killed.clone());
            let limit = Duration::from_secs(self.first_byte);
            std::thread::spawn(move || {
                let start = Instant::now();
                while start.elapsed() < limit {
                    std::thread::sleep(Duration::from_millis(50));
                    let done = child
                        .lock()
                        .map(|mut c| matches!(c.try_wait(), Ok(Some(_))))
                        .unwrap_or(true);
                    if answered.load(Ordering::SeqCst) || done {
                        return;
                    }
                }
                if let Ok(mut c) = child.lock() {
                    killed.store(true, Ordering::SeqCst);
                    let _ = c.kill();
                }
            })
        };
        let name = args.join(" ");
        let reader = FirstByte {
            inner: stdout,
            answered: answered.clone(),
        };
        let read = read_stream(&name, reader, sink);
        let _ = watchdog.join();
        let status = child
            .lock()
            .map_err(|_| "kubectl: lost".to_owned())?
            .wait()
            .map_err(|e| format!("kubectl: {e}"))?;
        let said = errors.join().unwrap_or_default();
        let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
        // kubectl's own message, without its log lines (`E1201 12:00:00.000 ...`).
        let messages: Vec<&str> = lines.iter().copied().filter(|l| !is_log_line(l)).collect();
        let last = if messages.is_empty() { lines } else { messages };
        let tail = last
            .iter()
            .rev()
            .take(2)
            .rev()
            .copied()
            .collect::<Vec<_>>()
            .join("\n  ");
        let context = self
            .context
            .as_deref()
            .map(|c| format!(" (context {c})"))
            .unwrap_or_default();
        if killed.load(Ordering::SeqCst) {
            return Err(format!(
                "the cluster{context} sent nothing in {} s: is it reachable? `{name}` was stopped{}\n\
                 (check it with `kubectl cluster-info{}`, give a slow cluster more time with \
                 --cluster-timeout 60, or {})",
                self.first_byte,
                if tail.is_empty() { String::new() } else { format!("; kubectl said:\n  {tail}") },
                self.context.as_deref().map(|c| format!(" --context={c}")).unwrap_or_default(),
                self.offline
            ));
        }
        if !status.success() {
            return Err(format!(
                "`{name}` failed ({status}){}\n(without a cluster: {})",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(":\n  {tail}")
                },
                self.offline
            ));
        }
        read.map(|_| ())
            .map_err(|e| format!("reading kubectl's output: {e}"))
    }
}

/// A klog line: a severity letter, the date (`MMDD`) and a time.
fn is_log_line(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 6
        && matches!(b[0], b'E' | b'W' | b'I' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
}

/// Notes when the first byte arrives.
struct FirstByte<R> {
    inner: R,
    answered: Arc<AtomicBool>,
}

impl<R: Read> Read for FirstByte<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.answered.store(true, Ordering::SeqCst);
        }
        Ok(n)
    }
}
