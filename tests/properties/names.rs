//! The names the properties read and write, in one place: the annotations
//! (the policy's own names, through `policy_testkit::names`), the
//! quitEndpoint wrapper's fixed elements (not its script: `quit_script`), sidecar and init container names,
//! the kinds and modes.

pub use policy_testkit::journey::QUIT_NAME;
pub use policy_testkit::names::{
    APPLIED, EXIT_KEY, INJECT, MODE, NATIVE, OWNER_MODE, PROXY_CONFIG, QUIT_WRAPPED, RECORD_KEYS,
    STATUS, STATUS_PORT,
};

/// What docs/modes.md says the quitEndpoint wrapper puts before the original
/// command: the shell, the script (held to what it does, not to its text:
/// `quit_script`), its `$0`, then the URL and `always` / `on-success`.
pub const QUIT_SHELL: [&str; 2] = ["/bin/sh", "-c"];
pub const DEFAULT_QUIT_URL: &str = "http://127.0.0.1:15020/quitquitquit";
/// The members a move may add to the proxy.
pub const MOVE_ADDS: [&str; 3] = ["restartPolicy", "startupProbe", "lifecycle"];
pub const SIDECARS: [&str; 2] = ["istio-proxy", "envoy"];
pub const ISTIO_INITS: [&str; 2] = ["istio-init", "istio-validation"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Job,
    CronJob,
    Pod,
    /// Anything else: never touched.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Native,
    Exit,
    Quit,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "nativeSidecar" => Some(Mode::Native),
            "exitOnJobCompletion" => Some(Mode::Exit),
            "quitEndpoint" => Some(Mode::Quit),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Native => "nativeSidecar",
            Mode::Exit => "exitOnJobCompletion",
            Mode::Quit => "quitEndpoint",
        }
    }
}

/// The modes a workload may be in; `None` is `disabled`.
pub const MODES: [Option<Mode>; 4] = [Some(Mode::Native), Some(Mode::Exit), Some(Mode::Quit), None];

/// The value of `istio-job-sidecar/mode` (or of the `mode` setting).
pub fn mode_name(mode: Option<Mode>) -> &'static str {
    mode.map_or("disabled", Mode::name)
}
