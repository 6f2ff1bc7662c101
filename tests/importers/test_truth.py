"""CONTRACT §7 on Claude Code transcripts: the headline is what the request cost, nothing is lost.

Real transcripts (tests/fixtures/real_sessions, provenance in its README) check the headline per
request; small transcripts written here in Claude Code 2.x's layout check each reconstruction rule:
parallel calls, rewinds, compaction, a dangling parent, a cycle, a self-parent, a repeated uuid and
synthetic messages.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from tokenbox.core import Engine, load_session, load_threads, load_turns
from tokenbox.core.commands.cli import main as cli_main

from tests.importers.support import TRANSCRIPT_A, TRANSCRIPT_B

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real_sessions"
COMPACT = REAL / "claude-code_fixture_compact-after-rewind.jsonl"
SHOWCASE = REAL / "claude-code_fixture_minimal-showcase" / "55550000-0000-4000-8000-000000000001.jsonl"


def _requests(path: Path) -> list[tuple[int, int, int]]:
    """(first line index, last line index, recorded context) of each main-thread request, read raw."""
    out: dict[str, list[int]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        d = json.loads(line)
        m = d.get("message") or {}
        if d.get("type") != "assistant" or d.get("isSidechain") or m.get("model") == "<synthetic>" or not m.get("usage"):
            continue
        u = m["usage"]
        ctx = u["input_tokens"] + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0)
        out.setdefault(m["id"], [i, i, ctx])[1] = i
    return [tuple(v) for v in out.values()]  # type: ignore[misc]


def _cut(path: Path, upto: int, tmp: Path, name: str) -> Path:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    target = tmp / name
    target.write_text("".join(lines[:upto]), encoding="utf-8")
    return target


@pytest.mark.parametrize("path", [TRANSCRIPT_A, TRANSCRIPT_B], ids=lambda p: p.name[:24])
def test_headline_is_the_recorded_context_of_every_request(tmp_path, path):
    engine = Engine()
    for t, (_first, last, recorded) in enumerate(_requests(path), 1):
        plan = engine.plan(load_session(_cut(path, last + 1, tmp_path, f"done-{t}.jsonl")))
        assert plan.tokens_after == recorded
        assert sum(s.tokens_after for s in plan.sections) + plan.joins == plan.tokens_after
        assert plan.joins == 0 and not plan.pending and plan.thread == "main"
        assert plan.usage_percent == 100 * recorded // 200_000
        inferred = plan.sections[0]
        assert inferred.section.kind == "inferred" and inferred.critical and inferred.tokens_after > 0


@pytest.mark.parametrize("path", [TRANSCRIPT_A, TRANSCRIPT_B], ids=lambda p: p.name[:24])
def test_pending_requests_are_predicted_within_three_percent(tmp_path, path):
    errors = []
    for t, (first, _last, recorded) in enumerate(_requests(path), 1):
        if t < 2:
            continue
        plan = Engine().plan(load_session(_cut(path, first, tmp_path, f"pending-{t}.jsonl")))
        assert plan.pending and plan.headline_kind == "predicted"
        assert plan.calibration is not None and plan.calibration.method.startswith("predicted")
        errors.append(abs(plan.tokens_after - recorded) / recorded)
    assert max(errors) <= 0.03
    assert statistics.median(errors) <= 0.01


def test_check_gates_on_the_recorded_context(capsys):
    # 1af7's request 3 recorded 16296 tokens (input 6 + cache write 436 + cache read 15854)
    cut = _requests(TRANSCRIPT_A)[2]
    assert cut[2] == 16296
    path = str(TRANSCRIPT_A)
    assert cli_main(["check", path, "--turn", "3", "--budget", "16000"]) == 1
    assert cli_main(["check", path, "--turn", "3", "--budget", "16296"]) == 0
    out = capsys.readouterr()
    assert "16296 tokens" in out.err and "≈" not in out.err.split("tokens")[0]


# ---------------------------------------------------------------- reconstruction rules, 2.x layout


class Transcript:
    """Writes a small transcript line by line in Claude Code 2.x's layout."""

    def __init__(self) -> None:
        self.lines: list[dict] = []

    def user(self, uuid: str, parent: str | None, content, **extra) -> None:
        self.lines.append({"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "s",
                           "version": "2.1.0", "message": {"role": "user", "content": content}, **extra})

    def assistant(self, uuid: str, parent: str | None, mid: str, block: dict, context: int, model: str = "claude-sonnet-4-5",
                  **extra) -> None:
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": context - 103, "output_tokens": 2}
        self.lines.append({"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "s",
                           "version": "2.1.0", "message": {"id": mid, "role": "assistant", "model": model, "content": [block],
                                                           "usage": usage}, **extra})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def _call(cid: str, command: str) -> dict:
    return {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": command}}


def _result(cid: str, text: str) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": cid, "content": text}]


def _parallel(t: Transcript) -> None:
    t.user("u1", None, "list two folders")
    t.assistant("a1", "u1", "m1", _call("c1", "ls src-folder"), 20_000)
    t.assistant("a2", "a1", "m1", _call("c2", "ls tests-folder"), 20_000)
    # 2.x hangs each result off the line holding its own call: the tree branches
    t.user("r1", "a1", _result("c1", "main.py"))
    t.user("r2", "a2", _result("c2", "test_main.py"))


def _texts(session) -> str:
    return "\n".join(s.text or "" for s in session.sections if s.meta.get("category") != "reply")


def test_parallel_calls_and_both_results_are_in_the_next_request(tmp_path):
    t = Transcript()
    _parallel(t)
    t.assistant("a3", "r2", "m2", {"type": "text", "text": "done"}, 20_400)
    turns = load_turns(t.write(tmp_path / "p.jsonl"))
    assert len(turns) == 2
    text = _texts(turns[1])
    for piece in ("ls src-folder", "ls tests-folder", "main.py", "test_main.py"):
        assert piece in text
    results = [s for s in turns[1].sections if s.meta.get("block") == "tool_result"]
    assert [s.meta["tool_use_id"] for s in results] == ["c1", "c2"]  # in call order
    assert not turns[1].warnings


def test_a_pending_request_after_parallel_results(tmp_path):
    t = Transcript()
    _parallel(t)
    turns = load_turns(t.write(tmp_path / "p.jsonl"))
    pending = turns[-1]
    assert pending.pending and "test_main.py" in _texts(pending) and "main.py" in _texts(pending)
    plan = Engine().plan(pending)
    assert plan.tokens_after > 20_000 and plan.headline_kind == "predicted"


def test_a_rewind_takes_the_branch_that_leads_to_the_request(tmp_path):
    t = Transcript()
    t.user("u1", None, "start")
    t.assistant("a1", "u1", "m1", {"type": "text", "text": "ready"}, 10_000)
    t.user("b1", "a1", "first attempt")
    t.assistant("b1a", "b1", "m2", {"type": "text", "text": "first answer"}, 10_050)
    t.user("b2", "a1", "second attempt")  # rewound: a sibling of b1
    t.assistant("b2a", "b2", "m3", {"type": "text", "text": "second answer"}, 10_060)
    turns = load_turns(t.write(tmp_path / "r.jsonl"))
    text = _texts(turns[-1])
    assert "second attempt" in text and "first attempt" not in text and "first answer" not in text


def test_compaction_starts_a_new_context(tmp_path):
    turns = load_turns(COMPACT)
    last = turns[-1]
    text = _texts(last)
    assert "Summary: the user asked for a plan." in text and "After compaction" in text
    assert "Kept going" not in text and "Start" not in text
    threads = load_threads(COMPACT)
    assert list(threads) == ["main"]


def test_a_result_written_after_a_compaction_follows_its_own_parent(tmp_path):
    # Tool results hang off the line of their call, except across a compaction: the context restarted
    # after the call, so the result continues the new context (its parentUuid), never the old one.
    t = Transcript()
    t.user("u1", None, "before the compaction")
    t.assistant("a1", "u1", "m1", _call("c1", "ls old-folder"), 10_000)
    t.lines.append({"type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None,
                    "logicalParentUuid": "a1", "isSidechain": False, "sessionId": "s", "version": "2.1.0",
                    "compactMetadata": {"trigger": "auto", "preTokens": 10_000}})
    t.user("s1", "cb", "Summary: an old folder was listed.", isCompactSummary=True)
    t.user("r1", "s1", _result("c1", "old-result"))
    t.assistant("a2", "r1", "m2", {"type": "text", "text": "done"}, 3_000)
    turns = load_turns(t.write(tmp_path / "c.jsonl"))
    text = _texts(turns[-1])
    assert "Summary: an old folder was listed." in text and "old-result" in text
    assert "before the compaction" not in text and "ls old-folder" not in text
    assert Engine().plan(turns[-1]).tokens_after == 3_000


@pytest.mark.parametrize(
    ("parent", "warning"),
    [("nowhere", "dangling or a cycle"), ("later", "dangling or a cycle"), ("self", "names the line itself")],
)
def test_a_broken_parent_keeps_the_prompt_and_never_pulls_later_lines(tmp_path, parent, warning):
    t = Transcript()
    t.user("u1", None, "first prompt")
    t.assistant("a1", "u1", "m1", {"type": "text", "text": "first reply"}, 10_000)
    own = {"nowhere": "missing-uuid", "later": "u3", "self": "u2"}[parent]
    t.user("u2", own, "second prompt")
    t.assistant("a2", "u2", "m2", {"type": "text", "text": "second reply"}, 10_100)
    t.user("u3", "a2", "third prompt written later")
    turns = load_turns(t.write(tmp_path / "b.jsonl"))
    second = turns[1]
    text = _texts(second)
    assert "second prompt" in text and "first prompt" in text  # the prompt is never dropped
    assert "third prompt written later" not in text  # nothing from later lines
    assert any(w.startswith("b.jsonl:3: ") and warning in w for w in second.warnings)
    assert Engine().plan(second).tokens_after == 10_100


def test_a_repeated_uuid_is_a_warning_and_names_its_newest_line(tmp_path):
    t = Transcript()
    t.user("u1", None, "first prompt")
    t.assistant("a1", "u1", "m1", {"type": "text", "text": "first reply"}, 10_000)
    t.user("u1", "a1", "second prompt")  # the uuid again
    t.assistant("a2", "u1", "m2", {"type": "text", "text": "second reply"}, 10_100)
    turns = load_turns(t.write(tmp_path / "d.jsonl"))
    text = _texts(turns[1])
    assert "second prompt" in text and "first prompt" in text
    assert any("d.jsonl:3: uuid u1 was already used by line 1" in w for w in turns[1].warnings)
    assert "second prompt" not in _texts(turns[0])


# uuids as Claude Code writes them (the reader keys a lookup by their numbers: one string, one key)
U1, A1, U2 = "3f2a9c4e-1b7d-4e8a-9c0f-5d6e7f8a9b0c", "0b1c2d3e-4f50-4617-a829-3a4b5c6d7e8f", "9e8d7c6b-5a49-4838-b726-1605f4e3d2c1"


def test_written_uuids_link_their_lines_and_only_the_same_string_is_the_same_uuid(tmp_path):
    t = Transcript()
    t.user(U1, None, "first prompt")
    t.assistant(A1, U1, "m1", {"type": "text", "text": "first reply"}, 10_000)
    t.user(U2, A1.upper(), "second prompt")  # the reply's uuid in capitals: another string, no line has it
    t.assistant(U1, U2, "m2", {"type": "text", "text": "second reply"}, 10_100)  # the first prompt's uuid again
    t.user(U2.replace("-", ""), U1, "third prompt")  # without its hyphens: another uuid, continuing the newest line
    t.assistant("a3", U2.replace("-", ""), "m3", {"type": "text", "text": "third reply"}, 10_200)
    turns = load_turns(t.write(tmp_path / "e.jsonl"))
    assert any(f"e.jsonl:3: parentUuid {A1.upper()} is on no earlier line" in w for w in turns[1].warnings)
    assert any(f"e.jsonl:4: uuid {U1} was already used by line 1" in w for w in turns[1].warnings)
    third = _texts(turns[2])
    assert "third prompt" in third and "second reply" in third and "first prompt" in third
    assert not any("e.jsonl:5:" in w or "e.jsonl:6:" in w for w in turns[2].warnings)


def test_lines_without_uuids_follow_each_other_and_a_uuid_without_a_parent_starts_a_chain(tmp_path):
    # a transcript whose lines name no uuid at all (neither key): each line continues from the one before it
    t = Transcript()
    t.user("u1", None, "first prompt")
    t.assistant("a1", "u1", "m1", {"type": "text", "text": "first reply"}, 10_000)
    t.user("u2", "a1", "second prompt")
    t.assistant("a2", "u2", "m2", {"type": "text", "text": "second reply"}, 10_100)
    for line in t.lines:
        del line["uuid"], line["parentUuid"]
    turns = load_turns(t.write(tmp_path / "f.jsonl"))
    assert "first prompt" in _texts(turns[1]) and "first reply" in _texts(turns[1])
    # a line that names its uuid and no parentUuid (the key absent) starts a chain, as ``"parentUuid": null`` does
    t = Transcript()
    t.user("u1", None, "first prompt")
    t.assistant("a1", "u1", "m1", {"type": "text", "text": "first reply"}, 10_000)
    t.user("u2", None, "second prompt")
    del t.lines[-1]["parentUuid"]
    t.assistant("a2", "u2", "m2", {"type": "text", "text": "second reply"}, 10_100)
    turns = load_turns(t.write(tmp_path / "g.jsonl"))
    second = _texts(turns[1])
    assert "second prompt" in second and "first prompt" not in second and "first reply" not in second


def test_synthetic_messages_and_tool_use_results_stay_out(tmp_path):
    t = Transcript()
    t.user("u1", None, "hello")
    t.lines.append({"type": "assistant", "uuid": "s1", "parentUuid": "u1", "isSidechain": False, "sessionId": "s",
                    "message": {"id": "x", "role": "assistant", "model": "<synthetic>",
                                "content": [{"type": "text", "text": "API Error: overloaded"}],
                                "usage": {"input_tokens": 0, "output_tokens": 0}}, "isApiErrorMessage": True})
    t.user("u2", "s1", "hello again")
    t.assistant("a1", "u2", "m1", _call("c1", "ls"), 9_000)
    t.user("r1", "a1", _result("c1", "file.txt"), toolUseResult={"stdout": "SECRET-ONLY-IN-TRANSCRIPT"})
    t.assistant("a2", "r1", "m2", {"type": "text", "text": "ok"}, 9_050)
    turns = load_turns(t.write(tmp_path / "s.jsonl"))
    assert len(turns) == 2  # the synthetic message is no request
    text = _texts(turns[-1])
    assert "API Error" not in text and "SECRET-ONLY-IN-TRANSCRIPT" not in text and "file.txt" in text


def test_input_before_a_failed_request_is_still_pending(tmp_path):
    """Real Claude Code 2.1.3 transcripts that end with Claude Code's own API-error notes (``<synthetic>``
    "Request timed out", "Invalid API key"): those were never sent, so the input before them is the request
    about to be sent (it was neither "no message yet" nor the last recorded request)."""
    timeouts = REAL / "corpus" / "mclaude-7fcdbdcd-2.1.3-timeouts.jsonl"  # 1 request (24605), then 3 timeouts
    plan = Engine().plan(load_session(timeouts))
    assert plan.pending and plan.thread == "main" and plan.tokens_after > 24_605
    text = _texts(load_session(timeouts))
    assert "Todos have been modified successfully" in text and "try again" in text
    assert "Request timed out" not in text
    no_reply = REAL / "corpus" / "mclaude-ed0d7abd-2.1.3-no-reply.jsonl"  # no request ever answered
    for upto in (3, 57):  # the first prompt and its error; the whole file
        path = _cut(no_reply, upto, tmp_path, f"no-reply-{upto}.jsonl")
        plan = Engine().plan(load_session(path))
        assert plan.pending and plan.thread == "main"
        text = _texts(load_session(path))
        assert "whoami" in text and "Invalid API key" not in text
    assert "hi" in text.split("whoami")[-1]


def test_sub_agent_files_are_threads_and_the_default_turn_is_the_main_threads(tmp_path):
    threads = load_threads(SHOWCASE)
    assert "main" in threads and any(name.startswith("agent-") for name in threads)
    session = load_session(SHOWCASE)
    assert session.thread == "main"
    # a transcript whose last lines are a sub-agent's still defaults to the main thread
    lines = TRANSCRIPT_B.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:40]), encoding="utf-8")  # line 40 is a sidechain reply
    default = load_session(cut)
    assert default.thread == "main"
    assert set(load_threads(cut)) == {"main", "sidechain-1", "sidechain-2"}


