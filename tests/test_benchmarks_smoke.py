"""The benchmark command runs end to end and prints every figure (sizes tiny; no timing is checked)."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_benchmarks_print_every_figure():
    env = dict(os.environ)
    env.pop("TOKENBOX_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--tiny"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:] + out[-2000:]
    assert "machine: nproc" in out
    assert "| # | figure | min / median / max | baseline | baseline min / median / max | ratio | target | result |" in out
    table = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    for figure in ("1", "2", "3", "4", "5", "6", "7", "8", "9"):
        assert any(line.startswith(f"| {figure} |") for line in table), f"figure {figure} missing"
    for row in table[1:]:
        assert row.rstrip().endswith(("| PASS |", "| MISS |", "| info |")), row
    assert "PROBLEM" not in out
