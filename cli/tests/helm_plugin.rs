//! The Helm 4 post-renderer plugin, `cli/helm-plugin/plugin.yaml`, read as
//! Helm 4 reads it and run as Helm 4 runs it, without a Helm binary. Helm
//! 4.2 (helm/helm `internal/plugin`): `loadMetadataV1` decodes the file
//! strictly (`KnownFields`: an unknown top-level key is an error) into
//! `MetadataV1` and checks it (`MetadataV1.Validate`, `Metadata.Validate`):
//! `apiVersion: v1`, a name of `[A-Za-z0-9_-]`, a strict SemVer version, a
//! known type whose `config` decodes strictly into its schema
//! (`postrenderer/v1`: no field at all), a known runtime (`subprocess`:
//! `runtimeConfig` decoded leniently). `--post-renderer NAME` finds the
//! plugin by name and type; the subprocess runtime picks the command of the
//! platform (`getPlatformCommand`), splits it on spaces, expands `$VAR`
//! from the environment plus `HELM_PLUGIN_NAME` and `HELM_PLUGIN_DIR`
//! (`PrepareCommands`), appends `--post-renderer-args`, writes the chart's
//! manifests to its stdin and takes its stdout, refusing an empty one.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use serde::Deserialize;

/// `MetadataV1`, decoded with `KnownFields(true)`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetadataV1 {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    name: String,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    runtime: String,
    #[serde(default)]
    version: String,
    #[serde(rename = "sourceURL", default)]
    source_url: String,
    /// `postrenderer/v1`'s `ConfigPostRendererV1`, decoded strictly: it
    /// has no field.
    #[serde(default)]
    config: Option<ConfigPostRendererV1>,
    #[serde(rename = "runtimeConfig", default)]
    runtime_config: Option<RuntimeConfigSubprocess>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigPostRendererV1 {}

/// `RuntimeConfigSubprocess`, decoded leniently (`yaml.Unmarshal`).
#[derive(Debug, Default, Deserialize)]
struct RuntimeConfigSubprocess {
    #[serde(rename = "platformCommand", default)]
    platform_command: Vec<PlatformCommand>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct PlatformCommand {
    #[serde(default)]
    os: String,
    #[serde(default)]
    arch: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: Vec<String>,
}

fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("helm-plugin")
}

/// `loadMetadata` and the checks Helm makes before it runs the plugin.
fn load(text: &str) -> Result<MetadataV1, String> {
    let metadata: MetadataV1 = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let name_ok = !metadata.name.is_empty()
        && metadata
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err("invalid plugin `name`".into());
    }
    if !strict_semver(&metadata.version) {
        return Err(format!(
            "invalid plugin `version` {:?}: must be valid semver",
            metadata.version
        ));
    }
    if metadata.api_version != "v1" {
        return Err(format!("invalid `apiVersion`: {:?}", metadata.api_version));
    }
    if metadata.kind != "postrenderer/v1" {
        return Err(format!(
            "type {:?}: --post-renderer finds only postrenderer/v1 plugins",
            metadata.kind
        ));
    }
    if metadata.runtime != "subprocess" {
        return Err(format!(
            "runtime {:?}: this plugin runs a program, a subprocess",
            metadata.runtime
        ));
    }
    Ok(metadata)
}

/// Masterminds/semver `StrictNewVersion`: MAJOR.MINOR.PATCH, no leading
/// zeros nor `v`, an optional pre-release and build.
fn strict_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
        })
}

/// Go's names of this platform.
fn goos_goarch() -> (&'static str, &'static str) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    (std::env::consts::OS, arch)
}

/// `getPlatformCommand`: an exact os and arch match first, then the first
/// os match without arch, then the first entry with neither.
fn platform_command(commands: &[PlatformCommand]) -> Option<PlatformCommand> {
    let (os, arch) = goos_goarch();
    let eq = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let (mut chosen, mut found_os) = (None, false);
    for c in commands {
        if eq(&c.os, os) && eq(&c.arch, arch) {
            return Some(c.clone());
        }
        if (!c.os.is_empty() && !eq(&c.os, os)) || !c.arch.is_empty() {
            continue;
        }
        if !found_os && !c.os.is_empty() {
            chosen = Some(c.clone());
            found_os = true;
        } else if chosen.is_none() {
            chosen = Some(c.clone());
        }
    }
    chosen
}

/// Go's `os.Expand`: `$NAME` and `${NAME}`, unknown names empty.
fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, next) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        out.push_str(env.get(name).map(String::as_str).unwrap_or_default());
        rest = next;
    }
    out.push_str(rest);
    out
}

/// `PrepareCommands`: the program and its arguments, `extra` last.
fn prepare(
    metadata: &MetadataV1,
    extra: &[&str],
    env: &BTreeMap<String, String>,
) -> Result<(String, Vec<String>), String> {
    let commands = metadata
        .runtime_config
        .as_ref()
        .map(|r| r.platform_command.as_slice())
        .unwrap_or_default();
    let command = platform_command(commands).unwrap_or_default();
    let mut parts = command.command.split(' ');
    let main = parts.next().unwrap_or_default();
    if main.is_empty() {
        return Err("no plugin command is applicable".into());
    }
    let mut args: Vec<String> = parts.map(|p| expand(p, env)).collect();
    args.extend(command.args.iter().map(|a| expand(a, env)));
    args.extend(extra.iter().map(|a| a.to_string()));
    Ok((expand(main, env), args))
}

