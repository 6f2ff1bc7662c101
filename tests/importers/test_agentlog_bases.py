"""The visible base estimate of every request of an agent's log (aider, Cline, Copilot CLI, OpenCode share it:
``readers/agentlog.visible_bases``) is what summing each request's messages as they count gives, request by
request, while each request only adds what it does not share with the one before.

The expected figures are computed here from scratch for each request, the way the reader summed them before it
reused anything: every message as it counts (an assistant message before the latest user input without its
thinking), its base estimate, summed left to right, plus the system prompt's and the tools'.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenbox.core.sources.readers import agentlog
from tokenbox.core.sources.readers.agentlog import Request, visible_bases
from tokenbox.core.sources.readers.common import CALL, RESULT, TEXT, THINKING, Block, Message
from tokenbox.core.tokens.charclass import BaseEstimates

WORDS = st.text(alphabet="abc xyz 12{}é→", min_size=0, max_size=30)


def _message(kind: str, text: str, index: int) -> Message:
    if kind == "prompt":
        return Message("user", [Block("text", TEXT, text)], index)
    if kind == "results":
        return Message("user", [Block("tool_result", RESULT, text)], index)
    if kind == "thinking":  # an assistant message whose thinking is left out once a later prompt comes
        return Message("assistant", [Block("thinking", THINKING, text + " pondering"), Block("text", TEXT, text)], index)
    return Message("assistant", [Block("tool_use", CALL, text, tool="Bash")], index)


def _expected(request: Request, bases: BaseEstimates) -> float:
    """Request's visible base estimate, from scratch (independent of the reader's running sums)."""
    messages = request.messages
    cut = 0
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.role == "user" and any(b.role != RESULT for b in message.blocks):
            cut = position
            break
    total = 0
    for position, message in enumerate(messages):
        value = 0.0  # a message's estimate, its blocks summed in order, then added to the request's
        for block in message.blocks:
            if position < cut and message.role == "assistant" and block.role == THINKING:
                continue
            value += bases(block.text) if block.text else 0.0
        total += value
    system = sum(bases(b.text) for b in request.system if b.text)
    return system + total


# one step of a thread: a message appended, a request sent, the history cut (a compaction, the oldest
# messages dropped to fit the window) or its newest message taken back before the next request
STEPS = st.lists(
    st.tuples(st.sampled_from(["prompt", "results", "thinking", "call", "send", "drop", "restart", "rewind"]), WORDS),
    min_size=1, max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(STEPS, st.text(alphabet="sys ", max_size=12))
# the latest prompt taken back, then a tool call: the request's latest user input is further back again
@example([("prompt", "a"), ("thinking", "b"), ("prompt", "c"), ("send", ""), ("rewind", ""), ("call", "e")], "")
def test_each_requests_visible_base_is_its_messages_summed_from_scratch(steps, system):
    history: list[Message] = []
    requests: list[Request] = []
    index = 0
    for kind, text in steps:
        if kind == "send":
            requests.append(Request(list(history), system=[Block("text", TEXT, system)] if system else []))
        elif kind == "drop":
            history = history[len(history) // 3:]
        elif kind == "rewind":  # the newest message taken back (a prompt edited and sent again)
            history = history[:-1]
        elif kind == "restart":
            history = [_message("prompt", "summary " + text, index)]
            index += 1
        else:
            history.append(_message(kind, text, index))
            index += 1
    requests.append(Request(list(history)))
    bases = BaseEstimates()
    got = visible_bases(requests, agentlog._Stripped(), bases, {})
    assert got == [_expected(r, bases) for r in requests]  # the same floats, not merely close
