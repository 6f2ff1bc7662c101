"""Mutation testing of tokenbox.core: does the suite notice a plausible one-token bug?

    .venv/bin/python tests/mutation/mutate.py                 # every target in TARGETS
    .venv/bin/python tests/mutation/mutate.py layout gates    # some targets
    .venv/bin/python tests/mutation/mutate.py --list layout   # the mutants, not run
    .venv/bin/python tests/mutation/mutate.py --jobs 2 --report mutation.md

Each mutant changes one token of one line of a target's functions — a comparison (``<`` ↔ ``<=``, ``==``
↔ ``!=``, …), an arithmetic operator, ``and``/``or``, a dropped ``not``, ``max``/``min``, ``True``/
``False``, an integer (0 ↔ 1, n → n + 1) or a float (x → x + 0.01) — and runs only the tests the target
names, in a fresh process that imports the mutated module instead of the file (``hook/sitecustomize.py``;
the source tree is never written, so mutants run in parallel, and ``tokenbox`` child processes see the
mutant too). A mutant is *killed* when a test fails (or the run exceeds its time limit), *survives*
otherwise. A line that holds ``# mutation: equivalent (why)`` is skipped; a survivor that is not a bug
belongs there, with the reason, or in the README's list.

Targets are found by module *name* (``layout`` is whichever ``tokenbox.core`` module is called that,
wherever it lives), so moving a module into a subpackage needs no change here; two modules of one
name need the dotted path in ``TARGETS``.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import functools
import io
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOK = Path(__file__).resolve().parent / "hook"
EQUIVALENT_MARK = "# mutation: equivalent"


@dataclass(frozen=True)
class Target:
    """What to mutate (a module by name, optionally only some of its functions) and which tests judge it."""

    name: str
    module: str  # a module name under tokenbox.core ("layout") or a dotted path
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()  # qualified names ("Proxy._upstream_headers"); empty: the whole module


# The table to keep up to date: a target per behaviour the suite claims to pin, and the tests that pin it.
TARGETS: tuple[Target, ...] = (
    Target("layout", "layout", ("tests/engine/test_pinned_rules.py", "tests/engine/test_layout_rules.py",
                                "tests/importers/test_usage_sums.py", "tests/engine/test_assembly_rules.py",
                                "tests/engine/test_properties.py")),
    Target("lenses", "lenses", ("tests/engine/test_pinned_rules.py", "tests/engine/test_layout_rules.py",
                                "tests/engine/test_assembly_rules.py")),
    Target("behaviors", "behaviors", ("tests/engine/test_pinned_rules.py", "tests/engine/test_assembly_rules.py",
                                      "tests/engine/test_layout_rules.py", "tests/engine/test_properties.py")),
    Target("check", "cli", ("tests/engine/test_pinned_rules.py", "tests/engine/test_gates.py", "tests/engine/test_models_command.py",
                            "tests/engine/test_cli.py"), ("_check", "_history_gates", "_models")),
    Target("gates", "gates", ("tests/engine/test_gates.py", "tests/test_agent_api.py")),
    Target("statusline", "statusline", ("tests/test_statusline_formulas.py", "tests/test_statusline.py")),
    Target("compaction", "compaction", ("tests/test_statusline_formulas.py", "tests/test_statusline.py")),
    Target("pack", "pack", ("tests/test_pack_exact.py", "tests/test_pack.py")),
    Target("usage sums", "claude_code", ("tests/importers/test_usage_sums.py", "tests/importers/test_truth.py"), ("_usage",)),
    Target("usage sums (codex)", "codex", ("tests/importers/test_usage_sums.py", "tests/importers/test_import_agents.py"), ("_usage",)),
    Target("usage sums (gemini)", "gemini", ("tests/importers/test_usage_sums.py", "tests/importers/test_import_agents.py"), ("_usage",)),
    Target("usage sums (capture)", "usage", ("tests/importers/test_usage_sums.py", "tests/record/test_usage_reader.py"),
           ("context_tokens", "UsageReader._merge")),
    Target("proxy headers", "proxy", ("tests/record/test_proxy_contract.py", "tests/record/test_proxy.py", "tests/record/test_pipe.py"),
           ("_accept_encoding", "Proxy._upstream_headers", "Proxy._forward", "Proxy._error")),
    Target("size limits", "files", ("tests/hardening/test_limits.py", "tests/engine/test_tail.py",
                                    "tests/hardening/test_api_misuse_table.py"),
           ("whole_limit", "streamed_limit", "read_bytes", "size_argument")),
    Target("size limits (tail)", "tail", ("tests/hardening/test_limits.py", "tests/engine/test_tail.py"),
           ("FileTail.__init__", "FileTail.read", "FileTail.head", "FileTail._consume_blocks")),
    Target("section meta", "common", ("tests/importers/test_transcript_section_meta.py",
                                      "tests/importers/test_transcript_held_per_request.py",
                                      "tests/importers/test_import_layout.py", "tests/importers/test_thinking_kept.py"),
           ("SectionMeta.__init__", "SectionMeta.__getitem__", "SectionMeta.get", "SectionMeta.__contains__",
            "SectionMeta.__iter__", "SectionMeta.__len__", "SectionMeta.__eq__", "SectionMeta.__repr__",
            "section_meta", "_message_sections")),
    Target("uuid lookup", "claude_code", ("tests/importers/test_uuid_keys.py", "tests/importers/test_truth.py",
                                          "tests/importers/test_transcript_held_per_request.py"),
           ("_uuid_key", "TranscriptReader._name", "TranscriptReader._parent_node")),
    Target("transcript nodes", "claude_code", ("tests/importers/test_transcript_held_per_request.py",
                                               "tests/importers/test_transcript_section_meta.py",
                                               "tests/importers/test_truth.py", "tests/importers/test_thinking_kept.py",
                                               "tests/importers/test_epochs.py", "tests/importers/test_truth_moments.py",
                                               "tests/importers/test_borrowed_hidden.py", "tests/engine/test_oneshot_read.py",
                                               "tests/importers/test_transcript_nodes.py"),
           ("State.index", "_extend", "TranscriptReader._new_node", "TranscriptReader._grow",
            "TranscriptReader._request_line", "TranscriptReader._results_line")),
    Target("scale fits", "claude_truth", ("tests/importers/test_scale_fits.py", "tests/importers/test_truth.py",
                                           "tests/importers/test_truth_moments.py"),
           ("ScaleFits.update", "ScaleFits.__len__", "ScaleFits.__getitem__")),
    Target("records init", "records", ("tests/test_records.py",), ("_init_source", "_slot_setter")),
    Target("fastjson expect", "fastjson", ("tests/test_fastjson.py",), ("expect",)),
)

# Survivors that are not bugs: (module name, the mutated line as written, original token, replacement)
# → why the mutant cannot change what tokenbox does. Matched by the line's text, so moving code keeps them.
_RETRY_CAP = ("how many times a cut below min is widened: it stops as soon as the cut holds min tokens, one or two "
              "tries for any text; the cap (and a first try that repeats the target) only bounds pathological input")
_CACHE_BOUND = "the size at which a memo is cleared: results are the same, only memory and speed differ"
_CACHE_ONLY = ("a memo of results by object identity: the mutant only misses where it hit (the result is then "
               "computed again, the same), or accepts a hit that needs a recycled id() for a different object")
_STRICT_ZIP = "the lists zipped always have one entry per part: strict or not, the pairs are the same"
_TWO_PATHS = ("demote with an additive tokenizer has an incremental path and the general one; both give the same "
              "tiers, texts and counts (test_demote_moves_the_lowest_activation_one_tier_per_change checks both)")
_DEMOTE_TIERS = "demote is only valid on a behaviours section (validation refuses it elsewhere): tiers are never None"
_GUARDED = ("a guard repeated inside the step functions: lenses(), truncate() and drop() themselves do nothing at "
            "deficit 0 or on an empty text, so the outer test only saves a call")
_JOIN_LOOP = ("the loop that cuts on when a cut moved the join's tokens converges to the same largest cut that fits "
              "whether it steps by the deficit or by one token; the branches the mutant opens are unreachable "
              "(target >= tokens needs deficit <= 0 or min >= tokens, which the loop condition excludes)")
_FAST_PATH = ("the guards of patch_layout's fast path: the mutant sends more edits to the full layout, whose result "
              "is the same (test_a_replan_after_edits_is_the_cold_plan compares them); sized, tiered and skipped "
              "parts never reach it (_changed_sections keeps those sessions on the full path)")
_NO_SIZED_IN_PATCH = "patch_layout only sees sessions without sized parts: fixed_tokens(parts) is 0 there"
_ZERO_GROW = "a section with grow 0 adds 0 to the weights and is allotted its own tokens either way"
_NO_GROWER = "with no growing section every allotment is the section's tokens, whatever grow_sum holds"
_FLOOR_SAME = "a constraint already at Summary is set to Summary: the floor changes nothing"
_ONE_CALLER = "fit_budget's only caller (the assembler) always passes additive itself: the default is never used"
_COUNT_UNUSED = "fit_budget also returns how many demotions it made; its only caller ignores that number"
_LINES_MADE = ("render() is given the lines BlockCount already made for every visible behaviour: the mutant only "
               "makes a line again, the same")
_TURN_RANGE = ("the turn check compares is always one of the log's turns, numbered from 1: the bounds of the test and "
               "its else branch never change the index")
_TUNING = "a size or growth factor of the tail read: reading a little more or less of the file gives the same line"
_FROZEN = "frozen only forbids assigning to a Headline, which nothing does"
_TAIL_EDGE = ("how the tail's first, partial line is cut off: a mutant keeps a fragment that is not JSON (skipped "
              "as a bad line, which the status line does not show) or drops one more line and reads further back")
_LINE_NUMBERS = "the first line's number is only used in warnings, which the status line does not show"
_TAIL_LOOP = "when the tail stops growing: reading further back than needed gives the same headline"
_CALIBRATED = "a turn with a headline always carries its calibration: the 1.0 fallback is never used"
_GROUPS_NONEMPTY = "a turn with a headline has at least the inferred part: the empty-groups fallback is never used"
_FRACTION_ONE = "an override fraction of exactly 1 gives the threshold itself: min() with it changes nothing"
_MERGED = ("a new message for each block of the same message: _paired() merges neighbours of one role, so the "
           "body is the same")
_ONE_SOURCE = "a tool call's section holds either tool_input (Anthropic) or an arguments string (OpenAI), never both"
_NEXT_LINK = ("a behaviour's next link is -1 or the index of a later behaviour of its group, never 0: `>= 0` and "
              "`> 0` (or `>= 1`, `< 1` for `< 0`) agree on every link")
_NO_CHANGE = "a tier set to the tier it has: the general path adds piece(tier) - piece(old), which is 0"
_CONSTRAINTS_STAY = ("group 0 holds the constraints, which are never demoted (Demoter skips them): BlockCount never "
                     "moves a behaviour of group 0")
_UNLINKED = "an omitted behaviour's own links are never read again: tiers only move down"
_EMPTY_GROUP = "the range then also holds group g itself, whose size is 0 at that point: the search skips it"
_READ_CHUNKS = ("how much read_stdin asks os.read for at a time, and whether it tries once more at the limit or at "
                "the deadline (it then reads nothing): the text read is the same")
_SAME_LINES = "with exactly N lines, keeping N of them is the same text"
_EMPTY_SUMMARY = "the layout applies no lens to an empty text, so summary() never sees one"
_LENGTH_NONE = ("the mutant also sets the content length of a response that has none (None: no change) or of a "
                "stream that has none: the same response")
_API_UNUSED = "UsageReader keeps the API name but reads usage by content type and event shape: the name is unused"
_LENS_ARG = "parse_lens refuses a line lens without a count of at least 1: the `or` never applies"
_WALK_BACK = ("ScaleFits.update's walk back to the last observation still the same, and the one more it refits: "
              "a request's fit depends only on the observations up to it, so refitting from any request at or before "
              "the first changed one gives the same fits (stopping at 1 or 0, refitting the last seen or not, "
              "cutting nothing when nothing is to be cut)")
_NO_GROWTH_PAIR = ("a pair whose recorded growth is 0 has the ratio 0, below PAIR_RATIO[0] (0.5): refused by the "
                   "ratio test either way")
EQUIVALENT: dict[tuple[str, str, str, str, str, int], str] = {
    ('statusline', '', "STDIN_TIMEOUT = 2.0  # seconds to wait for Claude Code's JSON when stdin is not closed after it", '2.0', '2.01', 0):
        _TUNING,
    ('statusline', 'read_stdin', 'while len(data) < limit:', '<', '<=', 0):
        _READ_CHUNKS,
    ('statusline', 'read_stdin', 'if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:', '<=', '<', 0):
        _READ_CHUNKS,
    ('statusline', 'read_stdin', 'chunk = os.read(fd, min(65536, limit - len(data)))', 'min', 'max', 0):
        _READ_CHUNKS,
    ('statusline', 'read_stdin', 'chunk = os.read(fd, min(65536, limit - len(data)))', '65536', '65537', 0):
        _READ_CHUNKS,

    ('behaviors', 'BlockCount._piece', 'follow = "\\n" if self.next[i] >= 0 else self._tail(self.group[i])', '>=', '>', 0):
        _NEXT_LINK,
    ('behaviors', 'BlockCount._piece', 'follow = "\\n" if self.next[i] >= 0 else self._tail(self.group[i])', '0', '1', 0):
        _NEXT_LINK,
    ('behaviors', 'BlockCount.set_tier', 'if q >= 0:', '>=', '>', 0):
        _NEXT_LINK,
    ('behaviors', 'BlockCount.set_tier', 'if q >= 0:', '0', '1', 0):
        _NEXT_LINK,
    ('behaviors', 'BlockCount.set_tier', 'if p >= 0 and q < 0:', '<', '<=', 0):
        _NEXT_LINK,
    ('behaviors', 'BlockCount.set_tier', 'if p >= 0 and q < 0:', '0', '1', 1):
        _NEXT_LINK,
    ('behaviors', 'BlockCount.set_tier', 'if tier == old or old == Tier.OMITTED or self.group[i] < 0:', 'or', 'and', 0):
        _NO_CHANGE,
    ('behaviors', 'BlockCount.set_tier', 'if tier == old or old == Tier.OMITTED or self.group[i] < 0:', '<', '<=', 0):
        _CONSTRAINTS_STAY,
    ('behaviors', 'BlockCount.set_tier', 'if tier == old or old == Tier.OMITTED or self.group[i] < 0:', '0', '1', 0):
        _CONSTRAINTS_STAY,
    ('behaviors', 'BlockCount.set_tier', 'self.prev[i] = self.next[i] = -1', '1', '0', 0):
        _UNLINKED,
    ('behaviors', 'BlockCount.set_tier', 'before = next((h for h in range(g - 1, -1, -1) if self.size[h]), -1)', '1', '0', 0):
        _EMPTY_GROUP,
    ('behaviors', 'BlockCount.set_tier', 'if before >= 0 and not any(self.size[h] for h in range(g + 1, len(GROUPS))):', '1', '0', 0):
        _EMPTY_GROUP,

    ('behaviors', 'tier_for', 'if behavior.kind == "constraint" and tier > Tier.SUMMARY:', '>', '>=', 0):
        _FLOOR_SAME,
    ('behaviors', 'render', 'shown = [line_for(b, t) for b, t in zip(items, tiers, strict=True) if b.kind in group_kinds and t != Tier.OMITTED]', 'True', 'False', 0):
        _STRICT_ZIP,
    ('behaviors', 'fit_budget', 'items: Sequence[Behavior], budget: int | None, count: Callable[[str], int], *, additive: bool = False', 'False', 'True', 0):
        _ONE_CALLER,
    ('behaviors', 'fit_budget', 'return tiers, 0', '0', '1', 0):
        _COUNT_UNUSED,
    ('behaviors', 'fit_budget', 'demotions += 1', '+=', '-=', 0):
        _COUNT_UNUSED,
    ('behaviors', 'fit_budget', 'demotions += 1', '1', '0', 0):
        _COUNT_UNUSED,
    ('behaviors', 'render', 'if line is None:', 'is', 'is not', 0):
        _LINES_MADE,
    ('cli', '_history_gates', 'index = session.turn - 1 if 0 < session.turn <= len(turns) else len(turns) - 1', '<', '<=', 0):
        _TURN_RANGE,
    ('cli', '_history_gates', 'index = session.turn - 1 if 0 < session.turn <= len(turns) else len(turns) - 1', '<=', '<', 0):
        _TURN_RANGE,
    ('cli', '_history_gates', 'index = session.turn - 1 if 0 < session.turn <= len(turns) else len(turns) - 1', '-', '+', 1):
        _TURN_RANGE,
    ('cli', '_history_gates', 'index = session.turn - 1 if 0 < session.turn <= len(turns) else len(turns) - 1', '1', '0', 1):
        _TURN_RANGE,
    ('statusline', '', 'TAIL_BYTES = 256 * 1024', '256', '257', 0):
        _TUNING,

    ('statusline', '', 'TAIL_BYTES = 256 * 1024', '1024', '1025', 0):
        _TUNING,
    ('statusline', '', 'TAIL_LIMIT = 8 * 1024 * 1024  # the most it reads back looking for a recorded request', '8', '9', 0):
        _TUNING,
    ('statusline', '', 'TAIL_LIMIT = 8 * 1024 * 1024  # the most it reads back looking for a recorded request', '*', '+', 0):
        _TUNING,
    ('statusline', '', 'TAIL_LIMIT = 8 * 1024 * 1024  # the most it reads back looking for a recorded request', '1024', '1025', 0):
        _TUNING,
    ('statusline', '', 'TAIL_LIMIT = 8 * 1024 * 1024  # the most it reads back looking for a recorded request', '*', '+', 1):
        _TUNING,
    ('statusline', '', 'TAIL_LIMIT = 8 * 1024 * 1024  # the most it reads back looking for a recorded request', '1024', '1025', 1):
        _TUNING,
    ('statusline', '', 'STDIN_LIMIT = 1024 * 1024', '1024', '1025', 0):
        _TUNING,
    ('statusline', '', 'STDIN_LIMIT = 1024 * 1024', '*', '+', 0):
        _TUNING,
    ('statusline', '', 'STDIN_LIMIT = 1024 * 1024', '1024', '1025', 1):
        _TUNING,
    ('statusline', 'headline', 'size *= 4', '4', '5', 0):
        _TUNING,
    ('statusline', '', '@dataclass(frozen=True)', 'True', 'False', 0):
        _FROZEN,
    ('statusline', 'read_tail', 'end = handle.seek(0, os.SEEK_END)', '0', '1', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'data = handle.read(end - start)', '-', '+', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'if start > 0:', '0', '1', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'data = data[cut + 1 :] if cut >= 0 else b""', '+', '-', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'data = data[cut + 1 :] if cut >= 0 else b""', '1', '0', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'data = data[cut + 1 :] if cut >= 0 else b""', '>=', '>', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'data = data[cut + 1 :] if cut >= 0 else b""', '0', '1', 0):
        _TAIL_EDGE,
    ('statusline', 'read_tail', 'return text.split("\\n")[:-1], 1  # the last piece is empty or a line still being written', '1', '0', 1):
        _LINE_NUMBERS,
    ('statusline', 'headline', 'if recorded or size >= file_size or size >= TAIL_LIMIT:', 'or', 'and', 0):
        _TAIL_LOOP,
    ('statusline', 'headline', 'if recorded or size >= file_size or size >= TAIL_LIMIT:', '>=', '>', 0):
        _TAIL_LOOP,
    ('statusline', 'headline', 'if recorded or size >= file_size or size >= TAIL_LIMIT:', 'or', 'and', 1):
        _TAIL_LOOP,
    ('statusline', 'headline', 'if recorded or size >= file_size or size >= TAIL_LIMIT:', '>=', '>', 1):
        _TAIL_LOOP,
    ('statusline', 'headline', 'scale = session.calibration.scale if session.calibration is not None else 1.0', 'not', '(removed)', 0):
        _CALIBRATED,
    ('statusline', 'headline', 'scale = session.calibration.scale if session.calibration is not None else 1.0', '1.0', '1.01', 0):
        _CALIBRATED,
    ('statusline', 'headline', 'biggest, biggest_tokens = max(groups.items(), key=lambda item: (item[1], item[0])) if groups else ("", 0)', '0', '1', 0):
        _GROUPS_NONEMPTY,
    ('statusline', 'headline', 'biggest, biggest_tokens = max(groups.items(), key=lambda item: (item[1], item[0])) if groups else ("", 0)', '0', '1', 1):
        _GROUPS_NONEMPTY,
    ('compaction', 'compact_threshold', 'if fraction <= 1:', '<=', '<', 0):
        _FRACTION_ONE,
    ('pack', 'pack', 'if index != current or not messages:', 'not', '(removed)', 0):
        _MERGED,
    ('pack', '_block', 'if arguments is None and isinstance(meta.get("arguments"), str):', 'and', 'or', 0):
        _ONE_SOURCE,

    ('lenses', 'tail_lines', 'return text if len(lines) <= count else _join(lines[-count:], trailing)', '<=', '<', 0):
        _SAME_LINES,
    ('lenses', 'head_lines', 'return text if len(lines) <= count else _join(lines[:count], trailing)', '<=', '<', 0):
        _SAME_LINES,
    ('lenses', 'summary', 'count = len(_lines(text)[0]) if text else 0', '0', '1', 1):
        _EMPTY_SUMMARY,
    ('lenses', 'apply', 'return LensResult(tail_lines(text, arg or 0))', '0', '1', 0):
        _LENS_ARG,
    ('lenses', 'apply', 'return LensResult(head_lines(text, arg or 0))', '0', '1', 0):
        _LENS_ARG,
    ('layout', '', '_MIN_RETRIES = 8', '8', '9', 0):
        _RETRY_CAP,
    ('layout', '_Layout._cut', 'while minimum and self.counter.count(new) < minimum and extra <= _MIN_RETRIES:', '<=', '<', 0):
        _RETRY_CAP,
    ('layout', '_Layout._cut', 'extra = 1', '1', '0', 0):
        _RETRY_CAP,
    ('layout', 'LensCache.__init__', 'def __init__(self, limit: int = 20_000) -> None:', '20_000', '20001', 0):
        _CACHE_BOUND,
    ('layout', 'LensCache.keep', 'if len(self._kept) >= self.limit:', '>=', '>', 0):
        _CACHE_BOUND,
    ('layout', 'LensCache.apply', 'if len(self._results) >= self.limit:', '>=', '>', 0):
        _CACHE_BOUND,
    ('layout', '', '@functools.lru_cache(maxsize=1024)', '1024', '1025', 0):
        _CACHE_BOUND,
    ('layout', 'LensCache.order', 'if self._order is not None and self._order[0] is parts:', '0', '1', 0):
        _CACHE_ONLY,
    ('layout', 'LensCache.kept', 'if found is None or found[0] is not section or found[1] is not text:', '0', '1', 0):
        _CACHE_ONLY,
    ('layout', 'LensCache.kept', 'if found is None or found[0] is not section or found[1] is not text:', 'not', '(removed)', 0):
        _CACHE_ONLY,
    ('layout', 'LensCache.kept', 'if found is None or found[0] is not section or found[1] is not text:', 'or', 'and', 1):
        _CACHE_ONLY,
    ('layout', 'LensCache.kept', 'if found is None or found[0] is not section or found[1] is not text:', '1', '0', 0):
        _CACHE_ONLY,
    ('layout', 'LensCache.kept', 'if found is None or found[0] is not section or found[1] is not text:', 'not', '(removed)', 1):
        _CACHE_ONLY,
    ('layout', 'LensCache.kept', 'return result if result.tokens_after == tokens and result.allotment == allotment else None', '==', '!=', 0):
        _CACHE_ONLY,
    ('layout', '_Layout._demoted', 'if kept is not None and kept[1] is piece.tiers:', '1', '0', 0):
        _CACHE_ONLY,
    ('layout', '_Layout._demoted', 'if kept is not None and kept[1] is piece.tiers:', 'is', 'is not', 1):
        _CACHE_ONLY,
    ('layout', '_Layout.lenses', 'if result.rebuild is not None and piece.text:', 'not', '(removed)', 0):
        _CACHE_ONLY,
    ('layout', '_Layout.lenses', 'if result.rebuild is not None and piece.text:', 'and', 'or', 0):
        _CACHE_ONLY,
    ('layout', '_result', 'if not steps and not part.skipped:', 'not', '(removed)', 0):
        _CACHE_ONLY,
    ('layout', '_result', 'if not steps and not part.skipped:', 'and', 'or', 0):
        _CACHE_ONLY,
    ('layout', '_result', 'if not steps and not part.skipped:', 'not', '(removed)', 1):
        _CACHE_ONLY,
    ('layout', '_result', 'if action == "kept":', '==', '!=', 0):
        _CACHE_ONLY,
    ('layout', '_Layout.__init__', 'for p, tokens in zip(parts, self.joined.counts, strict=True)', 'True', 'False', 0):
        _STRICT_ZIP,
    ('layout', '_Layout._shrunk', 'if piece.tiers is not None and self.joined.additive:', 'not', '(removed)', 0):
        _TWO_PATHS,
    ('layout', '_Layout._shrunk', 'if result.tiers is None or result.tiers == probe.tiers:', 'or', 'and', 0):
        _DEMOTE_TIERS,
    ('layout', '_Layout.truncate', 'if not piece.text or self.deficit <= 0:', 'or', 'and', 0):
        _GUARDED,
    ('layout', '_Layout.truncate', 'if not piece.text or self.deficit <= 0:', '<=', '<', 0):
        _GUARDED,
    ('layout', '_Layout.truncate', 'if target >= size or target <= 0:', '<=', '<', 0):
        _GUARDED,
    ('layout', 'run_layout', 'if state.deficit > 0:', '>', '>=', 0):
        _GUARDED,
    ('layout', 'run_layout', 'if state.deficit <= 0:', '<=', '<', 0):
        _GUARDED,
    ('layout', '_Layout.truncate', 'while self.deficit > 0 and piece.tokens > max(section.min, 1):', '>', '>=', 1):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'while self.deficit > 0 and piece.tokens > max(section.min, 1):', 'max', 'min', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'while self.deficit > 0 and piece.tokens > max(section.min, 1):', '1', '0', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'target = max(section.min, piece.tokens - self.deficit, 1)', '-', '+', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'target = max(section.min, piece.tokens - self.deficit, 1)', '1', '0', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'if target >= piece.tokens:', '>=', '>', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'target = piece.tokens - 1', '-', '+', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'target = piece.tokens - 1', '1', '0', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'if target < max(section.min, 1):', 'max', 'min', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'if target < max(section.min, 1):', '1', '0', 0):
        _JOIN_LOOP,
    ('layout', '_Layout.truncate', 'if not shorter or shorter == piece.text:', 'or', 'and', 0):
        _JOIN_LOOP,
    ('layout', 'patch_layout', 'if previous.steps or len(previous.sections) != len(parts):', '!=', '==', 0):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:', 'not', '(removed)', 0):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:', 'or', 'and', 0):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:', 'not', '(removed)', 1):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:', 'or', 'and', 1):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:', 'not', '(removed)', 2):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:', 'or', 'and', 2):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if critical_load > available:', '>', '>=', 0):
        _FAST_PATH,
    ('layout', 'patch_layout', 'if total > available:', '>', '>=', 0):
        _FAST_PATH,
    ('layout', 'patch_layout', 'total = joined.total + fixed_tokens(parts)', '+', '-', 0):
        _NO_SIZED_IN_PATCH,
    ('layout', 'patch_layout', 'growing = [i for i, p in enumerate(parts) if p.section.grow > 0 and p.text]', '>', '>=', 0):
        _ZERO_GROW,
    ('layout', '_allotment', 'if grow_sum and text and section.grow > 0:  # type: ignore[attr-defined]', '>', '>=', 0):
        _ZERO_GROW,
    ('layout', '_results', 'grow_sum = _grow_sum([p.part.section.grow for p in pieces if p.part.section.grow > 0 and p.text])', '>', '>=', 0):
        _ZERO_GROW,
    ('layout', '_grow_sum', 'return sum(map(_fraction, grows), Fraction(0)) if grows else 0', '0', '1', 1):
        _NO_GROWER,
    ('proxy', 'Proxy._forward', 'if upstream.content_length is not None and not reader.stream:', 'and', 'or', 0):
        _LENGTH_NONE,
    ('proxy', 'Proxy._forward', 'reader = UsageReader(api or "", upstream.headers.get("Content-Type", ""), upstream.headers.get("Content-Encoding", ""))', 'or', 'and', 0):
        _API_UNUSED,

    ('claude_truth', 'ScaleFits.update', 'while start > 0 and self.observations[start - 1] != observations[start - 1]:', '0', '1', 0):
        _WALK_BACK,
    ('claude_truth', 'ScaleFits.update', 'start = max(0, start - 1)  # the last one seen is refitted anyway', '1', '0', 0):
        _WALK_BACK,
    ('claude_truth', 'ScaleFits.update', 'if start < len(self.observations):', '<', '<=', 0):
        _WALK_BACK,
    ('claude_truth', 'ScaleFits.update', 'and obs.model == prev.model and obs.visible > prev.visible and obs.recorded > prev.recorded', '>', '>=', 1):
        _NO_GROWTH_PAIR,
    ('common', '_message_sections', 'return sections, tuple([s.id for s, b in zip(sections, blocks, strict=True) if b.cache_control is not None])', 'True', 'False', 0):
        _STRICT_ZIP,
}
_ORIGINAL_LINES: dict[str, list[str]] = {}  # path → the module's lines before mutation
_FUNCTIONS: dict[str, dict[int, str]] = {}  # path → line → the qualified name of the innermost function holding it

# token → what it may become (one mutant each)
_OPERATORS = {
    "<": ("<=",), "<=": ("<",), ">": (">=",), ">=": (">",), "==": ("!=",), "!=": ("==",),
    "+": ("-",), "-": ("+",), "*": ("+",), "//": ("*",), "%": ("//",),
    "+=": ("-=",), "-=": ("+=",),
}
_UNARY_AFTER = {"(", "[", "{", ",", "=", ":", "return", "in", "yield", "lambda", "else", "if", "and", "or", "not", "",
                "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "//", "%", "**", "+=", "-=", "->", "print"}
_NAMES = {"and": ("or",), "or": ("and",), "not": ("",), "True": ("False",), "False": ("True",),
          "max": ("min",), "min": ("max",), "is": ("is not",)}


@dataclass(frozen=True)
class Mutant:
    target: str
    module: str
    path: str
    line: int
    col: int
    original: str
    replacement: str
    source: str  # the whole mutated module

    def key(self) -> tuple[str, str, str, str, str, int]:
        """What ``EQUIVALENT`` is keyed by: the module's name, the enclosing function, the original line,
        the change, and which occurrence of the token in the line it is (0 for the first)."""
        line = _ORIGINAL_LINES[self.path][self.line - 1]
        where = _FUNCTIONS[self.path].get(self.line, "")
        nth = _occurrence(line, self.col, self.original)
        return (self.module.rsplit(".", 1)[-1], where, line.strip(), self.original, self.replacement, nth)

    def label(self) -> str:
        rel = os.path.relpath(self.path, ROOT)
        return f"{rel}:{self.line}:{self.col + 1} {self.original!r} → {self.replacement!r}"


def resolve(module: str) -> tuple[str, str]:
    """``(dotted name, file)`` of a tokenbox.core module given by name or by dotted path."""
    import importlib.util

    import tokenbox.core as core

    if "." in module:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.origin:
            raise SystemExit(f"mutate: no module {module}")
        return module, spec.origin
    found = [info.name for info in pkgutil.walk_packages(core.__path__, "tokenbox.core.")
             if info.name.rsplit(".", 1)[-1] == module]
    if len(found) != 1:
        raise SystemExit(f"mutate: {len(found)} modules named {module!r} under tokenbox.core: {found}; "
                         "give the dotted path in TARGETS")
    spec = importlib.util.find_spec(found[0])
    assert spec is not None and spec.origin
    return found[0], spec.origin


def _function_lines(tree: ast.Module, names: tuple[str, ...]) -> set[int] | None:
    """The line numbers of the named functions (``Class.method`` or ``function``), or ``None`` for all."""
    if not names:
        return None
    lines: set[int] = set()
    wanted = set(names)

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualified = f"{prefix}{child.name}"
                if qualified in wanted and not isinstance(child, ast.ClassDef):
                    body_start = child.body[0].lineno
                    lines.update(range(body_start, (child.end_lineno or body_start) + 1))
                    wanted.discard(qualified)
                visit(child, qualified + ".")

    visit(tree, "")
    if wanted:
        raise SystemExit(f"mutate: no function {sorted(wanted)} in the module")
    return lines


def _occurrence(line: str, col: int, token: str) -> int:
    """How many tokens like ``token`` stand before column ``col`` of ``line`` (as tokens, not substrings)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return 0
    offset = len(line) - len(line.lstrip())
    return sum(1 for t in tokens if t.string == token and t.start[1] + offset < col)


