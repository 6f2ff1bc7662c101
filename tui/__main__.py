"""``python -m tokenbox.tui``: the same as the ``tokenbox-tui`` command."""

from __future__ import annotations

from tokenbox.tui.app import main

if __name__ == "__main__":  # pragma: no cover
    main()
