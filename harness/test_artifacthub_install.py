"""artifacthub-pkg.yml's install text is the README's Install section.

    python3 -m pytest -q harness/test_artifacthub_install.py   # from the repository root
"""
import unittest
from pathlib import Path

import yaml

from . import artifacthub_install

ROOT = Path(__file__).resolve().parent.parent

# The shape kwctl scaffold artifacthub writes around its install text.
KWCTL = """\
version: 1.0.0
install: |
  The policy can be obtained using kwctl:
  ```console
  kwctl pull ghcr.io/example/p:v1.0.0
  ```

  Then, generate the policy manifest.
maintainers:
- name: someone
"""

README = """\
# p

## Install

Apply [the manifest][m]:

```yaml
kind: ClusterAdmissionPolicy
```

  indented

## Settings

See [settings][s].

[m]: https://example.com/m.yaml
[s]: https://example.com/s.md
"""


class InstallText(unittest.TestCase):
    def test_the_section_with_the_definitions_it_uses(self):
        self.assertEqual(
            artifacthub_install.install_text(README),
            "Apply [the manifest][m]:\n\n```yaml\nkind: ClusterAdmissionPolicy\n```\n\n  indented\n\n"
            "[m]: https://example.com/m.yaml\n",
        )

    def test_a_reference_without_definition_is_an_error(self):
        with self.assertRaisesRegex(ValueError, r"\[gone\]"):
            artifacthub_install.install_text("## Install\n\nSee [x][gone].\n")

    def test_no_section_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "## Install"):
            artifacthub_install.install_text("# p\n\n## Usage\n")


class ReplaceInstall(unittest.TestCase):
    def test_kwctls_text_replaced_and_the_rest_kept(self):
        text = artifacthub_install.install_text(README)
        out = artifacthub_install.replace_install(KWCTL, text)
        parsed = yaml.safe_load(out)
        self.assertEqual(parsed["install"], text)
        self.assertEqual(parsed["version"], "1.0.0")
        self.assertEqual(parsed["maintainers"], [{"name": "someone"}])
        self.assertNotIn("kwctl pull", out)

    def test_no_install_key_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "install"):
            artifacthub_install.replace_install("version: 1.0.0\n", "x\n")

    def test_the_committed_file_carries_the_readmes_section(self):
        # What `make artifacthub` writes, checked without kwctl: the
        # committed file is unchanged by putting the README's section in it.
        committed = (ROOT / "artifacthub-pkg.yml").read_text(encoding="utf-8")
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        text = artifacthub_install.install_text(readme)
        self.assertEqual(artifacthub_install.replace_install(committed, text), committed)
        self.assertEqual(yaml.safe_load(committed)["install"], text)


if __name__ == "__main__":
    unittest.main()
