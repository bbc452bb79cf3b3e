//! `policy-runner`: run a Kubewarden policy module as policy-server does.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use policy_runner::{bench, demo, load_request, summary, Error, Policy, Result};
use serde_json::Value;

#[derive(Parser)]
#[command(
    name = "policy-runner",
    version,
    about = "Run a Kubewarden waPC policy module the way policy-server does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate one request and print the AdmissionResponse, as `kwctl run` does.
    Run {
        /// The policy module (kwctl takes it as its positional argument; both work).
        #[arg(long, value_name = "PATH")]
        wasm: Option<PathBuf>,
        #[arg(value_name = "MODULE", conflicts_with = "wasm")]
        module: Option<PathBuf>,
        /// AdmissionRequest, AdmissionReview or bare manifest (JSON or YAML).
        #[arg(short = 'r', long, value_name = "PATH")]
        request_path: PathBuf,
        /// Settings as a JSON string.
        #[arg(long, value_name = "JSON", conflicts_with = "settings_path")]
        settings_json: Option<String>,
        /// Settings from a JSON or YAML file.
        #[arg(long, value_name = "PATH")]
        settings_path: Option<PathBuf>,
        /// Also print each patch operation and the mutated pod template.
        #[arg(long)]
        summary: bool,
    },
    /// Run the module on a sample CronJob and a kube-injected Job in each mode.
    Demo {
        #[arg(long, default_value = "policy.wasm", value_name = "PATH")]
        wasm: PathBuf,
    },
    /// Count one request's work on the metered engine (fuel: instructions
    /// executed; linear memory) and time it on policy-server's engine: the
    /// instructions per second that turn a fuel budget into time.
    Cost {
        #[arg(long, default_value = "policy.wasm", value_name = "PATH")]
        wasm: PathBuf,
        /// AdmissionRequest, AdmissionReview or bare manifest (JSON or YAML).
        #[arg(short = 'r', long, value_name = "PATH")]
        request_path: PathBuf,
        /// Settings as a JSON string.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        settings_json: String,
        /// The Node list the host answers with (the JSON of a `v1` List).
        #[arg(long, value_name = "PATH")]
        nodes: Option<PathBuf>,
        /// Timed calls; the median is printed.
        #[arg(long, default_value_t = 101)]
        calls: usize,
    },
    /// Print a Node list of COUNT Nodes in a shape policy-server sends
    /// (`managed-fields`, `whole`, `pruned`): the JSON of the `v1` List, or
    /// with `--replay` a session for kwctl's
    /// `--replay-host-capabilities-interactions`.
    NodeList {
        #[arg(long)]
        count: usize,
        #[arg(long, default_value = "pruned")]
        shape: String,
        #[arg(long)]
        replay: bool,
    },
    /// Time `validate` calls of the policy against the three floor guests,
    /// guest only and with policy-server's work on the answer.
    Bench {
        #[arg(long, default_value = "policy.wasm", value_name = "PATH")]
        wasm: PathBuf,
        #[arg(
            long,
            default_value = "target/wasm32-wasip1/release/floor_accept.wasm",
            value_name = "PATH"
        )]
        floor_accept: PathBuf,
        #[arg(
            long,
            default_value = "target/wasm32-wasip1/release/floor_sdk_parse.wasm",
            value_name = "PATH"
        )]
        floor_sdk_parse: PathBuf,
        #[arg(
            long,
            default_value = "target/wasm32-wasip1/release/floor_sdk_mutate.wasm",
            value_name = "PATH"
        )]
        floor_sdk_mutate: PathBuf,
        /// The last release's module (`make bench` gives the one in
        /// runner/bench/), measured in the same rounds: its ratios are
        /// printed beside the policy's.
        #[arg(long, value_name = "PATH")]
        release: Option<PathBuf>,
        /// Measured time per module and case, in milliseconds.
        #[arg(long, default_value_t = 1000)]
        min_time_ms: u64,
        /// Interleaved rounds the measured time is split into.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Only cases whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Measure nothing: write the cases into DIR (one AdmissionRequest
        /// file each, and `cases.json` listing route, settings, floor and
        /// target) for `kwctl bench` (`make bench-kwctl`).
        #[arg(long, value_name = "DIR")]
        write_cases: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run {
            wasm,
            module,
            request_path,
            settings_json,
            settings_path,
            summary,
        } => {
            let path = wasm
                .or(module)
                .ok_or_else(|| Error::Input("give the module with --wasm PATH".into()))?;
            let settings = read_settings(settings_json, settings_path)?;
            let request = load_request(&request_path)?;
            let policy = Policy::load(&path)?;
            policy.protocol_version()?;
            policy.check_settings(&settings)?;
            let evaluation = policy.validate(&request, &settings)?;
            for log in &evaluation.logs {
                eprintln!("guest {}: {}", log.level, log.message);
            }
            let response = evaluation.admission_response()?;
            let json = serde_json::to_string(&response).map_err(|e| Error::Input(e.to_string()))?;
            println!("{json}");
            if summary {
                println!();
                print!("{}", summary::summary(&evaluation));
            }
            Ok(())
        }
        Command::Cost {
            wasm,
            request_path,
            settings_json,
            nodes,
            calls,
        } => {
            let settings = read_settings(Some(settings_json), None)?;
            let request = load_request(&request_path)?;
            let nodes = nodes
                .map(|path| std::fs::read(&path).map_err(|source| Error::Io { path, source }))
                .transpose()?;
            let bytes = std::fs::read(&wasm).map_err(|source| Error::Io {
                path: wasm.clone(),
                source,
            })?;
            let cost = policy_runner::metered::cost(&bytes, &request, &settings, nodes, calls)?;
            println!("{cost}");
            Ok(())
        }
        Command::NodeList {
            count,
            shape,
            replay,
        } => {
            let shape = policy_runner::node_lists::Shape::parse(&shape).ok_or_else(|| {
                Error::Input(format!(
                    "--shape {shape}: one of managed-fields, whole, pruned"
                ))
            })?;
            let list = policy_runner::node_lists::list(count, shape);
            if replay {
                print!("{}", policy_runner::node_lists::replay_session(&list));
            } else {
                println!("{}", String::from_utf8_lossy(&list));
            }
            Ok(())
        }
        Command::Demo { wasm } => {
            let mut policy = Policy::load(&wasm)?;
            println!(
                "policy-runner demo: {} (waPC protocol {})",
                wasm.display(),
                policy.protocol_version()?
            );
            demo::run(&mut policy, &mut std::io::stdout().lock())
        }
        Command::Bench {
            wasm,
            floor_accept,
            floor_sdk_parse,
            floor_sdk_mutate,
            release,
            min_time_ms,
            rounds,
            filter,
            write_cases,
        } => {
            if let Some(dir) = write_cases {
                let written = bench::write_cases(&dir)?;
                println!("{} files written to {}", written.len(), dir.display());
                return Ok(());
            }
            let options = bench::Options {
                policy: wasm,
                floor_accept,
                floor_sdk_parse,
                floor_sdk_mutate,
                release,
                min_time: Duration::from_millis(min_time_ms),
                rounds,
                filter,
            };
            bench::run(&options, &mut std::io::stdout().lock())
        }
    }
}

/// Settings as kwctl reads them: JSON string, or a JSON/YAML file; none = `{}`.
fn read_settings(json: Option<String>, path: Option<PathBuf>) -> Result<Value> {
    if let Some(text) = json {
        return serde_json::from_str(&text)
            .map_err(|e| Error::Input(format!("--settings-json: {e}")));
    }
    let Some(path) = path else {
        return Ok(Value::Object(Default::default()));
    };
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    serde_yaml::from_str(&text).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
}