def test_parts_are_labelled_as_a_person_reads_them():
    session = load_session(TRANSCRIPT_A, -1)
    labels = [s.meta.get("label", "") for s in session.sections]
    assert any(label.startswith("assistant → Bash(") for label in labels)
    assert any(label.startswith("tool result · Bash") and label.endswith("lines)") for label in labels)
    assert any(label.startswith("user: ") for label in labels)
    ids = [s.id for s in session.sections]
    assert len(ids) == len(set(ids))
    plan = Engine().plan(session).to_dict()
    assert all("label" in s for s in plan["sections"])


def test_openai_chat_framing_matches_the_recorded_prompt_tokens():
    # pydantic-ai's recorded request: usage.prompt_tokens 46 (a user text part and one tool, gpt-4o)
    plan = Engine().plan(load_session(REAL / "openai_chat_request_image-part.json"))
    assert plan.tokens_after == 46
    assert plan.headline_kind == "counted" and plan.sections[0].section.kind == "inferred"


def test_image_sizes_are_read_from_their_headers():
    import base64
    import struct

    from tokenbox.core.sources.readers import images

    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", 1024, 768) + b"\x08\x02\x00\x00\x00"
    data = base64.b64encode(png + b"\x00" * 64).decode()
    assert images.base64_size(data) == (1024, 768)
    assert images.anthropic_tokens(1024, 768) == 1049  # ceil(1024 × 768 / 750)
    assert images.anthropic_tokens(4000, 3000) == images.anthropic_tokens(1238, 928)  # scaled to 1.15 MP first
    assert images.openai_tokens(1024, 768) == 765  # 768 × 1024 → 2 × 2 tiles: 4 × 170 + 85
    assert images.openai_tokens(1024, 768, "low") == 85


