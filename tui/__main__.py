"""``python -m tokenbox.tui``: the same as the ``tokenbox-tui`` command."""

from __future__ import annotations

from tokenbox.tui.launch import main

if __name__ == "__main__":  # pragma: no cover
    main()
