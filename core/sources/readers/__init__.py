"""Readers of the formats real agents write, one module each (the ``formats.FORMATS`` table lists them).

* ``claude_code``: Claude Code session transcripts (``.jsonl``), one turn per assistant request, with
  ``claude_truth``, the calibration of its estimates against the usage it recorded;
* ``codex``: Codex CLI rollouts (``.jsonl``), one turn per model request;
* ``gemini``: Gemini CLI chat logs (``.json`` or ``.jsonl``), one turn per reply;
* ``capture``: capture logs of ``tokenbox record`` (``capture_format``), one turn per captured request;
* ``anthropic``: Anthropic Messages request bodies;
* ``openai_chat``: OpenAI Chat Completions request bodies;
* ``openai_responses``: OpenAI Responses API request bodies (``openai_framing``: what the API adds);
* ``common``: what every reader shares: blocks, messages, sections and their categories.

Importing one reader imports nothing else of the table (the status line imports ``claude_code`` alone).
"""
