//! What a release ships: the krew manifest (`harness/krew_manifest.py`, run
//! by `.github/workflows/release.yml`): one platform per archive the release
//! builds, each with the archive's sha256, the binary kubectl runs and the
//! LICENSE; the archives as the workflow packs them; the crates as
//! `cargo package` would ship them.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

fn release_targets() -> Vec<String> {
    let workflow = root().join(".github/workflows/release.yml");
    let workflow: Value =
        serde_yaml::from_str(&std::fs::read_to_string(workflow).unwrap()).unwrap();
    let include = &workflow["jobs"]["cli"]["strategy"]["matrix"]["include"];
    include
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["target"].as_str().unwrap().to_owned())
        .collect()
}

/// The shell lines of the cli job's step that packs the archive (those that
/// name the asset and run `tar`), as the workflow runs them.
fn packing_lines() -> String {
    let workflow = root().join(".github/workflows/release.yml");
    let workflow: Value =
        serde_yaml::from_str(&std::fs::read_to_string(workflow).unwrap()).unwrap();
    let steps = workflow["jobs"]["cli"]["steps"].as_array().unwrap();
    let run = steps
        .iter()
        .filter_map(|step| step["run"].as_str())
        .find(|run| run.contains("tar "))
        .expect("a step of the cli job packs the archive with tar");
    let lines: Vec<&str> = run
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("asset=") || line.starts_with("tar "))
        .collect();
    assert_eq!(lines.len(), 2, "{run}");
    lines.join("\n")
}

/// Packs the archive of `target` as the release workflow does, in a
/// checkout at `workspace` where cargo built a stand-in binary.
fn pack(workspace: &Path, target: &str) -> std::path::PathBuf {
    let release = workspace.join("target").join(target).join("release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::write(
        release.join("kubectl-istio_job_sidecar"),
        format!("the binary for {target}"),
    )
    .unwrap();
    let out = Command::new("bash")
        .current_dir(workspace)
        .env("GITHUB_WORKSPACE", workspace)
        .env("GITHUB_REF_NAME", "v9.8.7")
        .env("TARGET", target)
        .args(["-euc", &packing_lines()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    workspace.join(format!("kubectl-istio_job_sidecar-v9.8.7-{target}.tar.gz"))
}

fn krew_manifest(archives: &[String]) -> std::io::Result<std::process::Output> {
    Command::new("python3")
        .current_dir(root())
        .args(["-m", "harness.krew_manifest"])
        .args([
            "--version",
            "v9.8.7",
            "--repository",
            "example/istio-job-sidecar",
        ])
        .args(archives)
        .output()
}

#[test]
fn the_license_is_the_apache_2_0_text_and_every_crate_ships_it() {
    let license = std::fs::read_to_string(root().join("LICENSE")).unwrap();
    assert!(
        license
            .trim_start()
            .starts_with("Apache License\n                           Version 2.0, January 2004"),
        "{}",
        &license[..200.min(license.len())]
    );
    assert!(license.contains("END OF TERMS AND CONDITIONS"));
    let cargo_toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(cargo_toml.contains("license = \"Apache-2.0\""));
    for package in ["istio-job-sidecar-policy", "istio-job-sidecar-cli"] {
        let out = Command::new(env!("CARGO"))
            .current_dir(root())
            .args([
                "package",
                "--list",
                "--offline",
                "--allow-dirty",
                "-p",
                package,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{package}: {}", stderr(&out));
        let files = stdout(&out);
        assert!(
            files.lines().any(|file| file == "LICENSE"),
            "{package} would ship without its LICENSE:\n{files}"
        );
    }
    // The tool's crate ships the top-level text itself, not a copy that
    // could drift from it.
    assert_eq!(
        std::fs::read_to_string(root().join("cli/LICENSE")).unwrap(),
        license
    );
}

#[test]
fn the_krew_manifest_has_every_archive_with_its_checksum() {
    let dir = tempdir("krew");
    std::fs::copy(root().join("LICENSE"), dir.join("LICENSE")).unwrap();
    let targets = release_targets();
    assert!(targets.len() >= 3, "{targets:?}");
    let mut archives = Vec::new();
    for target in &targets {
        archives.push(pack(&dir, target).display().to_string());
    }
    let Ok(out) = krew_manifest(&archives) else {
        return missing("python3", "apt-get install python3");
    };
    assert!(out.status.success(), "{}", stderr(&out));
    let manifest: Value = serde_yaml::from_str(&stdout(&out)).unwrap();
    assert_eq!(manifest["kind"], "Plugin");
    assert_eq!(manifest["metadata"]["name"], "istio-job-sidecar");
    assert_eq!(manifest["spec"]["version"], "v9.8.7");
    let platforms = manifest["spec"]["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), targets.len());
    for archive in &archives {
        let name = Path::new(archive).file_name().unwrap().to_str().unwrap();
        let platform = platforms
            .iter()
            .find(|p| {
                p["uri"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("/releases/download/v9.8.7/{name}"))
            })
            .unwrap_or_else(|| panic!("{name} missing"));
        let sum = Command::new("sha256sum").arg(archive).output().unwrap();
        let sum = stdout(&sum).split_whitespace().next().unwrap().to_owned();
        assert_eq!(platform["sha256"], sum.as_str(), "{name}");
        assert_eq!(platform["bin"], "kubectl-istio_job_sidecar");
        let files: Vec<&str> = platform["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| file["from"].as_str().unwrap())
            .collect();
        assert_eq!(files, ["kubectl-istio_job_sidecar", "LICENSE"], "{name}");
        let labels = &platform["selector"]["matchLabels"];
        assert!(
            ["linux", "darwin"].contains(&labels["os"].as_str().unwrap()),
            "{labels}"
        );
    }
    // An archive of a target krew has no platform for is refused.
    let odd = dir.join("kubectl-istio_job_sidecar-v9.8.7-riscv64gc-unknown-linux-gnu.tar.gz");
    std::fs::write(&odd, "x").unwrap();
    let refused = Command::new("python3")
        .current_dir(root())
        .args(["-m", "harness.krew_manifest"])
        .args([
            "--version",
            "v9.8.7",
            "--repository",
            "e/x",
            odd.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    // So is an archive that would install the binary without its LICENSE.
    let bare_dir = tempdir("krew-bare");
    std::fs::write(bare_dir.join("kubectl-istio_job_sidecar"), "binary").unwrap();
    let bare = dir.join("kubectl-istio_job_sidecar-v9.8.7-x86_64-apple-darwin.tar.gz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&bare)
        .arg("-C")
        .arg(&bare_dir)
        .arg("kubectl-istio_job_sidecar")
        .output()
        .unwrap();
    assert!(tar.status.success(), "{}", stderr(&tar));
    let refused = krew_manifest(&[bare.display().to_string()]).unwrap();
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("LICENSE missing"),
        "{}",
        stderr(&refused)
    );
}
