"""Earlier turns' thinking in the context of newer Claude models (the extended-thinking documentation).

Anthropic's API drops the thinking blocks of assistant turns before the newest user message for older Claude
models and keeps every one of them for newer ones: Opus 4.5 and later, Sonnet 4.6 and later, Mythos; Haiku
through 4.5 drops them. A Claude Code transcript and an Anthropic request are laid out as the model that
answers them keeps its context. The table below is the documentation's, not the code's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine, load_session, load_turns
from tokenbox.core.model.llms import keeps_prior_thinking

CORPUS = Path(__file__).parents[1] / "fixtures" / "real_sessions" / "corpus"
OPUS_45 = CORPUS / "mclaude-343e3472-2.1.6-opus-4-5.jsonl"  # a real transcript: a thinking reply, then a new prompt


@pytest.mark.parametrize(("model", "keeps"), [
    ("claude-opus-4-5-20251101", True),
    ("claude-opus-4-6", True),
    ("claude-opus-4-7[1m]", True),
    ("claude-opus-5", True),
    ("us.anthropic.claude-opus-4-6-v1:0", True),
    ("claude-sonnet-4-6", True),
    ("claude-sonnet-5", True),
    ("claude-mythos-preview", True),
    ("claude-opus-4-1-20250805", False),
    ("claude-opus-4-20250514", False),
    ("claude-sonnet-4-5-20250929", False),
    ("claude-haiku-4-5-20251001", False),
    ("claude-3-7-sonnet-20250219", False),
    ("gpt-5", False),
    (None, False),
])
def test_which_models_keep_earlier_thinking(model, keeps):
    assert keeps_prior_thinking(model) is keeps


def _thinking_before_the_last_prompt(path: Path) -> list[int]:
    """The tokens of the thinking parts of messages before the newest user text, in the newest request."""
    plan = Engine().plan(load_session(path))
    prompts = [i for i, r in enumerate(plan.sections) if r.section.meta.get("role") == "user"
               and r.section.meta.get("part") == "text"]
    last_prompt = prompts[-1]
    return [r.tokens_after for r in plan.sections[:last_prompt] if r.section.meta.get("part") == "thinking"]


def _as_sonnet_45(folder: Path) -> Path:
    """``OPUS_45`` answered by Sonnet 4.5, which drops earlier thinking: every request's model renamed."""
    sonnet = folder / "as-sonnet-4-5.jsonl"
    lines = []
    for line in OPUS_45.read_text(encoding="utf-8").splitlines(keepends=True):
        record = json.loads(line)
        message = record.get("message")
        if isinstance(message, dict) and message.get("model") == "claude-opus-4-5-20251101":
            message["model"] = "claude-sonnet-4-5-20250929"
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    sonnet.write_text("".join(lines), encoding="utf-8")
    return sonnet


def test_a_newer_model_keeps_earlier_thinking_and_an_older_one_drops_it(tmp_path):
    as_opus = _thinking_before_the_last_prompt(OPUS_45)
    assert as_opus and all(tokens > 0 for tokens in as_opus)  # Opus 4.5: every earlier thinking block is sent
    # the same transcript answered by Sonnet 4.5: those blocks are not sent
    assert sum(_thinking_before_the_last_prompt(_as_sonnet_45(tmp_path))) == 0


def _reply_blocks(draw: st.DrawFn, call: int) -> list[dict]:
    """One reply's blocks: thinking or not, then text and calls (some of tools named like a part)."""
    blocks: list[dict] = []
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": draw(st.sampled_from(["hmm", "let me look at the tests"])),
                       "signature": "s"})
    for kind in draw(st.lists(st.sampled_from(["text", "call"]), min_size=1, max_size=3)):
        if kind == "text":
            blocks.append({"type": "text", "text": draw(st.sampled_from(["Done.", "Looking at it now."]))})
        else:
            name = draw(st.sampled_from(["Bash", "thinking", "Read"]))
            blocks.append({"type": "tool_use", "id": f"c{call}-{len(blocks)}", "name": name, "input": {"q": "x"}})
    return blocks


@st.composite
def _transcripts(draw: st.DrawFn) -> list[tuple[str, list[dict], str | None]]:
    """A Claude Code conversation as (role, content, message id) lines: prompts, each answered by replies with
    or without thinking whose calls get their results; a reply's blocks on lines of their own, as Claude Code
    writes them."""
    lines: list[tuple[str, list[dict], str | None]] = []
    for prompt in range(draw(st.integers(1, 3))):
        lines.append(("user", [{"type": "text", "text": f"prompt {prompt}"}], None))
        for reply in range(draw(st.integers(1, 3))):
            mid = f"m{prompt}-{reply}"
            blocks = _reply_blocks(draw, len(lines))
            lines.extend(("assistant", [block], mid) for block in blocks)
            results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"} for b in blocks
                       if b["type"] == "tool_use"]
            if results:
                lines.append(("user", results, None))
    return lines