def test_a_followed_transcript_parses_each_appended_line_once_and_matches_a_cold_read(tmp_path):
    from tokenbox.core.sources.readers.claude_code import TranscriptFollower, thread_turns

    lines = TRANSCRIPT_B.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:10]), encoding="utf-8")
    follower = TranscriptFollower(str(path), 1 << 26)
    follower.read()
    with path.open("a", encoding="utf-8") as handle:
        for line in lines[10:]:
            handle.write(line[:20])  # a half-written line is not read yet
            handle.flush()
            follower.read()
            handle.write(line[20:])
            handle.flush()
            follower.read()
    assert follower.lines_parsed == len(lines) and follower.resets == 0
    followed = thread_turns(follower.reader, "main")
    cold = load_turns(TRANSCRIPT_B)
    assert [Engine().plan(t).to_dict() for t in followed] == [Engine().plan(t).to_dict() for t in cold]
    # a replaced file (rotation, an editor's save) is read again from the start
    path.write_text("".join(lines[:20]), encoding="utf-8")
    follower.read()
    assert follower.resets == 1 and len(thread_turns(follower.reader, "main")) == len(load_turns(path))


CORPUS = REAL / "corpus"
CORPUS_MAIN = sorted(p for p in CORPUS.glob("*.jsonl") if "agent-" not in p.name and "sidechain-integrated" not in p.name)


