"""``benchmarks.append_breakdown``: the stages of one append worked out from its marks, and the aid run end to
end on a tiny chain (no timing is checked: only that every stage is measured and the stages fit in the total)."""

from __future__ import annotations

import pytest

from benchmarks import append_breakdown
from benchmarks.append_breakdown import STAGES, stages_of


def test_stages_from_marks():
    # written at 10.000; asked at 10.003; planned 10.0035-10.0065; the state 10.007-10.012; a compositor pass
    # before the state (an earlier frame: not this append's) and one at 10.015-10.020; shown at 10.021
    marks = [
        ("compositor", 10.001, 10.002),
        ("ask", 10.003, 10.0031),
        ("plan", 10.0035, 10.0065),
        ("state", 10.007, 10.012),
        ("compositor", 10.015, 10.020),
    ]
    stages = stages_of(marks, 10.000, 10.021)
    expected = {"watch": 0.003, "plan": 0.003, "state": 0.005, "frame wait": 0.003, "compositor": 0.005, "total": 0.021}
    assert stages == pytest.approx(expected, abs=1e-9)


def test_the_aid_runs_and_its_stages_fit_in_the_total(capsys):
    assert append_breakdown.main(["--mb", "0.05", "--appends", "4", "--spacing", "0.05"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("0.05 MB chain, 1 appends"), out
    line = out[1]
    values = {}
    for stage in STAGES:
        assert f"{stage} " in line, (stage, line)
        values[stage] = float(line.split(f"{stage} ")[1].split()[0])
    assert all(value >= 0 for value in values.values()), values
    assert values["total"] > 0
    # sequential stages: their sum is within the total (a median of one append is that append)
    assert sum(values[stage] for stage in STAGES[:-1]) <= values["total"] + 0.2, values


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        append_breakdown.main(["--appends", "0"])
    assert exited.value.code == 2
    assert "--appends must be at least 1" in capsys.readouterr().err
