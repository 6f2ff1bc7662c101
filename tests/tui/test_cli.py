"""The ``tokenbox-tui`` command line: help, bad flags (one line, exit 2), the bundled sample."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest
from tokenbox.tui import app as app_module
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
        seen.update(path=self.path, budget=self._budget_flag, tokenizer=self._tokenizer, trimming=self._trimming)

    monkeypatch.setattr(app_module.TokenboxApp, "run", fake_run)
    assert app_module.main(["x.yaml", "--budget", "900", "--tokenizer", "heuristic", "--trimming", "progressive"]) == 0
    assert seen == {"path": os.path.abspath("x.yaml"), "budget": 900, "tokenizer": "heuristic", "trimming": "progressive"}


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
        assert os.path.isfile(path)
        with open(path, encoding="utf-8") as handle:
            assert handle.read().startswith("#") or "tokenbox: 1" in handle.read()


def test_parse_args_defaults():
    options = parse_args([])
    assert options.file is None and options.budget is None and options.tokenizer is None
