"""Fixtures of the TUI tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the helpers module beside the tests
