"""What a ``tokenbox`` command pays at start-up: the installed version is looked up only for ``--version`` and
the tokenizer plug-ins only when a name is not built in (``importlib.metadata`` is ≈20 ms of each process);
``--version`` still prints the version, and a plug-in is still found (``tests/engine/test_tokenizers.py``). A plan's
classes are ``model.records``' dataclasses: the standard library's made the 35 a plan imports in ≈20 ms."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tokenbox.core.commands.cliargs import package_version

# a Claude Code transcript: planned with the built-in calibrated estimate (a tiktoken encoding may need the
# version of the package holding its ranks, once, for the rank cache)
SESSION = Path(__file__).parent / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
PLAN_AND_REPORT = (
    "import sys\n"
    "from tokenbox.core.commands.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('importlib.metadata' in sys.modules, 'dataclasses' in sys.modules)\n"
)


def test_a_plan_does_not_look_up_the_installed_version():
    out = subprocess.run([sys.executable, "-c", PLAN_AND_REPORT, "plan", str(SESSION), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.stderr == "" and out.stdout.startswith("{")
    assert out.stdout.rstrip().splitlines()[-1].split()[0] == "False"


def test_a_plan_makes_no_class_with_the_standard_librarys_dataclasses():
    out = subprocess.run([sys.executable, "-c", PLAN_AND_REPORT, "plan", str(SESSION), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.stderr == "" and out.stdout.startswith("{")
    assert out.stdout.rstrip().splitlines()[-1].split()[1] == "False"


def test_version_prints_the_installed_distributions_version():
    out = subprocess.run([sys.executable, "-m", "tokenbox.core.commands.cli", "--version"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout == f"tokenbox {metadata.version('tokenbox')}\n" == f"tokenbox {package_version()}\n"
