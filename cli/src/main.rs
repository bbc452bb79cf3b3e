//! `kubectl-istio_job_sidecar`: on PATH under this name, kubectl runs it as
//! `kubectl istio-job-sidecar`.
//!
//! Exit codes: 0 done; 1 a `--fail-on` condition holds (the report is
//! complete); 2 an error: bad flags, invalid settings, an input that
//! cannot be read or a document that does not parse (reported, the rest
//! still processed), kubectl failing.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use istio_job_sidecar_cli::config::Config;
use istio_job_sidecar_cli::input::{read_objects, sources, Source};
use istio_job_sidecar_cli::kubectl::{self, Kubectl};
use istio_job_sidecar_cli::render::{render_all, Renderer};
use istio_job_sidecar_cli::report::{self, Style};
use istio_job_sidecar_cli::scan::{Options, Scanner};
use istio_job_sidecar_cli::stuck::parse_rfc3339;

const FAIL: u8 = 1;
const ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "kubectl istio-job-sidecar",
    bin_name = "kubectl istio-job-sidecar",
    version,
    about = "The Jobs stuck today because of the Istio sidecar, and what the istio-job-sidecar policy would change",
    long_about = "The Jobs stuck today because of the Istio sidecar, and what the istio-job-sidecar \
                  policy would change. Every answer is the policy's own: its code is linked into this tool.\n\n\
                  Exit codes: 0 done, 1 a --fail-on condition holds, 2 an error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report the stuck Pods and what the policy would do to each Job, CronJob and Pod.
    ///
    /// Reads what `kubectl get jobs,cronjobs,pods -A -o json` (or -o yaml) prints,
    /// multi-document YAML (helm template, a GitOps folder), files, directories
    /// (recursively) or - for stdin. With no INPUT it runs that kubectl command itself.
    Scan(ScanArgs),
    /// Write the manifests back with the policy's edit applied (a Helm post-renderer).
    ///
    /// Reads manifests (stdin when no INPUT is given) and writes each Job, CronJob and
    /// Pod as its CREATE with the admission patch applied; every other document is
    /// written back byte for byte. Warnings go to stderr.
    Render(RenderArgs),
}

#[derive(Args)]
struct PolicyArgs {
    /// The policy's settings: JSON or YAML text, or a file holding it (as in spec.settings).
    #[arg(long, value_name = "TEXT|FILE", conflicts_with = "policy")]
    settings: Option<String>,
    /// A ClusterAdmissionPolicy (or AdmissionPolicy) manifest: its settings, rules and selectors.
    #[arg(long, value_name = "FILE")]
    policy: Option<String>,
    /// The namespace Kubewarden runs in: no policy ever sees its requests.
    #[arg(long, value_name = "NAMESPACE", default_value = "kubewarden")]
    kubewarden_namespace: String,
}

#[derive(Args)]
struct ScanArgs {
    /// Files, directories or - (stdin); none: kubectl get jobs,cronjobs,pods -A -o json.
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: Output,
    /// Exit 1 when any Pod is stuck, any object would change or any answer warns
    /// (repeatable, or comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "WHAT")]
    fail_on: Vec<FailOn>,
    /// The time "stuck for" counts to (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    now: Option<String>,
    /// kubectl's --context.
    #[arg(long)]
    context: Option<String>,
    /// With kubectl: the namespace to read (default: all). With files: the
    /// namespace of objects that name none (default: default).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// kubectl's --request-timeout.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    request_timeout: String,
    /// Seconds kubectl may wait for the cluster's first byte before it is stopped.
    #[arg(long, default_value_t = 20, value_name = "SECONDS")]
    cluster_timeout: u64,
    /// Colours in the table (NO_COLOR turns auto off).
    #[arg(long, value_enum, default_value = "auto")]
    color: When,
    /// A progress line on stderr for inputs that take over a second (auto: when stderr is a terminal).
    #[arg(long, value_enum, default_value = "auto")]
    progress: When,
}

#[derive(Args)]
struct RenderArgs {
    /// Files, directories or - (stdin, the default).
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// The namespace of objects that name none (helm install -n).
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// No summary nor warnings on stderr (errors are still written).
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
    Markdown,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    Stuck,
    Change,
    Warning,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum When {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scan(args) => scan(args),
        Command::Render(args) => render(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(ERROR)
        }
    }
}

fn config(args: &PolicyArgs) -> Result<Config, String> {
    Config::load(
        args.settings.as_deref(),
        args.policy.as_deref(),
        &args.kubewarden_namespace,
    )
}

