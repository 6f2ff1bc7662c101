"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``), read incrementally.

Claude Code appends one line per content block: ``user`` lines (prompts, slash-command expansions
marked ``isMeta``, tool results) and ``assistant`` lines. The lines of one API request share
``message.id`` and repeat its ``usage``. Each line names its parent (``parentUuid``); 2.x hangs each
tool result off the line holding its own ``tool_use``, so parallel calls branch the tree.

``TranscriptReader`` rebuilds each request as Claude Code sent it. Lines are contracted into nodes
first: all lines of one ``message.id`` are one node (the assistant message), and the user lines that
only answer that message's tool calls are one node after it (its tool results, in call order), so
parallel calls and their results are never lost on a side branch. The context of a request is the
chain of nodes above its first line: rewinds take the branch that leads to the request, and a
``compact_boundary`` (or any root) starts a new context. Contexts are persistent linked lists that
share their earlier messages, built once per node, so an appended line costs what that line costs.

Corrupt chains never move later lines into an earlier turn: a parent is looked up only among the
lines before (a dangling parent, a cycle and a self-parent all fall back to the previous line of the
same thread), a repeated ``uuid`` names its newest line, and each case is a warning naming the line.
``<synthetic>`` messages (Claude Code's own API-error notes) and ``isVisibleInTranscriptOnly`` lines
were never sent and stay out, except the compaction summary (``isCompactSummary``), which is the first
message of the next context; ``toolUseResult`` is Claude Code's own record, never read as context: it
only tells the size of the files a compaction restores (``claude_truth.FileAccess``).

Threads: the main conversation and each sub-agent (``isSidechain`` lines, by ``agentId`` or by the
root of their chain; ``<session>/subagents/agent-*.jsonl`` files are read as more threads). Turns of a
thread: one per request, plus a pending one when the thread ends with input after its last request
(what the agent is about to send). ``tokenbox.core.sources.readers.claude_truth`` turns them into sessions whose headline is
the recorded context (or its prediction).
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Mapping, Sequence
from sys import intern
from types import MappingProxyType

from tokenbox.core.model.compaction import DEFAULT_WINDOW, LONG_WINDOW
from tokenbox.core.model.errors import NotYetComplete, SessionError
from tokenbox.core.model.llms import Window, WindowSource, keeps_prior_thinking
from tokenbox.core.model.names import ESTIMATE, MAIN_THREAD
from tokenbox.core.model.records import dataclass, field, replace
from tokenbox.core.model.session import RecordedUsage, Session
from tokenbox.core.parse.fastjson import MISSED, expect, loads, loads_utf8
from tokenbox.core.sources.readers.anthropic import TYPICAL_TOOL_DEFINITION, plain_block, result_images
from tokenbox.core.sources.readers.claude_truth import (
    PRIOR_SCALE,
    RESIDUAL_NOTED,
    FileAccess,
    Fit,
    Observation,
    PartSums,
    Restored,
    ScaleFits,
    recorded_context,
    typical_hidden,
    with_truth,
)
from tokenbox.core.sources.readers.common import (
    CALL,
    RESULT,
    THINKING,
    Block,
    Conversation,
    HeldInput,
    Message,
    SectionCache,
    build_session,
    call_argument,
    forget_messages,
    hold_input,
    input_argument,
    one_hour_writes,
    pick_model,
    reply_sections,
    section_meta,
)
from tokenbox.core.sources.turns import LazyTurns
from tokenbox.core.tokens.charclass import BaseEstimates

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

SOURCE = "claude-code"
NOT_RECORDED = "the system prompt, the tool definitions and memory files (Claude Code does not write them to transcripts)"
MAIN = MAIN_THREAD
_MESSAGE_TYPES = ("user", "assistant")
_USAGE_MAX = 10**12
_WARNINGS_KEPT = 200  # warnings past this are counted, not listed
# What the API's own framing adds to the visible text, in base-estimate units (fitted on real
# transcripts: a tool call or result carries its random ``toolu_…`` id and JSON structure). It counts
# toward calibration and predictions; the sections show the text, the ``inferred`` part the rest.
BLOCK_FRAMING = {CALL: 12.0, RESULT: 12.0}
MESSAGE_FRAMING = 3.0
_ROOT = -1  # the node of a line that is not a message and starts a chain (a hook's progress line)
_HEX_DIGITS = "0123456789abcdef"  # a uuid's digits as Claude Code writes them (lowercase)


def _uuid_key(uuid: str) -> int | str:
    """``uuid`` as a key of the reader's lookup by uuid: one as Claude Code writes it (36 characters, lowercase
    hex digits in groups of 8-4-4-4-12) as its 128-bit number (44 bytes, not 85: one for every line of a session
    followed), any other as it is (no number equals a string: two uuids are one key only when they are the same
    string). Checked by string methods, not a regular expression: a few per line of a long transcript read."""
    if len(uuid) == 36 and uuid[8] == uuid[13] == uuid[18] == uuid[23] == "-":
        digits = uuid.replace("-", "")
        # 32 left: no other hyphen; nothing left once the hex digits are stripped: all of them are (``int`` alone
        # would take capitals, underscores, a sign or spaces too)
        if len(digits) == 32 and not digits.strip(_HEX_DIGITS):
            return int(digits, 16)
    return uuid
SHARED_TEXT_CHARS = 128  # a block's text this long is kept once when said again (``TranscriptReader._share_texts``)


# ---------------------------------------------------------------- detection


def looks_like_transcript(value: Any) -> bool:
    """Whether one parsed line is a Claude Code transcript record."""
    if not isinstance(value, dict) or "tokenbox" in value or not isinstance(value.get("type"), str):
        return False
    if "sessionId" in value or "uuid" in value or "leafUuid" in value:
        return True
    if value["type"] == "file-history-snapshot" and "snapshot" in value:
        return True  # Claude Code's first lines of a new session, before any message
    message = value.get("message")
    return isinstance(message, dict) and "role" in message


# ---------------------------------------------------------------- the persistent context


# a transcript message's own meta: always empty (its blocks carry theirs), read only (merged into its sections'
# metas), so one read-only mapping shared by every message, not an empty dict each (a message per context kept)
_NO_META: Mapping[str, Any] = MappingProxyType({})


class State:
    """The context after some node: a persistent list of messages (``prev`` shares the earlier ones).

    ``visible`` is the base estimate of every block so far except thinking; ``thinking`` the base
    estimate of thinking blocks so far and ``thinking_cut`` its value at the last user text: the API
    strips thinking before that point, so it does not count toward the context.

    Lines of the same role in a row make one message: a state holds only the blocks its node added and
    ``run``, the state whose message it continues, so a run of n lines costs n states of their own
    blocks (not n copies of a growing list); ``message`` puts the run's blocks together when first
    asked, and is then the same object (section caches are keyed by the message's identity).
    """

    __slots__ = ("_message", "blocks", "depth", "keeps", "line", "prev", "role", "run", "thinking", "thinking_cut", "visible")

    def __init__(self, prev: State | None, role: str, blocks: list[Block], visible: float, thinking: float,
                 thinking_cut: float, run: State | None = None, line: int = 1, keeps: bool = False) -> None:
        self.prev = prev
        # the model answering this context keeps earlier turns' thinking (``llms.keeps_prior_thinking``): a new
        # user text then strips none of it (the model of the newest reply in the context, until another answers)
        self.keeps = keeps
        self.role = role
        self.blocks = blocks
        self.run = run
        self.depth = 1 if prev is None else prev.depth + 1
        self.line = run.line if run is not None else line
        self.visible = visible
        self.thinking = thinking
        self.thinking_cut = thinking_cut
        self._message: Message | None = None

    @property
    def index(self) -> int:
        """The place of this state's message in its context (0: the first): a run's states share their
        ``prev``, so it is ``depth - 1`` for every state of a run (worked out, not a slot per state)."""
        return self.depth - 1

    @property
    def estimate(self) -> float:
        """The base estimate of what this context sends (thinking before the last user text excluded)."""
        return self.visible + self.thinking - self.thinking_cut

    @property
    def message(self) -> Message:
        """The message this state ends with: every block of its run, in order."""
        if self._message is not None:
            return self._message
        if self.run is None:  # one line's message: its blocks are this state's list (never changed in place)
            blocks = self.blocks
        else:
            parts = []
            state: State | None = self
            while state is not None:
                parts.append(state.blocks)
                state = state.run
            blocks = [block for part in reversed(parts) for block in part]
        self._message = Message(self.role, blocks, self.depth - 1, _NO_META, self.line, 1)
        return self._message

    def messages(self, known: tuple[State, tuple[Message, ...]] | None = None) -> list[Message]:
        """The messages of this context, oldest first (a new list). ``known``: a context and its messages
        (the ones asked for last): when this context grew from it, only what was added is gone through."""
        out: list[Message] = []
        state: State | None = self
        while state is not None and (known is None or state.depth > known[0].depth):
            out.append(state.message)
            state = state.prev
        if known is not None and state is known[0]:
            out.reverse()
            return [*known[1], *out]
        while state is not None:
            out.append(state.message)
            state = state.prev
        out.reverse()
        return out


_LONE_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<![0-9a-fA-F]{4})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def without_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate in its strings replaced by U+FFFD (pairs become their character):
    a lone surrogate cannot be encoded, counted or printed."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    return value