@pytest.mark.parametrize("path", CORPUS_MAIN, ids=lambda p: p.name[:24])
def test_the_second_corpus_headline_and_predictions(tmp_path, path):
    errors = []
    for t, (first, last, recorded) in enumerate(_requests(path), 1):
        plan = Engine().plan(load_session(_cut(path, last + 1, tmp_path, f"done-{t}.jsonl")))
        assert plan.tokens_after == recorded and not plan.pending and not plan.warnings
        if t >= 2:
            pending = Engine().plan(load_session(_cut(path, first, tmp_path, f"pending-{t}.jsonl")))
            assert pending.pending
            errors.append(abs(pending.tokens_after - recorded) / recorded)
    assert not errors or max(errors) <= 0.03


def test_a_new_prompt_after_thinking_goes_on_from_the_last_recorded_request(tmp_path):
    """A new prompt strips earlier thinking from the estimate (the API's rule), so the context's estimate can
    fall below the last request's; that is no rewind: the prediction still starts from its recorded figure
    (it restarted from the hidden part of request 1 and missed what the thread had gathered since)."""
    path = CORPUS / "mclaude-343e3472-2.1.6-opus-4-5.jsonl"
    requests = _requests(path)
    first, _last, recorded = requests[3]
    plan = Engine().plan(load_session(_cut(path, first, tmp_path, "pending-4.jsonl")))
    assert plan.pending
    assert f"request 3's recorded {requests[2][2]}" in plan.calibration.to_dict()["method"]
    assert abs(plan.tokens_after - recorded) / recorded < 0.01


