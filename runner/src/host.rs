//! Loading a policy module and calling its waPC functions the way
//! Kubewarden's policy-server does (wapc + wasmtime-provider, same versions).

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::Value;
use wapc::{WapcHost, WebAssemblyEngineProvider};
use wasmtime_provider::wasmtime::{Config, Engine};
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder};

use crate::admission::ModuleAnswer;
use crate::error::{Error, Result};
use crate::metered::{self, CallCost, Meter, MeteredModule};
use crate::protocol::calls;
// Also reachable as `host::…`, where `bench` and the tests name them.
pub use crate::protocol::{validate_payload, GuestLog, SettingsValidation, ValidationResponse};

type LogSink = Arc<Mutex<Vec<GuestLog>>>;
/// The cluster's Node list, as Kubewarden's host answers a context-aware
/// policy's `list_resources_all` of `v1` `Node`; `None`: no cluster context.
type Nodes = Arc<Mutex<Option<Vec<u8>>>>;

/// A loaded policy module: one wasmtime instance behind one waPC host, kept
/// for many calls, as policy-server keeps one per policy and worker.
pub struct Policy {
    host: WapcHost,
    logs: LogSink,
    nodes: Nodes,
    /// Each call's cost, for a metered policy (`Policy::metered`).
    meter: Option<Meter>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("id", &self.host.id())
            .finish()
    }
}