def _extend(state: State | None, role: str, blocks: list[Block], line: int, bases: BaseEstimates, *,
            fresh: bool = False, keeps: bool | None = None, compact: bool = False) -> State | None:
    """``state`` with ``blocks`` of ``role`` added (merged into the last message when the role repeats);
    ``bases`` is the reader's: the turns' calibration estimates the same texts again. ``fresh``: ``blocks``
    is a list of the caller's own, kept as it is (a node's list grows as lines come: the state keeps a copy).
    ``keeps``: a reply's model keeps earlier thinking (``None``: as the context before). ``compact``: each
    block's meta, complete once its estimate is in it, is kept as a ``SectionMeta`` (a followed reader's)."""
    if not blocks:
        return state
    visible = think = 0.0
    user_text = False
    for block in blocks:
        size = block.meta.get("estimate")
        if size is None:
            fixed = block.meta.get("tokens")
            size = float(fixed) if isinstance(fixed, int) else bases(block.text) + BLOCK_FRAMING.get(block.role, 0.0)
            loaded = block.meta.get("tool_references")
            if loaded:  # definitions the API adds, in base units (the thread's fitted scale makes them tokens)
                size += len(loaded) * TYPICAL_TOOL_DEFINITION / PRIOR_SCALE
            block.meta["estimate"] = size
            if compact:
                # the line that made the block has written all its meta (line, call, result's call, held input):
                # its estimate was the last key; a followed session keeps every block, a small dict of the same
                # few keys each (184 bytes), now its values' tuple and the keys' places shared
                block.meta = section_meta(block.meta)
        if block.role == THINKING:
            think += size
        else:
            visible += size
        if role == "user" and block.role != RESULT:
            user_text = True
    base_visible = state.visible if state else 0.0
    base_think = state.thinking if state else 0.0
    cut = state.thinking_cut if state else 0.0
    if keeps is None:
        keeps = state.keeps if state is not None else False
    if user_text and not keeps:
        cut = base_think  # thinking before this user text is stripped by the API (older models)
    kept = blocks if fresh else list(blocks)
    thinking = base_think + think if think else base_think  # the figure before, not an equal new float per state
    if state is not None and state.role == role:
        return State(state.prev, role, kept, base_visible + visible, thinking, cut, run=state, keeps=keeps)
    visible += MESSAGE_FRAMING
    return State(state, role, kept, base_visible + visible, thinking, cut, line=line, keeps=keeps)


# ---------------------------------------------------------------- records


@dataclass(slots=True)
class _Node:
    """A contracted node: one line, or every line of one request, or the tool results of one request."""

    index: int
    kind: str  # "line" | "request" | "results" | "boundary"
    thread: str
    role: str
    parent: int | None  # node index
    # its first line's number (its context's message starts there); a request's lines are its ``Request``'s, and
    # no other node's lines are read: not a tuple each (one node per line or request of a session followed)
    line: int = 0
    blocks: list[Block] = field(default_factory=list)
    calls: tuple[str, ...] = ()  # tool_use ids, in order (request nodes; the other nodes share the empty tuple)
    epoch: int = 0  # compactions of its thread before it
    light: bool = False  # another thread's node in a reader of the main thread only: its blocks are not kept
    keeps: bool = False  # a request node whose model keeps earlier turns' thinking (``State.keeps``)
    # the context after this node (``TranscriptReader.state_of``) and whether it holds every line of the node and
    # of those above it (a node that grows is reset, with every node after it): kept on the node, not in a lookup
    # beside it (an entry and a pair for every line of a long session)
    state: State | None = None
    built: bool = False


@dataclass(slots=True)
class Request:
    """One API request of a thread: its lines, recorded usage and the context it was sent with."""

    number: int  # 1-based within the thread
    key: str  # message.id
    thread: str
    first_line: int
    lines: tuple[int, ...]  # its lines, in order (a new tuple for each line it grows by)
    model: str | None
    usage: RecordedUsage | None
    context: State | None
    node: int
    request_id: str | None = None
    epoch: int = 0  # compactions seen in the thread before this request
    # what the calibration and the predictions read of ``context``, kept as numbers: a reader that drops its
    # main thread's history (``TranscriptReader(drop_history=True)``) drops the context of an older epoch
    estimate: float = 0.0  # ``context.estimate``
    grown: float = 0.0  # ``_grown(context)``


@dataclass(slots=True)
class Compaction:
    """A ``compact_boundary``: where the context restarted, and what it held before (``preTokens``)."""

    line: int
    thread: str
    pre_tokens: int | None
    trigger: str | None
    after_request: int  # requests of the thread before it
    post_tokens: int | None = None  # newer Claude Code versions record the context after it
    restored: Restored | None = None  # what Claude Code attaches again after it (files, plan, todos)


@dataclass
class Thread:
    """A conversation inside a transcript: the main one or a sub-agent's."""

    name: str
    requests: list[Request] = field(default_factory=list)
    last_node: int | None = None  # the newest node of the thread, in file order
    last_line: int = 0
    agent_id: str | None = None
    compactions: list[Compaction] = field(default_factory=list)
    epoch: int = 0
    observations: list = field(default_factory=list)  # per request, for calibration (tokenbox.core.sources.readers.claude_truth)
    peaks: list = field(default_factory=list)  # per request, the largest recorded context so far
    fits: Any = field(default=None)
    sums: Any = field(default=None, compare=False, repr=False)  # the visible parts' running sums (claude_truth.PartSums), made by thread_turns
    turns: Any = field(default=None, compare=False, repr=False)  # (what they were made from, the LazyTurns): the turns of the thread as last handed out
    messages: Any = field(default=None, compare=False, repr=False)  # (a context, its messages): the ones of the turn built last
    files: FileAccess = field(default_factory=lambda: FileAccess())

    def __post_init__(self) -> None:
        if self.fits is None:
            self.fits = ScaleFits()

    def pending_state(self, reader: TranscriptReader) -> State | None:
        """The context about to be sent, when the thread ends with input after its last request."""
        if self.last_node is None:
            return None
        node = reader.nodes[self.last_node]
        # Claude Code's own notes after a failed request ("Request timed out", "Invalid API key": the
        # ``<synthetic>`` lines) were never sent: the input before them is still what the agent sends next
        while _unsent_reply(node) and node.parent is not None:
            node = reader.nodes[node.parent]
        if node.kind in ("request", "boundary") or node.role != "user":
            return None
        if self.requests and self.requests[-1].node == node.index:
            return None
        return reader.state_of(node.index)