OPUS_47 = CORPUS / "omitted-thinking" / "cclog-ef958aa1-2.1.114-opus-4-7.jsonl"


def _pending_before(path, number: int, tmp_path):
    """The plan of ``path`` cut just before its request ``number`` (1-based: then pending), and what that
    request recorded."""
    first, _last, recorded = _requests(path)[number - 1]
    plan = Engine().plan(load_session(_cut(path, first, tmp_path, f"pending-{number}.jsonl")))
    assert plan.pending
    return plan, recorded


def test_thinking_the_transcript_leaves_out_is_counted_from_the_recorded_output(tmp_path):
    """Claude Code 2.1.114 with claude-opus-4-7 writes thinking without its text (an empty ``thinking`` and a
    signature); the next request in the tool loop still carries it. Request 3 replied with 3783 output tokens,
    nearly all thinking: the prediction of request 4 counts them from the recorded output (it fell 8 % short)."""
    plan, recorded = _pending_before(OPUS_47, 4, tmp_path)
    assert abs(plan.tokens_after - recorded) / recorded < 0.015
    assert "thinking the transcript leaves out" in plan.calibration.to_dict()["method"]


def test_tool_definitions_a_tool_search_loads_are_counted_and_named(tmp_path):
    """A ToolSearch result of Claude Code 2.1.x holds ``tool_reference`` blocks: the API expands each into
    the tool's definition, which no transcript shows (request 2 grew 3320 tokens beyond request 1's output
    for 4 of them). The prediction counts a typical definition per tool and says so (it fell 9.6 % short)."""
    plan, recorded = _pending_before(OPUS_47, 2, tmp_path)
    assert abs(plan.tokens_after - recorded) / recorded < 0.03
    assert any("4 tool definitions" in w and "TaskCreate" in w for w in plan.warnings)


