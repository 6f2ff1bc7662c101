"""``tokenbox-tui --codex``: find the rollout of the Codex CLI session running in this directory.

Codex writes one rollout per session to ``<home>/sessions/YYYY/MM/DD/rollout-*.jsonl``, where
``<home>`` is ``$CODEX_HOME`` or ``~/.codex``; the first line (``session_meta``) names the session's
``cwd``. ``discover`` picks the most recently modified rollout whose ``cwd`` is the directory asked
for (default: the current one); without one it says so (the newest rollout of another directory
would be a silent surprise). Only the first line of each candidate is read, newest first, at most
``MAX_CANDIDATES``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from tokenbox.core.model.textsafe import printable
from tokenbox.core.sources import discovery
from tokenbox.tui.claude import DiscoveryError

HOME_ENV = "CODEX_HOME"
MAX_CANDIDATES = 2000
_FIRST_LINE_MAX = 4 << 20  # session_meta carries the instructions: a few hundred KB at most


@dataclass(frozen=True)
class CodexDiscovery:
    """The rollout to follow and the directory it was looked up for."""

    path: str
    project: str


def codex_home(environ: Mapping[str, str] | None = None) -> str:
    """Codex's data folder: ``$CODEX_HOME`` if set, else ``~/.codex`` (the agents' table:
    ``tokenbox.core.sources.discovery``)."""
    return discovery.codex_dir(os.environ if environ is None else environ)[0]


def rollouts(sessions: str) -> list[tuple[int, str]]:
    """``(mtime_ns, path)`` of every ``rollout-*.jsonl`` under ``sessions``, newest first."""
    found = []
    for root, dirs, files in os.walk(sessions):
        dirs.sort()
        for name in files:
            if not (name.startswith("rollout-") and name.endswith(".jsonl")):
                continue
            path = os.path.join(root, name)
            try:
                found.append((os.stat(path).st_mtime_ns, path))
            except OSError:
                continue  # removed while we looked
    found.sort(key=lambda item: (-item[0], item[1]))
    return found


def session_cwd(path: str) -> str | None:
    """The ``cwd`` of a rollout's ``session_meta`` line (``None`` when unreadable)."""
    try:
        with open(path, "rb") as handle:
            line = handle.readline(_FIRST_LINE_MAX)
        record = json.loads(line)
    except (OSError, ValueError):
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(payload, dict) or record.get("type") != "session_meta":
        return None
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) else None


def discover(project: str | None = None, *, environ: Mapping[str, str] | None = None) -> CodexDiscovery:
    """The newest rollout of ``project`` (default: the current directory); raises ``DiscoveryError``."""
    home = codex_home(environ)
    sessions = os.path.join(home, "sessions")
    directory = os.path.abspath(os.path.expanduser(project)) if project else os.getcwd()
    if not os.path.isdir(sessions):
        raise DiscoveryError(
            f"no Codex sessions in {printable(home)} (run Codex once, or set {HOME_ENV} to its folder)"
        )
    found = rollouts(sessions)
    if not found:
        raise DiscoveryError(
            f"no Codex rollouts in {printable(sessions)} (start a Codex session first, or open a rollout: tokenbox-tui FILE)"
        )
    wanted = os.path.realpath(directory)
    for _, path in found[:MAX_CANDIDATES]:
        cwd = session_cwd(path)
        if cwd is not None and (cwd == directory or os.path.realpath(cwd) == wanted):
            return CodexDiscovery(path, directory)
    raise DiscoveryError(
        f"no Codex rollout started in {printable(directory)} among the {len(found)} in {printable(sessions)} "
        f"(run Codex in that directory first, or open a rollout: tokenbox-tui FILE)"
    )
