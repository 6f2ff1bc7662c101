"""CONTRACT §10: sessions from plain data, a log an agent appends to, and gates on a log's history."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

import pytest
from tokenbox.core import Engine, SessionError, SessionLog, load_session, load_turns, session_from_dict
from tokenbox.core.commands.cli import main as cli

REAL = Path(__file__).resolve().parent / "fixtures" / "real_sessions"
SESSION = {
    "tokenbox": 1,
    "tokenizer": "o200k_base",
    "budget": {"max_ctx": 4000},
    "sections": [
        {"id": "prefix", "kind": "prefix", "assistant_name": "Bot", "tools": "run(cmd)"},
        {"id": "logs", "kind": "logs", "text": "\n".join(f"line {i}" for i in range(40))},
        {"id": "user", "kind": "user", "text": "Fix the failing test."},
    ],
}


def test_a_dict_plans_like_the_same_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SESSION), encoding="utf-8")
    from_dict = Engine().plan(session_from_dict(SESSION)).to_dict()
    from_file = Engine().plan(load_session(path)).to_dict()
    assert from_dict == from_file


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (lambda d: d["sections"][1].update(priorty=1), "<dict>:sections[1].priorty", "unknown key 'priorty'"),
        (lambda d: d["sections"][2].update(priority="high"), "<dict>:sections[2].priority", "whole number"),
        (lambda d: d.update(tokenbox=2), "<dict>:tokenbox", "schema version"),
        (lambda d: d["budget"].update(max_ctx=0), "<dict>:budget.max_ctx", "max_ctx"),
        (lambda d: d["sections"].append({"id": "logs", "text": "again"}), "<dict>:sections[3]", "duplicate section id"),
    ],
)
def test_errors_name_the_path_and_match_the_files(tmp_path, change, where, words):
    data = json.loads(json.dumps(SESSION))
    change(data)
    with pytest.raises(SessionError) as from_dict:
        session_from_dict(data)
    assert str(from_dict.value).startswith(where + ": ") and words in str(from_dict.value)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionError) as from_file:
        load_session(path)
    assert type(from_file.value) is type(from_dict.value)
    assert from_file.value.problem.split(" (first at")[0] == from_dict.value.problem.split(" (first at")[0]


def test_values_that_are_not_json_are_refused():
    with pytest.raises(SessionError, match=r"<dict>:sections\[0\].text: a value of type bytes"):
        session_from_dict({"tokenbox": 1, "sections": [{"id": "a", "text": b"x"}]})
    with pytest.raises(SessionError, match="not a finite number"):
        session_from_dict({"tokenbox": 1, "sections": [{"id": "a", "text": "x", "grow": float("nan")}]})


def _append_many(path: str, worker: int, count: int) -> None:
    log = SessionLog(path)
    for turn in range(count):
        data = json.loads(json.dumps(SESSION))
        data["sections"][2]["text"] = f"worker {worker} turn {turn} " + "x" * 5000  # lines longer than PIPE_BUF
        log.append(data)


def test_appends_from_threads_and_processes_are_whole_lines(tmp_path):
    path = str(tmp_path / "agent.jsonl")
    threads = [threading.Thread(target=_append_many, args=(path, w, 10)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_append_many, args=(path, 100 + w, 10)) for w in range(4)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
        assert p.exitcode == 0
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 120 and all(json.loads(line)["tokenbox"] == 1 for line in lines)
    assert len(load_turns(path)) == 120


def test_a_logged_session_object_round_trips(tmp_path):
    session = session_from_dict(SESSION)
    path = tmp_path / "agent.jsonl"
    SessionLog(path).append(session)
    assert Engine().plan(load_turns(path)[-1]).to_dict() == Engine().plan(session).to_dict()


# ---------------------------------------------------------------- gates on history


def _log(tmp_path, tools: list[str], users: list[str]) -> Path:
    path = tmp_path / "agent.jsonl"
    for tool, user in zip(tools, users, strict=True):
        data = json.loads(json.dumps(SESSION))
        data["sections"][0]["tools"] = tool
        data["sections"][2]["text"] = user
        data["budget"]["max_ctx"] = 100_000
        SessionLog(path).append(data)
    return path


def test_stable_prefix_fails_when_the_last_turn_changed_the_prefix(tmp_path, capsys):
    same = _log(tmp_path, ["run(cmd)", "run(cmd)"], ["first", "second"])
    assert cli(["check", str(same), "--stable-prefix"]) == 0
    changed = tmp_path / "changed.jsonl"
    changed.write_text(same.read_text(encoding="utf-8"), encoding="utf-8")
    data = json.loads(json.dumps(SESSION))
    data["sections"][0]["tools"] = "run(cmd)\nread(path)"
    data["budget"]["max_ctx"] = 100_000
    SessionLog(changed).append(data)
    assert cli(["check", str(changed), "--stable-prefix"]) == 1
    assert capsys.readouterr().err == (f"tokenbox: check failed: {changed}: turn 3: the prefix changed (prefix): "
                                       "the provider's prompt cache misses\n")


def test_max_growth_on_a_transcript(capsys):
    transcript = str(REAL / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    assert cli(["check", transcript, "--max-growth", "1000"]) == 0  # 25854 -> 26080
    assert cli(["check", transcript, "--turn", "9", "--max-growth", "1000"]) == 1  # 22895 -> 25854
    assert "grew by 2959 tokens" in capsys.readouterr().err
    assert cli(["check", transcript, "--stable-prefix"]) == 0


def test_a_compaction_breaks_the_prefix_and_one_turn_passes(tmp_path, capsys):
    compacted = str(REAL / "claude-code_fixture_compact-after-rewind.jsonl")
    assert cli(["check", compacted, "--stable-prefix"]) == 1
    assert "is not where the newest request starts" in capsys.readouterr().err
    one = tmp_path / "one.jsonl"
    SessionLog(one).append(SESSION)
    assert cli(["check", str(one), "--stable-prefix", "--max-growth", "0"]) == 0
    assert "one turn only" in capsys.readouterr().out


def test_the_readme_example_loop_runs_as_written(tmp_path, monkeypatch, capsys):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Inside an agent's loop"):]
    code = section[section.index("```python") + len("```python"): section.index("```", section.index("```python") + 9)]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == ["1", "2", "3"]
    turns = load_turns(tmp_path / "agent.jsonl")
    assert len(turns) == 3
    plan = Engine().plan(turns[-1])
    assert plan.ok and plan.tokens_after <= plan.budget.available
    assert plan.section("logs").action in ("compressed", "truncated")
