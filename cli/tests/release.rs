//! The release's krew manifest (`harness/krew_manifest.py`, run by
//! `.github/workflows/release.yml`): one platform per archive the release
//! builds, each with the archive's sha256 and the binary kubectl runs.

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

#[test]
fn the_krew_manifest_has_every_archive_with_its_checksum() {
    let dir = tempdir("krew");
    let targets = release_targets();
    assert!(targets.len() >= 3, "{targets:?}");
    let mut archives = Vec::new();
    for target in &targets {
        let archive = dir.join(format!("kubectl-istio_job_sidecar-v9.8.7-{target}.tar.gz"));
        std::fs::write(&archive, format!("an archive for {target}")).unwrap();
        archives.push(archive.display().to_string());
    }
    let out = Command::new("python3")
        .current_dir(root())
        .args(["-m", "harness.krew_manifest"])
        .args([
            "--version",
            "v9.8.7",
            "--repository",
            "example/istio-job-sidecar",
        ])
        .args(&archives)
        .output();
    let Ok(out) = out else {
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
}
