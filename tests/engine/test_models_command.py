"""``tokenbox models``: one row per model — name, window, tokenizer — in aligned columns, and the rows
agree with what planning a session that names the model uses.

The expected windows and tokenizers are the vendors' published figures, written here by hand.
"""

from __future__ import annotations

import json
import re

from tests.inprocess import run_main

PUBLISHED = {  # model: (context window, public tokenizer or None)
    "gpt-4o": (128_000, "o200k_base"),
    "gpt-4o-mini": (128_000, "o200k_base"),
    "gpt-4.1": (1_047_576, "o200k_base"),
    "gpt-5": (400_000, "o200k_base"),
    "o3": (200_000, "o200k_base"),
    "gpt-4": (8_192, "cl100k_base"),
    "gpt-3.5-turbo": (16_385, "cl100k_base"),
    "claude-sonnet-4": (200_000, None),
    "claude-3-5-haiku": (200_000, None),
    "gemini-2.5-pro": (1_048_576, None),
}
NONE_PUBLIC = "none public (name one, e.g. heuristic)"
ROW = re.compile(r"^(?P<name>\S+)( +)(?P<window>\d+)  (?P<tokenizer>\S.*)$")


def _rows() -> list[re.Match[str]]:
    result = run_main(["models"])
    assert result.returncode == 0 and result.stderr == b""
    lines = result.stdout.decode("utf-8").splitlines()
    rows = [ROW.match(line) for line in lines]
    assert all(rows), [line for line, row in zip(lines, rows, strict=True) if not row]
    return rows  # type: ignore[return-value]


def test_models_lists_each_model_once_with_its_published_window_and_tokenizer():
    rows = _rows()
    table = {row["name"]: (int(row["window"]), row["tokenizer"]) for row in rows}
    assert len(table) == len(rows) >= len(PUBLISHED)
    for name, (window, tokenizer) in PUBLISHED.items():
        assert table[name] == (window, tokenizer or NONE_PUBLIC), name


def test_models_columns_are_aligned():
    rows = _rows()
    width = max(len(row["name"]) for row in rows)
    # the window column is right-aligned in 9 characters after the widest name and two spaces
    assert {row.end("window") for row in rows} == {width + 2 + 9}
    assert {row.start("tokenizer") for row in rows} == {width + 2 + 9 + 2}


def test_every_listed_model_plans_with_its_row(tmp_path):
    rows = _rows()
    for row in [*rows[:: max(1, len(rows) // 12)], rows[-1]]:
        session = {"tokenbox": 1, "model": row["name"], "sections": [{"id": "u", "kind": "user", "text": "hi"}]}
        if row["tokenizer"] == NONE_PUBLIC:
            session["tokenizer"] = "heuristic"
        path = tmp_path / "s.json"
        path.write_text(json.dumps(session), encoding="utf-8")
        result = run_main(["plan", str(path), "--json"])
        assert result.returncode == 0, (row["name"], result.stderr)
        plan = json.loads(result.stdout)
        assert plan["budget"]["max_ctx"] == int(row["window"]), row["name"]
        expected = "heuristic" if row["tokenizer"] == NONE_PUBLIC else row["tokenizer"]
        assert plan["tokenizer"]["name"] == expected, row["name"]
