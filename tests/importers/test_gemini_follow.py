"""Gemini CLI JSON-lines chats followed as they grow: the followed turns are the cold read's at every cut
point of the file (messages appended, the newest reply written again as its tool calls finish, an older
message written again, a rewind, a history replaced, a line still being written), and an appended message
costs its own line, whatever the chat's length."""

from __future__ import annotations

import json

import pytest
from tokenbox.core import Engine, Loader
from tokenbox.core.model.errors import SessionError
from tokenbox.core.sources.documents import jsonl_lines, turns_of
from tokenbox.core.sources.readers.gemini import Chat, ChatLines
from tokenbox.core.sources.readers.gemini_follow import ChatFollower

from tests.importers.support import HERE

CHAT = HERE / "fixtures" / "gemini_chat_tool-calls.jsonl"
LINES = CHAT.read_text(encoding="utf-8").splitlines()
RECORDS = [json.loads(line) for line in LINES]


def _user(ident: str, text: str) -> dict:
    return {"id": ident, "type": "user", "content": text}


def _reply(ident: str, text: str, tokens: int | None, calls: list | None = None) -> dict:
    record: dict = {"id": ident, "type": "gemini", "content": text, "model": "gemini-2.5-pro"}
    if tokens is not None:
        record["tokens"] = {"input": tokens, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": tokens + 5}
    if calls is not None:
        record["toolCalls"] = calls
    return record


def _call(ident: str, name: str, output: str | None) -> dict:
    call = {"id": ident, "name": name, "args": {"file_path": "a.txt"}, "status": "executing" if output is None else "success"}
    if output is not None:
        call["result"] = [{"functionResponse": {"id": ident, "name": name, "response": {"output": output}}}]
    return call


def _rewritten(record: dict, text: str) -> dict:
    return {**record, "content": text}


CASES = {
    "fixture": LINES,
    # Gemini CLI's own writes: a reply, written again with its results, then with its tokens
    "replies written again": [LINES[0], _user("u1", "start"), _reply("g1", "looking", None, [_call("t1", "read_file", None)]),
                              _reply("g1", "looking", None, [_call("t1", "read_file", "text of a")]),
                              _reply("g1", "looking", 1000, [_call("t1", "read_file", "text of a")]),
                              {"id": "i1", "type": "info", "content": "saved"},
                              _reply("g1", "looking again", 1000, [_call("t1", "read_file", "text of a")]),
                              _user("u2", "and now " * 30), _reply("g2", "done", 1300),
                              # a reply after a reply with no tool call: one model message with it (merged)
                              _reply("g3", "and also", None), _reply("g3", "and also this", 1500)],
    "older message written again": [*LINES[:6], _rewritten(RECORDS[2], "rewritten old reply"), *LINES[6:]],
    "rewind": [*LINES, {"$rewindTo": "msg-ge5"}, _user("u-r", "again"), _reply("g-r", "answer", 300)],
    "rewind to an unknown id": [*LINES, {"$rewindTo": "nope"}, _user("u-r", "fresh")],
    "history replaced": [*LINES[:5], {"$set": {"messages": [_user("c1", "compressed"), _reply("c2", "ok", 120)]}},
                         _user("u-s", "next"), _reply("g-s", "done", 160), {"$set": {"sessionId": "renamed"}}],
    "odd lines": [*LINES[:4], "[1, 2]", {"id": "w1", "type": "weird"}, *LINES[4:], {"type": "user", "content": "anon"}],
}


def _text(lines: list) -> str:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


def _settled(text: str, path: str):
    """The turns of the records as they stand once every line is read (each message's newest copy in its
    first copy's place, rewinds and replaced histories applied), added once each to a new chat: what a
    chat taken back and added to again must give."""
    nodes = [line.node(path) for line in jsonl_lines(text, path)]  # an unterminated last line only if complete
    lines = ChatLines(path, lambda node: node, lambda _line, _index, item: item)
    for node in nodes:
        lines.add(node, node)
    chat = Chat(path)
    for record in lines.sources:
        chat.add(record)
    return chat.turns(lines.header, lines.warnings)


def _outcome(read) -> list[str] | str:
    """The plans of the turns ``read()`` gives, or the error it raises (a chat rewound to nothing has no turn)."""
    try:
        turns = read()
    except SessionError as exc:
        return str(exc)
    return _plans(turns)


def _plans(turns) -> list[str]:
    """Each turn's plan JSON; for a lazy sequence, its facts (read without building a turn) checked too."""
    for index in range(len(turns) if hasattr(turns, "info") else 0):
        facts, turn = turns.info(index), turns[index]
        assert (facts["recorded"], facts["model"], facts["pending"], facts["line"]) == \
            (turn.recorded, turn.model_name, turn.pending, turn.line)
    return [json.dumps(Engine().plan(turn).to_dict(), sort_keys=True) for turn in turns]


@pytest.mark.parametrize("case", list(CASES))
def test_followed_chat_is_the_cold_read_at_every_cut(tmp_path, case):
    """The file appended to line by line and followed by one loader; at each cut its turns are those of
    the text read at once (``turns_of``: every line parsed, no follower), plan for plan."""
    lines = CASES[case]
    path = tmp_path / "session-1.jsonl"
    path.write_text(_text(lines[:1]), encoding="utf-8")  # the session's header line: no turn yet
    loader = Loader()
    for cut in range(2, len(lines) + 1):
        with path.open("a", encoding="utf-8") as out:
            out.write(_text(lines[cut - 1 : cut]))
        text = path.read_text(encoding="utf-8")
        settled = _outcome(lambda text=text: _settled(text, str(path)))
        assert _outcome(lambda: loader.load_turns(path)) == settled, f"cut {cut}"
        assert _outcome(lambda text=text: turns_of(text, str(path))) == settled, f"cut {cut}"


def test_an_unterminated_line_is_read_and_taken_back_when_it_changes(tmp_path):
    """A last line without its newline that is complete JSON is read (as a cold read reads it); when it
    is replaced before the newline comes, the turns are the file's again."""
    path = tmp_path / "session-1.jsonl"
    loader = Loader()
    steps = [_text(LINES) + json.dumps(_user("u-p", "pending")),  # read ahead: a pending turn
             _text(LINES) + json.dumps(_user("u-p", "pending")) + "\n",  # its newline came
             _text(LINES) + json.dumps(_user("u-p", "pending")) + "\n" + json.dumps({"$rewindTo": "msg-ge3"}),
             # more of that line written: no longer JSON until its end comes (the writer was not done)
             _text(LINES) + json.dumps(_user("u-p", "pending")) + "\n" + json.dumps({"$rewindTo": "msg-ge3"}) + ' {"id']
    path.write_text("", encoding="utf-8")
    for step in steps:
        with path.open("a", encoding="utf-8") as out:
            out.write(step[len(path.read_text(encoding="utf-8")):])
        assert _plans(loader.load_turns(path)) == _plans(_settled(step, str(path)))
    assert len(loader.load_turns(path)) == 6  # the rewind read ahead is taken back: the pending turn is back


def test_an_older_message_written_again_replaces_it_in_place(tmp_path):
    lines = CASES["older message written again"]
    path = tmp_path / "session-1.jsonl"
    path.write_text(_text(lines), encoding="utf-8")
    turns = Loader().load_turns(path)
    texts = [s.text for s in turns[-1].sections if s.text]
    assert "rewritten old reply" in texts and "I'll update the port in the config file." not in texts
    assert texts.index("rewritten old reply") < texts.index("Now change the host to localhost")


def test_a_result_before_its_call_is_named_as_a_cold_read_names_it(tmp_path):
    """A user message holding a tool result and then the call it answers, a reply with nothing to send
    back (the message stays the history's last) and more user text merged into that message: a cold read
    goes through the merged message's blocks again, by then knowing the call, and names the result after it
    in every turn that holds it; the follower names it so too. Without the merge it stays unnamed."""
    asked = {"id": "u1", "type": "user", "content": [
        {"functionResponse": {"id": "c-9", "response": {"output": "early"}}},
        {"functionCall": {"id": "c-9", "name": "run_shell_command", "args": {}}}]}
    path = tmp_path / "session-1.jsonl"
    loader = Loader()
    path.write_text(_text([LINES[0], asked, _reply("g0", "", 400)]), encoding="utf-8")
    first = loader.load_turns(path)[0]
    assert next(s for s in first.sections if s.text == "early").meta.get("tool") is None
    with path.open("a", encoding="utf-8") as out:
        out.write(_text([_user("u2", "and then"), _reply("g1", "ok", 500)]))
    turns = loader.load_turns(path)
    assert len(turns) == 2
    for turn in turns:
        assert next(s for s in turn.sections if s.text == "early").meta.get("tool") == "run_shell_command"


def _chat_lines(replies: int) -> list[str]:
    """The fixture's messages repeated under new ids after its header (a longer chat of the same shape)."""
    out = [LINES[0]]
    for copy in range(replies):
        out.extend(json.dumps({**record, "id": f"{record['id']}-{copy}"}) for record in RECORDS[1:])
    return out


@pytest.mark.parametrize("copies", [2, 40])
def test_an_appended_message_costs_its_own_line(copies):
    """Fed line by line, a new message parses one line and counts its own texts, and the newest reply
    written again (with its results, then its tokens) the same: at 2 copies of the chat and at 40."""
    follower = ChatFollower("chat.jsonl")
    lines = _chat_lines(copies)
    for number, line in enumerate(lines, 1):
        follower.feed(number, line)
    assert len(follower.turns()) == 5 * copies
    chat = follower.lines.chat
    number = len(lines)
    for index, record in enumerate([_user("new-u", "one more question"),
                                    _reply("new-g", "on it", None, [_call("t9", "read_file", None)]),
                                    _reply("new-g", "on it", None, [_call("t9", "read_file", "the file")]),
                                    _reply("new-g", "on it", 99_000, [_call("t9", "read_file", "the file")])]):
        parsed, counted = follower.parsed, chat.counted
        number += 1
        follower.feed(number, json.dumps(record))
        turns = follower.turns()
        turns[-1]
        assert follower.parsed - parsed == 1
        # the user's text; then the reply's text and call (and the result, once there is one)
        assert chat.counted - counted == [1, 2, 3, 3][index]
    assert follower.lines.replayed == 0
    assert turns[-1].recorded is None and turns[-2].recorded.context_tokens == 99_000
