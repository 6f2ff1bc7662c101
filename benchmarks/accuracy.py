"""How close tokenbox's headline comes to what providers recorded, per agent (issue 26's targets).

    python -m benchmarks.accuracy                     # the test fixtures only
    python -m benchmarks.accuracy --corpus /work/corpus   # and a staging corpus laid out as its README says
    python -m benchmarks.accuracy --json FILE         # also write every measured request

Every figure is measured through the public entry points (``load_session`` of a file cut where an
inspector would see it, ``Engine.plan``), on real files whose usage the provider recorded:

* **headline == recorded**: each recorded request of every thread (a transcript cut right after the
  request's last line, a rollout after its ``token_count``, a chat after the reply) plans with
  ``tokens.after`` equal to the recorded context, whatever the model name;
* **pending prediction**: each request from a thread's second on, predicted from the file cut just
  before the request was sent (the input written, the reply not yet); the error is
  ``|predicted − recorded| / recorded``, reported by moment: an ordinary next request, the first
  request after a compaction, after a model switch, the first request of a new session (no sibling
  session: the model's typical hidden part), and overall;
* **request bodies**: each body's headline against the usage its cassette recorded (``input_tokens``,
  cache included), with the bodies whose server tools ran inside the recorded call (their results are
  counted by the provider but are not in the body) listed apart;
* **status line**: Claude Code's status-line stdin with ``context_window.current_usage``: the printed
  headline against ``input + cache creation + cache read``.

Nothing here is timed; the numbers are the README's accuracy table.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = (ROOT / "tests" / "fixtures" / "real_sessions", ROOT / "tests" / "importers" / "fixtures")


@dataclass
class Tally:
    """What was measured for one agent."""

    recorded: int = 0  # recorded requests planned
    equal: int = 0  # of which the headline equals the recorded context
    misses: list[str] = field(default_factory=list)
    errors: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # moment -> relative errors
    overflow: int = 0  # pending plans that came out as an overflow (never allowed)
    rows: list[dict] = field(default_factory=list)

    def headline(self, shown: int, recorded: int, where: str) -> None:
        """A recorded request's headline against its recorded context."""
        self.recorded += 1
        if shown == recorded:
            self.equal += 1
        else:
            self.misses.append(f"{where}: {shown} != {recorded}")

    def error(self, moment: str, predicted: int, recorded: int, where: str) -> None:
        value = abs(predicted - recorded) / recorded
        self.errors[moment].append(value)
        self.errors["all pending"].append(value)
        self.rows.append({"where": where, "moment": moment, "predicted": predicted, "recorded": recorded,
                          "error_percent": round(100 * value, 2)})


def _plan(path: str, **options):
    from tokenbox.core import Engine, load_session  # start-up: only when measuring

    return Engine().plan(load_session(path, **options))


class Follower:
    """A file written line by line, as an agent appends to it, read by one ``Loader`` (the TUI's way):
    each read takes in only what was appended."""

    def __init__(self, folder: str, name: str) -> None:
        from tokenbox.core import Engine, Loader  # start-up: only when measuring

        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, name)
        open(self.path, "w").close()
        self.written = 0
        self.loader = Loader()
        self.engine = Engine()

    def upto(self, lines: list[str], end: int):
        """The newest main-thread turn once the file holds ``lines[:end]`` (appended; never shrinks)."""
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.writelines(lines[self.written : end])
        self.written = max(self.written, end)
        return self.engine.plan(self.loader.load_session(self.path))


def _write(folder: str, name: str, lines: Iterable[str]) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    return path


# ---------------------------------------------------------------- Claude Code


def claude_requests(lines: list[str], sidechain: bool = False) -> list[dict]:
    """Requests of the main thread (or of a sub-agent file), in order: first/last line index, recorded
    context, model, and whether a compaction came just before."""
    out: dict[str, dict] = {}
    order: list[str] = []
    compacted = False
    for index, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            compacted = True
            continue
        message = entry.get("message") if isinstance(entry.get("message"), dict) else None
        if entry.get("type") != "assistant" or message is None or bool(entry.get("isSidechain")) != sidechain:
            continue
        usage = message.get("usage")
        if message.get("model") == "<synthetic>" or not isinstance(usage, dict) or not message.get("id"):
            continue
        key = message["id"]
        context = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        if key not in out:
            out[key] = {"first": index, "last": index, "recorded": context, "model": message.get("model"),
                        "after_compaction": compacted}
            order.append(key)
            compacted = False
        out[key]["last"] = index
        out[key]["recorded"] = context
    return [out[k] for k in order]