class TranscriptReader:
    """Reads a transcript line by line (``feed``); keeps every built context for the next lines.

    ``drop_history`` (a followed transcript's reader): at each compaction of the main thread, what its
    earlier epochs held (their nodes' blocks and contexts, their requests' contexts, their messages'
    sections) is dropped, so what is kept grows with the session since its last compaction, not with its
    history; the requests keep their numbers (``Request.estimate``, ``grown``, the usage). A turn of an
    older epoch is built again from the file when asked for (``held_request``: that epoch's lines read
    again). A line that needs what was dropped (one continuing from a node before the compaction: a rewind
    past it, a late line of an older request) sets ``history_needed``: the reader is then wrong, and its
    follower reads the file again with a reader that keeps its history (``TranscriptFollower.read``).
    """

    def __init__(self, path: str, *, main_only: bool = False, max_bytes: int | None = None,
                 drop_history: bool = False) -> None:
        self.path = path
        self._agent_file = os.path.basename(path).startswith("agent-")  # a sub-agent's file (``subagent_files``)
        self.drop_history = drop_history
        # a follower's reader (one that drops its history and reads on) keeps its blocks' metas compact once
        # complete (``_extend``); a one-shot read of the main thread does not: its cold plan reads each meta
        # through Python calls at once (+1.5 % of its CPU) to hold 1.6 % less at its peak
        self._compact_metas = drop_history and not main_only
        self.history_needed = False  # a line needed what was dropped: this reader must be replaced
        self.epochs_read = 0  # dropped epochs read again from the file (``held_request``)
        self._dropped_before = 0  # the main thread's nodes below this index belong to a dropped epoch,
        self._kept_nodes: set[int] = set()  # but these: each compaction's first request (``_drop_before``)
        self._requests_dropped = 0  # the main thread's requests looked at by ``_drop_before``
        self._restored: tuple[int, TranscriptReader, list[Request]] | None = None  # (epoch, its reader, its requests)
        self.max_bytes = max_bytes  # the limit of a read again (main_only; ``None``: the default)
        # main_only (a one-shot read of the main thread's turns): the other threads' blocks are not kept and
        # their requests get no context; ``whole_read_needed`` is set when the main thread turns out to
        # need one of them (a parent, a call or a request shared with another thread, or no main turn)
        self.main_only = main_only
        self.whole_read_needed = False
        self.nodes: list[_Node] = []
        self.threads: dict[str, Thread] = {}
        self.warnings: list[str] = []
        self.warning_count = 0
        self.summaries: list[str] = []
        self.others: dict[str, int] = {}
        self.session_id: str | None = None
        self.version: str | None = None
        self.cwd: str | None = None
        self.lines_read = 0
        self.bases = BaseEstimates()  # base estimates by text, shared by the contexts and the turns
        self.section_cache: SectionCache = {}  # each message's sections, shared by every turn that holds it
        self._texts: dict[str, str] = {}  # the blocks' longer texts, each kept once (``_share_texts``)
        # uuid (``_uuid_key``) -> its newest line, and by line (from ``_first_named``, the first line that named
        # one) the node the lines below it continue from (``None``: the line named no uuid): one lookup by uuid, not
        # two, and a list's slot for the node of each line
        self._uuid_line: dict[str | int, int] = {}
        self._line_node: list[int | None] = []
        self._first_named = 0
        # the uuid that named a line last and its key: the next line's parent, most often (its key not made again)
        self._last_uuid: str | None = None
        self._last_key: int | str = ""
        self._request_node: dict[str, int] = {}  # message.id -> node
        self._call_request: dict[str, int] = {}  # tool_use id -> request node
        self._results_node: dict[int, int] = {}  # request node -> its results node
        self._sidechains = 0
        self._last_by_kind: dict[bool, int] = {}  # sidechain? -> newest node, for lines without a usable parent
        self._subagents: dict[str, TranscriptFollower] = {}  # the sub-agents' files beside it, followed
        self.touched: set[str] = set()  # threads a line was read into since ``all_threads`` last made them
        # what ``all_threads`` made last: (the sub-agents' readers, the readers' shared facts, the threads, each
        # thread's reader)
        self._all_made: tuple[list[TranscriptReader], list[tuple], dict[str, Sequence[Session]], dict[str, int]] | None = None

    # -- warnings

    def warn(self, line: int, text: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < _WARNINGS_KEPT:
            self.warnings.append(f"{os.path.basename(self.path)}:{line}: {text}")

    # -- reading

    def feed_text(self, number: int, text: str) -> None:
        """One complete line of the file (blank lines are skipped; an unreadable one is a warning)."""
        if not text.strip():
            return
        self.lines_read += 1
        try:
            value = loads(text)
        except (ValueError, RecursionError):
            self.warn(number, "not a JSON object; the line is skipped")
            return
        if "\\u" in text and _LONE_SURROGATE.search(text):  # Node writes a lone surrogate as a \uD8xx escape
            fixed = without_lone_surrogates(value)
            if fixed != value:
                value = fixed
                self.warn(number, "a lone surrogate (half of a character) is read as U+FFFD")
        self.feed(number, value)

    def feed_line(self, number: int, data: bytes) -> None:
        """``feed_text`` of one complete line given as its UTF-8 bytes: read without decoding it first when
        the fast decoder takes it, else decoded (a ``UnicodeDecodeError`` is the caller's to place) and
        fed as text. The outcome is ``feed_text``'s of the decoded line, warnings included: the fast decoder
        refuses a lone surrogate escape (``loads_utf8``), so a line with one is read as text, where it is
        replaced and warned of (not looked for in every line's bytes: ≈2 ms a MB, most lines have backslashes)."""
        if not data.strip():
            return  # ASCII whitespace only: blank as text too
        value = loads_utf8(data)
        if value is not MISSED:
            self.lines_read += 1
            self.feed(number, value)
            return
        self.feed_text(number, data.decode("utf-8"))

    def feed(self, number: int, value: Any) -> None:
        self._restored = None  # an older epoch read again is kept while nothing is appended (past requests viewed)
        if not isinstance(value, dict):
            self.warn(number, "not a JSON object; the line is skipped")
            return
        kind = value.get("type")
        self.session_id = self.session_id or _str(value.get("sessionId"))
        self.version = _str(value.get("version")) or self.version
        self.cwd = self.cwd or _str(value.get("cwd"))
        if kind in _MESSAGE_TYPES and isinstance(value.get("message"), dict):
            self._message_line(number, value, kind)
        elif kind in _MESSAGE_TYPES and "message" in value:
            self.warn(number, "message is not an object; the line is skipped")
        elif kind == "system" and value.get("subtype") == "compact_boundary":
            self._boundary(number, value)
        elif kind == "summary" and isinstance(value.get("summary"), str):
            self.summaries.append(value["summary"])
        else:
            label = kind if isinstance(kind, str) else "untyped"
            self.others[label] = self.others.get(label, 0) + 1
            uuid = _str(value.get("uuid"))
            if uuid is not None and "parentUuid" in value:
                # other lines (system notes, hook progress, …) can sit in the chain: lines below them
                # continue from their parent, as if they were not there
                parent = self._parent_node(number, value, uuid, value.get("isSidechain") is True)
                self._name(uuid, _uuid_key(uuid), number, _ROOT if parent is None else parent)

    def _boundary(self, number: int, value: dict) -> None:
        sidechain = value.get("isSidechain") is True
        thread_name = self._thread_for(number, value, sidechain, None)
        thread = self._thread(thread_name, value)
        node = self._new_node("boundary", thread_name, "system", None, number)
        meta = value.get("compactMetadata") if isinstance(value.get("compactMetadata"), dict) else {}
        pre = meta.get("preTokens")
        post = meta.get("postTokens")
        thread.compactions.append(
            Compaction(number, thread_name, pre if isinstance(pre, int) and not isinstance(pre, bool) else None,
                       _str(meta.get("trigger")), len(thread.requests),
                       post if isinstance(post, int) and not isinstance(post, bool) and post > 0 else None,
                       thread.files.restored())
        )
        thread.epoch += 1
        uuid = _str(value.get("uuid"))
        if uuid is not None:
            self._name(uuid, _uuid_key(uuid), number, node.index)
        self._touch(thread, node.index, number, sidechain)
        if thread_name == MAIN and self.drop_history and not self.history_needed:
            self._drop_before(node.index)

    def _message_line(self, number: int, value: dict, kind: str) -> None:
        message = value["message"]
        # a role is one of two words in every line of a session: its one copy kept, not the line's (``intern``)
        role = intern(message["role"]) if isinstance(message.get("role"), str) else kind
        sidechain = value.get("isSidechain") is True
        uuid = _str(value.get("uuid"))
        named = _uuid_key(uuid) if uuid is not None else None  # (``key`` below is the request's)
        used = self._uuid_line.get(named) if named is not None else None
        if used is not None:
            self.warn(number, f"uuid {uuid} was already used by line {used}; it now names this line")
        parent = self._parent_node(number, value, uuid, sidechain)
        if parent is not None and self.dropped(parent):
            self.history_needed = True  # a message continues from before the main thread's last compaction
        thread_name = self._thread_for(number, value, sidechain, parent)
        thread = self._thread(thread_name, value)
        blocks = self._blocks(number, message.get("content"))
        if not (self.main_only and thread_name != MAIN):  # (another thread's blocks are not kept: not shared either)
            self._share_texts(blocks)
        synthetic = kind == "assistant" and message.get("model") == "<synthetic>"
        summary = value.get("isCompactSummary") is True  # shown in the transcript only, and sent as the next context
        unsent = synthetic or (value.get("isVisibleInTranscriptOnly") is True and not summary) \
            or value.get("isApiErrorMessage") is True
        if value.get("isMeta") is True or value.get("isCompactSummary") is True:
            flag = "is_meta" if value.get("isMeta") is True else "is_compact_summary"
            for block in blocks:
                block.meta[flag] = True
        if kind == "assistant" and not unsent:
            key = _str(message.get("id")) or _str(value.get("requestId")) or f"line-{number}"
            node_index = self._request_line(number, thread, key, parent, role, blocks, message, value)
        elif kind == "user" and not unsent and blocks and all(b.role == RESULT or b.meta.get("in_tool_result") for b in blocks):
            node_index = self._results_line(number, thread_name, parent, blocks)
        else:
            node = self._new_node("line", thread_name, role, parent, number, None if unsent else blocks)
            node_index = node.index
        if named is not None:
            self._name(uuid, named, number, node_index)
        if self.main_only and thread_name != MAIN:
            pass  # another thread's files (what its compactions restore): not read for the main thread's turns
        elif kind == "user" and isinstance(value.get("toolUseResult"), dict):
            self._file_access(thread, blocks, value["toolUseResult"])
        elif kind == "assistant":
            for block in blocks:
                if block.role == CALL and block.tool in ("ExitPlanMode", "TodoWrite"):
                    thread.files.note_call(block.tool, block.meta.get("tool_input"), self.bases)
        if not (self.main_only and thread_name != MAIN):  # (another thread's blocks are not kept)
            _hold_inputs(blocks)
        self._touch(thread, node_index, number, sidechain)

    def _share_texts(self, blocks: list[Block]) -> None:
        """Each block's text, when an earlier block had the same, made that block's string: a session says
        the same things again (a file read twice, the same tool output, Claude Code's reminders), and the
        reader keeps every block's text as long as it follows the file. Short texts are not looked up (a
        lookup's entry would cost about what sharing them saves)."""
        texts = self._texts
        for block in blocks:
            text = block.text
            if len(text) >= SHARED_TEXT_CHARS:
                block.text = texts.setdefault(text, text)

    def _file_access(self, thread: Thread, blocks: list[Block], record: dict) -> None:
        """What a Read, Edit or Write result says of its file's size (what a compaction restores)."""
        for block in blocks:
            call_id = block.meta.get("tool_use_id")
            owner = self._call_request.get(call_id)
            if owner is not None and self.nodes[owner].light:
                self.whole_read_needed = True  # a main-thread result of another thread's call
            if owner is not None and self.dropped(owner):
                self.history_needed = True  # a result of a call made before the last compaction
            call = _call_block(self.nodes[owner], call_id) if owner is not None else None
            if call is not None and call.tool in ("Read", "Edit", "MultiEdit", "Write"):
                thread.files.access(call.tool, record, block.text, self.bases)

    def _touch(self, thread: Thread, node: int, number: int, sidechain: bool) -> None:
        self.touched.add(thread.name)
        thread.last_node = node
        thread.last_line = number
        self._last_by_kind[sidechain] = node

    def _parent_node(self, number: int, value: dict, uuid: str | None, sidechain: bool) -> int | None:
        """The node this line continues (``None``: a root). Only earlier lines can be parents."""
        if "parentUuid" not in value and "uuid" not in value:
            return self._last_by_kind.get(sidechain)  # no uuids at all: each line follows the one before
        parent = value.get("parentUuid")
        if parent is None:
            return None
        if not isinstance(parent, str):
            self.warn(number, "parentUuid is not a string; the line continues from the line before it")
            return self._last_by_kind.get(sidechain)
        if parent == uuid:
            self.warn(number, "parentUuid names the line itself; it continues from the line before it")
            return self._last_by_kind.get(sidechain)
        line = self._uuid_line.get(self._last_key if parent == self._last_uuid else _uuid_key(parent))
        found = None if line is None else self._line_node[line - self._first_named]
        if found == _ROOT:
            return None  # a chain of lines that are not messages, from a root
        if found is None:
            if not (sidechain and self._agent_file and isinstance(value.get("agentId"), str)):
                # (a sub-agent's own file: its lines may continue lines of the transcript that launched it, such
                # as a compaction agent's, which are not in this file: not a broken file, nothing to warn of)
                self.warn(number, f"parentUuid {parent} is on no earlier line (dangling or a cycle); it continues from the line before it")
            return self._last_by_kind.get(sidechain)
        return found

    def _name(self, uuid: str, key: int | str, number: int, node: int) -> None:
        """``uuid`` (its ``key``: ``_uuid_key``) names line ``number``, and the lines below it continue from ``node``."""
        self._uuid_line[key] = number
        self._last_uuid, self._last_key = uuid, key
        nodes = self._line_node
        if not nodes:
            self._first_named = number
        elif number < self._first_named:  # (lines come in order: never seen)  # mutation: equivalent (a line is named once)
            nodes[:0] = [None] * (self._first_named - number)
            self._first_named = number
        place = number - self._first_named
        if place < len(nodes):
            nodes[place] = node
        else:  # (the line after the last named, most often: every message line names one)
            if place > len(nodes):  # mutation: equivalent (at len(nodes) the list is extended by no None)
                nodes.extend([None] * (place - len(nodes)))
            nodes.append(node)

    def _thread_for(self, number: int, value: dict, sidechain: bool, parent: int | None) -> str:
        if not sidechain:
            return MAIN
        agent = _str(value.get("agentId"))
        if agent is not None:
            return f"agent-{agent}"
        if parent is not None:
            inherited = self.nodes[parent].thread
            if inherited != MAIN:
                return inherited
        self._sidechains += 1
        return f"sidechain-{self._sidechains}"

    def _thread(self, name: str, value: dict) -> Thread:
        thread = self.threads.get(name)
        if thread is None:
            thread = self.threads[name] = Thread(name, agent_id=_str(value.get("agentId")))
        return thread

    def _thread_epoch(self, name: str) -> int:
        thread = self.threads.get(name)
        return thread.epoch if thread is not None else 0

    def _new_node(self, kind: str, thread: str, role: str, parent: int | None, number: int,
                  blocks: list[Block] | None = None) -> _Node:
        """A new node of line ``number``, holding ``blocks`` unless it is light (``None``: it holds none)."""
        light = self.main_only and thread != MAIN
        # its list given at once: not an empty default list made for each node, then replaced
        node = _Node(len(self.nodes), kind, thread, role, parent, number,
                     [] if blocks is None or light else blocks, epoch=self._thread_epoch(thread), light=light)
        self.nodes.append(node)
        return node

    def _grow(self, node: _Node, number: int, blocks: list[Block]) -> None:
        if self.dropped(node.index):
            self.history_needed = True  # a late line of a node whose blocks were dropped
        if not node.light:
            # a new list, not the node's extended: the contexts built from the node share its list (``_contribute``)
            node.blocks = [*node.blocks, *blocks]
        if node.built:
            # A node whose context was already built grew (a line written after later ones): the
            # contexts built through it may miss the line, so they are rebuilt when next asked for.
            # Only nodes after it can descend from it (a parent is always an earlier line): the
            # contexts before it stay, shared, so a long chain is not rebuilt (and held twice) whole.
            for later in self.nodes[node.index:]:
                later.state, later.built = None, False

    def _request_line(
        self, number: int, thread: Thread, key: str, parent: int | None, role: str, blocks: list[Block], message: dict, value: dict
    ) -> int:
        usage = _usage(message.get("usage"))
        found = self._request_node.get(key)
        if found is not None:
            node = self.nodes[found]
            if node.light and thread.name == MAIN:
                self.whole_read_needed = True  # a main-thread line of another thread's request
            self._grow(node, number, blocks)
            request = thread.requests[-1] if thread.requests and thread.requests[-1].key == key else _find(thread, key)
            if request is not None:
                request.lines = (*request.lines, number)
                if usage is not None:
                    request.usage = usage  # the last line has the final output count
        else:
            node = self._new_node("request", thread.name, role, parent, number, blocks)
            self._request_node[key] = node.index
            context = self.state_of(parent) if parent is not None and not node.light else None
            model = intern(message["model"]) if isinstance(message.get("model"), str) else None  # one copy per model
            node.keeps = keeps_prior_thinking(model)
            request = Request(
                number=len(thread.requests) + 1,
                key=key,
                thread=thread.name,
                first_line=number,
                lines=(number,),
                model=model,
                usage=usage,
                context=context,
                node=node.index,
                request_id=_str(value.get("requestId")),
                epoch=thread.epoch,
                estimate=context.estimate if context is not None else 0.0,
                grown=_grown(context),
            )
            thread.requests.append(request)
        for block in blocks:
            call = block.meta.get("tool_use_id")
            if block.role == CALL and isinstance(call, str):
                node.calls += (call,)
                self._call_request[call] = node.index
        return node.index

    def _results_line(self, number: int, thread: str, parent: int | None, blocks: list[Block]) -> int:
        owners = {self._call_request.get(b.meta.get("tool_use_id")) for b in blocks}
        owner = owners.pop() if len(owners) == 1 else None
        if owner is not None and self.nodes[owner].epoch != self._thread_epoch(thread):
            owner = None  # a compaction came between the call and its result: the line's own parent holds
        if owner is None:
            node = self._new_node("line", thread, "user", parent, number, blocks)
            return node.index
        request = self.nodes[owner]
        if thread == MAIN and (request.light or self.nodes[self._results_node.get(owner, owner)].light):
            self.whole_read_needed = True  # a main-thread result of another thread's call
        for block in blocks:
            call = _call_block(request, block.meta.get("tool_use_id"))
            if call is not None:
                # the call's id string, not the equal one this line was decoded with: one id kept per call
                block.meta["tool_use_id"] = call.meta["tool_use_id"]
                block.tool = block.tool or call.tool
                argument = input_argument(call.tool, call.meta)
                if argument:
                    block.meta["call_argument"] = argument
            if block.tool:
                block.meta["tool"] = block.tool
        existing = self._results_node.get(owner)
        if existing is not None:
            self._grow(self.nodes[existing], number, blocks)
            return existing
        node = self._new_node("results", thread, "user", owner, number, blocks)
        self._results_node[owner] = node.index
        return node.index

    def _blocks(self, number: int, content: Any) -> list[Block]:
        if isinstance(content, str):
            values: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            values = content
        else:
            self.warn(number, "message.content is neither text nor a list of blocks; the line is empty")
            return []
        blocks = []
        for index, item in enumerate(values):
            if not isinstance(item, dict) or not isinstance(item.get("type"), str):
                self.warn(number, f"content block {index} has no type; it is kept as written")
                item = {"type": "unknown", "value": item}
            block = plain_block(item, number, 1)
            block.meta["line"] = number
            if block.meta.get("unknown"):
                self.warn(number, f"unknown block type {item['type']!r}; it is kept as its JSON (≈)")
            blocks.append(block)
            if block.role == RESULT:  # an image inside a tool result (an MCP screenshot) is a part of its own
                for image in result_images(item, number, 1):
                    image.meta["line"] = number
                    blocks.append(image)
        return blocks

    # -- the main thread's history

    def dropped(self, index: int) -> bool:
        """Whether node ``index``'s blocks and context were dropped (a main-thread node before its last
        compaction, in a reader that drops its history)."""
        return index < self._dropped_before and self.nodes[index].thread == MAIN and index not in self._kept_nodes

    def held(self, thread: str) -> tuple[int, int]:
        """What the reader keeps of ``thread``: its nodes' blocks and its requests' contexts, counted."""
        blocks = sum(len(node.blocks) for node in self.nodes if node.thread == thread)
        contexts = sum(1 for request in self.threads[thread].requests if request.context is not None) \
            if thread in self.threads else 0
        return blocks, contexts

    def _drop_before(self, boundary: int) -> None:
        """Drop what the main thread's nodes before node ``boundary`` (its newest compaction) hold."""
        start = self._dropped_before
        nodes = self.nodes
        for node in nodes[start:boundary]:
            if node.thread != MAIN and node.parent is not None and nodes[node.parent].thread == MAIN:
                # another thread's line hangs off the main thread's (older transcripts' side chains): its
                # contexts go through the main thread's nodes, so nothing is dropped, now or later
                self.drop_history = False
                return
        states: dict[int, State] = {}

        def gather(state: State | None) -> None:
            while state is not None and id(state) not in states:
                states[id(state)] = state
                state = state.prev

        main = self.threads[MAIN]
        requests = main.requests
        # the first request after each compaction is kept (its context: the summary and a prompt; its reply):
        # the compactions' ledger reads the summary's size from it on every append (``analysis.compactions``)
        kept = {requests[c.after_request].node for c in main.compactions if c.after_request < len(requests)}
        self._kept_nodes.update(index for index in kept if start <= index < boundary)
        for request in requests[self._requests_dropped:]:  # (the requests before were dropped before)
            if start <= request.node < boundary and request.node not in kept:
                gather(request.context)
                request.context = None
        self._requests_dropped = len(requests)
        texts: set[str] = set()
        for node in nodes[start:boundary]:
            if node.thread != MAIN or node.index in kept:
                continue
            gather(node.state)
            node.state, node.built = None, False
            texts.update(block.text for block in node.blocks if len(block.text) >= SHARED_TEXT_CHARS)
            node.blocks = []
        messages = [state._message for state in states.values() if state._message is not None]
        forget_messages(self.section_cache, messages)
        if main.messages is not None and id(main.messages[0]) in states:
            main.messages = None  # the messages of a turn built from a dropped context
        for text in texts:
            self._texts.pop(text, None)
        self.bases.forget(texts)
        self._dropped_before = boundary

    def held_request(self, request: Request) -> tuple[TranscriptReader, Request]:
        """The reader holding ``request``'s context and reply, and the request there: this reader and the
        request itself, or, for a main-thread request of a dropped epoch, a reader of that epoch's lines
        read again (the last one kept) and its request."""
        if request.thread != MAIN or not self.dropped(request.node):
            return self, request
        epoch = request.epoch
        restored = self._restored
        if restored is None or restored[0] != epoch:
            restored = self._restored = (epoch, *self._read_epoch(epoch))
            self.epochs_read += 1
        return restored[1], restored[2][request.number - 1 - self._first_of_epoch(epoch)]

    def _first_of_epoch(self, epoch: int) -> int:
        """The index of the main thread's first request of ``epoch``."""
        compactions = self.threads[MAIN].compactions
        return compactions[epoch - 1].after_request if epoch > 0 else 0

    def _read_epoch(self, epoch: int) -> tuple[TranscriptReader, list[Request]]:
        """A reader of the main thread's ``epoch`` read again from the file, and its requests. Its lines
        alone (from its compaction to the next) hold its contexts, which a compaction starts anew; when
        what they give is not what this reader read (the file changed, or the epoch's lines need earlier
        ones), the file is read from its top to the next compaction."""
        # start-up: the tail module's hashlib loads OpenSSL: only a reader that dropped its history reads again
        from tokenbox.core.sources.tail import lines_between

        main = self.threads[MAIN]
        first = self._first_of_epoch(epoch)
        wanted = [r for r in main.requests[first:] if r.epoch == epoch]
        start = main.compactions[epoch - 1].line if epoch > 0 else 1
        stop = main.compactions[epoch].line
        for begin in dict.fromkeys((start, 1)):
            reader = TranscriptReader(self.path)
            for number, line in lines_between(self.path, begin, stop):
                reader.feed_line(number, line)
            thread = reader.threads.get(MAIN)
            found = [r for r in thread.requests if r.epoch == thread.epoch] if thread is not None else []
            if len(found) == len(wanted) and all(
                    (a.key, a.first_line, a.lines, a.estimate, a.grown) == (b.key, b.first_line, b.lines, b.estimate, b.grown)
                    for a, b in zip(found, wanted, strict=True)):
                return reader, found
        raise SessionError(f"request {wanted[0].number if wanted else first + 1} is before a compaction and the file "
                           "no longer holds it as it was read", "reload the file", self.path)

    # -- contexts

    def state_of(self, index: int | None) -> State | None:
        """The context after node ``index`` (every node above it, contributions as read so far)."""
        if index is None:
            return None
        chain = []
        current: int | None = index
        state: State | None = None
        while current is not None:
            node = self.nodes[current]
            if node.built:
                state = node.state
                break
            if node.light:
                self.whole_read_needed = True  # a main-thread context through another thread's node
            if self.dropped(current):
                self.history_needed = True  # a context through a node whose blocks were dropped
            chain.append(current)
            current = node.parent
        for i in reversed(chain):
            node = self.nodes[i]
            state = self._contribute(state, node)
            node.state, node.built = state, True
        return state

    def _contribute(self, state: State | None, node: _Node) -> State | None:
        if node.kind == "boundary":
            return None  # a compaction starts a new context (the summary comes on the next line)
        if node.kind == "results":
            order = {call: i for i, call in enumerate(self.nodes[node.parent].calls)} if node.parent is not None else {}
            blocks = sorted(node.blocks, key=lambda b: order.get(b.meta.get("tool_use_id"), len(order)))
            if all(map(operator.is_, blocks, node.blocks)):
                blocks = node.blocks  # results already in call order (the usual case): the node's list, not a copy
            return _extend(state, "user", blocks, node.line, self.bases, fresh=True, compact=self._compact_metas)
        # (a node's list is never changed in place, only replaced when it grows: its context keeps it as it is)
        return _extend(state, node.role, node.blocks, node.line, self.bases, fresh=True,
                       keeps=node.keeps if node.kind == "request" else None, compact=self._compact_metas)

    def request_output(self, request: Request) -> list[Block]:
        """The blocks of a request's reply (what becomes context on the next request)."""
        return list(self.nodes[request.node].blocks)

    # -- turns (a ``formats.ThreadedLog``)

    def main_turns(self) -> LazyTurns:
        """The default thread's turns; before the main thread records a request, the hidden part is
        borrowed from another session of the same project."""
        name = default_thread(self)
        if name is None:
            raise no_request_error(self.path)
        borrowed = None
        if name == MAIN and not any(r.usage is not None for r in self.threads[name].requests):
            borrowed = project_hidden(self.path, self.session_id)
        return thread_turns(self, name, borrowed=borrowed)

    def main_turns_only(self) -> LazyTurns:
        """``main_turns()`` of a reader read once (a one-shot command's): what only the other threads hold
        (their blocks and contexts) and what the reader keeps to be fed more lines (every node's context,
        the lookups by uuid and call id) is dropped before a turn is built. Each request keeps its own
        context and the turns their pending one, so the turns are the same; the reader must not be fed
        again (a 50 MB transcript: ≈15 MB less at the peak, while the newest turn is built)."""
        name = default_thread(self)
        if self.main_only:
            turns = self.main_turns() if name == MAIN and not self.whole_read_needed else None
            if turns is None or self.whole_read_needed:  # (the pending context is made by main_turns)
                # the main thread needs what this read did not keep: the file read again, whole
                return TranscriptFollower(self.path, self.max_bytes).read().main_turns_only()
        else:
            turns = self.main_turns()
        if self.history_needed:  # (set while the pending context was made: a reader that keeps it all reads again)
            return TranscriptFollower(self.path, self.max_bytes, drop_history=False).read().main_turns_only()
        for node in self.nodes:
            node.state, node.built = None, False
            if node.thread != name:
                node.blocks = []
        for thread in self.threads.values():
            if thread.name != name:
                for request in thread.requests:
                    request.context = None
        for lookup in (self._uuid_line, self._line_node, self._request_node, self._call_request,
                       self._results_node, self._texts):
            lookup.clear()
        return turns

    def all_threads(self, max_bytes: int | None) -> dict[str, Sequence[Session]]:
        """Every thread with a turn, by name in file order, with the sub-agents' files beside the transcript
        (``<session>/subagents/agent-*.jsonl``, each read within ``max_bytes``; one that cannot be read
        leaves its thread out, not the session)."""
        threads: dict[str, Sequence[Session]] = {}
        readers = [self]
        for extra in subagent_files(self.path):
            # each sub-agent file is followed like the transcript: a reload reads what was appended to it
            follower = self._subagents.get(extra)
            if follower is None or follower.max_bytes != max_bytes:
                follower = self._subagents[extra] = TranscriptFollower(extra, max_bytes)
            try:
                readers.append(follower.read())
            except (OSError, SessionError):
                del self._subagents[extra]
                continue
        shared = [_shared_facts(each) for each in readers]  # once for a reader's threads (hundreds of sub-agents)
        made = self._all_made
        again = None
        if made is not None and len(made[0]) == len(readers) - 1 and all(map(operator.is_, made[0], readers[1:])) \
                and made[1] == shared:
            again = _made_again(readers, shared, made[2], made[3])
        if again is not None:
            threads, owners = again
        else:
            owners = {}
            for position, each in enumerate(readers):
                for name, thread in each.threads.items():
                    if name in threads or not (thread.requests or thread.pending_state(each) is not None):
                        continue
                    threads[name] = thread_turns(each, name, shared=shared[position])
                    owners[name] = position
        for each in readers:
            each.touched.clear()
        self._all_made = (readers[1:], shared, threads, owners)  # not itself: no cycle keeps a dropped reader
        if not threads:
            raise no_request_error(self.path)
        return dict(threads)


def _made_again(readers: list[TranscriptReader], shared: list[tuple], made: dict[str, Sequence[Session]],
                owners: dict[str, int]) -> tuple[dict[str, Sequence[Session]], dict[str, int]] | None:
    """``all_threads`` from what it made last, when only threads it had made were read into since (the
    others' turns are the same: ``thread_turns`` would hand them out as they were); ``None`` when a
    thread has to join (its file order decides its place) or another reader's thread takes a name."""
    threads = dict(made)
    for position, each in enumerate(readers):
        for name in each.touched:
            thread = each.threads[name]
            qualifies = bool(thread.requests or thread.pending_state(each) is not None)
            owner = owners.get(name)
            if owner == position and qualifies:
                threads[name] = thread_turns(each, name, shared=shared[position])
            elif owner is not None and owner < position:
                continue  # an earlier reader's thread of that name is the one kept
            elif not qualifies and owner != position:
                continue  # not a thread with a turn yet
            else:
                return None
    return threads, owners


def _find(thread: Thread, key: str) -> Request | None:
    for request in reversed(thread.requests):
        if request.key == key:
            return request
    return None


def _hold_inputs(blocks: list[Block]) -> None:
    """Each call's input, once its line is read (its results linked, its plan or todos noted), kept as a
    ``HeldInput``: the reader keeps every call of a session it follows, and the input's strings are its
    text's too. The argument the labels and the results show is worked out now, while it is parsed."""
    for block in blocks:
        if block.role == CALL and "tool_input" in block.meta:
            value = block.meta["tool_input"]
            if not isinstance(value, HeldInput):
                held = hold_input(value, block.text, f"[{block.type} {block.tool}]", call_argument(block.tool, value))
                if held is not None:
                    block.meta["tool_input"] = held


def _call_block(request: _Node, call: Any) -> Block | None:
    for block in request.blocks:
        if block.role == CALL and block.meta.get("tool_use_id") == call:
            return block
    return None


def _grown(state: State | None) -> float:
    """What a context has accumulated: the base estimate of every block along its chain, thinking included
    even where the API strips it (so it only grows from a request's context to the next's on one branch)."""
    return state.visible + state.thinking if state is not None else 0.0


# A reply whose thinking is shown counts as shown unless its recorded ``output_tokens`` exceed the estimate of
# what it shows by more than this: within it, the gap is the estimate's own error on the reply (tool calls'
# framing); beyond it, thinking the transcript holds only a summary of (Claude 4 models return a summary and
# bill the whole thinking, which the next request of the turn counts in full). The widest gap of a reply whose
# next request counted it as shown, over the corpus of issue 26: 130 (marot/spotter ae4a77f8, request 1: 59
# characters of thinking and two tool calls, 209 output tokens); the six replies over 200 were summaries
SUMMARY_GAP = 200


def _unseen_thinking(reader: TranscriptReader, request: Request, scale: float, context: State | None) -> int:
    """The tokens of ``request``'s reply that its transcript leaves out and ``context`` (a later request's,
    grown from it) still holds: the recorded ``output_tokens`` less the estimate of what the reply shows.
    Thinking written without its text (newer models omit it: an empty ``thinking`` and a signature) is all
    of it; thinking shown counts more than shown when the gap is over ``SUMMARY_GAP`` (the transcript holds
    a summary of it). 0 when the reply shows all its thinking, or when a prompt since has stripped it."""
    node = reader.nodes[request.node]
    if request.usage is None or context is None or node.light:
        return 0
    thinking = [b for b in node.blocks if b.role == THINKING and b.type == "thinking"]
    if not thinking:
        return 0
    reply = reader.state_of(request.node)
    if reply is None or context.thinking_cut != reply.thinking_cut:
        return 0  # a new prompt came after the reply: its thinking is stripped
    shown = reply.visible + reply.thinking - _grown(request.context)
    unseen = request.usage.output_tokens - round(scale * shown)
    if all(b.text for b in thinking) and unseen <= SUMMARY_GAP:
        return 0  # thinking shown: within the estimate's error of the reply as shown, not a summary's cut
    return max(0, unseen)


def _unsent_reply(node: _Node) -> bool:
    """An assistant line that was never sent (a ``<synthetic>`` note or an ``isApiErrorMessage``): every
    assistant line that was sent is a request node, and an unsent one keeps no blocks."""
    return node.kind == "line" and node.role == "assistant" and not node.blocks and not node.light


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _usage(value: Any) -> RecordedUsage | None:
    """The usage numbers, or ``None`` when ``input_tokens`` is missing or any number is malformed."""
    if not isinstance(value, dict) or "input_tokens" not in value:
        return None
    numbers = {}
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        raw = value.get(key)
        number = 0 if raw is None else raw
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= _USAGE_MAX:
            return None
        numbers[key] = number
    context = numbers["input_tokens"] + numbers["cache_creation_input_tokens"] + numbers["cache_read_input_tokens"]
    return RecordedUsage(context_tokens=context, **numbers,
                         cache_creation_1h_input_tokens=one_hour_writes(value, numbers["cache_creation_input_tokens"]))


def no_request_error(path: str) -> SessionError:
    """The state of a transcript without a message yet (an agent has just started)."""
    return NotYetComplete(
        "the Claude Code transcript has no message yet",
        "wait until the agent has written its first message",
        path,
        1,
        1,
        awaiting="the agent's first message",
    )


# ---------------------------------------------------------------- turns as sessions


def _shared_facts(reader: TranscriptReader) -> tuple:
    """What the reader shares with every thread's turns (it only grows): summaries, other records, warnings."""
    return (len(reader.summaries), len(reader.others), sum(reader.others.values()), reader.warning_count,
            reader.session_id, reader.version, reader.cwd)


def thread_turns(reader: TranscriptReader, thread_name: str, *, borrowed: tuple[int, str] | None = None,
                 shared: tuple | None = None):
    """The turns of one thread as a lazy sequence of sessions (see ``tokenbox.core.sources.readers.claude_truth``).

    ``borrowed``: the hidden part (and the file it came from) of another session of the project,
    used before this thread has recorded any request. ``shared``: ``_shared_facts(reader)`` (taken once
    for a reader's many threads).
    """
    thread = reader.threads[thread_name]
    # A thread no line has touched since its turns were made (most sub-agents of a long session, on
    # each append) gets the same turns: every line read into a thread moves its ``last_line``, and what
    # the reader shares with every thread (summaries, other records, warnings) only grows.
    made_from = (thread.last_line, len(thread.requests), thread.epoch, shared or _shared_facts(reader), borrowed)
    if thread.turns is not None and thread.turns[0] == made_from:
        return thread.turns[1]
    turns = _thread_turns(reader, thread, thread_name, borrowed)
    thread.turns = (made_from, turns)
    return turns


def _thread_turns(reader: TranscriptReader, thread: Thread, thread_name: str, borrowed: tuple[int, str] | None) -> LazyTurns:
    requests = thread.requests  # grows in place as the reader is fed; the count below is fixed
    observations = thread.observations
    peaks = thread.peaks  # the largest recorded context up to each request (for the window)
    for r in requests[max(0, len(observations) - 1):]:  # only the new requests (and the last one, still growing)
        observation = Observation(recorded_context(r.usage), r.estimate, r.epoch, r.model)
        before = peaks[r.number - 2] if r.number >= 2 else 0
        peak_here = max(before, observation.recorded or 0)
        if r.number <= len(observations):
            observations[r.number - 1] = observation
            peaks[r.number - 1] = peak_here
        else:
            observations.append(observation)
            peaks.append(peak_here)
    scales = thread.fits.update(observations)
    if thread.sums is None:
        thread.sums = PartSums(reader.bases)
    sums = thread.sums
    requests = requests[: len(observations)] if len(requests) == len(observations) else list(requests)
    pending = thread.pending_state(reader)
    count = len(requests) + (1 if pending is not None else 0)
    cache: SectionCache = reader.section_cache  # sections of a message are built once per reader
    path = reader.path
    name = reader.summaries[-1] if reader.summaries else f"Claude Code session {reader.session_id or os.path.basename(path)}"
    base_meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}, "not_recorded": NOT_RECORDED}
    for key, value in (("session_id", reader.session_id), ("version", reader.version), ("cwd", reader.cwd)):
        if value:
            base_meta[key] = value
    if reader.summaries:
        base_meta["summaries"] = list(reader.summaries)
    if reader.others:
        base_meta["other_records"] = {k: reader.others[k] for k in sorted(reader.others)}
    warnings = tuple(reader.warnings)
    if reader.warning_count > len(reader.warnings):
        warnings += (f"… and {reader.warning_count - len(reader.warnings)} more warnings like these",)
    hidden_label = "system prompt + tools + memory (not in the transcript)"

    def prediction(index: int, visible: float, grown: float) -> tuple[int | None, Fit]:
        """The predicted context of request ``index`` (or the pending one) from the requests before it;
        ``visible`` is its context's estimate, ``grown`` what the context has accumulated (``_grown``)."""
        last = next((j for j in range(min(index, len(requests)) - 1, -1, -1) if requests[j].usage is not None), None)
        epoch = thread.epoch if index >= len(requests) else requests[index].epoch
        if last is None:
            if borrowed is not None:
                hidden, source = borrowed
                fit = Fit(1.0, hidden, (), f"predicted: hidden part {hidden} borrowed from {source} (no request of this "
                          "session recorded yet), visible parts estimated", source)
                return hidden + round(visible), fit
            hidden, source = typical_hidden(reader.version, thread_name == MAIN)
            fit = Fit(1.0, hidden, (), f"predicted: no request of this thread recorded its usage yet and no other session "
                      f"of the project records it: hidden part {hidden}, {source} (≈), plus the visible parts", source,
                      typical=True)
            return hidden + round(visible), fit
        scale, used = scales[last]
        recorded = requests[last].usage.context_tokens  # type: ignore[union-attr]
        base = observations[last].visible
        hidden = recorded - round(scale * base)
        # a context that grew from the last request's goes on from its recorded figure; one that did not (a
        # rewind) restarts. Growth, not the estimate: thinking cut at a new prompt lowers the estimate only
        if requests[last].epoch == epoch and grown >= requests[last].grown:
            context = reader.held_request(requests[index])[1].context if index < len(requests) else pending
            unseen = _unseen_thinking(*reader.held_request(requests[last]), scale, context)
            target = recorded + round(scale * (visible - base)) + unseen
            how = f"predicted: request {last + 1}'s recorded {recorded} plus what was added since, ×{scale:.3f}"
            if unseen:
                how += f", plus {unseen} of its reply's thinking the transcript leaves out (its recorded output)"
            return target, Fit(scale, hidden, used or (last + 1,), how)
        # The context restarted (a compaction or a rewind). After a compaction Claude Code sends the system
        # prompt, tools and memory again (the hidden part of the thread's first request: what the session
        # accumulated unseen since is gone), the summary and what follows, and attaches again the files it
        # read last, the plan and the todo list.
        # the fitted scale also absorbs what Claude Code adds unseen along the way (reminders beside tool
        # results); a new context of a summary and new input has none of it: the prior scale at most
        scale = min(scale, PRIOR_SCALE)
        # the thread's first recorded request holds little but the hidden part: its split is the surest
        first = next((j for j in range(last + 1) if requests[j].usage is not None), last)
        start = max(0, requests[first].usage.context_tokens - round(scale * observations[first].visible))  # type: ignore[union-attr]
        compaction = next((c for c in reversed(thread.compactions) if c.after_request > last), None)
        restored = compaction.restored if compaction is not None else None
        extra = restored.tokens(scale) if restored is not None else 0
        hidden = start + extra
        target = hidden + round(scale * visible)
        if restored is not None:
            how = (f"predicted after a compaction: hidden part {start} (request {first + 1}'s: system prompt, tools, memory) "
                   f"plus {extra} Claude Code attaches again ({restored.describe(scale)}, ≈) plus the visible parts ×{scale:.3f}")
        else:
            how = f"predicted: hidden part {hidden} (from request {first + 1}) plus the visible parts ×{scale:.3f} (context restarted)"
        return target, Fit(scale, hidden, used or (last + 1,), how)

    pending_line = thread.last_line

    def infos(index: int) -> dict:
        if index < len(requests):
            request = requests[index]
            return {"thread": thread_name, "pending": False, "line": request.first_line, "request": request.key,
                    "recorded": request.usage, "model": request.model}
        return {"thread": thread_name, "pending": True, "line": pending_line, "request": None, "recorded": None,
                "model": requests[-1].model if requests else None}

    def build(index: int) -> Session:
        owner = reader  # the reader holding the request's context: another for a dropped epoch's (``held_request``)
        if index < len(requests):
            request = requests[index]
            owner, held = reader.held_request(request)
            state = held.context
            visible = observations[index].visible
            usage = request.usage
            model_name = request.model
            is_pending = False
        else:
            request = None
            state = pending
            visible = pending.estimate if pending is not None else 0.0
            usage = None
            model_name = requests[-1].model if requests else None
            is_pending = True
        if usage is not None:
            scale, used = scales[index]
            target: int | None = usage.context_tokens
            hidden = target - round(scale * visible)
            how = (f"recorded context; visible parts ×{scale:.3f} fitted on requests {used[0]}–{used[-1]} of the thread"
                   if used else f"recorded context; visible parts ×{scale:.3f}, the prior scale (no earlier request to fit)")
            predicted, _ = prediction(index, visible, _grown(state)) if index > 0 else (None, None)
            residual = None if predicted is None else target - predicted
            fit = Fit(scale, hidden, used, how, residual=residual)
        else:
            target, fit = prediction(index, visible, _grown(state))
        if owner is not reader:
            messages = state.messages() if state is not None else []
        else:
            messages = state.messages(thread.messages) if state is not None else []
            if state is not None:
                thread.messages = (state, tuple(messages))  # the next request's context grows from this one
        model, _ = pick_model(model_name)
        meta = dict(base_meta)
        meta["thread"] = thread_name
        if request is not None:
            meta["message_id"] = request.key
            meta["line"] = request.first_line
            meta["lines"] = list(request.lines)
            if request.request_id:
                meta["request_id"] = request.request_id
        else:
            meta["pending"] = True
            meta["line"] = thread.last_line
        if model_name and model is None:
            meta["model"] = model_name
        if thread.compactions:
            meta["compactions"] = [
                {"line": c.line, "pre_tokens": c.pre_tokens, "trigger": c.trigger, "after_request": c.after_request}
                for c in thread.compactions
                if c.after_request <= (index if request is not None else len(requests))
            ]
        conv = Conversation(
            source_format=SOURCE,
            messages=messages,
            name=name,
            model=model,
            tokenizer=ESTIMATE,
            meta=meta,
            recorded=usage,
            line=request.first_line if request is not None else thread.last_line,
        )
        session = build_session(conv, path, cache if owner is reader else owner.section_cache)
        turn_warnings = warnings
        if fit.typical:
            turn_warnings += (f"the system prompt, tools and memory files are not in the transcript and no request of this "
                              f"session has recorded their size yet: counted as {fit.source} ({fit.hidden}, ≈)",)
        session = with_truth(session, target=target, fit=fit, pending=is_pending, thread=thread_name,
                             warnings=turn_warnings, hidden_label=hidden_label, bases=reader.bases, sums=sums)
        if fit.residual is not None and abs(fit.residual) > RESIDUAL_NOTED * (target or 0):
            session = replace(session, warnings=(*session.warnings, (
                f"request {index + 1} recorded {target}, {fit.residual:+d} against what the requests before it "
                f"predicted ({100 * fit.residual / (target or 1):+.1f} %): a change the transcript does not show "
                "(plan mode, an attachment, a model switch); the next prediction starts from this figure")))
        sections = session.sections
        if request is not None:
            # the request's own reply, shown with it at 0 context tokens (it is context from the next request on)
            sections += tuple(reply_sections(conv, owner.request_output(held), len(messages)))
        window = claude_code_window(model_name, peak(index))
        budget = replace(session.budget, max_ctx=window.tokens)
        return replace(session, sections=sections, turn=index + 1, turn_count=count, budget=budget, window=window)

    def peak(index: int) -> int:
        """The largest context the thread recorded up to request ``index``."""
        return peaks[min(index, len(peaks) - 1)] if peaks else 0

    return LazyTurns(count, build, infos)




