"""Start-up prewarm: load the BPE table a session file needs before Textual is imported.

``tokenbox-tui FILE`` used to import Textual, compose and mount the app, and only then load the
tokenizer (a BPE table: decompression, hashing, parsing and tiktoken's own tables, ≈ 200–300 ms) in
the plan worker, while the UI thread drew a "loading…" frame. Both hold the GIL almost throughout
(tiktoken builds its tables without releasing it), so running them side by side saves nothing: on
2 cores a prewarm thread beside Textual's import measured no better than loading the table first,
and the plan worker beside the first frame cost ≈ 90 ms more CPU than either. The console entry
(``tokenbox.tui.launch``) therefore calls ``load`` before it imports the app: the planner then finds
the tokenizer built in the process-wide registry (``default_registry``) and the first plan takes a
few milliseconds once the app has mounted.

Only a tokenizer known to be the one the planner will use is loaded (``--tokenizer``,
``TOKENBOX_TOKENIZER``, or the file's own resolved tokenizer through core's precedence rules), and
only an exact (BPE) one: approximations cost nothing to build, plug-ins are left to the planner.
Best effort: any problem (a missing, large, broken or half-written file, a bad setting, a table
that fails to load) means no prewarm, and the normal path reports it as usual. Nothing here raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# A larger file is not read an extra time at start-up (the planner reads it again): this bounds the
# work thrown away when the file needs no table (e.g. a Claude Code transcript, estimated) to a few
# ms; hand-written and agent-written tokenbox sessions are far smaller.
PEEK_MAX_BYTES = 256 * 1024


def tokenizer_for(path: str | None, tokenizer: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The exact (BPE) tokenizer the planner will use for ``path``, or ``None`` when that is not cheaply
    known or needs no table to load. ``tokenizer`` is the ``--tokenizer`` flag. Never raises."""
    try:
        from tokenbox.core.planning.config import load_settings, resolve
        from tokenbox.core.tokens.tokenizers import default_registry

        settings = load_settings(os.environ if environ is None else environ)
        name = tokenizer or settings.env_tokenizer  # these win over the file (core.config.resolve)
        if not name:
            if path is None or os.path.getsize(path) > min(PEEK_MAX_BYTES, settings.max_file_size or PEEK_MAX_BYTES):
                return None
            from tokenbox.core.sources.loader import Loader

            turns = Loader().load_turns(path, max_bytes=PEEK_MAX_BYTES)  # its own loader: nothing kept
            if not turns:
                return None
            name = resolve(turns[-1], settings).tokenizer
        # a plug-in is never exact (``TokenizerRegistry``): the built-in entries say it all, without
        # looking plug-ins up (≈50 ms of importlib.metadata before the first plan)
        exact = {entry.name for entry in default_registry().entries(plugins=False) if entry.exact}
        return name if name in exact else None
    except Exception:  # best effort: the planner reports every problem itself
        return None


def warm(name: str) -> None:
    """Build tokenizer ``name`` in the process-wide registry (errors are left for the planner to report)."""
    try:
        from tokenbox.core.tokens.tokenizers import default_registry

        default_registry().get(name)
    except Exception:  # the planner's own load raises the same error, typed, where it is shown
        pass


def load(path: str | None, tokenizer: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """Build the tokenizer ``path`` will need (``tokenizer`` is the ``--tokenizer`` flag); its name, or
    ``None`` when nothing is known to be worth loading. Never raises."""
    name = tokenizer_for(path, tokenizer, environ)
    if name is not None:
        warm(name)
    return name
