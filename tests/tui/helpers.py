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
    """An app for tests: no clock or timings on screen, toasts that do not expire mid-test."""
    options.setdefault("frozen", True)
    options.setdefault("toast_seconds", 3600)
    return TokenboxApp(str(path), **options)


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
    await wait_for(pilot, lambda: app._handled_seq == app._seq, what="planner idle")
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
