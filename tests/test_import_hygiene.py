"""The shape of ``tokenbox.core`` holds: no UI code in it, no import inside a function without a named
reason, and no module reaching into another's private names. (The layers and the absence of import
cycles are import-linter contracts in pyproject.toml, which ``.ci/run`` checks with ``lint-imports``.)"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"
TUI = ROOT / "tui"
FORBIDDEN = ("textual", "rich", "tokenbox.tui")


def _modules(*folders: Path) -> list[tuple[Path, ast.Module, list[str]]]:
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            found.append((path, ast.parse(text), text.split("\n")))
    return found


def test_importing_core_loads_no_ui_modules():
    code = (
        "import sys, tokenbox.core, tokenbox.core.commands.cli, tokenbox.core.analysis.report; "
        "import tokenbox.core.sources.formats, tokenbox.core.analysis.breakdown; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or m.startswith('tokenbox.tui')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_core_module_imports_ui_code():
    offenders = []
    for path, tree, _ in _modules(CORE):
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


def _function_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if inside:
                    found.append(child)
            else:
                visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return found


def _is_import_line(line: str) -> bool:
    return line.lstrip().startswith(("from ", "import "))


def test_imports_inside_functions_name_the_start_up_cost_they_save():
    """An import inside a function is there to keep some start-up light; a ``# start-up:`` comment on it,
    on another line of its run of imports, or on the line above that run says which."""
    unexplained = []
    for path, tree, lines in _modules(CORE):
        for node in _function_imports(tree):
            first = last = node.lineno - 1
            while first > 0 and _is_import_line(lines[first - 1]):
                first -= 1
            while last + 1 < len(lines) and _is_import_line(lines[last + 1]):
                last += 1
            run = lines[first : last + 1] + ([lines[first - 1]] if first > 0 else [])
            if not any("# start-up:" in line for line in run):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not unexplained, "\n".join(unexplained)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def test_no_module_imports_another_modules_private_names():
    """What modules share is public: no ``from m import _name``, no ``m._name`` on an imported module."""
    offenders = []
    for path, tree, _ in _modules(CORE, TUI):
        modules: dict[str, str] = {}  # local name -> the tokenbox module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tokenbox"):
                for alias in node.names:
                    if _private(alias.name):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {alias.name}")
                    elif _is_module(f"{node.module}.{alias.name}"):
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("tokenbox") and alias.asname:
                        modules[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and _private(node.attr)):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {modules[node.value.id]}.{node.attr}")
    assert not offenders, "\n".join(offenders)


def test_the_import_contracts_hold():
    """``lint-imports`` (the layers, no UI in core, ``record`` only under ``commands``, no cycle): also
    run by ``.ci/run``; here so that the suite alone catches a broken layer."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