def _enclosing(tree: ast.Module) -> dict[int, str]:
    """Line → ``Class.function`` of the innermost function or class around it (module level: absent)."""
    found: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    found[line] = name
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def mutants(target: Target) -> list[Mutant]:
    """Every one-token mutant of the target that still compiles."""
    module, path = resolve(target.module)
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    allowed = _function_lines(tree, target.functions)
    skipped = _docstring_lines(tree)
    lines = source.splitlines(keepends=True)
    _ORIGINAL_LINES[path] = source.splitlines()
    _FUNCTIONS[path] = _enclosing(tree)
    found: list[Mutant] = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    annotation = _annotation_tokens(tokens)
    for index, token in enumerate(tokens):
        line, col = token.start
        if allowed is not None and line not in allowed:
            continue
        if line > len(lines) or line in skipped or index in annotation or EQUIVALENT_MARK in lines[line - 1]:
            continue
        choices: tuple[str, ...] = ()
        if token.type == tokenize.OP:
            choices = _OPERATORS.get(token.string, ())
            before = tokens[index - 1].string if index else ""
            if token.string in ("*", "-", "+") and (before in _UNARY_AFTER or tokens[index - 1].type == tokenize.NEWLINE):
                choices = ()  # unpacking (``*args``, ``{*a}``) or a sign: not an arithmetic operator
        elif token.type == tokenize.NAME:
            choices = _NAMES.get(token.string, ())
            if token.string in ("max", "min") and not (index + 1 < len(tokens) and tokens[index + 1].string == "("):
                choices = ()
        elif token.type == tokenize.NUMBER:
            choices = _number(token.string)
        for replacement in choices:
            text = lines[line - 1]
            new_line = text[:col] + replacement + text[col + len(token.string):]
            if token.string == "not":  # drop "not " whole
                new_line = text[:col] + text[col + len("not "):]
            mutated = "".join(lines[: line - 1]) + new_line + "".join(lines[line:])
            try:
                compile(mutated, path, "exec")
            except SyntaxError:
                continue
            found.append(Mutant(target.name, module, path, line, col, token.string, replacement or "(removed)", mutated))
    return found