def claude_code_window(model: str | None, peak: int) -> Window:
    """The window Claude Code ran a thread's request with (CONTRACT §11).

    Claude Code runs every model with its 200K window unless the model id ends in ``[1m]`` (which the
    status line's ``model.id`` carries, a transcript never); a thread that recorded more than 200K ran
    the 1M variant. The model table's API window is not Claude Code's: Opus 4.6 takes 1M on the API,
    and Claude Code 2.1.39 still compacted it at 167K of a 200K window (``tests/importers/fixtures``).
    """
    if model and model.lower().endswith("[1m]"):
        return Window(LONG_WINDOW, WindowSource.RECORDED)
    if peak > DEFAULT_WINDOW:
        return Window(LONG_WINDOW, WindowSource.RECORDED)
    return Window(DEFAULT_WINDOW, WindowSource.MODEL)


def transcript_turns(text: str, path: str) -> LazyTurns:
    """The default thread's turns of the transcript ``text`` read from ``path`` (a whole read, not followed)."""
    return read_transcript(path, text).main_turns()


def read_transcript(path: str, text: str) -> TranscriptReader:
    """A reader fed with every complete line of ``text`` (a partial last line is left for later)."""
    reader = TranscriptReader(path)
    lines = text.split("\n")
    complete = lines if text.endswith("\n") else lines[:-1]
    for number, line in enumerate(complete, start=1):
        reader.feed_text(number, line)
    if not text.endswith("\n") and lines[-1].strip():
        # the last line has no newline yet; read it if it is already whole
        try:
            value = loads(lines[-1])
        except ValueError:
            value = None
        if value is not None:
            reader.lines_read += 1
            reader.feed(len(lines), value)
    return reader


