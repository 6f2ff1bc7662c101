"""Bundled sample sessions (installed as ``tokenbox.samples``; the TUI opens one when given no file)."""