def _annotation_tokens(tokens: list[tokenize.TokenInfo]) -> set[int]:
    """Indices of tokens in annotations (``x: int | None``, ``-> tuple[int, int]``): types, not behaviour.

    A rough lexical rule: after ``->`` up to the ``:`` that ends the signature, and after a parameter's
    ``:`` inside a ``def``'s parentheses up to the next ``,``/``=``/``)`` at the same depth."""
    skip: set[int] = set()
    in_def = False
    depth = 0
    mode = None  # "param" or "return"
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.NAME and tok.string == "def":
            in_def, depth, mode = True, 0, None
            continue
        if not in_def:
            continue
        if tok.string in "([{" and tok.type == tokenize.OP:
            depth += 1
        elif tok.string in ")]}" and tok.type == tokenize.OP:
            depth -= 1
            if mode == "param" and depth == 0:
                mode = None
        if mode is not None:
            if mode == "param" and depth == 1 and tok.string in (",", "="):
                mode = None
            elif mode == "return" and depth == 0 and tok.string == ":":
                in_def, mode = False, None
            else:
                skip.add(i)
            continue
        if tok.string == ":" and depth == 1:
            mode = "param"
        elif tok.string == "->":
            mode = "return"
        elif tok.string == ":" and depth == 0:
            in_def = False
    return skip


