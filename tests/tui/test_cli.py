"""The ``tokenbox-tui`` command line: help, bad flags (one line, exit 2), the bundled sample."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.tui import app as app_module
from tokenbox.tui import view
from tokenbox.tui.cli import DEFAULT_SAMPLE, parse_args, sample_path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokenbox.tui", *args], capture_output=True, text=True, timeout=60)


def test_help():
    result = run("--help")
    assert result.returncode == 0
    for word in ("FILE", "--budget", "--tokenizer", "bundled sample", "only ever read", "?"):
        assert word in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--budget", "0"], "--budget"),
        (["--budget", "lots"], "--budget"),
        (["--tokenizer", "nope"], "unknown tokenizer 'nope'"),
        (["--trimming", "sideways"], "--trimming"),
        (["--frobnicate"], "unrecognized arguments"),
        (["--warn-levels", "90,80,100"], "--warn-levels"),
        (["a.yaml", "b.yaml"], "unrecognized arguments"),
    ],
)
def test_bad_flags_are_one_line_exit_2(args, needle, capsys):
    code = app_module.main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("tokenbox: error: ")
    assert needle in err
    assert "(" in err and err.rstrip().endswith(")")  # a remedy
    assert "Traceback" not in err


def test_bad_flag_in_a_real_process():
    result = run("--budget", "-3")
    assert result.returncode == 2
    assert result.stderr.startswith("tokenbox: error: ") and result.stderr.count("\n") == 1


def test_flags_are_passed_to_the_app(monkeypatch):
    seen = {}

    def fake_run(self):
        seen.update(path=self.path, budget=self.budget_flag, tokenizer=self.state.tokenizer, trimming=self.state.trimming)

    monkeypatch.setattr(app_module.TokenboxApp, "run", fake_run)
    assert app_module.main(["x.yaml", "--budget", "900", "--tokenizer", "heuristic", "--trimming", "progressive"]) == 0
    assert seen == {"path": os.path.abspath("x.yaml"), "budget": 900, "tokenizer": "heuristic", "trimming": "progressive"}


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ([], {}, DEFAULT_WARN_LEVELS),
        ([], {"TOKENBOX_WARN_LEVELS": "50,60,70"}, (50, 60, 70)),
        (["--warn-levels", "40, 80, 95"], {"TOKENBOX_WARN_LEVELS": "50,60,70"}, (40, 80, 95)),  # the flag wins
    ],
)
def test_warn_levels_colour_and_notify(args, env, expected, monkeypatch, tmp_path):
    """The levels in force (flag, environment, config file) are what the views colour and notify by."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    seen = {}

    def fake_run(self):
        levels = self.state.warn_levels
        seen["levels"] = levels
        seen["bands"] = [view.band(p, levels) for p in (expected[0] - 1, expected[0], expected[1], expected[2])]
        seen["level"] = view.level(expected[1], levels)

    monkeypatch.setattr(app_module.TokenboxApp, "run", fake_run)
    assert app_module.main(["x.yaml", *args]) == 0
    assert seen == {"levels": expected, "bands": [0, 1, 2, 3], "level": "crit"}


def test_warn_levels_from_the_config_file(monkeypatch, tmp_path, capsys):
    (tmp_path / "tokenbox").mkdir()
    (tmp_path / "tokenbox" / "config.yaml").write_text("max_ctx: 4000\nwarn_levels: [30, 40, 50]\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("TOKENBOX_WARN_LEVELS", raising=False)
    seen = {}
    monkeypatch.setattr(app_module.TokenboxApp, "run", lambda self: seen.update(levels=self.state.warn_levels))
    assert app_module.main(["x.yaml"]) == 0
    assert seen["levels"] == (30, 40, 50)
    (tmp_path / "tokenbox" / "config.yaml").write_text("warn_levels: [90, 10, 50]\n")
    assert app_module.main(["x.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenbox: error: ") and "warn_levels in the config file" in err and err.count("\n") == 1


def test_no_file_opens_the_bundled_sample(monkeypatch):
    seen = {}

    def fake_run(self):
        seen["path"] = self.path
        seen["exists"] = os.path.isfile(self.path)

    monkeypatch.setattr(app_module.TokenboxApp, "run", fake_run)
    assert app_module.main([]) == 0
    assert os.path.basename(seen["path"]) == DEFAULT_SAMPLE and seen["exists"]


def test_sample_path_is_a_real_file():
    with contextlib.ExitStack() as stack:
        path = sample_path(stack)
        assert os.path.isfile(path) and os.path.basename(path) == DEFAULT_SAMPLE
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        bundled = Path(__file__).resolve().parents[2] / "sample_sessions" / DEFAULT_SAMPLE
        assert text == bundled.read_text(encoding="utf-8")  # the bundled sample itself, byte for byte
        from tokenbox.core import load_session

        assert load_session(path).sections  # and a session tokenbox reads


def test_parse_args_defaults():
    options = parse_args([])
    assert options.file is None and options.budget is None and options.tokenizer is None
