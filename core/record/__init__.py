"""``tokenbox record``: a local capture proxy in front of an LLM API, and its capture log format.

The proxy (``proxy``, built on aiohttp, imported only when it runs) forwards every request to the
upstream unchanged and streams every response back unchanged, and appends what each captured request
held and the usage its response reported to a **capture log** (``capture``). ``tokenbox plan/render/
check`` and ``tokenbox-tui`` read capture logs like any session log (``tokenbox.core.sources.readers.capture``).

The capture log format (what is written, line by line) is described in
``tokenbox.core.sources.readers.capture_format``, beside its reader: the writer here imports it from
there, so that nothing below ``commands`` imports this package, the one with network code.
"""
