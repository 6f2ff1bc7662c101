"""Packaging: every Python package folder is listed in pyproject, and the wheel ships the samples."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
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


def test_samples_are_package_data():
    names = {p.name for p in files("tokenbox.samples").iterdir()}
    assert {"passepartout_turn.yaml", "facet_layout.yaml", "floop_behaviors.yaml", "agent_log.jsonl", "overflow.yaml"} <= names
