"""The board's first looks, worked out in a forked process while the app imports Textual.

``tokenbox-tui --all`` starts with two long jobs that each hold the GIL: importing Textual and mounting the
app (≈ 300–400 ms), and the first look at every recent session (``Sessions.step``: a tail read of each
transcript, ≈ 2–4 ms each, 200 sessions ≈ 0.5–0.8 s). In one process the second waited for the first and
then shared the GIL with the screen's updates. As the inspector's first plan does (``tui/firstplan.py``,
whose ``Forked`` this is), the console entry forks first thing (``tui/launch.py``): the child parses the
flags, lists the agents' sessions as the board will and glances at each recent one (``Sessions.glance_all``)
while the parent imports Textual on the other core; the board's worker lists them again itself (a few
milliseconds), publishes the rows, then takes the child's looks (``take``) for every session whose file has
the stamp the child saw before reading it (``Sessions.adopt``). A session written since, one the child did not
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


class FirstLooks(Forked):
    """A forked process glancing at the board's recent sessions; ``take`` waits for the looks (once)."""

    @classmethod
    def start(cls, args: list[str]) -> FirstLooks | None:
        """Fork a process that glances at the sessions ``tokenbox-tui ARGS`` would show (nothing when ARGS do
        not start the board); ``None`` where no process can be forked (the worker glances itself)."""
        return cls.fork(lambda: _looks(args))

    def take(self, timeout: float = TAKE_TIMEOUT) -> dict[str, Look]:
        """The child's looks by session (empty: none, the child failed, or already taken). Blocks until the
        child is done."""
        data = self.result(timeout)
        if not data:
            return {}
        try:
            looks = pickle.loads(data)  # written by our own child, over our own pipe
        except Exception:
            return {}
        return looks if isinstance(looks, dict) else {}


def _looks(args: list[str]) -> bytes | None:  # pragma: no cover - forked (its work is ``Sessions.glance_all``)
    """In the child: the first looks of the board ``args`` start, pickled (``None``: not the board)."""
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
    return pickle.dumps(sessions.glance_all(), protocol=pickle.HIGHEST_PROTOCOL)
