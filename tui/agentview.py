"""Words and numbers of the agent-session view, shared by its widgets (pure: nothing here touches Textual).

An agent's session (a Claude Code transcript, a Codex rollout, a Gemini CLI chat, a capture, a request
body) is shown as what a person asks about a request: which agent, model, window and thread; what
fills the context (its parts and their categories, ``core.analysis.breakdown``); when it compacts
(``core.analysis.compactions``); what it cost (``core.model.prices``). The trim controls of a layout
(steps, policy, trace) apply only once a what-if budget packs the request into another window.
"""

from __future__ import annotations

from tokenbox.core.model.plan import Plan
from tokenbox.core.model.prices import Cost, usd
from tokenbox.tui.glance import Glance
from tokenbox.tui.planner import AgentFacts
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.view import View, fmt

# The agents' names by the format their files are read as (another format is named by its own name).
AGENT_NAMES = {
    "claude-code": "Claude Code",
    "codex-rollout": "Codex CLI",
    "gemini-cli": "Gemini CLI",
    "tokenbox-capture": "capture",
    "anthropic-messages": "Anthropic request",
    "openai-chat": "OpenAI Chat request",
    "openai-responses": "OpenAI Responses request",
    "aider-chat-history": "Aider",
    "aider-llm-history": "Aider",
    "cline-task": "Cline",
    "copilot-cli": "Copilot CLI",
    "opencode": "OpenCode",
    "gemini-generate-content": "Gemini request",
    "context-lens-lhar": "context-lens capture",
}
LABEL_CHARS = 120  # of a system block's first line, as its label
COMPACTION_THREAD = "agent-acompact-"  # Claude Code writes the compaction's own request as this sub-agent


def agent_name(source_format: str) -> str:
    """The agent (or kind of file) a session's format stands for."""
    return AGENT_NAMES.get(source_format, source_format)


def request_cost_text(plan: Plan) -> str:
    """What the request shown cost, or why there is no figure."""
    cost: Cost | None = plan.cost
    if cost is not None:
        return usd(cost.usd)
    if plan.recorded is None:
        return "not sent yet" if plan.pending else "no usage recorded"
    model = plan.session.model_name
    return f"no price for {plain(model, FIELD_LIMIT)}" if model else "model unknown: no price"


def part_of(view: View, index: int) -> str:
    """The part column of section ``index``: message, tool call, tool result, thinking, image, hidden part…
    (``figures.part_word``, worked out once per view)."""
    return view.figures.kinds.words[index]


def part_colour(view: View, index: int) -> str:
    """The colour class of section ``index``: its category's (the same in the table, gauge and panel)."""
    return view.figures.kinds.colours[index]


def label_of(view: View, index: int) -> str:
    """What a person calls section ``index`` (``assistant → Bash(git status)``, a tool definition's name, a
    system block's first line), escaped, whole."""
    section = view.plan.sections[index].section
    label = section.meta.get("label")
    if isinstance(label, str) and label:
        return plain(label)
    tool = section.meta.get("tool")
    if isinstance(tool, str) and tool:
        return plain(tool)
    first = next((line.strip() for line in (section.text or "").splitlines() if line.strip()), "")
    return plain(first[:LABEL_CHARS] + ("…" if len(first) > LABEL_CHARS else "")) if first else plain(section.id)


def window_text(view: View) -> str:
    """The window of the request shown (the what-if's when one is in use); ``window unknown`` when neither
    the file nor the model table gives it (the plan's max_ctx is then the recorded context, not a window)."""
    if view.window is None:
        return "window unknown"
    plan = view.plan
    return f"window {fmt(plan.base_max_ctx or plan.budget.max_ctx)}"


COMPACTION_WORD = " (compaction)"
MIN_THREAD = 8  # characters a thread's name keeps, however narrow its column


def thread_word(name: str, width: int = FIELD_LIMIT + 1) -> str:
    """A thread's name as the screen says it: the main thread, a sub-agent, the compaction's request; a
    name longer than ``width`` characters (its "…" included) is cut, a compaction's keeping its word."""
    word = COMPACTION_WORD if name.startswith(COMPACTION_THREAD) else ""
    shown = plain(name, FIELD_LIMIT)
    room = max(MIN_THREAD, width - len(word))
    if len(shown) > room:
        shown = plain(shown, room - 1)  # escaped already: only cut
    return shown + word


def topbar_fields(view: View, facts: AgentFacts | None, multi_turn: bool, following: bool, headline: str | None,
                  trimming: bool) -> tuple[list[str], int, int, tuple[int, ...]]:
    """The top bar of an agent's session: agent, model, window, thread, request (and the trim fields under
    a what-if budget); the index of the field that gives way first, of the last essential one and of the
    ones left out (the window, the model, then the main thread's name) when the essential ones do not fit otherwise."""
    plan = view.plan
    fields = ["tokenbox"]
    if headline:
        fields.append(headline)
    fields.append(agent_name(plan.session.source_format))
    name = len(fields)
    fields.append(plain(plan.session.model_name or "model unknown", FIELD_LIMIT))
    window = len(fields)
    fields.append(window_text(view))
    spare = (window, name)
    if facts is not None and (len(facts.threads) > 1 or facts.thread != "main"):
        if facts.thread == "main":
            spare += (len(fields),)  # the main thread is the one expected: named once there is room
        fields.append(f"thread {thread_word(facts.thread)}")
    if plan.session.turn_count > 1 or multi_turn:
        fields.append(f"request {plan.session.turn}/{plan.session.turn_count}" + (" (following)" if following else " (pinned)"))
    essential = len(fields) - 1
    if trimming:
        fields.append(f"what-if step {view.step}/{view.last_step}" + (" final" if view.step == view.last_step else ""))
        fields.append(f"policy {plain(plan.trimming)}")
    else:
        fields.append(f"cost {request_cost_text(plan)}")
        if facts is not None and facts.cost is not None and facts.cost.usd is not None:
            fields.append(f"session {usd(facts.cost.usd)}")
    return fields, name, essential, spare


def glance_fields(glance: Glance, headline: str | None) -> tuple[list[str], int, int]:
    """The top bar while a big session's whole read runs (``tui/glance.py``): agent, model, the newest
    request and its window, from the file's tail; the index of the field that gives way first and of the last
    essential one."""
    fields = ["tokenbox"]
    if headline:
        fields.append(headline)
    fields.append(agent_name(glance.source_format))
    name = len(fields)
    fields.append(plain(glance.figures.model or "model unknown", FIELD_LIMIT))
    fields.append("newest request")  # from the file's tail (the status line says the rest is being read)
    essential = len(fields) - 1
    fields.append(f"window {fmt(glance.window)}" if glance.window else "window unknown")
    return fields, name, essential
