"""What one screen says about one thing is said once, in the same words and figures: the compaction
ledger and the parts table, the gauge's rows, the footer and the top bar, the status line across a burst
of writes, toasts about a state that has moved on, and a folder core reads given as FILE."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tokenbox.tui.breakdown import BreakdownView
from tokenbox.tui.gauge import Gauge
from tokenbox.tui.watcher import SMALL_TREE_FOLDERS

from tests.tui.helpers import (
    copy_sample,
    detail_text,
    make_app,
    rows,
    screen_lines,
    status_text,
    wait_for,
    wait_idle,
    wait_plan,
)

IMPORTERS = Path(__file__).parent.parent / "importers" / "fixtures"
REAL = Path(__file__).parent.parent / "fixtures" / "real_sessions"


def spaced(n: int) -> str:
    """``n`` with the screen's thin thousands separator (a space)."""
    return f"{n:,}".replace(",", " ")


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


async def test_a_codex_compaction_summary_is_the_size_the_parts_table_gives_it(tmp_path):
    """The ledger's ``summary ≈N`` is the summary part's row in the table: the rollout's ``compacted``
    message counted with the plan's tokenizer (o200k_base), not the character estimate (≈144)."""
    from tokenbox.core.tokens.tokenizers import default_registry

    path = tmp_path / "rollout.jsonl"
    shutil.copyfile(IMPORTERS / "codex_rollout_v0.77_compacted.jsonl", path)
    summary = next(json.loads(line)["payload"]["message"] for line in path.read_text().splitlines()
                   if json.loads(line)["type"] == "compacted")
    expected = default_registry().get("o200k_base").count(summary)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        row = next(r for r in rows(app) if r.lstrip(" ▌").startswith("summary "))
        panel = flat("\n".join(app.query_one(BreakdownView).plain_lines()))
        assert f"≈{expected} " in row + " "
        assert f"summary ≈{expected}" in panel, panel


