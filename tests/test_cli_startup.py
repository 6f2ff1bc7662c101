"""What a ``tokenbox`` command pays at start-up: the installed version is looked up only for ``--version`` and
the tokenizer plug-ins only when a name is not built in (``importlib.metadata`` is ≈20 ms of each process);
``--version`` still prints the version, and a plug-in is still found (``tests/engine/test_tokenizers.py``). A plan's
classes are ``model.records``' dataclasses: the standard library's made the 35 a plan imports in ≈20 ms. A plan or a
check of a file that is no database imports no ``sqlite3``, a session without a misspelt key no ``difflib``, and
neither the status line's module (its flags, for ``--help``, are ``statusflags``'): ≈3 ms of each process."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from tokenbox.core.commands.cliargs import package_version

# a Claude Code transcript: planned with the built-in calibrated estimate (a tiktoken encoding may need the
# version of the package holding its ranks, once, for the rank cache)
SAMPLES = Path(__file__).resolve().parents[1] / "sample_sessions"
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


# what a plan or a check whose path never needs them must not import: the modules a function imports when it
# needs them (``sources.database``, ``parse.validator.suggest``, ``commands.entry`` for ``tokenbox statusline``)
DEFERRED = ("sqlite3", "difflib", "tokenbox.core.commands.statusline")
RUN_AND_LIST = (
    "import sys\n"
    "from tokenbox.core.commands.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"print(code, *[name for name in {DEFERRED!r} if name in sys.modules])\n"
)


@pytest.mark.parametrize("argv", [
    ["plan", "--json", str(SESSION)],  # a Claude Code transcript
    # a YAML session, with the built-in estimate (an exact tokenizer's BPE tables cost ≈300 ms more)
    ["check", "--tokenizer", "heuristic", str(SAMPLES / "passepartout_turn.yaml")],
], ids=["plan-transcript", "check-yaml"])
def test_a_plan_or_a_check_imports_no_module_its_path_does_not_need(argv):
    out = subprocess.run([sys.executable, "-c", RUN_AND_LIST, *argv], capture_output=True, text=True, timeout=120)
    assert out.stderr == ""
    assert out.stdout.rstrip().splitlines()[-1] == "0"  # exit 0, and none of DEFERRED imported


# what `tokenbox-tui FILE` imports before it forks the process of its first plan (tui/launch.py), which waits
# for it: not the bundled sample's importlib.resources (a file is named), no database's sqlite3, not Textual
BEFORE_FORK = ("importlib.resources", "sqlite3", "textual")
FORK_AND_LIST = (
    "import sys\n"
    "from tokenbox.tui import firstplan, launch\n"
    "def forked(request):\n"
    f"    print('at fork:', *[name for name in {BEFORE_FORK!r} if name in sys.modules])\n"
    "    raise RuntimeError('no fork in this test')\n"
    "firstplan.FirstPlan.start = forked\n"
    "launch.start(sys.argv[1:])\n"
)


def test_the_tui_imports_only_what_both_processes_need_before_it_forks():
    out = subprocess.run([sys.executable, "-c", FORK_AND_LIST, str(SESSION)], capture_output=True, text=True, timeout=120)
    assert out.stderr == ""
    assert out.stdout.rstrip().splitlines()[-1] == "at fork:"
