"""Packaging, honestly: build the sdist and the wheel, install the wheel into a fresh virtual environment
and run the installed commands from there.

No network: the sdist is built from a copy of the source tree with the test environment's setuptools
(no build isolation), the wheel from the unpacked sdist (so a file missing from the sdist fails here),
and the wheel is installed with ``pip --no-index --no-deps`` into a venv without pip whose dependencies
come from the test environment through a ``.pth`` file. ``tokenbox`` itself is importable there only
from the installed wheel (a ``.pth`` line adds a folder, it does not run that folder's ``.pth`` hooks,
so the editable install of the test environment stays out).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from tests.inprocess import run_main

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
SAMPLES = {"passepartout_turn.yaml", "facet_layout.yaml", "floop_behaviors.yaml", "agent_log.jsonl", "overflow.yaml"}

# One worker runs this module: the module-scoped ``installed`` (sdist, wheel, venv: ~3 s of CPU) is then
# built once, not once on each worker that happens to draw one of its tests.
pytestmark = pytest.mark.xdist_group("packaging")


def test_every_package_folder_is_listed():
    config = PYPROJECT["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    expected = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(ROOT / folder)
            expected.add(".".join([package, *relative.parts]))
    assert expected <= listed, f"add to [tool.setuptools] packages: {sorted(expected - listed)}"


def _backend(call: str, source: Path, out: Path) -> Path:
    """``setuptools.build_meta.<call>(out)`` run in ``source`` by this environment's setuptools."""
    code = f"import setuptools.build_meta as backend, sys; print(backend.{call}({str(out)!r}))"
    result = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return out / result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, the wheel built from it, and a fresh venv with the wheel installed."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    source.mkdir()
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for folder in set(PYPROJECT["tool"]["setuptools"]["package-dir"].values()):
        shutil.copytree(ROOT / folder, source / folder, ignore=junk)
    dist = work / "dist"
    dist.mkdir()
    sdist = _backend("build_sdist", source, dist)
    unpacked = work / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    wheel = _backend("build_wheel", next(unpacked.iterdir()), dist)

    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "test_environment_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    environ = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                             "--no-cache-dir", "--no-compile", "-q", str(wheel)], capture_output=True, text=True, env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return {"sdist": sdist, "wheel": wheel, "venv": env_dir, "purelib": Path(purelib)}


def test_the_sdist_holds_the_sources_and_the_wheel_the_packages(installed):
    with tarfile.open(installed["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "core/__init__.py", "tui/app.tcss", "sample_sessions/facet_layout.yaml"} <= names
    with zipfile.ZipFile(installed["wheel"]) as archive:
        files = set(archive.namelist())
        metadata = archive.read(f"tokenbox-{VERSION}.dist-info/METADATA").decode("utf-8")
        entry_points = archive.read(f"tokenbox-{VERSION}.dist-info/entry_points.txt").decode("utf-8")
    packages = PYPROJECT["tool"]["setuptools"]["packages"]
    for package in packages:
        assert package.replace(".", "/") + "/__init__.py" in files, package
    assert {f"tokenbox/samples/{name}" for name in SAMPLES} <= files
    assert "tokenbox/tui/app.tcss" in files
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in files)
    required = {line.removeprefix("Requires-Dist:").replace(" ", "").lower() for line in metadata.splitlines()
                if line.startswith("Requires-Dist:") and "extra==" not in line.replace(" ", "")}
    assert required == {requirement.replace(" ", "").lower() for requirement in PYPROJECT["project"]["dependencies"]}
    for script, target in PYPROJECT["project"]["scripts"].items():
        assert f"{script} = {target}" in entry_points


def test_the_installed_commands_run_from_the_wheel(installed):
    bin_dir = installed["venv"] / "bin"
    python = bin_dir / "python"
    where = subprocess.run([python, "-c", "import tokenbox.core, tokenbox.tui; print(tokenbox.core.__file__); print(tokenbox.tui.__file__)"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(path).is_relative_to(installed["purelib"]) for path in where), where  # not the source tree
    sample = installed["purelib"] / "tokenbox" / "samples" / "facet_layout.yaml"
    assert sample.read_bytes() == (ROOT / "sample_sessions" / "facet_layout.yaml").read_bytes()

    plan = subprocess.run([bin_dir / "tokenbox", "plan", str(sample), "--json"], capture_output=True, timeout=120)
    assert plan.returncode == 0 and plan.stderr == b"", plan.stderr
    from_wheel = json.loads(plan.stdout)
    from_source = json.loads(run_main(["plan", str(ROOT / "sample_sessions" / "facet_layout.yaml"), "--json"]).stdout)
    assert from_wheel == from_source  # the same plan, byte for byte in its numbers and fingerprint
    rendered = subprocess.run([bin_dir / "tokenbox", "render", str(sample)], capture_output=True, timeout=120).stdout
    assert from_wheel["fingerprint"] == "sha256:" + hashlib.sha256(rendered).hexdigest()

    version = subprocess.run([bin_dir / "tokenbox-tui", "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.strip() == f"tokenbox-tui {VERSION}"
    headless = subprocess.run([bin_dir / "tokenbox", "--version"], capture_output=True, text=True, timeout=120)
    assert headless.stdout.strip() == f"tokenbox {VERSION}"


def test_the_quick_starts_status_line_and_completion_run_the_installed_commands(installed, tmp_path):
    """What the README promises after ``pipx install .`` or ``uv tool install .``: with the commands linked
    into a folder on PATH (as both tools link them into ~/.local/bin), the README's ``statusLine`` setting,
    run through a shell as Claude Code runs it, prints the line the source prints, and both commands print
    the completion scripts the source makes."""
    from tokenbox.core.commands.cli import build_parser as tokenbox_parser
    from tokenbox.core.commands.completion import script
    from tokenbox.tui.cli import build_parser as tui_parser

    on_path = tmp_path / "bin"
    on_path.mkdir()
    for name in PYPROJECT["project"]["scripts"]:
        (on_path / name).symlink_to(installed["venv"] / "bin" / name)
    environ = {**os.environ, "PATH": f"{on_path}{os.pathsep}/usr/bin{os.pathsep}/bin", "NO_COLOR": "1"}

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    settings = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", readme, flags=re.S) if '"statusLine"' in block]
    assert settings, "the README shows no statusLine setting"
    command = settings[0]["statusLine"]["command"]
    transcript = ROOT / "tests" / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    stdin = json.dumps({"transcript_path": str(transcript), "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"}})
    line = subprocess.run(["/bin/sh", "-c", command], input=stdin.encode(), capture_output=True, env=environ, timeout=120)
    from_source = run_main(shlex.split(command)[1:], environ=environ, stdin=stdin.encode())
    assert line.returncode == 0 and line.stderr == b"", line.stderr
    # the transcript's last request recorded 26 080 tokens of input and cache, 13 % of Claude's 200 000
    assert line.stdout == from_source.stdout and line.stdout.startswith(b"ctx 13% "), line.stdout

    for name, parser in (("tokenbox", tokenbox_parser()), ("tokenbox-tui", tui_parser())):
        printed = subprocess.run([name, "--print-completion", "bash"], capture_output=True, text=True, env=environ, timeout=120)
        assert printed.returncode == 0 and printed.stdout == script(parser, "bash"), printed.stderr