impl Policy {
    /// Reads and instantiates a `.wasm` file with a default engine.
    pub fn load(path: &Path) -> Result<Policy> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Policy::from_bytes(&bytes)
    }

    /// Instantiates a module on the process-wide engine, with
    /// policy-server's timeout.
    pub fn from_bytes(bytes: &[u8]) -> Result<Policy> {
        let builder = WasmtimeEngineProviderBuilder::new()
            .module_bytes(bytes)
            .engine(shared_engine()?)
            .enable_epoch_interruptions(EpochDeadlines {
                wapc_init: deadline_ticks(),
                wapc_func: deadline_ticks(),
            });
        trap_cause::install();
        let provider = builder.build().map_err(|e| Error::Load(e.to_string()))?;
        Policy::with_provider(Box::new(provider), None)
    }

    /// A fresh instance of `module` whose calls are metered: fuel and
    /// linear memory per call (`last_cost`). The same waPC host, host
    /// calls and payloads as `from_bytes`, on a fuel-counting engine
    /// (`metered`'s documentation says why not wasmtime-provider's).
    pub fn metered(module: &MeteredModule) -> Result<Policy> {
        let meter = Meter::default();
        Policy::with_provider(module.provider(Arc::clone(&meter)), Some(meter))
    }

    /// What the last call of a metered policy cost; `None` for a policy
    /// on policy-server's engine, or before any call.
    pub fn last_cost(&self) -> Option<CallCost> {
        self.meter.as_ref().and_then(metered::read)
    }

    fn with_provider(
        provider: Box<dyn WebAssemblyEngineProvider>,
        meter: Option<Meter>,
    ) -> Result<Policy> {
        let logs: LogSink = Arc::default();
        let nodes: Nodes = Arc::default();
        let (sink, cluster) = (Arc::clone(&logs), Arc::clone(&nodes));
        let host = WapcHost::new(
            provider,
            Some(Box::new(
                move |_id, binding, namespace, operation, payload| {
                    host_callback(&sink, &cluster, binding, namespace, operation, payload)
                },
            )),
        )
        .map_err(|e| Error::Load(e.to_string()))?;
        Ok(Policy {
            host,
            logs,
            nodes,
            meter,
        })
    }

    /// Answer the module's list of the cluster's Nodes with `list` (the
    /// JSON of a `v1` List, as Kubewarden's host gives a context-aware
    /// policy); `None`: no cluster context, every such call an error.
    pub fn set_nodes(&self, list: Option<Vec<u8>>) {
        *self.nodes.lock().unwrap_or_else(PoisonError::into_inner) = list;
    }

    /// A raw waPC call: bytes in, bytes out. Guest errors and traps become
    /// `Error::Call` with the engine's message.
    pub fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>> {
        trap_cause::clear();
        self.host.call(function, payload).map_err(|e| {
            let mut message = e.to_string();
            if let Some(cause) = trap_cause::take() {
                message = format!("{message}\ncaused by: {cause}");
            }
            Error::Call {
                function: function.to_owned(),
                message,
            }
        })
    }

    /// `protocol_version`: Kubewarden calls it first to know how to talk.
    pub fn protocol_version(&self) -> Result<String> {
        calls::protocol_version(|f, p| self.call(f, p))
    }

    /// `validate_settings` with the settings as JSON, the module's own answer.
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        calls::validate_settings(|f, p| self.call(f, p), settings)
    }

    /// Like `validate_settings`, but invalid settings are an error carrying
    /// the module's message, as kwctl and policy-server refuse to go on.
    pub fn check_settings(&self, settings: &Value) -> Result<()> {
        let answer = self.validate_settings(settings)?;
        if answer.valid {
            Ok(())
        } else {
            Err(Error::InvalidSettings(
                answer.message.unwrap_or_else(|| "(no message)".to_owned()),
            ))
        }
    }

    /// `validate` on an AdmissionRequest (not a whole AdmissionReview), with
    /// the payload policy-server sends: `{"request": ..., "settings": ...}`.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<ModuleAnswer> {
        self.take_logs();
        let response = calls::validate(|f, p| self.call(f, p), request, settings)?;
        Ok(ModuleAnswer::new(request, response, self.take_logs()))
    }

    /// Log events the guest sent since the last call that collected them.
    pub fn take_logs(&self) -> Vec<GuestLog> {
        std::mem::take(&mut *self.logs.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

// The module in the engine, asked as every caller asks a policy.
crate::answers_as_policy!(Policy);

/// How often the shared engine's epoch advances, and after how many ticks a
/// guest call is interrupted: 2 s, policy-server's default policy timeout,
/// so a module that loops fails the call instead of hanging tests and CI.
const TICK: Duration = Duration::from_millis(100);
const DEADLINE_TICKS: u64 = 20;

/// `DEADLINE_TICKS`, or `POLICY_RUNNER_TIMEOUT_SECONDS` (whole seconds, at
/// least 1) in ticks. The deadline guards against a module that never
/// returns; it is no measure of speed (the benchmarks are), and on a machine
/// whose cores run other work, as CI runs its steps side by side, a 2 s wall
/// clock can pass while a call of a few hundred milliseconds waits for a core.
/// How long a guest call on the shared engine runs before it is
/// interrupted (`deadline_ticks` of `TICK`).
pub fn call_deadline() -> Duration {
    TICK * u32::try_from(deadline_ticks()).unwrap_or(u32::MAX)
}

fn deadline_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::env::var("POLICY_RUNNER_TIMEOUT_SECONDS")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&s| s >= 1)
            .map_or(DEADLINE_TICKS, |s| {
                s.saturating_mul(1000) / TICK.as_millis() as u64
            })
    })
}

/// One engine per process, as policy-server has, with epoch interruption on
/// and a thread that advances the epoch.
fn shared_engine() -> Result<Engine> {
    static ENGINE: OnceLock<std::result::Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.epoch_interruption(true);
            let engine = Engine::new(&config).map_err(|e| e.to_string())?;
            let weak = engine.weak();
            std::thread::Builder::new()
                .name("epoch-ticker".into())
                .spawn(move || {
                    while let Some(engine) = weak.upgrade() {
                        engine.increment_epoch();
                        drop(engine);
                        std::thread::sleep(TICK);
                    }
                })
                .map_err(|e| format!("cannot start the epoch ticker: {e}"))?;
            Ok(engine)
        })
        .clone()
        .map_err(Error::Load)
}

