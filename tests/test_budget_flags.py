"""CONTRACT §11 "One set of budget flags": ``plan``, ``render`` and ``check`` all take ``--reserve-out``,
which overrides a request's ``max_tokens``."""

from __future__ import annotations

import json

import pytest
from tokenbox.core.commands.cli import main


@pytest.fixture
def request_file(tmp_path):
    messages = []
    for number in range(40):
        messages.append({"role": "user", "content": f"question {number}: " + "please explain the design of this module. " * 60})
        messages.append({"role": "assistant", "content": f"answer {number}: " + "the module keeps its state in one place. " * 60})
    messages.append({"role": "user", "content": "and now?"})
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "system": "You are a helpful assistant.", "messages": messages}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return str(path)


def test_render_packs_into_the_budget_less_the_reserve_the_flag_names(request_file, capsys) -> None:
    # max_tokens 32000 leaves no room in 20000: without the flag the request cannot be packed
    assert main(["render", request_file, "--format", "anthropic", "--budget", "20000"]) == 2
    assert "- 32000 = -12000 tokens available" in capsys.readouterr().err
    assert main(["render", request_file, "--format", "anthropic", "--budget", "20000", "--reserve-out", "4000"]) == 0
    packed = json.loads(capsys.readouterr().out)
    assert packed["max_tokens"] == 4000  # the reply limit the input was packed for
    assert main(["plan", request_file, "--json", "--budget", "20000", "--reserve-out", "4000"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["budget"] == {"max_ctx": 20000, "reserve_out": 4000, "headroom": 0, "available": 16000}
    assert plan["tokens"]["before"] > 20000 and plan["tokens"]["after"] <= 16000
    assert len(packed["messages"]) < 81  # the oldest messages went


def test_check_plan_and_render_share_the_flag(request_file, capsys) -> None:
    for command in ("plan", "render", "check"):
        assert main([command, request_file, "--budget", "200000", "--reserve-out", "1000"]) == 0, command
    capsys.readouterr()
    assert main(["plan", request_file, "--reserve-out", "x"]) == 2
    assert "--reserve-out" in capsys.readouterr().err