/// The plugin run as Helm 4's subprocess runtime runs it, the tool's
/// binary on PATH as an install puts it there: its stdout and stderr, or
/// why Helm fails the install.
fn post_render(
    metadata: &MetadataV1,
    extra: &[&str],
    manifests: &str,
) -> Result<(String, String), String> {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-istio_job_sidecar"))
        .parent()
        .unwrap()
        .to_owned();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.insert("PATH".into(), path.to_string_lossy().into_owned());
    env.insert("HELM_PLUGIN_NAME".into(), metadata.name.clone());
    env.insert("HELM_PLUGIN_DIR".into(), plugin_dir().display().to_string());
    let (main, args) = prepare(metadata, extra, &env)?;
    // Go's exec.Command looks a name without a separator up on PATH.
    let program = if main.contains('/') {
        PathBuf::from(&main)
    } else {
        std::env::split_paths(&path)
            .map(|dir| dir.join(&main))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("exec: {main:?}: executable file not found in $PATH"))?
    };
    let mut child = Command::new(program)
        .args(&args)
        .env_clear()
        .envs(&env)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().unwrap();
    let input = manifests.to_owned();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    writer.join().unwrap();
    if !out.status.success() {
        return Err(format!(
            "plugin {:?} exited with error ({}): {}",
            metadata.name,
            out.status,
            stderr(&out)
        ));
    }
    if stdout(&out).trim().is_empty() {
        return Err(format!(
            "post-renderer {:?} produced empty output",
            metadata.name
        ));
    }
    Ok((stdout(&out), stderr(&out)))
}

fn shipped() -> MetadataV1 {
    let text = std::fs::read_to_string(plugin_dir().join("plugin.yaml")).unwrap();
    load(&text).unwrap_or_else(|why| panic!("Helm 4 refuses cli/helm-plugin/plugin.yaml: {why}"))
}

#[test]
fn helm_4_loads_the_plugin_as_a_post_renderer_of_this_version() {
    let metadata = shipped();
    assert_eq!(metadata.name, "istio-job-sidecar");
    assert_eq!(metadata.version, env!("CARGO_PKG_VERSION"));
    assert!(metadata.config.is_none(), "{:?}", metadata.config);
    assert!(
        metadata.source_url.starts_with("https://"),
        "{}",
        metadata.source_url
    );
}

/// What `helm install NAME CHART --post-renderer istio-job-sidecar
/// --post-renderer-args=--settings=...` gets: exactly what `render` with
/// the same arguments writes.
#[test]
fn helm_4_runs_render_with_the_post_renderer_args() {
    let metadata = shipped();
    let input = helm_stream();
    for extra in [
        &[][..],
        &["--settings", "mode: quitEndpoint", "-n", "batch"][..],
    ] {
        let (out, err) = post_render(&metadata, extra, &input).unwrap();
        let mut args = vec!["render"];
        args.extend_from_slice(extra);
        let direct = run_with_stdin(&args, input.as_bytes());
        assert_eq!(direct.status.code(), Some(0), "{}", stderr(&direct));
        assert_eq!(out, stdout(&direct), "{extra:?}");
        assert_eq!(err, stderr(&direct), "{extra:?}");
        assert_ne!(out, input, "{extra:?}: the policy changes this chart");
    }
    // A document that does not parse fails the install, as with Helm 3.
    let broken = format!("{input}---\nkind: [Job\n");
    let refused = post_render(&metadata, &[], &broken).unwrap_err();
    assert!(refused.contains("exited with error"), "{refused}");
}

/// The checks above are Helm's: each refuses what Helm 4 refuses.
#[test]
fn what_helm_4_refuses_is_refused_here() {
    let good = std::fs::read_to_string(plugin_dir().join("plugin.yaml")).unwrap();
    for (from, to) in [
        ("apiVersion: v1", "apiVersion: v2"),
        ("name: istio-job-sidecar", "name: istio job sidecar"),
        ("type: postrenderer/v1", "type: cli/v1"),
        ("runtime: subprocess", "runtime: wasm"),
        ("sourceURL:", "source:"),
    ] {
        assert!(good.contains(from), "{from}");
        let bad = good.replace(from, to);
        assert!(load(&bad).is_err(), "{to} accepted");
    }
    let version = format!("version: {}", env!("CARGO_PKG_VERSION"));
    assert!(good.contains(&version));
    for wrong in ["version: v1.0.0", "version: 1.0", "version: 01.0.0"] {
        assert!(load(&good.replace(&version, wrong)).is_err(), "{wrong}");
    }
    assert!(load(&format!("{good}config:\n  args: []\n")).is_err());
    assert!(strict_semver("1.2.3-rc.1+build.5"));
    let no_command = MetadataV1 {
        runtime_config: None,
        ..shipped()
    };
    assert_eq!(
        prepare(&no_command, &[], &BTreeMap::new()).unwrap_err(),
        "no plugin command is applicable"
    );
    let env = BTreeMap::from([("HELM_PLUGIN_DIR".to_owned(), "/p".to_owned())]);
    assert_eq!(
        expand("${HELM_PLUGIN_DIR}/x $HELM_PLUGIN_DIR $NONE.", &env),
        "/p/x /p ."
    );
    let (os, arch) = goos_goarch();
    let choose = |commands: &[(&str, &str, &str)]| {
        let commands: Vec<PlatformCommand> = commands
            .iter()
            .map(|(os, arch, command)| PlatformCommand {
                os: os.to_string(),
                arch: arch.to_string(),
                command: command.to_string(),
                args: Vec::new(),
            })
            .collect();
        platform_command(&commands).map(|c| c.command)
    };
    assert_eq!(
        choose(&[("", "", "any"), (os, "", "os"), (os, arch, "exact")]),
        Some("exact".into())
    );
    assert_eq!(
        choose(&[("", "", "any"), (os, "", "os")]),
        Some("os".into())
    );
    assert_eq!(
        choose(&[("plan9", "", "other"), ("", "", "any")]),
        Some("any".into())
    );
    assert_eq!(choose(&[("", arch, "arch without os")]), None);
}
