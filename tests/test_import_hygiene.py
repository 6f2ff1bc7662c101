"""``tokenbox.core`` stays free of UI: it never imports textual, rich or tokenbox.tui."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"
FORBIDDEN = ("textual", "rich", "tokenbox.tui")


def test_importing_core_loads_no_ui_modules():
    code = (
        "import sys, tokenbox.core, tokenbox.core.commands.cli, tokenbox.core.analysis.report; "
        "import tokenbox.core.sources.readers; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or m.startswith('tokenbox.tui')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_core_module_imports_ui_code():
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                    offenders.append(f"{path.name}: {name}")
    assert not offenders