def test_sub_agent_files_of_the_second_corpus_are_their_own_threads():
    path = CORPUS / "cclog-ef958aa1" / "subagents" / "agent-a36efb2a1231c41e2.jsonl"
    threads = load_threads(path)
    assert list(threads) == ["agent-a36efb2a1231c41e2"]
    turns = threads["agent-a36efb2a1231c41e2"]
    assert len(turns) == 6
    assert [Engine().plan(t).tokens_after for t in turns][-1] == 28742


def test_openai_framing_on_a_recorded_conversation():
    import yaml
    from tokenbox.core import default_registry
    from tokenbox.core.sources.readers.openai_framing import prompt_tokens

    cassette = yaml.safe_load((CORPUS / "pydantic-ai-openai-chat-tool-calls.yaml").read_text(encoding="utf-8"))
    count = default_registry().get("o200k_base").count
    first, second = (prompt_tokens(i["request"]["parsed_body"], count)[0] for i in cassette["interactions"])
    assert abs(first - 50) <= 1  # no tool call yet: the documented rules are exact to a token
    assert abs(second - 75) <= 3  # with a tool call and its result (the rules for calls are the community's)


def test_an_opus_4_5_prediction_keeps_the_thinking_before_a_new_prompt(tmp_path):
    """Claude Opus 4.5 keeps earlier turns' thinking in its context (Anthropic's extended-thinking
    documentation): a pending request after a new prompt is predicted with that thinking still in it. With
    it dropped, as for older models, the predictions of this real transcript's requests fell up to 0.89 % off
    their recorded contexts; with it kept, 0.33 % at most."""
    path = CORPUS / "mclaude-343e3472-2.1.6-opus-4-5.jsonl"
    errors = []
    for number in range(2, len(_requests(path)) + 1):
        plan, recorded = _pending_before(path, number, tmp_path)
        errors.append(abs(plan.tokens_after - recorded) / recorded)
    assert max(errors) < 0.005, [f"{e:.2%}" for e in errors]


