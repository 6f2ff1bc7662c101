"""``tokenbox.core.parse.fastjson.loads`` gives exactly what ``json.loads`` gives (value or error), with
msgspec and without it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.parse import fastjson

# texts the fast decoder refuses or could read differently: json decides them
EDGES = [
    "NaN", "[Infinity, -Infinity]", "1e400", "-1e400", '"\\ud800"', '{"a": "\\udc00x"}', '"\\ud83d\\ude00"',
    "123456789012345678901234567890", "-9223372036854775809", "18446744073709551616", '{"a": 1, "a": 2}',
    "-0", "-0.0", "1.5e-320", " {} ", '["\\u0000"]', "[1,]", '{"a":1}x', '"\x01"', "", "nul", "[" * 3000 + "]" * 3000,
]

values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def outcome(load, text):
    try:
        return "value", repr(load(text))
    except RecursionError:
        return "error", "RecursionError"
    except ValueError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("fast", [True, False, "switching"], ids=["msgspec", "json-only", "json-then-msgspec"])
def test_edge_texts_read_as_json_reads_them(fast, monkeypatch):
    if fast == "switching":  # msgspec imported part-way through (after SLOW_CHARS characters)
        monkeypatch.setattr(fastjson, "_FAST", fastjson._PENDING)
        monkeypatch.setattr(fastjson, "_read", 0)
        monkeypatch.setattr(fastjson, "SLOW_CHARS", 40)
    elif not fast:
        monkeypatch.setattr(fastjson, "_FAST", None)
    else:
        assert fastjson.accelerated()
    for text in EDGES:
        assert outcome(fastjson.loads, text) == outcome(json.loads, text), text
        assert outcome(fastjson.loads, text.encode("utf-8", "surrogatepass")) == outcome(json.loads, text.encode(
            "utf-8", "surrogatepass")), text


@settings(max_examples=150, deadline=None)
@given(values, st.booleans())
def test_any_value_reads_back_as_json_reads_it(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert repr(fastjson.loads(text)) == repr(json.loads(text))


def test_a_big_transcript_is_read_by_the_fast_decoder_from_its_first_line(tmp_path, monkeypatch):
    """A transcript's follower that is to read at least ``SLOW_CHARS`` characters imports the fast decoder first
    (``expect``): none of its lines is read by ``json.loads``, the first ``SLOW_CHARS`` included."""
    from tokenbox.core.sources.readers.claude_code import TranscriptFollower

    monkeypatch.setattr(fastjson, "_FAST", fastjson._PENDING)  # a fresh process: nothing imported, nothing read
    monkeypatch.setattr(fastjson, "_FAST_UTF8", None)
    monkeypatch.setattr(fastjson, "_read", 0)
    monkeypatch.setattr(fastjson, "SLOW_CHARS", 600)
    slow: list[str] = []
    standard = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *args, **kwargs: slow.append(text) or standard(text, *args, **kwargs))
    lines = [{"type": "user", "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": "s",
              "message": {"role": "user", "content": f"prompt {n} " + "x" * 100}} for n in range(6)]
    path = tmp_path / "t.jsonl"
    texts = [json.dumps(line) + "\n" for line in lines]
    path.write_text("".join(texts), encoding="utf-8")
    assert max(map(len, texts)) < 600 <= path.stat().st_size  # each line shorter than SLOW_CHARS, all of them not
    reader = TranscriptFollower(str(path), None).read()
    assert reader.lines_read == 6 and slow == []


def test_expect_imports_the_fast_decoder_from_slow_chars_on_and_never_against_a_switch_off(monkeypatch):
    """``expect(chars)`` imports the fast decoder when ``chars`` is at least ``SLOW_CHARS`` (the bound included),
    not below it, and never when it was switched off (``_FAST`` None): ``loads_utf8`` then reads nothing."""
    monkeypatch.setattr(fastjson, "_FAST", fastjson._PENDING)  # a fresh process: nothing imported, nothing read
    monkeypatch.setattr(fastjson, "_FAST_UTF8", None)
    monkeypatch.setattr(fastjson, "_read", 0)
    monkeypatch.setattr(fastjson, "SLOW_CHARS", 600)
    fastjson.expect(599)
    assert fastjson.loads_utf8(b"[1]") is fastjson.MISSED  # not imported below the bound
    fastjson.expect(600)
    assert fastjson.loads_utf8(b"[1]") == [1]  # imported at the bound itself
    monkeypatch.setattr(fastjson, "_FAST", None)  # switched off
    fastjson.expect(10**9)
    assert fastjson.loads_utf8(b"[1]") is fastjson.MISSED and not fastjson.accelerated()


def test_a_decoder_that_keeps_a_lone_surrogate_escape_never_reads_bytes(monkeypatch):
    """``loads_utf8`` is used only with a decoder that refuses a lone surrogate escape: the transcript reader
    does not look for one in a line's bytes (a decoder that kept one, as ``json.loads`` does, would hand it
    the surrogate, unreplaced and unwarned of). A stand-in msgspec whose decoder is ``json.loads``."""
    import sys
    import types

    stand_in = types.ModuleType("msgspec")
    stand_in.DecodeError = ValueError  # type: ignore[attr-defined]
    stand_in.json = types.SimpleNamespace(Decoder=lambda: types.SimpleNamespace(decode=json.loads))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "msgspec", stand_in)
    monkeypatch.setattr(fastjson, "_FAST", fastjson._PENDING)
    monkeypatch.setattr(fastjson, "_FAST_UTF8", None)
    for name in ("_REFUSED", "_REFUSED_UTF8"):  # (set again by the import: put back after the test)
        monkeypatch.setattr(fastjson, name, getattr(fastjson, name))
    assert json.loads(b'["\\ud800"]') == ["\ud800"]  # (what the stand-in keeps)
    assert fastjson.accelerated()  # its text decoding is still used (json decides what it refuses)
    assert fastjson.loads_utf8(b"[1]") is fastjson.MISSED
