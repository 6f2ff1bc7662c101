"""Fixtures shared by the TUI tests."""

from __future__ import annotations

import pytest

from tests.tui.helpers import sample_text


@pytest.fixture
def session(tmp_path):
    """The FACET sample copied to a fresh folder, for tests that break and mend the file."""
    path = tmp_path / "session.yaml"
    path.write_text(sample_text("facet_layout.yaml"))
    return path
