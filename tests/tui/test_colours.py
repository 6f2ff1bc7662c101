"""Colours live in the stylesheet: no colour in the TUI's Python, and a theme switch restyles every view."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from rich.style import Style
from tokenbox.tui import styles as styles_module
from tokenbox.tui.breakdown import BreakdownView
from tokenbox.tui.detail import DetailView
from tokenbox.tui.gauge import Gauge
from tokenbox.tui.help import HelpScreen
from tokenbox.tui.sections import SectionBars
from tokenbox.tui.status import StatusLine
from tokenbox.tui.timeline import Timeline
from tokenbox.tui.trace import TraceView
from tokenbox.tui.usage import UsageTimeline

from tests.tui.helpers import copy_sample, make_app, screen_strips, wait_idle, wait_plan

TUI = Path(styles_module.__file__).parent
HEX = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?(?:[0-9a-fA-F]{2})?\b")
COLOUR_KEYWORDS = {"color", "bgcolor"}
COLOUR_CALLS = {"Color", "parse", "from_rgb", "from_hex", "from_triplet", "from_ansi"}


def colour_problems(source: str, name: str) -> list[str]:
    """Where ``source`` writes a colour: a hex string, ``color=``/``bgcolor=`` given a literal (a named
    colour too), a colour parsed from a literal. Colours passed on from the stylesheet are fine."""
    problems = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and HEX.search(node.value):
            problems.append(f"{name}:{node.lineno}: hex colour {node.value!r}")
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg in COLOUR_KEYWORDS and isinstance(keyword.value, ast.Constant):
                    problems.append(f"{name}:{node.lineno}: {keyword.arg}= in a call")
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in COLOUR_CALLS and any(isinstance(a, ast.Constant) for a in node.args):
                problems.append(f"{name}:{node.lineno}: colour built with {called}()")
    return problems


def test_no_colour_literal_in_the_tui():
    """Every colour is a component class in app.tcss (themes restyle it), none is written in Python."""
    modules = sorted(TUI.rglob("*.py"))
    assert len(modules) > 10
    problems = [p for path in modules for p in colour_problems(path.read_text(encoding="utf-8"), path.name)]
    assert problems == []


@pytest.mark.parametrize("source", [
    'Style(color="#e06c75")', 'x = "#61afef"', 'Style(bold=True, bgcolor="red")', 'Color.parse("#fff")',
    "PALETTE = ('#4ea1ff', '#c678dd')", 'Style(color="magenta")',
])
def test_the_scan_finds_colours(source):
    assert colour_problems(source, "x.py")


def test_the_scan_lets_stylesheet_colours_through():
    assert colour_problems("Style(bgcolor=full.bgcolor, bold=True)", "x.py") == []


def test_every_component_class_is_styled():
    """Each class a widget declares has a rule in app.tcss (a typo would silently draw uncoloured)."""
    css = (TUI / "app.tcss").read_text(encoding="utf-8")
    styled = set(re.findall(r"\.([a-z]+--[a-z0-9-]+)", css))
    declared = set().union(*(w.COMPONENT_CLASSES for w in (Gauge, SectionBars, StatusLine, Timeline, TraceView)))
    for widget in (BreakdownView, DetailView, HelpScreen, UsageTimeline):
        declared |= widget.COMPONENT_CLASSES
    assert declared - styled == set()


def colours(text) -> set:
    return {span.style.color for span in text.spans if isinstance(span.style, Style) and span.style.color}


async def test_theme_switch_restyles_the_views(tmp_path):
    """Switching the theme redraws the gauge, the timeline and the status with the new theme's colours."""
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        gauge, timeline = app.query_one(Gauge), app.query_one(Timeline)
        dark = colours(gauge.last_text), colours(timeline.last_text)
        assert all(dark), "the views are coloured"
        app.theme = "textual-light"
        await wait_idle(pilot)
        light = colours(gauge.last_text), colours(timeline.last_text)
        assert all(light)
        assert light[0] != dark[0] and light[1] != dark[1]
        app.theme = "textual-dark"
        await wait_idle(pilot)
        assert (colours(gauge.last_text), colours(timeline.last_text)) == dark


def _luminance(colour) -> float:
    def channel(value: int) -> float:
        v = value / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.red) + 0.7152 * channel(colour.green) + 0.0722 * channel(colour.blue)


def contrast(fg, bg) -> float:
    """WCAG contrast ratio of two rich ``ColorTriplet``s (1 to 21)."""
    high, low = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (high + 0.05) / (low + 0.05)


MIN_CONTRAST = 2.4  # the theme's own muted text on its background is about 3; below 2 text is hard to read


def low_contrast(strips, region=None) -> list[str]:
    """Texts of ``strips`` (within ``region`` if given) whose colour is too close to their background."""
    low = []
    for row, strip in enumerate(strips):
        x = 0
        for segment in strip:
            start, x = x, x + segment.cell_length
            style = segment.style
            if region is not None and not (region.y <= row < region.bottom and region.x <= start < region.right):
                continue
            if style is None or style.color is None or style.bgcolor is None or not any(c.isalnum() for c in segment.text):
                continue
            ratio = contrast(style.color.get_truecolor(), style.bgcolor.get_truecolor())
            if ratio < MIN_CONTRAST:
                low.append(f"row {row}: {segment.text.strip()!r} {ratio:.2f}")
    return low


THEMES = ["textual-dark", "textual-light", "nord", "gruvbox"]


@pytest.mark.parametrize(("sample", "keys"), [
    ("facet_layout.yaml", ("home", "right", "right", "right")),  # a dropped section selected, cut text shown
    ("agent_log.jsonl", ()),
    ("overflow.yaml", ()),
])
async def test_every_text_is_readable(tmp_path, sample, keys):
    """In every theme, every letter on screen (the footer aside: Textual's own) contrasts with its
    background, cursor rows too (one app, switched through the themes)."""
    app = make_app(copy_sample(sample, tmp_path), watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        if keys:
            await pilot.press(*keys)
        for theme in THEMES:
            app.theme = theme
            await wait_idle(pilot)
            assert low_contrast(screen_strips(app)[:-1]) == [], theme


async def test_help_is_readable(tmp_path):
    """In every theme, the help text (keys in their own colour) on the help panel; the dimmed screen
    behind it aside (one app: the help opened again after each switch)."""
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        for theme in THEMES:
            app.theme = theme
            await pilot.press("question_mark")
            await wait_idle(pilot)
            panel = app.screen.query_one("#help-text").parent.region  # the scroll box: the text may run below it
            assert panel.height > 10
            assert low_contrast(screen_strips(app)[:-1], panel) == [], theme
            await pilot.press("escape")
