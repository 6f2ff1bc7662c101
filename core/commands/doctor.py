"""``tokenbox doctor``: where tokenbox looks for each agent's sessions, what it found there, and why a folder
was skipped — the agents' table (``sources.discovery.SOURCES``) read as plain text, exit 0.

For each agent: every place its row looks (a storage folder, a database's folder, a file), what chose it
(an environment variable such as ``$CLAUDE_CONFIG_DIR``, or the default), and there how many sessions
were found and the newest (its time, file and project); a place that does not exist says so. Then every
folder or file that was looked at and not used, with the reason. Names come from the disk and from
session files: they are printed escaped (``textsafe.printable``), never as raw control characters.
Nothing is written; databases are opened read-only. An agent with several places that do not exist (Cline,
Roo and Kilo look in a dozen editors' folders) has them counted in one line; ``--verbose`` lists each.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from tokenbox.core.model.textsafe import printable
from tokenbox.core.sources.discovery import SOURCES, Found, Scan, aider_history, scan

NAME_LIMIT = 300  # characters of one path or project printed


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep) or path.startswith(root + "#")


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _when(mtime_ns: int, now: float) -> str:
    """``2026-01-02 10:00:00 (3 min ago)``: local time, and how long ago."""
    seconds = mtime_ns / 1e9
    ago = max(0, int(now - seconds))
    if ago < 60:
        since = f"{ago} s ago"
    elif ago < 3600:
        since = f"{ago // 60} min ago"
    elif ago < 86400:
        since = f"{ago // 3600} h {ago % 3600 // 60} min ago"
    else:
        since = f"{ago // 86400} days ago"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(seconds))} ({since})"


def _place(found: list[Found], exists: bool, now: float) -> str:
    if not exists:
        return "not there"
    if not found:
        return "no sessions"
    newest = found[0]
    count = f"{len(found)} session{'s' if len(found) != 1 else ''}"
    project = f", project {printable(newest.project, NAME_LIMIT)}" if newest.project else ""
    return f"{count}; newest {_when(newest.mtime_ns, now)}: {printable(newest.path, NAME_LIMIT)}{project}"


def report(environ: Mapping[str, str], cwd: str, now: float, *, scanner: Callable[..., Scan] = scan,
           verbose: bool = False) -> str:
    """The doctor's text for the environment ``environ``, the current directory ``cwd`` (aider keeps its
    history in the project) and the time ``now`` (seconds since the epoch); ``verbose`` lists every place
    that does not exist instead of counting an agent's missing places in one line."""
    result = scanner(environ=environ, rows=SOURCES)
    lines = ["tokenbox doctor: where tokenbox looks for agents' sessions (read only: nothing is written)", ""]
    for row in SOURCES:
        lines.append(f"{row.label} ({row.name})")
        places = [(root, how) for agent, root, how in result.looked if agent == row.name]
        missing = [(root, how) for root, how in places if not os.path.exists(root)]
        folded = not verbose and len(missing) > 1
        for root, how in places:
            if folded and (root, how) in missing:
                continue
            found = [f for f in result.found if f.agent == row.name and _under(f.path, root)]
            lines.append(f"  {printable(root, NAME_LIMIT)}  [{how}]  {_place(found, os.path.exists(root), now)}")
        if folded:
            first, how = missing[0]
            others = "other " if len(missing) < len(places) else ""
            lines.append(f"  {len(missing)} {others}places not there, e.g. {printable(first, NAME_LIMIT)}  [{how}]"
                         "  (tokenbox doctor --verbose lists each)")
        if row.name == "aider":
            history = aider_history(cwd, environ)
            if not places:
                lines.append("  $AIDER_CHAT_HISTORY_FILE not set: each project's .aider.chat.history.md "
                             "(in its folder or its git root)")
            where = f"  this directory's project ({printable(cwd, NAME_LIMIT)})  "
            changed = _mtime(history) if history is not None else None
            lines.append(where + (f"found {printable(history, NAME_LIMIT)}, changed {_when(changed, now)}"
                                  if history is not None and changed is not None else "no chat history"))
        elif not places:
            lines.append("  (no place to look on this system)")
        lines.append("")
    lines.append("Skipped")
    if not result.skipped:
        lines.append("  nothing")
    for skipped in result.skipped:
        lines.append(f"  {skipped.agent}  {printable(skipped.path, NAME_LIMIT)}: {printable(skipped.reason, NAME_LIMIT)}")
    lines.append("")
    total = len(result.found)
    lines.append(f"{total} session{'s' if total != 1 else ''} found in all; `tokenbox-tui --all` shows those "
                 "that changed recently, `tokenbox-tui --agent NAME` follows the newest of this directory's project.")
    return "\n".join(lines) + "\n"


def run(stdout: TextIO, environ: Mapping[str, str], *, verbose: bool = False) -> int:
    """Print the report; always 0 (a diagnosis, not a gate)."""
    stdout.write(report(environ, os.getcwd(), time.time(), verbose=verbose))
    stdout.flush()
    return 0