/// What policy-server answers to a guest's host call, reduced to what an
/// offline runner can do: logging works, and the list of the cluster's
/// Nodes when one was given (`Policy::set_nodes`); every other capability
/// (other cluster context, sigstore, OCI, DNS...) is an error the guest
/// sees, never a panic.
fn host_callback(
    logs: &LogSink,
    nodes: &Nodes,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    match (binding, namespace, operation) {
        ("kubewarden", "tracing", "log") => {
            logs.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(GuestLog::from_payload(payload));
            Ok(Vec::new())
        }
        ("kubewarden", "kubernetes", "list_resources_all") => {
            crate::protocol::node_list(nodes, payload).map_err(|e| e.into())
        }
        _ => Err(format!(
            "host capability {binding}/{namespace}/{operation} is not available in policy-runner"
        )
        .into()),
    }
}

/// wasmtime-provider turns a trap into the guest error with `to_string()`,
/// which keeps only "error while executing at wasm backtrace: ..."; the
/// reason (`unreachable`, out-of-bounds access...) is in the `{:?}` it logs
/// at error level just before. A minimal `log` sink keeps that line per
/// thread so `Policy::call` can add the cause. It is installed only when no
/// other logger is.
mod trap_cause {
    use std::cell::RefCell;

    thread_local! {
        static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    struct Capture;

    impl log::Log for Capture {
        fn enabled(&self, metadata: &log::Metadata) -> bool {
            metadata.level() <= log::Level::Error
                && metadata.target().starts_with("wasmtime_provider")
        }

        fn log(&self, record: &log::Record) {
            if self.enabled(record.metadata()) {
                let text = record.args().to_string();
                LAST.with(|last| *last.borrow_mut() = Some(text));
            }
        }

        fn flush(&self) {}
    }

    static CAPTURE: Capture = Capture;

    pub(super) fn install() {
        if log::set_logger(&CAPTURE).is_ok() {
            log::set_max_level(log::LevelFilter::Error);
        }
    }

    pub(super) fn clear() {
        LAST.with(|last| last.borrow_mut().take());
    }

    /// The "Caused by:" part of the last logged failure, on one line.
    pub(super) fn take() -> Option<String> {
        let text = LAST.with(|last| last.borrow_mut().take())?;
        let (_, causes) = text.split_once("Caused by:")?;
        // Cause lines ("0: ...", "1: ...") end at a blank line, before any
        // "Stack backtrace:" anyhow adds when RUST_BACKTRACE is set.
        let causes: Vec<&str> = causes
            .trim_start_matches(['\n', '\r'])
            .lines()
            .map(str::trim)
            .take_while(|l| !l.is_empty() && !l.starts_with("Stack backtrace"))
            .map(|l| {
                l.split_once(": ")
                    .filter(|(n, _)| n.parse::<u32>().is_ok())
                    .map_or(l, |(_, rest)| rest)
            })
            .collect();
        (!causes.is_empty()).then(|| causes.join(": "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_host_calls_are_errors() {
        let logs = LogSink::default();
        let nodes = Nodes::default();
        assert!(host_callback(&logs, &nodes, "kubewarden", "kubernetes", "list", b"{}").is_err());
        assert!(host_callback(&logs, &nodes, "kubewarden", "tracing", "log", b"{}").is_ok());
        let list_nodes = br#"{"api_version":"v1","kind":"Node"}"#;
        let call = |nodes: &Nodes, payload: &[u8]| {
            host_callback(
                &logs,
                nodes,
                "kubewarden",
                "kubernetes",
                "list_resources_all",
                payload,
            )
            .map_err(|e| e.to_string())
        };
        assert!(
            call(&nodes, list_nodes).is_err(),
            "no cluster context given"
        );
        *nodes.lock().unwrap() = Some(b"{\"items\":[]}".to_vec());
        assert_eq!(call(&nodes, list_nodes), Ok(b"{\"items\":[]}".to_vec()));
        assert!(call(&nodes, br#"{"api_version":"v1","kind":"Secret"}"#).is_err());
        assert!(call(&nodes, b"not json").is_err());
        assert_eq!(logs.lock().map(|l| l.len()).unwrap_or(0), 1);
    }
}