def test_a_headline_the_parts_do_not_add_up_to_is_not_called_recorded(tmp_path, capsys):
    """A request that recorded 400 tokens of context while its visible text alone is a few thousand words:
    with the default (Claude) estimate the parts are scaled to fit and the headline is the recorded 400;
    counted with an exact tokenizer of another family they cannot be scaled, the headline is their count,
    and that count is labelled an estimate (``≈``), never "recorded" (it was 400)."""
    t = Transcript()
    t.user("u1", None, "words " * 4000)  # ≈4000 tokens in any BPE, far above the 400 recorded
    t.assistant("a1", "u1", "m1", {"type": "text", "text": "ok"}, 400)
    path = t.write(tmp_path / "small.jsonl")

    claude = Engine().plan(load_session(path))
    assert claude.tokens_after == 400 and claude.headline_kind == "recorded"

    counted = Engine().plan(load_session(path), tokenizer="o200k_base")
    assert counted.tokens_after > 4000
    assert counted.headline_kind == "estimated" and counted.headline_kind.approximate
    assert any("more than the 400 the request cost" in w for w in counted.warnings)

    assert cli_main(["plan", str(path), "--tokenizer", "o200k_base"]) == 0
    out = capsys.readouterr().out
    assert f"tokens ≈{counted.tokens_before} → ≈{counted.tokens_after}" in out
    assert "context 400 tokens as recorded" in out  # what the request recorded is still said, beside it


def test_the_method_names_the_scale_its_parts_are_at():
    """A request with no earlier one to fit on says the scale its visible parts are shown at (the prior), as a
    fitted one does: the figure the gauge shows beside the estimate, and the one that adds up to the headline."""
    path = CORPUS / "cclog-ef958aa1" / "subagents" / "agent-a36efb2a1231c41e2.jsonl"
    turns = load_threads(path)["agent-a36efb2a1231c41e2"]
    for turn in (turns[0], turns[-1]):
        plan = Engine().plan(turn)
        calibration = plan.calibration.to_dict()
        assert f"×{calibration['scale']:.3f}" in calibration["method"], calibration
        visible = sum(s.tokens_before for s in plan.sections if s.kind != "inferred")
        hidden = sum(s.tokens_before for s in plan.sections if s.kind == "inferred")
        assert visible + hidden == plan.tokens_after == turn.context_tokens


def test_a_sub_agents_file_whose_lines_continue_the_launching_transcript_warns_of_nothing(tmp_path):
    """A compaction agent's file (marot/spotter, 2.1.39) continues lines of the main transcript, which are not in
    it: opened alone it is not a broken file. The same lines in a file that is not a sub-agent's still warn."""
    source = CORPUS / "spotter-4d5611e5" / "subagents" / "agent-acompact-e1f845.jsonl"
    alone = load_session(source)
    assert not [w for w in alone.warnings if "parentUuid" in w]
    assert alone.context_tokens == 173_514
    renamed = tmp_path / "4d5611e5-copy.jsonl"
    renamed.write_bytes(source.read_bytes())
    assert len([w for w in load_session(renamed).warnings if "is on no earlier line" in w]) == 3