async def test_an_unpriced_model_is_named_once_in_the_gauge(tmp_path):
    """The request row says "no price for gpt-4.5-turbo"; the session's no-price row does not say it again
    (it lists the other threads' unpriced models only: none here)."""
    path = tmp_path / "rollout.jsonl"
    shutil.copyfile(IMPORTERS / "codex_rollout_v0.77_compacted.jsonl", path)
    app = make_app(path, watch=False)
    async with app.run_test(size=(160, 42)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        gauge = app.query_one(Gauge).last_text.plain
        assert "no price for gpt-4.5-tu" in gauge
        assert gauge.count("gpt-4.5") == 1, gauge


async def test_the_footer_counts_what_the_top_bar_counts(tmp_path):
    """An agent's session counts requests everywhere, the footer's turn keys too (``[ ] request``); a
    tokenbox log keeps ``[ ] turn``. The label is changed in place: the footer's widgets stay the same."""
    from textual.widgets._footer import FooterLabel
    from tokenbox.tui.footer import KeysFooter

    transcript = tmp_path / "s.jsonl"
    shutil.copyfile(REAL / "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", transcript)
    log = copy_sample("agent_log.jsonl", tmp_path)
    for path, word, other in ((transcript, "request", "turn"), (log, "turn", "request")):
        app = make_app(path, watch=False)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_plan(pilot)
            await wait_idle(pilot)
            footer = app.query_one(KeysFooter)
            before = list(footer.children)
            footer_row = screen_lines(app)[-1]
            assert f"[ ] {word} " in footer_row and f"[ ] {other} " not in footer_row, footer_row
            assert f"{word} {app.plan.session.turn}/" in screen_lines(app)[0]  # the top bar's word
            await pilot.press("plus")  # a what-if budget: the trim keys come, the label stays
            await wait_idle(pilot)
            assert f"[ ] {word} " in screen_lines(app)[-1]
            labels = [w for w in footer.query(FooterLabel) if w.display]
            assert [str(w.render()) for w in labels].count(word) == 1
            if word == "request":
                assert all(w in footer.children for w in before if not isinstance(w, FooterLabel))


async def test_a_what_if_budget_names_parts_and_marks_figures_as_the_table_does(tmp_path):
    """Under ``+`` a Claude Code request's detail names its hidden part as the table does ("hidden part",
    its id after), and the gauge's free room is as exact as the recorded total it is taken from (no ``≈``,
    as the categories' free space)."""
    path = tmp_path / "t.jsonl"
    shutil.copyfile(IMPORTERS / "truth" / "claude-code_2.1.6_mcp-screenshot_43391f62.prefix20.jsonl", path)
    app = make_app(path, watch=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        await pilot.press("plus")
        await wait_idle(pilot)
        assert app.plan.what_if == 1
        assert rows(app)[0].lstrip(" ▌").startswith("hidden part ")
        header = detail_text(app).splitlines()[0]
        assert header.startswith("hidden part · kept · ") and header.endswith(" · id inferred"), header
        usage = next(json.loads(line)["message"]["usage"] for line in reversed(path.read_text().splitlines())
                     if (json.loads(line).get("message") or {}).get("usage"))
        recorded = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
        free = 200_000 * 105 // 100 - recorded  # Claude's window, 5 % more (one what-if step), less the request
        gauge = flat(app.query_one(Gauge).last_text.plain)
        panel = flat("\n".join(app.query_one(BreakdownView).plain_lines()))
        assert f"free {spaced(free)}" in gauge, gauge
        assert f"free space {spaced(free)} " in panel, panel


async def test_the_status_says_what_a_burst_of_writes_changed_not_its_last_half_line(tmp_path):
    """An agent writes a request's lines, then half of the next line: the second reload finds nothing new,
    and the status still says the request count moved (it said "no change" under "request 6/6")."""
    lines = (REAL / "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(lines[:25]))
    app = make_app(path)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        assert app.plan.session.turn_count == 5
        for count, chunk in enumerate((lines[25], lines[26][: len(lines[26]) // 2]), start=app.plans_shown + 1):
            with open(path, "a") as handle:
                handle.write(chunk)
            await wait_plan(pilot, count)
            await wait_idle(pilot)
        assert app.plans_shown == count and app.plan.session.turn_count == 6
        assert "request 6/6" in screen_lines(app)[0]
        assert "request 6/6" in status_text(app) and "no change" not in status_text(app), status_text(app)


def on_screen(app) -> str:
    """Every row the terminal shows (toasts included), as one line."""
    return flat(" ".join(screen_lines(app)))


MOOT = "apply once a what-if budget packs it"  # the toast of a trim key (Home) on an agent's request


async def test_a_toast_about_a_state_goes_when_the_state_does(tmp_path):
    """Home on an agent's request says the trim keys apply once a what-if budget packs it; ``+`` packs it:
    the toast goes (it stayed for its whole time). A toast about a state that still holds stays."""
    path = tmp_path / "s.jsonl"
    shutil.copyfile(REAL / "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", path)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        await pilot.press("home")
        await pilot.pause()
        assert MOOT in on_screen(app)
        await pilot.press("down")  # another part selected: the trim keys still do not apply
        await pilot.pause()
        assert MOOT in on_screen(app)
        await pilot.press("plus")
        await wait_idle(pilot)
        assert app.plan.what_if == 1 and MOOT not in on_screen(app)


async def test_the_inspectors_toast_does_not_stay_over_the_board(tmp_path):
    """``tokenbox-tui --all``: a toast of the inspector goes with it when Esc brings the board back."""
    from tokenbox.tui.board.app import BoardApp

    from tests.tui.board_home import clock, environ, make_home

    home = tmp_path / "home"
    make_home(home)
    app = BoardApp(environ=environ(home), clock=clock, frozen=True, toast_seconds=3600, watch=False, tick=None)
    app.animation_level = "none"
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.board.listed and not app.board.busy, what="every row read")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.plan is not None, what="the inspector's plan")
        await wait_idle(pilot)
        await pilot.press("home")
        await pilot.pause()
        assert MOOT in on_screen(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.on_board and MOOT not in on_screen(app)


async def test_a_folder_core_reads_opens_and_another_is_refused_saying_what_to_give(tmp_path, monkeypatch, capsys):
    """``tokenbox plan FOLDER`` reads an OpenCode storage folder: ``tokenbox-tui FOLDER`` opens it; a folder
    core does not read is refused in one line that names what can be opened."""
    from tokenbox.tui import app as app_module

    storage = IMPORTERS / "opencode_issuepit-901_storage"
    seen: dict[str, str] = {}
    monkeypatch.setattr(app_module.TokenboxApp, "run", lambda self: seen.update(path=self.path))
    assert app_module.main([str(storage)]) == 0 and seen["path"] == str(storage)
    assert app_module.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err
    assert "a Cline task folder or an OpenCode storage folder" in err
    app = make_app(storage, watch=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_plan(pilot)
        assert "OpenCode" in screen_lines(app)[0] and app.plan.session.turn_count == 4


@pytest.mark.parametrize("other_folders", [0, SMALL_TREE_FOLDERS])
async def test_a_followed_folder_shows_a_request_written_deep_inside_it(tmp_path, other_folders):
    """An OpenCode storage folder opened as FILE is followed like a file: its records land two folders down
    (``message/<session>/``, ``part/<message>/``), and a new request is on screen without a key. A big storage
    (other sessions' folders: more than ``SMALL_TREE_FOLDERS``) is watched only after the first plan is drawn
    (setting its watch up holds the interpreter): the request written before that, as soon as the plan is on
    screen, is shown all the same."""
    from tests.importers.opencode_store import write_tree

    storage, session = tmp_path / "storage", "ses_followed"

    def exchange(n: int, context: int) -> dict:
        user, reply = f"msg_{n:03d}u", f"msg_{n:03d}a"
        tokens = {"input": context - 100, "output": 5, "reasoning": 0, "cache": {"read": 100, "write": 0}}
        return {
            "messages": [{"id": user, "sessionID": session, "role": "user", "time": {"created": n * 10}},
                         {"id": reply, "sessionID": session, "role": "assistant", "parentID": user, "modelID": "gpt-4o",
                          "providerID": "openai", "time": {"created": n * 10 + 1, "completed": n * 10 + 2}, "tokens": tokens}],
            "parts": [{"id": f"prt_{n:03d}a", "messageID": user, "sessionID": session, "type": "text", "text": f"question {n}"},
                      {"id": f"prt_{n:03d}d", "messageID": reply, "sessionID": session, "type": "step-finish", "tokens": tokens}],
        }

    header = {"id": session, "projectID": "p", "directory": "/work/p", "title": "followed", "version": "1.2.0",
              "time": {"created": 1, "updated": 1}}
    write_tree(storage, {"sessions": [header], **exchange(1, 1000)})
    for n in range(other_folders):  # other sessions' messages' part folders (empty: nothing of this session)
        (storage / "part" / f"msg_other{n:03d}").mkdir(parents=True)
    for message in ("msg_002u", "msg_002a"):  # the next request's part folders made before: no stat of the
        (storage / "part" / message).mkdir()  # storage's own entries changes when it is written
    app = make_app(storage)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_plan(pilot)
        assert app.plan.session.turn_count == 1 and app.plan.tokens_after == 1000
        for record in (*exchange(2, 1500)["messages"], *exchange(2, 1500)["parts"]):  # as OpenCode writes them
            folder = storage / ("part" / Path(record["messageID"]) if "messageID" in record else "message" / Path(session))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{record['id']}.json").write_text(json.dumps(record), encoding="utf-8")
        await wait_for(pilot, lambda: app.plan.session.turn_count == 2, what="the request written inside the folder")
        assert app.plan.tokens_after == 1500
