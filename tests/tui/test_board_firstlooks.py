"""The board's first looks made in another process (``tui/board/firstlooks.py``): the rows are the ones the
board's worker makes itself, a session written after that process read it is read again, the worker then
glances at none of the others, and the forked child is reaped.

Sessions of three agents in a fake home (``board_home``); expected figures are what the files recorded (the
last reply's usage), never the board's own code.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from tokenbox.tui import firstplan, launch
from tokenbox.tui.board.app import BoardApp
from tokenbox.tui.board.figures import SessionReader
from tokenbox.tui.board.firstlooks import LOOK_PROCESSES, FirstLooks
from tokenbox.tui.board.sessions import Sessions

from tests.tui.board_home import append_request, clock, environ, make_home, touch
from tests.tui.helpers import wait_for
from tests.tui.test_board import recorded_context


def rows_of(sessions: Sessions) -> list[tuple]:
    return [(row.key, row.figures, row.reads) for row in sessions.rows()]


def counting_glances(monkeypatch) -> list[str]:
    """The sessions a ``SessionReader`` glanced at (and found recorded usage in), in this process."""
    glanced: list[str] = []
    glance = SessionReader.glance

    def counted(self):
        figures = glance(self)
        if figures is not None:
            glanced.append(self.path)
        return figures

    monkeypatch.setattr(SessionReader, "glance", counted)
    return glanced


def test_first_looks_made_elsewhere_are_the_rows_the_worker_makes_itself(tmp_path, monkeypatch):
    home = tmp_path / "home"
    paths = make_home(home)
    for index in range(6):  # idle transcripts beside the three agents'
        idle = paths["claude"].parent / f"idle-{index:02d}.jsonl"
        shutil.copyfile(paths["near"], idle)
        touch(idle, 600 + index)
    looks = {}
    for part in range(2):  # what the forked processes do, each its share
        looker = Sessions(environ(home), 7200, clock)
        looker.discover()
        share = looker.glance_all(part, 2)
        assert share and not looks.keys() & share.keys()
        looks.update(share)
    assert str(paths["claude"]) in looks and str(paths["codex"]) in looks
    assert str(paths["gemini"]) not in looks  # a Gemini chat is not glanced at: the worker reads it whole
    append_request(paths["claude"], 42_000, 7)  # written after that process read it

    glanced = counting_glances(monkeypatch)
    adopted = Sessions(environ(home), 7200, clock)
    adopted.discover()
    assert adopted.adopt(looks) == len(looks) - 1  # all but the session written since
    while adopted.step():
        pass
    assert glanced == [str(paths["claude"])]  # the worker glanced at that one only

    own = Sessions(environ(home), 7200, clock)  # the worker alone, as before
    own.discover()
    while own.step():
        pass
    assert rows_of(adopted) == rows_of(own)
    claude = next(row for row in adopted.rows() if row.key == str(paths["claude"]))
    assert claude.figures.tokens == 42_000 == recorded_context(paths["claude"])


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork: the board's worker glances itself")


@needs_fork
async def test_the_entry_forks_the_first_looks_and_the_board_shows_them(tmp_path, monkeypatch):
    """``launch.start`` as ``tokenbox-tui --all`` calls it: the child lists and glances (its environment is
    this one, its clock the wall clock), the board shows its looks and glances at none of them itself."""
    monkeypatch.setattr(firstplan, "single_threaded", lambda: True)  # xdist's own thread: let it fork
    home = tmp_path / "home"
    paths = make_home(home)
    now = time.time()
    for name, ago in (("near", 20), ("claude", 3), ("codex", 700), ("gemini", 3000)):  # against the wall clock
        os.utime(paths[name], (now - ago, now - ago))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLINE_DIR", "AIDER_CHAT_HISTORY_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ(home).items():
        monkeypatch.setenv(name, value)

    first = launch.start(["--all"])
    assert isinstance(first, FirstLooks)
    glanced = counting_glances(monkeypatch)
    app = BoardApp(first_looks=first, watch=False, tick=None, frozen=True, toast_seconds=3600)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.board.listed and not app.board.busy, what="every row read")
        rows = {Path(row.key).name: row for row in app.board.rows}
        assert rows[paths["claude"].name].figures.tokens == recorded_context(paths["claude"])
        assert rows[paths["near"].name].figures.tokens == recorded_context(paths["near"])
        assert all(row.figures is not None for row in rows.values()) and len(rows) == 4
    assert glanced == []  # the children's looks: the worker glanced at no transcript itself
    assert len(first.children) == LOOK_PROCESSES
    for child in first.children:
        with pytest.raises(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)  # reaped


@needs_fork
def test_the_inspectors_entry_is_not_the_boards(tmp_path, monkeypatch):
    monkeypatch.setattr(firstplan, "single_threaded", lambda: True)
    path = tmp_path / "s.yaml"
    path.write_text("messages: []\n")
    first = launch.start([str(path)])
    try:
        assert isinstance(first, firstplan.FirstPlan) and not isinstance(first, FirstLooks)
    finally:
        if first is not None:
            first.close()
    looks = FirstLooks.start([str(path)])  # not the board: the child sends nothing
    assert looks is not None and looks.take() == {}
    looks.close()