def measure_claude(path: Path, tally: Tally, work: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    sidechain = "/subagents/" in str(path) or path.name.startswith("agent-")
    requests = claude_requests(lines, sidechain)
    if not requests:
        return
    name = path.stem
    # a folder of its own: no sibling session to borrow a hidden part from
    follower = Follower(os.path.join(work, name), "session.jsonl")
    for number, request in enumerate(requests, 1):
        if request["recorded"] <= 0:
            continue
        try:
            plan = follower.upto(lines, request["first"])
        except Exception:  # a cut with no message yet (a file's first line is the request)
            plan = None
        if plan is not None and plan.pending:
            if not plan.ok:
                tally.overflow += 1
            if number == 1 and "acompact" in name:
                moment = "compaction request (sub-agent file)"
            elif number == 1:
                moment = "first request (no sibling)"
            elif request["after_compaction"]:
                moment = "after a compaction"
            elif requests[number - 2]["model"] != request["model"]:
                moment = "after a model switch"
            else:
                moment = "next request"
            tally.error(moment, plan.tokens_after, request["recorded"], f"{name} request {number}")
        tally.headline(follower.upto(lines, request["last"] + 1).tokens_after, request["recorded"], f"{name} request {number}")


def claude_files(roots: Iterable[Path]) -> list[Path]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")):
            if "fixture_" in str(path) or "sidechain-integrated" in path.name or "spliced" in path.name:
                continue  # hand-written usage, a trimmed fixture, or a spliced one (its cut is no real jump)
            head = path.read_text(encoding="utf-8", errors="replace")[:20000]
            if '"sessionId"' in head and '"uuid"' in head and '"payload"' not in head:
                found.append(path)
    return found


# ---------------------------------------------------------------- Codex


def codex_requests(lines: list[str]) -> list[dict]:
    """(cut index before the request's own output, index of its token_count, recorded input) per request,
    repeated token_counts written twice left out."""
    out = []
    last_input = None
    previous_total = None
    outputs = ("reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call")
    for index, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        kind = entry.get("type")
        payload = entry.get("payload") if isinstance(entry.get("payload"), dict) else {}
        if kind == "response_item":
            item = payload.get("type")
            if item not in outputs and payload.get("role") != "assistant":
                last_input = index
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
                continue
            total = info.get("total_token_usage")
            if total == previous_total:
                continue
            previous_total = total
            cut = (last_input + 1) if last_input is not None else None
            out.append({"cut": cut, "index": index, "recorded": int(info["last_token_usage"].get("input_tokens") or 0)})
            last_input = None
        elif kind == "compacted":
            last_input = index
    return out


def measure_codex(path: Path, tally: Tally, work: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    requests = codex_requests(lines)
    name = path.stem[:40]
    follower = Follower(os.path.join(work, "codex-" + name), "rollout.jsonl")
    for number, request in enumerate(requests, 1):
        if number > 1 and request["cut"] is not None and request["recorded"] > 0 and request["cut"] >= follower.written:
            plan = follower.upto(lines, request["cut"])
            if plan.pending:
                if not plan.ok:
                    tally.overflow += 1
                text = "".join(lines[requests[number - 2]["index"] : request["cut"]])
                moment = "after a new user turn" if '"role":"user"' in text.replace(" ", "") else "next request"
                tally.error(moment, plan.tokens_after, request["recorded"], f"{name} request {number}")
        tally.headline(follower.upto(lines, request["index"] + 1).tokens_after, request["recorded"], f"{name} request {number}")


def codex_files(roots: Iterable[Path]) -> list[Path]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")):
            if "SYNTHETIC" in path.name:
                continue
            head = path.read_text(encoding="utf-8", errors="replace")[:4000]
            if '"session_meta"' in head and '"payload"' in head and "token_count" in path.read_text(encoding="utf-8"):
                found.append(path)
    return found


# ---------------------------------------------------------------- Gemini CLI


def measure_gemini(path: Path, tally: Tally, work: str) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    messages = document.get("messages") or []
    name = path.stem[-30:]
    for index, message in enumerate(messages):
        tokens = message.get("tokens") if isinstance(message, dict) else None
        if message.get("type") != "gemini" or not isinstance(tokens, dict) or not tokens.get("input"):
            continue
        recorded = int(tokens["input"])
        folder = os.path.join(work, f"gemini-{name}-{index}")
        done = _write(folder, "done.json", [json.dumps({**document, "messages": messages[: index + 1]})])
        from tokenbox.core import Engine, load_turns  # start-up: only when measuring

        replies = [t for t in load_turns(done) if not t.pending]
        tally.headline(Engine().plan(replies[-1]).tokens_after, recorded, f"{name} message {index}")
        pending = _write(folder, "pending.json", [json.dumps({**document, "messages": messages[:index]})])
        try:
            plan = _plan(pending)
        except Exception:
            continue
        if not plan.pending:
            continue
        if not plan.ok:
            tally.overflow += 1
        earlier = [m for m in messages[:index] if m.get("type") == "gemini" and (m.get("tokens") or {}).get("input")]
        if not earlier:
            moment = "first request (no sibling)"
        elif earlier[-1].get("model") != message.get("model"):
            moment = "after a model switch"
        else:
            moment = "next request"
        tally.error(moment, plan.tokens_after, recorded, f"{name} message {index}")


# ---------------------------------------------------------------- request bodies


def _recorded_input(usage: dict) -> int:
    if "prompt_tokens" in usage:
        return int(usage["prompt_tokens"])
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def measure_bodies(manifest: Path, corpus: Path, tallies: dict[str, Tally]) -> None:
    for line in manifest.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        usage = entry.get("usage")
        if not isinstance(usage, dict) or "/E_" in "/" + entry["file"]:
            continue
        recorded = _recorded_input(usage)
        plan = _plan(str(corpus / entry["file"]))
        server = usage.get("server_tool_use") or {}
        response = json.loads((corpus / entry["response"]).read_text(encoding="utf-8"))
        ran = any(isinstance(b, dict) and b.get("type") == "server_tool_use" for b in response.get("content") or [])
        body = json.loads((corpus / entry["file"]).read_text(encoding="utf-8"))
        hosted = any(isinstance(i, dict) and i.get("type") in ("web_search_call", "code_interpreter_call")
                     for i in body.get("input") or [])  # results the provider keeps, not in the body
        agent = "Anthropic bodies" if "anthropic" in entry["file"] else "OpenAI Responses bodies"
        if ran or hosted or any(server.get(k) for k in ("web_search_requests", "web_fetch_requests")):
            agent += " (server tool results not in the body)"
        tally = tallies[agent]
        tally.error("body", plan.tokens_after, recorded, os.path.basename(entry["file"]))
        if any("reasoning" in w for w in plan.warnings):
            tally.rows[-1]["reasoning_warned"] = True


FIXTURE_BODIES = {  # test fixtures with the usage their source recorded (tests/fixtures/real_sessions/PROVENANCE.md)
    "anthropic_messages_request_claude-code-1.0.6.json": ("Anthropic bodies", 15677),
    "anthropic_messages_request_thinking-replay.json": ("Anthropic bodies", 525),
    "openai_chat_request_image-part.json": ("OpenAI Chat bodies", 46),
    "openai_responses_request_tool-call.json": ("OpenAI Responses bodies", 256),
}


def measure_fixture_bodies(tallies: dict[str, Tally]) -> None:
    for name, (agent, recorded) in FIXTURE_BODIES.items():
        path = FIXTURES[0] / name
        if path.is_file():
            tallies[agent].error("body", _plan(str(path)).tokens_after, recorded, name)


def measure_cassettes(tallies: dict[str, Tally], work: str) -> None:
    """The VCR cassettes of the fixtures: every interaction's request body against its recorded usage."""
    import yaml  # start-up: only here

    for path in sorted((FIXTURES[0] / "corpus").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for number, interaction in enumerate(data.get("interactions") or [], 1):
            request, response = interaction.get("request") or {}, interaction.get("response") or {}
            body = request.get("parsed_body")
            usage = (response.get("parsed_body") or {}).get("usage")
            if not isinstance(body, dict) or not isinstance(usage, dict):
                continue
            agent = "OpenAI Chat bodies" if "prompt_tokens" in usage else "Anthropic bodies"
            cut = _write(os.path.join(work, f"cassette-{path.stem}-{number}"), "body.json", [json.dumps(body)])
            tallies[agent].error("body", _plan(cut).tokens_after, _recorded_input(usage), f"{path.name} #{number}")


# ---------------------------------------------------------------- the status line


def measure_statusline(stdin: Path, transcript: Path, tally: Tally) -> None:
    from tokenbox.core.commands import statusline  # start-up: only here

    data = json.loads(stdin.read_text(encoding="utf-8"))
    data["transcript_path"] = str(transcript)
    usage = data["context_window"]["current_usage"]
    expected = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    out = io.StringIO()
    statusline.run(["--no-color", "--format", "{tokens} {window} {pct}"], io.StringIO(json.dumps(data)), out, {})
    printed = out.getvalue().split()
    tally.recorded += 1
    expected_text = f"{statusline.short(expected)} {statusline.short(data['context_window']['context_window_size'])}"
    if " ".join(printed[:2]) == expected_text:
        tally.equal += 1
    else:
        tally.misses.append(f"status line printed {' '.join(printed)!r}, expected {expected_text!r}")
    data["context_window"]["context_window_size"] = 1_000_000
    out = io.StringIO()
    statusline.run(["--no-color", "--format", "{window}"], io.StringIO(json.dumps(data)), out, {})
    tally.recorded += 1
    if out.getvalue().strip() == "1M":
        tally.equal += 1
    else:
        tally.misses.append(f"a 1 000 000 window printed {out.getvalue().strip()!r}, expected '1M'")


# ---------------------------------------------------------------- report


def percent(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 100 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(corpus: Path | None, only: set[str] = frozenset()) -> dict[str, Tally]:
    tallies: dict[str, Tally] = defaultdict(Tally)

    def wanted(name: str) -> bool:
        return not only or name in only

    with tempfile.TemporaryDirectory(prefix="tbx-accuracy-") as work:
        if wanted("claude"):
            roots = list(FIXTURES) + ([corpus / "I_claude-code"] if corpus else [])
            for path in claude_files(roots):
                measure_claude(path, tallies["Claude Code"], work)
        if wanted("codex"):
            codex_roots = list(FIXTURES) + ([corpus / "G_codex"] if corpus else [])
            for path in codex_files(codex_roots):
                measure_codex(path, tallies["Codex CLI"], work)
        if corpus and wanted("gemini"):
            for path in sorted((corpus / "H_gemini-cli").glob("*.json")):
                measure_gemini(path, tallies["Gemini CLI"], work)
        if wanted("bodies"):
            if corpus:
                measure_bodies(corpus / "manifest_E_J.jsonl", corpus, tallies)
            measure_fixture_bodies(tallies)
            measure_cassettes(tallies, work)
        if corpus and wanted("statusline"):
            stdin = corpus / "I_claude-code" / "statusline-stdin_cc-2.1.7_clawker.json"
            transcript = next(iter(claude_files([corpus / "I_claude-code"])), None)
            if stdin.is_file() and transcript is not None:
                measure_statusline(stdin, transcript, tallies["Status line (Claude Code stdin)"])
    return tallies


def report(tallies: dict[str, Tally]) -> str:
    lines = ["| agent | headline == recorded | moment | requests | median error | p90 | max |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for agent in sorted(tallies):
        tally = tallies[agent]
        equal = f"{tally.equal}/{tally.recorded}" if tally.recorded else "–"
        if tally.overflow:
            equal += f" ({tally.overflow} pending overflows)"
        moments = sorted(tally.errors, key=lambda m: (m == "all pending", m))
        if not moments:
            lines.append(f"| {agent} | {equal} | – | – | – | – | – |")
        for index, moment in enumerate(moments):
            values = tally.errors[moment]
            lines.append(f"| {agent if index == 0 else ''} | {equal if index == 0 else ''} | {moment} | {len(values)} | "
                         f"{100 * statistics.median(values):.2f} % | {percent(values, 0.9):.2f} % | {100 * max(values):.2f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="a staging corpus (its README's layout)")
    parser.add_argument("--json", type=Path, default=None, help="write every measured request here")
    parser.add_argument("--misses", action="store_true", help="list every headline that differs from the recorded one")
    parser.add_argument("--only", default="", help="comma-separated agents to measure: claude, codex, gemini, bodies, statusline")
    args = parser.parse_args(argv)
    tallies = measure(args.corpus, set(filter(None, args.only.split(","))))
    print(report(tallies))
    if args.misses:
        for agent, tally in sorted(tallies.items()):
            for miss in tally.misses:
                print(f"MISS {agent}: {miss}")
    if args.json:
        rows = {agent: {"recorded": t.recorded, "equal": t.equal, "misses": t.misses, "rows": t.rows} for agent, t in tallies.items()}
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
