//! `kubectl-istio_job_sidecar`: on PATH under this name, kubectl runs it as
//! `kubectl istio-job-sidecar`.
//!
//! Exit codes: 0 done; 1 a `scan --fail-on` condition holds (the report is
//! complete) or `render --check`/`--diff` finds a change; 2 an error: bad
//! flags, invalid settings, an input that cannot be read, holds no
//! Kubernetes object (unless `--allow-empty`) or has a document that does
//! not parse (reported, the rest still processed), kubectl failing, an
//! `end-stuck` command that failed. A reader that goes away (`| head`)
//! changes none of them: what is left to write is dropped (`out`).

#![forbid(unsafe_code)]

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use istio_job_sidecar_cli::config::Config;
use istio_job_sidecar_cli::end::{self, Ender, Outcome};
use istio_job_sidecar_cli::input::{
    nothing_to_read, read_objects, sources, Found, Held, Inputs, Source,
};
use istio_job_sidecar_cli::kubectl::{self, Kubectl};
use istio_job_sidecar_cli::out::{self, UntilGone};
use istio_job_sidecar_cli::render::{render_all, unified_diff, Renderer};
use istio_job_sidecar_cli::report::{self, Style};
use istio_job_sidecar_cli::scan::{Options, Scanner};
use istio_job_sidecar_cli::stuck::parse_rfc3339;

const FAIL: u8 = 1;
const ERROR: u8 = 2;

/// The top-level help's closing lines: where to start, and a command of
/// each kind.
const EXAMPLES: &str = "\
Start with `scan`: it reads the cluster (or your manifests), changes nothing, and says
which Pods are stuck and what the policy would change.

Examples:
  # The Pods stuck now and what the policy would change, read-only
  kubectl istio-job-sidecar scan

  # A chart with the policy's edit, checked in CI (exit 1 if anything would change)
  helm template ./chart | kubectl istio-job-sidecar render --check --policy policy.yaml

  # The commands that end today's stuck Pods (--yes runs them)
  kubectl istio-job-sidecar end-stuck";

/// What `scan`, `render` and `end-stuck` give as a working command line
/// when they have nothing to read, or no cluster.
const SCAN_EXAMPLE: &str = "kubectl istio-job-sidecar scan deploy/";
const RENDER_EXAMPLE: &str = "helm template ./chart | kubectl istio-job-sidecar render";
const END_EXAMPLE: &str = "kubectl get pods -A -o json | kubectl istio-job-sidecar end-stuck -";
const SCAN_OFFLINE: &str = "give files, directories or - for stdin, e.g. \
    `kubectl istio-job-sidecar scan deploy/` or `helm template ./chart | kubectl istio-job-sidecar scan -`";
const END_OFFLINE: &str = "give the Pods as `kubectl get pods -A -o json` prints them to print the \
    commands, e.g. `kubectl istio-job-sidecar end-stuck pods.json` (running them needs the cluster)";

