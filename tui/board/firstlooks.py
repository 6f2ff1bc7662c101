"""The board's first looks, worked out in a forked process while the app imports Textual.

``tokenbox-tui --all`` starts with two long jobs that each hold the GIL: importing Textual and mounting the
app (≈ 300–400 ms), and the first look at every recent session (``Sessions.step``: a tail read of each
transcript, ≈ 2–4 ms each, 200 sessions ≈ 0.5–0.8 s). In one process the second waited for the first and
then shared the GIL with the screen's updates. As the inspector's first plan does (``tui/firstplan.py``,
whose ``Forked`` these are), the console entry forks first thing (``tui/launch.py``): two children each parse
the flags, list the agents' sessions as the board will and glance at every other recent one, newest first
(``Sessions.glance_all``), while the parent imports Textual (the three share two cores: the glances end
sooner than one child's, once the parent's import is done); the board's worker lists them again itself (a
few milliseconds), publishes the rows, then takes the children's looks (``take``) for every session whose
file has the stamp its child saw before reading it (``Sessions.adopt``). A session written since, one the child did not
glance at, or anything unexpected (no fork, the child dying, a pickle that fails) is glanced at by the worker
as before: nothing shown differs, only when.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import time

from tokenbox.tui.board.sessions import Look, Sessions, board_buffer
from tokenbox.tui.board.state import DEFAULT_SINCE
from tokenbox.tui.firstplan import TAKE_TIMEOUT, Forked

LOOK_PROCESSES = 2  # processes the glances are shared between (every other session each, newest first)


class FirstLooks:
    """Forked processes glancing at the board's recent sessions; ``take`` waits for their looks (once)."""

    def __init__(self, children: list[Forked]) -> None:
        self.children = children

    @classmethod
    def start(cls, args: list[str], processes: int = LOOK_PROCESSES) -> FirstLooks | None:
        """Fork ``processes`` processes that share the glances at the sessions ``tokenbox-tui ARGS`` would
        show (nothing when ARGS do not start the board); ``None`` where no process can be forked (the worker
        glances itself; with fewer forked, the worker glances at the missing share itself)."""
        children: list[Forked] = []
        for part in range(processes):
            child = Forked.fork(lambda part=part: _looks(args, part, processes))
            if child is None:
                break
            children.append(child)
        return cls(children) if children else None

    def take(self, timeout: float = TAKE_TIMEOUT) -> dict[str, Look]:
        """Every child's looks by session (empty: none, the children failed, or already taken). Blocks until
        the children are done (``timeout`` each at most)."""
        looks: dict[str, Look] = {}
        for child in self.children:
            data = child.result(timeout)
            if not data:
                continue
            try:
                part = pickle.loads(data)  # written by our own child, over our own pipe
            except Exception:
                continue
            if isinstance(part, dict):
                looks.update(part)
        return looks

    def close(self) -> None:
        """End the children still running and reap them (idempotent, from any thread)."""
        for child in self.children:
            child.close()


def _looks(args: list[str], part: int, parts: int) -> bytes | None:  # pragma: no cover - forked (``Sessions.glance_all``)
    """In a child: its share of the first looks of the board ``args`` start, pickled (``None``: not the board)."""
    from tokenbox.tui.cli import UsageError, parse_args

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            options = parse_args(args)  # silent: the app reports bad flags
    except (UsageError, SystemExit):
        return None
    if not options.all or options.serve:  # --serve: each tab's board lists for itself
        return None
    since = DEFAULT_SINCE if options.since is None else options.since
    # the app's sessions as ``BoardApp`` makes them: this environment, the wall clock
    sessions = Sessions(os.environ, since, time.time, buffer=board_buffer(os.environ))
    sessions.discover()
    return pickle.dumps(sessions.glance_all(part, parts), protocol=pickle.HIGHEST_PROTOCOL)