def subagent_files(path: str) -> list[str]:
    """The sub-agents' transcripts beside a transcript (Claude Code's newer layout): ``<session>/subagents/
    *.jsonl`` (the Agent tool's), then ``<session>/subagents/workflows/<run>/agent-*.jsonl`` (the agents a
    ``Workflow`` run launched; beside them its ``journal.jsonl``, not a transcript), each run in name order."""
    stem = os.path.splitext(path)[0]
    folder = os.path.join(stem, "subagents")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        return []
    found = [os.path.join(folder, n) for n in names]
    workflows = os.path.join(folder, WORKFLOWS)
    try:
        runs = sorted(os.listdir(workflows))
    except OSError:
        return found
    for run in runs:
        try:
            agents = sorted(n for n in os.listdir(os.path.join(workflows, run)) if n.startswith("agent-") and n.endswith(".jsonl"))
        except OSError:  # not a folder, or gone meanwhile
            continue
        found += [os.path.join(workflows, run, n) for n in agents]
    return found


WORKFLOWS = "workflows"  # under a session's subagents/: one folder per Workflow run, its agents' transcripts in it


def default_thread(reader: TranscriptReader) -> str | None:
    """The main thread when it has turns; otherwise the thread with the newest line (a sub-agent file)."""
    main = reader.threads.get(MAIN)
    if main is not None and (main.requests or main.pending_state(reader) is not None):
        return MAIN
    best = None
    for name, thread in reader.threads.items():
        if thread.requests or thread.pending_state(reader) is not None:
            if best is None or thread.last_line > reader.threads[best].last_line:
                best = name
    return best


