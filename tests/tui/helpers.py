"""Shared helpers of the TUI tests: copying samples, waiting for conditions, building apps."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from tokenbox.tui.app import TokenboxApp

SIZE = (120, 40)
TIMEOUT = 30.0


def sample_text(name: str) -> str:
    return resources.files("tokenbox.samples").joinpath(name).read_text(encoding="utf-8")


def copy_sample(name: str, directory: Path, as_name: str | None = None) -> Path:
    """A bundled sample copied into ``directory`` under a fixed name (stable paths in snapshots)."""
    target = directory / (as_name or name)
    with resources.as_file(resources.files("tokenbox.samples").joinpath(name)) as source:
        shutil.copyfile(source, target)
    return target


def make_app(path: Path, **options) -> TokenboxApp:
    """An app for tests: no clock or timings on screen, toasts that do not expire mid-test, and no
    animations (``TEXTUAL_ANIMATIONS=none``: a scroll lands at once; Pilot would wait for it)."""
    options.setdefault("frozen", True)
    options.setdefault("toast_seconds", 3600)
    app = TokenboxApp(str(path), **options)
    app.animation_level = "none"
    return app


class Recorder:
    """A ``run_test(message_hook=...)`` that keeps every message the app handled, for counting."""

    def __init__(self) -> None:
        self.messages: list = []

    def __call__(self, message) -> None:
        self.messages.append(message)

    def count(self, kind: type) -> int:
        return sum(isinstance(m, kind) for m in self.messages)

    def of(self, kind: type) -> list:
        return [m for m in self.messages if isinstance(m, kind)]


async def wait_for(pilot, predicate: Callable[[], object], timeout: float = TIMEOUT, what: str = "") -> None:
    """Poll ``predicate`` between short pauses until it holds (fails after a generous timeout)."""
    loops = int(timeout / 0.05)
    for _ in range(loops):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what or predicate}")


async def wait_plan(pilot, count: int = 1) -> None:
    """Wait until the app has shown ``count`` plans."""
    app = pilot.app
    await wait_for(pilot, lambda: app.plans_shown >= count, what=f"{count} plan(s) shown")
    await pilot.pause()


async def wait_idle(pilot) -> None:
    """Wait until no plan request is in flight and the last one has been handled."""
    app = pilot.app
    await wait_for(pilot, lambda: not app.busy, what="planner idle")
    await pilot.pause()


def gauge_text(app) -> str:
    from tokenbox.tui.gauge import Gauge

    return app.query_one(Gauge).last_text.plain


def status_text(app) -> str:
    from tokenbox.tui.status import StatusLine

    return app.query_one(StatusLine).last_text.plain


def detail_text(app) -> str:
    from tokenbox.tui.detail import DetailView

    return "\n".join(app.query_one(DetailView).plain_lines())


def rows(app) -> list[str]:
    from tokenbox.tui.sections import SectionBars

    return app.query_one(SectionBars).plain_lines()


# ---------------------------------------------------------------- what really reaches the terminal

UNSAFE_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")  # C0/C1/DEL, bidi/zero-width/BOM, surrogates, private, separators


def screen_strips(app) -> list:
    """The strips the compositor would send to the terminal now (every layer: screens, modals, toasts)."""
    return app.screen._compositor.render_strips()


def screen_lines(app, strips: list | None = None) -> list[str]:
    """The screen (or ``strips`` rendered before) as plain text rows."""
    return ["".join(segment.text for segment in strip) for strip in (screen_strips(app) if strips is None else strips)]


def screen_problems(app, strips: list | None = None) -> list[str]:
    """Anything unsafe in the rendered segments: raw control/format characters, links, click actions.

    A segment's text must be inert: no ESC/CSI/OSC/C1 byte, no bidi override or zero-width character.
    Its style must not carry a hyperlink (``[link=...]`` markup, OSC 8) or an ``@click`` action
    (``[@click=...]`` markup) that came from untrusted text.
    """
    import unicodedata

    problems: list[str] = []
    for row, strip in enumerate(screen_strips(app) if strips is None else strips):
        for segment in strip:
            bad = sorted({f"U+{ord(ch):04X}" for ch in segment.text if unicodedata.category(ch) in UNSAFE_CATEGORIES})
            if bad:
                problems.append(f"row {row}: {', '.join(bad)} in {segment.text!r}")
            style = segment.style
            if style is not None and style.link:
                problems.append(f"row {row}: link {style.link!r} on {segment.text!r}")
            if style is not None and style.meta and any(key.startswith("@click") for key in style.meta):
                problems.append(f"row {row}: click action {style.meta!r} on {segment.text!r}")
    return problems


async def assert_responsive(pilot) -> None:
    """The app is running and handles keys at once: ↓/↑ move the selection and come back."""
    app = pilot.app
    assert app.is_running and app.return_code is None
    if app.plan is None or len(app.plan.sections) < 2:
        await pilot.press("question_mark")
        from tokenbox.tui.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        return
    start = app.selected
    there, back = ("down", "up") if start == 0 else ("up", "down")
    await pilot.press(there)
    assert app.selected != start, "the selection did not move"
    await pilot.press(back)
    assert app.selected == start


def send_key(app, key: str) -> None:
    """Deliver a key the way the terminal driver does, without waiting for the process to go idle.

    ``Pilot.press`` waits until the whole process is idle, which never happens while a writer
    thread and the planner are busy; this shows whether the UI itself answers meanwhile.
    """
    from textual import events

    event = events.Key(key, None)
    event.set_sender(app)
    app._driver.send_message(event)


async def keys_answered(pilot) -> float:
    """Send ↓ then ↑ (or ↑ then ↓) mid-activity, wait until each moved the selection; the slowest latency."""
    import time

    app = pilot.app
    assert app.is_running and app.plan is not None and len(app.plan.sections) > 1
    start = app.selected
    there, back = ("down", "up") if start == 0 else ("up", "down")
    slowest = 0.0
    for key, check in ((there, lambda: app.selected != start), (back, lambda: app.selected == start)):
        sent = time.perf_counter()
        send_key(app, key)
        await wait_for(pilot, check, what=f"{key} handled")
        slowest = max(slowest, time.perf_counter() - sent)
    return slowest
