"""Start-up prewarm: load the BPE table a session file needs in a daemon thread, before Textual is imported.

Without it, ``tokenbox-tui FILE`` imports Textual, composes and mounts the app, and only then does the
plan worker load the tokenizer (a BPE table: decompression, hashing, parsing and tiktoken's own
tables, ≈ 200–300 ms) and plan: the two were serial. The console entry (``tokenbox.tui.launch``)
calls ``start`` first, so the table loads while Textual imports; a good part of that load runs
outside the GIL (zlib, SHA-256, tiktoken's Rust constructor). The planner later asks the same
process-wide registry (``default_registry``) for the same name and gets the built tokenizer, or
waits for the build in progress (the registry builds each tokenizer once, under a lock).

It only warms a tokenizer that is known to be the one the planner will use (``--tokenizer``,
``TOKENBOX_TOKENIZER``, or the file's own resolved tokenizer through core's precedence rules) and
only an exact (BPE) one: approximations cost nothing to build, plug-ins are left to the planner.
Best effort: any problem (a missing, huge, broken or half-written file, a bad setting) means no
prewarm, and the normal path reports it as usual. Nothing here ever raises.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

# A larger file is not read an extra time at start-up (the planner reads it anyway); agent logs this
# size are Claude Code or Codex transcripts, whose estimate needs no BPE table.
PEEK_MAX_BYTES = 1 << 20
THREAD_NAME = "tokenbox-prewarm"


def tokenizer_for(path: str | None, tokenizer: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The exact (BPE) tokenizer the planner will use for ``path``, or ``None`` when that is not cheaply
    known or needs no table to load. ``tokenizer`` is the ``--tokenizer`` flag. Never raises."""
    try:
        from tokenbox.core.config import load_settings, resolve
        from tokenbox.core.tokenizers import default_registry

        settings = load_settings(os.environ if environ is None else environ)
        name = tokenizer or settings.env_tokenizer  # these win over the file (core.config.resolve)
        if not name:
            if path is None or os.path.getsize(path) > min(PEEK_MAX_BYTES, settings.max_file_size):
                return None
            from tokenbox.core import load_turns

            turns = load_turns(path, max_bytes=PEEK_MAX_BYTES)
            if not turns:
                return None
            name = resolve(turns[-1], settings).tokenizer
        exact = {entry.name for entry in default_registry().entries() if entry.exact}
        return name if name in exact else None
    except Exception:  # best effort: the planner reports every problem itself
        return None


def warm(name: str) -> None:
    """Build tokenizer ``name`` in the process-wide registry (errors are left for the planner to report)."""
    try:
        from tokenbox.core.tokenizers import default_registry

        default_registry().get(name)
    except Exception:  # the planner's own load raises the same error, typed, where it is shown
        pass


def start(path: str | None, tokenizer: str | None = None, environ: Mapping[str, str] | None = None) -> threading.Thread | None:
    """Start loading the tokenizer ``path`` will need in a daemon thread; the thread, or ``None`` when
    there is nothing known to warm. The file is peeked at here, in the caller's thread, so the
    worker only loads the table (it imports nothing the caller might be importing at the same time)."""
    name = tokenizer_for(path, tokenizer, environ)
    if name is None:
        return None
    thread = threading.Thread(target=warm, args=(name,), name=THREAD_NAME, daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread can be started: the planner loads it as before
        return None
    return thread
