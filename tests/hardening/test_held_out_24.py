"""Findings of issue 24's held-out corpus that are not about size: a lone surrogate in a transcript."""

from __future__ import annotations

import io
import json

from tokenbox.core.commands.cli import main
from tokenbox.core.commands.statusline import run as statusline


def test_a_lone_surrogate_in_a_transcript_is_read_as_a_replacement_character(tmp_path, capsys) -> None:
    user, reply = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
    lines = [  # Node's JSON.stringify writes a lone surrogate as an escape
        '{"type":"user","uuid":"' + user + '","parentUuid":null,"sessionId":"s","cwd":"/w","message":{"role":"user",'
        '"content":"half \\ud800 a character, and a whole one \\ud83d\\ude00"}}',
        json.dumps({"type": "assistant", "uuid": reply, "parentUuid": user, "sessionId": "s", "cwd": "/w",
                    "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
                                "content": [{"type": "text", "text": "ok \ud83d"}], "usage": {"input_tokens": 100, "output_tokens": 3}}}),
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for command in (["plan", str(path), "--json"], ["render", str(path)], ["import", str(path)], ["check", str(path)]):
        code = main(command)
        captured = capsys.readouterr()
        assert code == 0 and "internal error" not in captured.err, (command, captured.err)
    assert main(["plan", str(path), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert any("lone surrogate" in w for w in plan["warnings"])
    assert main(["render", str(path)]) == 0
    assert "half \ufffd a character, and a whole one \U0001f600" in capsys.readouterr().out
    out = io.StringIO()
    statusline(["--no-color"], io.StringIO(json.dumps({"transcript_path": str(path)})), out, {})
    assert out.getvalue().startswith("ctx 0%")
