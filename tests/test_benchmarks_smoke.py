"""The benchmark command runs end to end and prints every figure (sizes tiny; no timing is checked).

The figures run in three groups, each its own process, so the test workers share them out (each process
costs ~0.5 s of CPU before its first figure: imports and the tokenizer; the groups take 4-11 s each).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = "| # | figure | min / median / max | baseline | baseline min / median / max | ratio | target | result |"

# ``--only`` value → the figures its table must hold (figure 1's run also prints 2, 3 and 4)
GROUPS = {
    "1,5,6,7": ("1", "2", "3", "4", "5", "6", "7"),
    "8": ("8",),
    "9,10,11": ("9", "10", "11"),
}


@pytest.mark.parametrize("only", list(GROUPS))
def test_benchmarks_print_every_figure(only: str):
    env = dict(os.environ)
    env.pop("TOKENBOX_CACHE", None)
    with subprocess.Popen(
        [sys.executable, "-m", "benchmarks", "--quick", "--tiny", "--only", only],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:
        out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-2000:] + out[-2000:]
    # every tmux server the run started is gone, its socket file too (tmux 3.3 leaves it after kill-server)
    sockets = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}")
    left = [name for name in (os.listdir(sockets) if os.path.isdir(sockets) else [])
            if name.startswith(f"tokenbox-bench-{process.pid}-")]
    assert not left, left
    assert "machine: nproc" in out, out[-3000:]
    assert HEADER in out, out[-3000:]
    table = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    for figure in GROUPS[only]:
        assert any(line.startswith(f"| {figure} |") for line in table), f"figure {figure} missing\n" + out[-3000:]
    for row in table[1:]:
        assert row.rstrip().endswith(("| PASS |", "| MISS |", "| info |")), row
    # a figure that could not be measured says why: the run's problems, whole, if one flakes
    assert "PROBLEM" not in out, "\n".join(line for line in out.splitlines() if "PROBLEM" in line or "not measured" in line)


def test_groups_cover_every_figure():
    from benchmarks.run import FIGURES

    assert set(FIGURES) == {figure for figures in GROUPS.values() for figure in figures}