class TranscriptFollower:
    """Follows a transcript as an agent appends to it: each ``read`` feeds only the new complete lines.

    ``sources.tail.FileTail`` finds them (it remembers the file's identity, offset and last line); a
    truncated, rotated or replaced file is read again from the start with a fresh reader. An
    unterminated last line is left until its newline arrives. ``lines_parsed`` counts the lines
    parsed since the follower was made (each appended line is parsed once); ``resets`` the re-reads. Its
    reader keeps the main thread since its last compaction (``TranscriptReader(drop_history=True)``), and
    is made again to keep it all, the file read again, when a line needs an earlier epoch (a rewind past
    a compaction).
    """

    def __init__(self, path: str, max_bytes: int | None, *, drop_history: bool = True) -> None:
        # start-up: FileTail's hashlib loads OpenSSL (≈ 3.5 MiB): only a followed transcript needs it, not the status line
        from tokenbox.core.sources.tail import FileTail

        self.path = path
        self.max_bytes = max_bytes
        # ``drop_history``: its reader drops the main thread's epochs before its last compaction, until a line
        # needs one (``TranscriptReader.history_needed``): the file is then read again by a reader that keeps them
        self.drop_history = drop_history
        self.reader = self._new_reader()
        self.lines_parsed = 0
        self._tail = FileTail(path, max_bytes=max_bytes)

    def read_main_only(self) -> TranscriptReader:
        """``read()`` by a follower that reads once, for the main thread's turns (``main_turns_only``): a
        follower that has read nothing yet reads with a main-only reader (``TranscriptReader(main_only=True)``:
        the sub-agents' blocks are not kept, their requests get no context), which reads the file again
        whole if the main thread turns out to need them. Such a reader must not be fed again."""
        if self._tail.reads == 0 and not self.reader.lines_read:
            self.reader = TranscriptReader(self.path, main_only=True, max_bytes=self.max_bytes,
                                           drop_history=self.drop_history)
        return self.read()

    @property
    def resets(self) -> int:
        """Reads that had to start again from the top (the first read is not one)."""
        return max(0, self._tail.resets - 1)

    def read(self) -> TranscriptReader:
        """Feed what was appended since the last read (everything after a reset); the reader, updated.

        The lines are fed as they are read (``FileTail.read(each, raw=True)``), as bytes the JSON decoder
        decodes once: a big transcript is never held as text whole beside what the reader keeps of it."""
        resets = self._tail.resets
        fed = False
        try:
            expect(os.stat(self.path).st_size - self._tail.offset)  # a big read: the fast decoder from its first line
        except OSError:
            pass  # the read below says why

        def feed(number: int, line: bytes) -> None:
            nonlocal fed
            if not fed:
                fed = True
                if self._tail.resets != resets and self.reader.lines_read:
                    self.reader = self._new_reader()
            reader = self.reader
            before = reader.lines_read
            reader.feed_line(number, line)
            self.lines_parsed += reader.lines_read - before  # a line that was not blank

        try:
            chunk = self._tail.read(feed, raw=True)
        except BaseException:
            if fed:  # lines were fed before the read failed further on: the next read starts afresh
                self._tail.forget()
                self.reader = self._new_reader()
            raise
        if chunk.reset and not fed and self.reader.lines_read:
            self.reader = self._new_reader()
        if self.reader.history_needed:
            # a line needed what the reader had dropped (a rewind past a compaction): read again, keeping it all
            self.drop_history = False
            self._tail.forget()
            self.reader = self._new_reader()
            return self.read()
        return self.reader

    def _new_reader(self) -> TranscriptReader:
        return TranscriptReader(self.path, drop_history=self.drop_history)

    def release(self) -> None:
        """Let go of what this follower read, at once: each thread's turns refer back to their reader
        (a cycle), so without this the reader waits for the cyclic collector, which a one-shot command
        runs rarely (a 50 MB transcript's reader: ≈50 MB held beside the plan and its JSON)."""
        for follower in (self, *self.reader._subagents.values()):
            for thread in follower.reader.threads.values():
                thread.turns = None
        self.reader._subagents.clear()


def project_hidden(path: str, exclude_session: str | None, limit_files: int = 5, limit_lines: int = 2000) -> tuple[int, str] | None:
    """The hidden part of the newest other session of the same project folder that records one.

    Reads at most ``limit_files`` other transcripts, each only until its first main-thread request with
    usage (and at most ``limit_lines`` lines): the system prompt and tools of one project change rarely.
    """
    folder = os.path.dirname(os.path.abspath(path))
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".jsonl")]
    except OSError:
        return None
    own = os.path.basename(path)
    candidates = []
    for name in names:
        if name == own:
            continue
        try:
            candidates.append((os.stat(os.path.join(folder, name)).st_mtime_ns, name))
        except OSError:
            continue
    for _, name in sorted(candidates, reverse=True)[:limit_files]:
        other = os.path.join(folder, name)
        reader = TranscriptReader(other)
        try:
            with open(other, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if number > limit_lines:
                        break
                    reader.feed_text(number, line)
                    main = reader.threads.get(MAIN)
                    if main and main.requests and main.requests[0].usage is not None:
                        first = main.requests[0]
                        if reader.session_id == exclude_session:
                            break
                        return max(0, first.usage.context_tokens - round(first.estimate)), name
        except OSError:
            continue
    return None
