"""The path e2e.bats calls: runs `python3 -m harness.cli_tests.kwctl_agrees`
(harness/cli_tests/kwctl_agrees.py) with the same arguments, the repository
root on the module path."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
os.execve(sys.executable, [sys.executable, "-m", "harness.cli_tests.kwctl_agrees", *sys.argv[1:]], env)
