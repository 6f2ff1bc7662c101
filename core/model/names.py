"""Names every layer shares, written once: the main thread, the calibrated estimate's tokenizer, the
format of tokenbox's own sessions, and the separator between the parts of a rendered context."""

from __future__ import annotations

MAIN_THREAD = "main"  # the thread of a log that is not a sub-agent's (README, "Real agents")
ESTIMATE = "claude-estimate"  # the character-class estimate, calibrated per thread (no public Claude tokenizer)
NATIVE_FORMAT = "tokenbox"  # ``Session.source_format`` of a tokenbox session file or log
SEPARATOR = "\n\n"  # between the rendered parts of a context
