"""The bottom layer: what the other layers talk in — sessions and their sections (``session``), plans
(``plan``), section kinds, typed errors, shared names, the LLM table (``llms``), Claude Code's window
and auto-compact rule (``compaction``) and the escaper for untrusted text. It imports nothing of
tokenbox (ARCHITECTURE.md)."""
