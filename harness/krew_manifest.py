#!/usr/bin/env python3
"""The krew plugin manifest of a release, from its archives
(.github/workflows/release.yml writes it and attaches it to the release):

    python3 -m harness.krew_manifest --version v0.2.0 --repository owner/name \\
        kubectl-istio_job_sidecar-v0.2.0-*.tar.gz > istio-job-sidecar.yaml
    kubectl krew install --manifest=istio-job-sidecar.yaml

Each archive, named kubectl-istio_job_sidecar-<version>-<rust target>.tar.gz
and holding the binary and the LICENSE at its top, becomes one platform of
the manifest: its os and arch from the target, its download URL on the
release of the tag, its sha256, and the files krew installs (the binary
and the LICENSE, as krew-index asks of every plugin).
"""

import argparse
import hashlib
import json
import os
import sys
import tarfile

BIN = "kubectl-istio_job_sidecar"
# What every archive holds at its top, and krew installs from it.
FILES = (BIN, "LICENSE")

# Rust target -> krew's (os, arch) selector.
PLATFORMS = {
    "x86_64-unknown-linux-musl": ("linux", "amd64"),
    "aarch64-unknown-linux-musl": ("linux", "arm64"),
    "x86_64-apple-darwin": ("darwin", "amd64"),
    "aarch64-apple-darwin": ("darwin", "arm64"),
}

DESCRIPTION = """\
Which Pods are stuck right now because their Istio sidecar outlives the
Job, what the istio-job-sidecar Kubewarden policy would change in each Job,
CronJob and Pod (answered by the policy's own code), the manifests with its
edit applied (a Helm post-renderer, a GitOps step), and the commands that
end today's stuck Pods.

  kubectl istio-job-sidecar scan
  helm template ./chart | kubectl istio-job-sidecar render --diff
  kubectl istio-job-sidecar end-stuck --yes
"""


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_members(path):
    """Exits unless the archive holds every file of FILES at its top."""
    try:
        with tarfile.open(path, "r:gz") as archive:
            names = {os.path.normpath(member.name) for member in archive.getmembers() if member.isfile()}
    except (OSError, tarfile.TarError) as error:
        sys.exit(f"{path}: not a gzipped tar archive ({error})")
    missing = [name for name in FILES if name not in names]
    if missing:
        held = ", ".join(sorted(names)) or "nothing"
        sys.exit(f"{path}: {', '.join(missing)} missing at the archive's top (it holds: {held})")


def q(text):
    """A YAML scalar every reader reads as this string (JSON's quoting)."""
    return json.dumps(text)


def manifest(version, repository, archives):
    platforms = []
    for path in sorted(archives):
        name = os.path.basename(path)
        prefix = f"{BIN}-{version}-"
        if not (name.startswith(prefix) and name.endswith(".tar.gz")):
            sys.exit(f"{name}: not {prefix}<target>.tar.gz")
        target = name[len(prefix):-len(".tar.gz")]
        if target not in PLATFORMS:
            sys.exit(f"{name}: unknown target {target} (known: {', '.join(PLATFORMS)})")
        os_name, arch = PLATFORMS[target]
        check_members(path)
        files = "".join(f"    - from: {q(member)}\n      to: \".\"\n" for member in FILES)
        url = f"https://github.com/{repository}/releases/download/{version}/{name}"
        platforms.append(
            f"  - selector:\n      matchLabels:\n        os: {os_name}\n        arch: {arch}\n"
            f"    uri: {q(url)}\n    sha256: {q(sha256(path))}\n    bin: {BIN}\n"
            f"    files:\n{files}"
        )
    if not platforms:
        sys.exit("no archive given")
    description = "".join(f"    {line}\n" if line else "\n" for line in DESCRIPTION.splitlines())
    return (
        "apiVersion: krew.googlecontainertools.github.com/v1alpha2\n"
        "kind: Plugin\n"
        "metadata:\n"
        "  name: istio-job-sidecar\n"
        "spec:\n"
        f"  version: {q(version)}\n"
        f"  homepage: {q(f'https://github.com/{repository}')}\n"
        "  shortDescription: Jobs stuck on their Istio sidecar, and the policy that ends them\n"
        "  description: |\n"
        f"{description}"
        "  platforms:\n" + "".join(platforms)
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", required=True, help="the release's tag, v<version>")
    parser.add_argument("--repository", required=True, help="owner/name on GitHub")
    parser.add_argument("archives", nargs="+")
    args = parser.parse_args()
    sys.stdout.write(manifest(args.version, args.repository, args.archives))


if __name__ == "__main__":
    main()
