"""``tokenbox-tui --claude``: find and follow the transcript of the running Claude Code session.

Claude Code writes one transcript per session to ``<config>/projects/<project>/<session>.jsonl``,
where ``<config>`` is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` and ``<project>`` is the project's
absolute directory with every character other than ``A-Z a-z 0-9`` replaced by ``-``
(``/work/main`` → ``-work-main``). Sub-agent transcripts (``agent-*.jsonl``, or files in
sub-folders) are not sessions and are never followed.

``discover`` picks the most recently modified transcript of the project; a project without one is
an error that says so and names the newest session elsewhere (``--claude`` never follows another
project's session by itself; the ``fallback`` mode that does remains for callers that ask for it).
``--claude-project DIR`` also takes a folder of transcripts anywhere (a copy, another machine's
``projects/<project>`` folder). ``SessionWatch`` notices
when a new session starts so that the app can switch to it. ``ClaudeApp`` is the inspector with
both (in ``claude_app``): it follows the transcript and switches to a newer session with a notification.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from tokenbox.core.model.textsafe import printable
from tokenbox.core.sources import discovery
from tokenbox.core.sources.formats import SNIFF_LINES
from tokenbox.core.sources.readers.claude_code import looks_like_transcript

CONFIG_ENV = "CLAUDE_CONFIG_DIR"
POLL_SECONDS = 1.0


DiscoveryError = discovery.DiscoveryError  # no session to follow: one line with its remedy in parentheses


@dataclass(frozen=True)
class Discovery:
    """The transcript to follow and where it was found."""

    path: str  # the transcript
    project: str  # the project directory it was looked up for
    folder: str  # the project's transcript folder (it may not exist)
    fallback: bool = False  # True: the project has no transcript; this is the newest of any project

    @property
    def note(self) -> str:
        """What the status line says about the choice ('' when it is the project's own session)."""
        if not self.fallback:
            return ""
        other = os.path.basename(os.path.dirname(self.path))
        return f"fallback: newest session of any project ({other})"

    @property
    def explanation(self) -> str:
        """The fallback in full, for a notification ('' when it is the project's own session)."""
        if not self.fallback:
            return ""
        return (f"No Claude Code session for {self.project} in {self.folder}: following the newest transcript "
                f"of any project, {self.path}.")


def config_dir(environ: Mapping[str, str] | None = None) -> str:
    """Claude Code's data folder: ``$CLAUDE_CONFIG_DIR`` if set, else ``~/.claude`` (the agents' table:
    ``tokenbox.core.sources.discovery``)."""
    return discovery.claude_dir(os.environ if environ is None else environ)[0]


project_folder_name = discovery.claude_project_folder


def transcripts(folder: str) -> list[tuple[int, str]]:
    """``(mtime_ns, path)`` of the session transcripts directly in ``folder``, newest first."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        name = entry.name
        if not name.endswith(".jsonl") or name.startswith("agent-"):
            continue
        try:
            if not entry.is_file():
                continue
            found.append((entry.stat().st_mtime_ns, entry.path))
        except OSError:
            continue  # removed while we looked
    found.sort(key=lambda item: (-item[0], item[1]))
    return found


def _all_transcripts(projects: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    try:
        folders = sorted(e.path for e in os.scandir(projects) if e.is_dir())
    except OSError:
        return []
    for folder in folders:
        found.extend(transcripts(folder))
    found.sort(key=lambda item: (-item[0], item[1]))
    return found


def project_folder(project: str | None, environ: Mapping[str, str] | None = None) -> tuple[str, str, str]:
    """``(projects folder, project directory, its transcript folder)`` for ``project`` (default: cwd).

    ``project`` may also name a transcript folder itself: one under ``~/.claude/projects``
    (``~/.claude/projects/-work-main``) or a folder anywhere whose newest ``.jsonl`` is a transcript.
    """
    projects = os.path.join(config_dir(environ), "projects")
    directory = os.path.abspath(os.path.expanduser(project)) if project else os.getcwd()
    if project and (os.path.dirname(directory) == projects or holds_transcripts(directory)):
        return projects, directory, directory
    return projects, directory, os.path.join(projects, project_folder_name(directory))


def holds_transcripts(folder: str) -> bool:
    """Whether the newest ``.jsonl`` directly in ``folder`` is a Claude Code transcript (its first lines say)."""
    found = transcripts(folder)
    if not found:
        return False
    try:
        with open(found[0][1], encoding="utf-8", errors="replace") as handle:
            head = [handle.readline() for _ in range(SNIFF_LINES)]
    except OSError:
        return False
    for line in head:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if looks_like_transcript(value):
            return True
    return False


def discover(
    project: str | None = None, *, fallback: bool = False, environ: Mapping[str, str] | None = None
) -> Discovery:
    """The newest transcript of ``project`` (default: the current directory); raises ``DiscoveryError``,
    which names the newest transcript of any other project when the project has none.

    With ``fallback`` a project without transcripts falls back to the newest transcript of any project
    instead; ``Discovery.note`` says so.
    """
    config = config_dir(environ)
    projects, directory, folder = project_folder(project, environ)
    shown = printable(config)
    if not os.path.isdir(config):
        raise DiscoveryError(
            f"no Claude Code folder at {shown} (run Claude Code once, or set {CONFIG_ENV} to its folder)"
        )
    if not os.path.isdir(projects):
        raise DiscoveryError(
            f"no Claude Code projects in {shown} (start a Claude Code session first, or open a transcript: tokenbox-tui FILE)"
        )
    own = transcripts(folder)
    if own:
        return Discovery(own[0][1], directory, folder)
    anywhere = _all_transcripts(projects)
    if not fallback:
        elsewhere = (f"; the newest session of another project is {printable(anywhere[0][1])}, "
                     f"open it with tokenbox-tui FILE" if anywhere else "")
        raise DiscoveryError(
            f"no Claude Code transcripts for {printable(directory)} in {printable(folder)} "
            f"(start Claude Code in that directory, or name the project or a folder of transcripts with "
            f"--claude-project DIR{elsewhere})"
        )
    if not anywhere:
        raise DiscoveryError(
            f"no Claude Code transcripts in {printable(projects)} (start a Claude Code session first, "
            f"or open a transcript: tokenbox-tui FILE)"
        )
    return Discovery(anywhere[0][1], directory, folder, fallback=True)


class SessionWatch:
    """Notices a new Claude Code session: a transcript that was not there before and is now the newest.

    Only new files count (a transcript that merely gets written to is the same session), so two
    sessions running side by side do not make the view jump back and forth. A fallback discovery
    switches to the project's own session as soon as one appears.
    """

    def __init__(self, discovery: Discovery, *, fallback: bool = False, environ: Mapping[str, str] | None = None) -> None:
        self.current = discovery
        self.allow_fallback = fallback
        self.environ = dict(os.environ if environ is None else environ)
        self.known = set(self._scope())

    def _scope(self) -> list[str]:
        if self.current.fallback:
            projects = os.path.dirname(self.current.folder)
            return [path for _, path in _all_transcripts(projects)]
        return [path for _, path in transcripts(self.current.folder)]

    def check(self) -> Discovery | None:
        """A newer session to switch to, or ``None``."""
        try:
            found = discover(self.current.project, fallback=self.allow_fallback, environ=self.environ)
        except DiscoveryError:
            return None
        new = found.path not in self.known
        self.known.update(self._scope())
        self.known.add(found.path)
        moved = found.fallback != self.current.fallback
        if found.path != self.current.path and (new or moved):
            self.current = found
            self.known.update(self._scope())
            return found
        return None