fn scan(args: ScanArgs) -> Result<u8, String> {
    let config = config(&args.policy)?;
    let now = match &args.now {
        Some(text) => {
            parse_rfc3339(text).ok_or_else(|| format!("--now {text:?}: not an RFC 3339 time"))?
        }
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_secs() as i64,
    };
    let progress = match args.progress {
        When::Always => true,
        When::Never => false,
        When::Auto => std::io::stderr().is_terminal(),
    };
    let options = Options {
        now,
        default_namespace: args.namespace.clone().unwrap_or_else(|| "default".into()),
        progress,
        keep_patches: args.output == Output::Json,
    };
    let mut scanner = Scanner::new(&config, options);
    if args.inputs.is_empty() {
        let program = kubectl::find().ok_or(
            "no INPUT given and kubectl is not on PATH: give files, directories or - for stdin",
        )?;
        let kubectl = Kubectl {
            program,
            context: args.context.clone(),
            namespace: args.namespace.clone(),
            request_timeout: args.request_timeout.clone(),
            first_byte: args.cluster_timeout,
        };
        let resources = "jobs,cronjobs,pods";
        scanner.scan.sources.push(kubectl.describe(resources));
        kubectl.get(resources, &mut |found| scanner.take(found))?;
        let wants_labels = config.policy.as_ref().is_some_and(|p| {
            p.namespace_expressions
                .iter()
                .any(|r| r.key != istio_job_sidecar_istio_name())
        });
        if wants_labels {
            let all = Kubectl {
                namespace: None,
                ..kubectl.clone()
            };
            if let Err(e) = all.get("namespaces", &mut |found| scanner.take(found)) {
                eprintln!("warning: the namespaceSelector is not applied: {e}");
            }
        }
    } else {
        for source in sources(&args.inputs).map_err(|e| e.to_string())? {
            scanner.scan.sources.push(source.name());
            read_objects(&source, &mut |found| scanner.take(found)).map_err(|e| e.to_string())?;
        }
    }
    scanner.progress(true);
    let scan = scanner.scan;
    for (at, why) in &scan.invalid {
        eprintln!("error: {at}: {why}");
    }
    let report = report::build(&scan, &config, now);
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let text = match args.output {
        Output::Json => String::new(),
        Output::Markdown => report::markdown(&report),
        Output::Table => {
            let color = match args.color {
                When::Always => true,
                When::Never => false,
                When::Auto => {
                    std::io::stdout().is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            report::table(&report, Style { on: color })
        }
    };
    let written = match args.output {
        Output::Json => {
            report::write_json(&report, &mut stdout).and_then(|()| stdout.write_all(b"\n"))
        }
        _ => stdout.write_all(text.as_bytes()),
    };
    broken_pipe_is_fine(written.and_then(|()| stdout.flush()))?;
    if !scan.invalid.is_empty() {
        return Ok(ERROR);
    }
    let totals = report.totals(None);
    let failed = args.fail_on.iter().any(|f| match f {
        FailOn::Stuck => totals.stuck > 0,
        FailOn::Change => totals.would_change > 0,
        FailOn::Warning => totals.with_warnings > 0,
    });
    Ok(if failed { FAIL } else { 0 })
}

/// Output cut short by the reader (`| head`) is no error.
fn broken_pipe_is_fine(written: std::io::Result<()>) -> Result<(), String> {
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}

fn istio_job_sidecar_istio_name() -> &'static str {
    istio_job_sidecar_cli::config::NAMESPACE_NAME_LABEL
}

fn render(args: RenderArgs) -> Result<u8, String> {
    let config = config(&args.policy)?;
    let sources = if args.inputs.is_empty() {
        vec![Source::Stdin]
    } else {
        sources(&args.inputs).map_err(|e| e.to_string())?
    };
    let mut renderer = Renderer::new(&config, &args.namespace);
    let mut stdout = std::io::stdout().lock();
    let written = render_all(&mut renderer, &sources, &mut stdout);
    for message in &renderer.messages {
        if !args.quiet || message.starts_with("error:") {
            eprintln!("{message}");
        }
    }
    written.map_err(|e| e.to_string())?;
    let r = &renderer.rendered;
    if !args.quiet {
        eprintln!(
            "render: {} of {} Jobs, CronJobs and Pods changed",
            r.changed, r.objects
        );
    }
    Ok(if r.invalid > 0 { ERROR } else { 0 })
}
