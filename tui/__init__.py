"""tokenbox.tui: the live terminal inspector (``tokenbox-tui``).

It never computes a layout itself: a worker thread loads and plans the session with
``tokenbox.core`` and posts the finished ``Plan`` to the app, which only draws it.
"""