def _number(text: str) -> tuple[str, ...]:
    try:
        value = ast.literal_eval(text.replace("_", ""))
    except (ValueError, SyntaxError):
        return ()
    if isinstance(value, bool) or isinstance(value, complex):
        return ()
    if isinstance(value, int):
        return ("1",) if value == 0 else ("0",) if value == 1 else (str(value + 1),)
    return (repr(round(value + 0.01, 6)),)


def _pytest(tests: tuple[str, ...], env: dict[str, str], timeout: float) -> tuple[str, float]:
    """Run ``tests`` serially in one fresh process: ``passed``, ``failed`` or ``timeout``."""
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly",
               "--no-header", "-o", "addopts=", *tests]
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    elapsed = time.monotonic() - started
    if result.returncode == 0:
        return "passed", elapsed
    if result.returncode in (1, 3):  # tests failed (3: an error inside a test's setup counts as failing too)
        return "failed", elapsed
    raise SystemExit(f"mutate: pytest exited {result.returncode}:\n{result.stdout.decode()[-3000:]}{result.stderr.decode()[-2000:]}")


def _env(spec_file: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TOKENBOX_MUTANT", None)
    if spec_file is not None:
        env["TOKENBOX_MUTANT"] = spec_file
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HOOK), env.get("PYTHONPATH", "")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_mutant(mutant: Mutant, tests: tuple[str, ...], timeout: float) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
        json.dump({"module": mutant.module, "source": mutant.source}, handle)
    try:
        outcome, _ = _pytest(tests, _env(handle.name), timeout)
    finally:
        os.unlink(handle.name)
    return {"passed": "survived", "failed": "killed", "timeout": "killed (timeout)"}[outcome]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mutation testing of tokenbox.core (see the module docstring).")
    parser.add_argument("targets", nargs="*", help="target names from TARGETS (default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once (default: the cores)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--report", help="write a markdown table and the survivors to this file")
    parser.add_argument("--recheck", action="store_true",
                        help="run the mutants listed as equivalent too (by default they are counted without a run)")
    args = parser.parse_args(argv)
    chosen = [t for t in TARGETS if not args.targets or t.name in args.targets or t.name.split(" ")[0] in args.targets]
    if not chosen:
        raise SystemExit(f"mutate: no target among {[t.name for t in TARGETS]}")
    rows = []
    survivors: list[str] = []
    started = time.monotonic()
    for target in chosen:
        found = mutants(target)
        if args.list:
            for mutant in found:
                print(mutant.label())
            continue
        outcome, baseline = _pytest(target.tests, _env(None), timeout=600)
        if outcome != "passed":
            raise SystemExit(f"mutate: the tests of {target.name} fail without a mutant")
        timeout = max(30.0, baseline * 4)
        listed = [m for m in found if m.key() in EQUIVALENT and not args.recheck]  # known not to be bugs
        runs = [m for m in found if m not in listed]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            outcomes = dict(zip(runs, pool.map(functools.partial(run_mutant, tests=target.tests, timeout=timeout), runs), strict=True))
        results = [outcomes.get(m, "survived") for m in found]
        killed = sum(r.startswith("killed") for r in results)
        alive = [m for m, r in zip(found, results, strict=True) if r == "survived"]
        equivalent = [m for m in alive if m.key() in EQUIVALENT]
        lost = [m for m in alive if m.key() not in EQUIVALENT]
        survivors.extend(f"{target.name}: {m.label()}" for m in lost)
        judged = len(found) - len(equivalent)  # an equivalent mutant is no bug to catch
        score = 100 * killed / judged if judged else 100.0
        rows.append((target.name, len(found), killed, len(lost), len(equivalent), score, baseline))
        print(f"{target.name:<22} {len(found):>4} mutants  {killed:>4} killed  {len(lost):>3} survived  "
              f"{len(equivalent):>3} equivalent  {score:5.1f} %  (tests {baseline:.1f} s)", flush=True)
        for mutant in lost:
            print(f"    survived: {mutant.label()}", flush=True)
        for mutant in equivalent:
            print(f"    equivalent: {mutant.label()}: {EQUIVALENT[mutant.key()]}", flush=True)
    if args.list:
        return 0
    total = sum(r[1] for r in rows)
    killed = sum(r[2] for r in rows)
    lost = sum(r[3] for r in rows)
    equivalent = sum(r[4] for r in rows)
    score = 100 * killed / max(total - equivalent, 1)
    print(f"{'all':<22} {total:>4} mutants  {killed:>4} killed  {lost:>3} survived  {equivalent:>3} equivalent  "
          f"{score:5.1f} %  in {time.monotonic() - started:.0f} s")
    if args.report:
        with open(args.report, "w", encoding="utf-8") as out:
            out.write("| target | mutants | killed | survived | equivalent | score |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
            for name, count, dead, alive, same, row_score, _ in rows:
                out.write(f"| {name} | {count} | {dead} | {alive} | {same} | {row_score:.1f} % |\n")
            out.write(f"| **all** | {total} | {killed} | {lost} | {equivalent} | {score:.1f} % |\n\n")
            out.writelines(f"- {line}\n" for line in survivors)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
