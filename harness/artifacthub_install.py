#!/usr/bin/env python3
"""artifacthub-pkg.yml's `install:` text is the README's Install section
(`make artifacthub`):

    kwctl scaffold artifacthub ... | python3 -m harness.artifacthub_install README.md > artifacthub-pkg.yml

kwctl writes an install text of its own, `kwctl scaffold manifest`, whose
ClusterAdmissionPolicy has no failurePolicy, matchConditions or
objectSelector: every Pod CREATE of the cluster would reach policy-server
under Kubewarden's default failure policy. Artifact Hub shows the install
text first, so it says what the README says: the manifest of
examples/native-sidecar.yaml in monitor mode, then protect. The section's
reference links (`[text][name]`) keep working there: the definitions they
use are appended from the end of the README.
"""

import re
import sys

HEADING = "## Install"
KEY = "install: |"
REFERENCE = re.compile(r"\]\[([^\]]+)\]")
DEFINITION = re.compile(r"^\[([^\]]+)\]:\s*(\S+)\s*$")


def install_text(readme):
    """The README's Install section without its heading, followed by the
    definitions of the reference links it uses, in the order of first use."""
    lines = readme.split("\n")
    try:
        start = lines.index(HEADING) + 1
    except ValueError:
        raise ValueError("README has no line %r" % HEADING) from None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = "\n".join(lines[start:end]).strip("\n")
    definitions = {}
    for line in lines:
        match = DEFINITION.match(line)
        if match:
            definitions.setdefault(match.group(1), match.group(2))
    used = []
    for name in REFERENCE.findall(section):
        if name not in definitions:
            raise ValueError("the Install section links [%s], which the README does not define" % name)
        if name not in used:
            used.append(name)
    if used:
        section += "\n\n" + "\n".join("[%s]: %s" % (name, definitions[name]) for name in used)
    return section + "\n"


def replace_install(pkg, text):
    """artifacthub-pkg.yml (as kwctl writes it: `install: |` and a block
    indented by two spaces) with `text` as its install text."""
    lines = pkg.split("\n")
    try:
        start = lines.index(KEY)
    except ValueError:
        raise ValueError("artifacthub-pkg.yml has no line %r" % KEY) from None
    end = start + 1
    while end < len(lines) and (lines[end].startswith("  ") or lines[end] == ""):
        end += 1
    # Blank lines the block ended with belong to what follows it.
    while end > start + 1 and lines[end - 1] == "":
        end -= 1
    block = [("  " + line) if line else "" for line in text.rstrip("\n").split("\n")]
    return "\n".join(lines[: start + 1] + block + lines[end:])


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: kwctl scaffold artifacthub ... | python3 -m harness.artifacthub_install README.md\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        readme = f.read()
    try:
        sys.stdout.write(replace_install(sys.stdin.read(), install_text(readme)))
    except ValueError as e:
        sys.stderr.write("artifacthub_install: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