#[derive(Parser)]
#[command(
    name = "kubectl istio-job-sidecar",
    bin_name = "kubectl istio-job-sidecar",
    version,
    about = "The Jobs stuck today because of the Istio sidecar, and what the istio-job-sidecar policy would change",
    long_about = "The Jobs stuck today because of the Istio sidecar, and what the istio-job-sidecar \
                  policy would change. Every answer is the policy's own: its code is linked into this tool.\n\n\
                  Exit codes: 0 done, 1 a scan --fail-on condition holds or render --check/--diff \
                  finds a change, 2 an error.",
    after_help = EXAMPLES,
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
    /// Pod as its CREATE with the admission patch applied; every other byte is written
    /// back as it was. Warnings go to stderr. --check and --diff review it in CI.
    Render(RenderArgs),
    /// End the Pods stuck now: their pilot-agent asked to quit, through kubectl exec.
    ///
    /// Finds the stuck Pods as scan does (in INPUT, or from kubectl get pods -A -o json),
    /// prints each command with the Pod's namespace and name, and runs them only with
    /// --yes, each Pod read again first (one no longer stuck is left alone). Needs RBAC
    /// create on pods/exec (and get on pods) in their namespaces.
    EndStuck(EndArgs),
    /// Print a shell completion script (bash, zsh or fish) for kubectl-istio_job_sidecar.
    Completion {
        #[arg(value_enum)]
        shell: Shell,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
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
struct EmptyArgs {
    /// An input with no Kubernetes object (empty, or only comments or text) is
    /// fine: exit 0 instead of 2.
    #[arg(long)]
    allow_empty: bool,
}

impl EmptyArgs {
    /// Err unless the inputs held a Kubernetes object or one was not needed.
    fn check(&self, inputs: &Inputs, held: Held, example: &str) -> Result<(), String> {
        if self.allow_empty || held.objects > 0 {
            return Ok(());
        }
        let names: Vec<String> = inputs.sources.iter().map(Source::name).collect();
        Err(nothing_to_read(&names, inputs.skipped.len(), held, example))
    }
}

#[derive(Args)]
struct ScanArgs {
    /// Files, directories or - (stdin); none: kubectl get jobs,cronjobs,pods -A -o json.
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    empty: EmptyArgs,
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
struct EndArgs {
    /// Files, directories or - (stdin); none: kubectl get pods -A -o json.
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    empty: EmptyArgs,
    /// Run the commands (without it they are only printed).
    #[arg(long)]
    yes: bool,
    /// kubectl's --context, for every command.
    #[arg(long)]
    context: Option<String>,
    /// Only this namespace's Pods.
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// The time "stuck for" counts to (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    now: Option<String>,
    /// kubectl's --request-timeout, for reading the Pods.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    request_timeout: String,
    /// Seconds the cluster may take to answer, for reading and for each command.
    #[arg(long, default_value_t = 20, value_name = "SECONDS")]
    cluster_timeout: u64,
}

#[derive(Args)]
struct RenderArgs {
    /// Files, directories or - (stdin, the default).
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    empty: EmptyArgs,
    /// The namespace of objects that name none (helm install -n).
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// No summary nor warnings on stderr (errors are still written).
    #[arg(short, long)]
    quiet: bool,
    /// Write no manifests: list what the policy would change, exit 1 if anything.
    #[arg(long)]
    check: bool,
    /// Write no manifests: a unified diff per changed object, exit 1 if any.
    #[arg(long)]
    diff: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    /// The table with every name whole, past 80 columns if need be.
    Wide,
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
        Command::EndStuck(args) => end_stuck(args),
        Command::Completion { shell } => completion(shell),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            out::err_line(format_args!("error: {e}"));
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
    let now = now(args.now.as_deref())?;
    let progress = match args.progress {
        When::Always => true,
        When::Never => false,
        When::Auto => std::io::stderr().is_terminal(),
    };
    let inputs = with_piped_stdin(&args.inputs);
    let options = Options {
        now,
        default_namespace: args.namespace.clone().unwrap_or_else(|| "default".into()),
        // kubectl is given -n itself; files are filtered here.
        only_namespace: args.namespace.clone().filter(|_| !inputs.is_empty()),
        progress,
        keep_patches: args.output == Output::Json,
    };
    let mut scanner = Scanner::new(&config, options);
    // What the files held: checked once they are read (a cluster's answer
    // is one whatever it holds).
    let mut from_files = None;
    if inputs.is_empty() {
        let kubectl = Kubectl::for_cluster(
            kubectl::find(),
            &args.context,
            &args.namespace,
            &args.request_timeout,
            args.cluster_timeout,
            SCAN_OFFLINE,
        )?;
        let resources = "jobs,cronjobs,pods";
        scanner.scan.sources.push(kubectl.describe(resources));
        kubectl.get(resources, &mut |found| scanner.take(found))?;
        // Namespaces and Nodes are cluster-scoped: read whatever namespace
        // the workloads came from.
        let cluster_wide = Kubectl {
            namespace: None,
            ..kubectl
        };
        let wants_labels = config
            .policy
            .as_ref()
            .is_some_and(|p| p.webhook.needs_namespace_labels());
        if wants_labels {
            if let Err(e) = cluster_wide.get("namespaces", &mut |found| scanner.take(found)) {
                out::err_line(format_args!(
                    "warning: the namespaceSelector is not applied: {e}"
                ));
            }
        }
        // The kubelets that must not run Istio's native sidecar on a Job's
        // Pod: read when the cluster lets them be (get and list on nodes).
        if let Err(e) = cluster_wide.get("nodes", &mut |found| scanner.take(found)) {
            out::err_line(format_args!(
                "warning: the Nodes' kubelets are not checked: {e}"
            ));
        }
        // Whether Istio or an in-tree MutatingAdmissionPolicy already gives
        // native sidecars (docs/alternatives.md): istiod's Deployment in
        // istio-system, and the policies (Kubernetes 1.36+).
        let istio_system = Kubectl {
            namespace: Some("istio-system".to_owned()),
            ..cluster_wide.clone()
        };
        if let Err(e) = istio_system.get("deployments", &mut |found| scanner.take(found)) {
            out::err_line(format_args!("note: istiod's settings are not read: {e}"));
        }
        if let Err(e) = cluster_wide.get("mutatingadmissionpolicies", &mut |found| {
            scanner.take(found)
        }) {
            out::err_line(format_args!(
                "note: MutatingAdmissionPolicies are not read: {e}"
            ));
        }
    } else {
        let inputs = read_inputs(&inputs)?;
        let mut held = Held::default();
        for source in &inputs.sources {
            scanner.scan.sources.push(source.name());
            held += read_objects(source, &mut |found| scanner.take(found))
                .map_err(|e| e.to_string())?;
        }
        from_files = Some((inputs, held));
    }
    scanner.progress(true);
    let scan = scanner.scan;
    report_invalid(&scan.invalid);
    if let Some((inputs, held)) = &from_files {
        args.empty.check(inputs, *held, SCAN_EXAMPLE)?;
    }
    for node in &scan.nodes {
        if let Some(why) = node.warning() {
            out::err_line(format_args!("warning: {why}"));
        }
    }
    for note in
        istio_job_sidecar_cli::mesh::notes(&scan.istiods, &scan.nodes, &scan.admission_policies)
    {
        out::err_line(format_args!("note: {note}"));
    }
    let report = report::build(&scan, &config, now);
    let mut stdout = std::io::BufWriter::new(UntilGone::new(std::io::stdout().lock()));
    let text = match args.output {
        Output::Json => String::new(),
        Output::Markdown => report::markdown(&report),
        Output::Table | Output::Wide => {
            let color = match args.color {
                When::Always => true,
                When::Never => false,
                When::Auto => {
                    std::io::stdout().is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            let cut = args.output == Output::Table && std::io::stdout().is_terminal();
            report::table(&report, Style { on: color, cut })
        }
    };
    let written = match args.output {
        Output::Json => {
            report::write_json(&report, &mut stdout).and_then(|()| stdout.write_all(b"\n"))
        }
        _ => stdout.write_all(text.as_bytes()),
    };
    written
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())?;
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

/// Each document that could not be read, on stderr.
fn report_invalid(invalid: &[(istio_job_sidecar_cli::input::Location, String)]) {
    for (at, why) in invalid {
        out::err_line(format_args!("error: {at}: {why}"));
    }
}

/// The sources the INPUT arguments name; what their directories hold and
/// is not read is listed on stderr.
fn read_inputs(args: &[PathBuf]) -> Result<Inputs, String> {
    let inputs = sources(args).map_err(|e| e.to_string())?;
    for skipped in &inputs.skipped {
        out::err_line(format_args!(
            "skipped: {} ({})",
            skipped.path.display(),
            skipped.why
        ));
    }
    Ok(inputs)
}

/// No INPUT and something piped or redirected to stdin (`cat x.yaml |
/// ... scan`): stdin is the input, as `-`; a terminal or nothing
/// (`/dev/null`, closed) is no input.
fn with_piped_stdin(inputs: &[PathBuf]) -> Vec<PathBuf> {
    if !inputs.is_empty() || !stdin_is_data() {
        return inputs.to_vec();
    }
    vec![PathBuf::from("-")]
}

fn stdin_is_data() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return false;
    }
    let Ok(fd) = stdin.as_fd().try_clone_to_owned() else {
        return false;
    };
    match std::fs::File::from(fd).metadata() {
        Ok(m) => {
            let t = m.file_type();
            t.is_fifo() || t.is_socket() || (t.is_file() && m.len() > 0)
        }
        Err(_) => false,
    }
}

fn render(args: RenderArgs) -> Result<u8, String> {
    let config = config(&args.policy)?;
    let inputs = if args.inputs.is_empty() {
        Inputs {
            sources: vec![Source::Stdin],
            skipped: Vec::new(),
        }
    } else if args.quiet {
        sources(&args.inputs).map_err(|e| e.to_string())?
    } else {
        read_inputs(&args.inputs)?
    };

    let mut renderer = Renderer::new(&config, &args.namespace);
    let review = args.check || args.diff;
    renderer.keep_changes = review;
    let mut stdout = UntilGone::new(std::io::stdout().lock());
    let written = if review {
        render_all(&mut renderer, &inputs.sources, &mut std::io::sink())
    } else {
        render_all(&mut renderer, &inputs.sources, &mut stdout)
    };
    for message in &renderer.messages {
        if !args.quiet || message.starts_with("error:") {
            out::err_line(message);
        }
    }
    written.map_err(|e| e.to_string())?;
    args.empty.check(&inputs, renderer.held, RENDER_EXAMPLE)?;
    let r = &renderer.rendered;
    if review {
        let mut text = String::new();
        if args.diff {
            text.push_str(&unified_diff(&renderer.changes));
        } else {
            for change in &renderer.changes {
                text.push_str(&format!(
                    "{} ({}): {}\n",
                    change.who, change.at, change.summary
                ));
            }
        }
        if args.check {
            text.push_str(&format!(
                "render --check: {} of {} Jobs, CronJobs and Pods would change\n",
                r.changed, r.objects
            ));
        }
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| e.to_string())?;
    } else if !args.quiet {
        out::err_line(format_args!(
            "render: {} of {} Jobs, CronJobs and Pods changed",
            r.changed, r.objects
        ));
    }
    Ok(if r.invalid > 0 {
        ERROR
    } else if review && r.changed > 0 {
        FAIL
    } else {
        0
    })
}

fn end_stuck(args: EndArgs) -> Result<u8, String> {
    let config = config(&args.policy)?;
    let now = now(args.now.as_deref())?;
    let sidecar = config.parsed.sidecar_container_name.clone();
    let default_namespace = args.namespace.clone().unwrap_or_else(|| "default".into());
    let inputs = with_piped_stdin(&args.inputs);
    let mut found = Vec::new();
    let mut invalid = Vec::new();
    let mut take = |f: Found| match f {
        Found::Object(object, _) => {
            if let Some(t) = end::target_of(&object, &sidecar, now, &default_namespace) {
                if args.namespace.as_ref().is_none_or(|ns| *ns == t.namespace) {
                    found.push(t);
                }
            }
        }
        Found::Invalid(at, why) => invalid.push(format!("{at}: {why}")),
    };
    let program = kubectl::find();
    let mut from_files = None;
    if inputs.is_empty() {
        let kubectl = Kubectl::for_cluster(
            program.clone(),
            &args.context,
            &args.namespace,
            &args.request_timeout,
            args.cluster_timeout,
            END_OFFLINE,
        )?;
        kubectl.get("pods", &mut take)?;
    } else {
        let inputs = read_inputs(&inputs)?;
        let mut held = Held::default();
        for source in &inputs.sources {
            held += read_objects(source, &mut take).map_err(|e| e.to_string())?;
        }
        from_files = Some((inputs, held));
    }
    for why in &invalid {
        out::err_line(format_args!("error: {why}"));
    }
    if let Some((inputs, held)) = &from_files {
        args.empty.check(inputs, *held, END_EXAMPLE)?;
    }
    let ender = Ender {
        program: program.clone().unwrap_or_else(|| PathBuf::from("kubectl")),
        context: args.context.clone(),
        sidecar: sidecar.clone(),
        now,
        timeout: args.cluster_timeout,
    };
    if args.yes && program.is_none() {
        return Err(
            "--yes runs kubectl, and kubectl is not on PATH: put it on PATH, or leave out \
             --yes to print the commands, e.g. `kubectl istio-job-sidecar end-stuck pods.json`"
                .into(),
        );
    }
    out::out(match found.len() {
        0 => format!("No Pod is stuck: none waits on {sidecar}.\n"),
        1 => format!("1 Pod is stuck: its app containers ended while {sidecar} runs.\n"),
        n => format!("{n} Pods are stuck: their app containers ended while {sidecar} runs.\n"),
    });
    let mut failed = 0;
    for target in &found {
        let head = format!(
            "{}/{} (stuck for {})",
            target.namespace,
            target.pod,
            end::stuck_for(target)
        );
        match ender.command(target) {
            Some(command) => out::out(format_args!("{head}:\n  {}\n", command.join(" "))),
            None => out::out(format_args!("{head}:\n")),
        }
        let outcome = ender.end(target, args.yes);
        failed += usize::from(matches!(outcome, Outcome::Failed(_)));
        out::out(format_args!("  {}\n", end::outcome_text(&outcome)));
    }
    if !args.yes && !found.is_empty() {
        out::out("Nothing was run: --yes runs these commands (RBAC: create on pods/exec).\n");
    }
    Ok(if failed > 0 || !invalid.is_empty() {
        ERROR
    } else {
        0
    })
}

fn completion(shell: Shell) -> Result<u8, String> {
    use clap_complete::{generate, Shell as S};
    let shell = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
    };
    let mut command = Cli::command();
    // clap_complete panics when a write fails: the script is written whole
    // first, then to a stdout whose reader may be gone.
    let mut script = Vec::new();
    generate(
        shell,
        &mut command,
        "kubectl-istio_job_sidecar",
        &mut script,
    );
    let mut stdout = UntilGone::new(std::io::stdout().lock());
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())?;
    Ok(0)
}

/// `--now`, or the clock.
fn now(text: Option<&str>) -> Result<i64, String> {
    match text {
        Some(text) => parse_rfc3339(text).ok_or_else(|| {
            format!("--now {text:?}: not an RFC 3339 time; e.g. --now 2025-12-08T16:32:00Z")
        }),
        None => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_secs() as i64),
    }
}