@settings(max_examples=25, deadline=None)
@given(_transcripts(), st.booleans())
def test_a_request_reads_the_same_whichever_requests_were_read_before_it(tmp_path_factory, lines, newest_first):
    # a message's parts are shared by the turns that hold them (ARCHITECTURE), and a new prompt drops the thinking
    # of the replies before it (Sonnet 4.5): every request, read after the others (in order or newest first), is
    # what the newest request of the file cut after its reply is, read alone. (Written by the stop-41 helper
    # memory2 for a reuse of a stripped reply's parts, not merged: seen failing there with the parts a message had
    # as the latest input taken for it as history.)
    folder = tmp_path_factory.mktemp("stripped")
    text = [_transcript_line(n, role, content, "claude-sonnet-4-5", mid) + "\n" for n, (role, content, mid) in enumerate(lines, 1)]
    (folder / "session.jsonl").write_text("".join(text), encoding="utf-8")
    # where each request ends: its reply's last line, and the file's end for results not answered yet
    ends = [*{mid: n for n, (_, _, mid) in enumerate(lines, 1) if mid is not None}.values()]
    ends += [len(lines)] if lines[-1][0] == "user" else []
    turns = load_turns(folder / "session.jsonl")
    assert len(turns) == len(ends)
    read = range(len(turns) - 1, -1, -1) if newest_first else range(len(turns))
    after_others = {index: turns[index].sections for index in read}
    for index, end in enumerate(ends):
        alone = folder / f"cut-{index}.jsonl"
        alone.write_text("".join(text[:end]), encoding="utf-8")
        assert after_others[index] == load_session(alone).sections, index


def _transcript_line(number: int, role: str, content: list[dict], model: str, mid: str | None) -> str:
    message: dict = {"role": role, "content": content}
    if role == "assistant":
        message.update(model=model, **({"id": mid} if mid else {}))
    return json.dumps({"type": role, "uuid": f"l{number}", "parentUuid": f"l{number - 1}" if number > 1 else None,
                       "sessionId": "s", "message": message})


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-opus-4-6"])
def test_each_context_of_a_transcript_estimates_its_parts_as_its_messages_add_up(model: str) -> None:
    """Every line's context (``TranscriptReader.state_of``) sums its messages' base estimates: visible (text, call
    and result blocks, each with its framing, and each message's framing), thinking, and the thinking before the
    newest user text that a model that does not keep it leaves out. Worked out here from the context's messages."""
    from tokenbox.core.sources.readers.claude_code import BLOCK_FRAMING, MESSAGE_FRAMING, TranscriptReader
    from tokenbox.core.sources.readers.common import RESULT, THINKING
    from tokenbox.core.tokens.charclass import reference_estimate

    call = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls -la src"}}
    lines = [
        ("user", [{"type": "text", "text": "list the sources please"}], None),
        ("assistant", [{"type": "thinking", "thinking": "I should list them with ls", "signature": "x"}], "m1"),
        ("assistant", [{"type": "text", "text": "Listing the sources now."}], "m1"),
        ("assistant", [call], "m1"),
        ("user", [{"type": "tool_result", "tool_use_id": "c1", "content": "main.py\nutil.py"}], None),
        ("assistant", [{"type": "thinking", "thinking": "two files, one of them main", "signature": "y"}], None),
        ("assistant", [{"type": "text", "text": "There are two files."}], "m2"),
        ("user", [{"type": "text", "text": "and the tests?"}], None),
        ("user", [{"type": "text", "text": "the unit tests"}], None),
        ("assistant", [{"type": "text", "text": "Looking."}], "m3"),
    ]
    reader = TranscriptReader("x.jsonl")
    keeps = keeps_prior_thinking(model)
    for number, (role, content, mid) in enumerate(lines, 1):
        reader.feed_text(number, _transcript_line(number, role, content, model, mid))
        state = reader.state_of(len(reader.nodes) - 1)
        assert state is not None
        visible = thinking = cut = 0.0
        for message in state.messages():
            visible += MESSAGE_FRAMING
            for block in message.blocks:
                size = reference_estimate(block.text) + BLOCK_FRAMING.get(block.role, 0.0)
                if block.role == THINKING:
                    thinking += size
                else:
                    visible += size
                if message.role == "user" and block.role != RESULT and not keeps:
                    cut = thinking
        assert (state.visible, state.thinking, state.thinking_cut) == pytest.approx((visible, thinking, cut)), number
        assert state.estimate == pytest.approx(visible + thinking - cut)
