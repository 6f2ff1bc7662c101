"""What the performance work relies on: exact counts by pieces, incremental totals, and the rank cache.

* Anchor points (``TiktokenTokenizer.anchors``) split any surrounding text exactly, and ``measure``
  reads the head and tail counts off one encoding.
* ``JoinedTotal`` equals the count of the joined text after any replacements and removals.
* ``BlockCount`` equals the count of the rendered behaviour block after any demotions, and the
  incremental ``fit_budget`` demotes exactly as the render-and-count loop does.
* The opt-in rank cache writes nothing by default, keeps private files, and ignores bad ones.
"""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core.model.session import Behavior
from tokenbox.core.planning import behaviors
from tokenbox.core.tokens import bpe
from tokenbox.core.tokens.counting import JoinedTotal, TokenCounter
from tokenbox.core.tokens.tokenizers import default_registry

PIECES = [
    "foo", "Bar", " ", "  ", "\n", "\n\n", "\t", "\r\n", "\r", "/", "//", ".", "...", "!", "'s", "'", "'ll", "123",
    "4567", "é", "日本", "🙂", "\u00a0", "\u3000", "\u200b", "\x1c", "-", "- ", "#", "<|endoftext|>", "x=1", " /",
    "\n/", "\n ", " \n", "ǅ", "a\u0301", "ΣΑΣ", "٣", "\u2028", "\x0b", "A", "z", " a", "?\n", ".\n\n", "' ", "\u0085",
]
EXACT = ["o200k_base", "cl100k_base"]
texts = st.lists(st.sampled_from(PIECES), min_size=0, max_size=24).map("".join)
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tok(name: str):
    return default_registry().get(name)


@pytest.mark.parametrize("name", EXACT)
@FAST
@given(text=texts, before=texts, after=texts, joined_before=st.booleans(), joined_after=st.booleans(), long=st.booleans())
def test_anchor_points_split_any_surrounding_text_exactly(name, text, before, after, joined_before, joined_after, long):
    t = tok(name)
    text = text * 40 if long else text  # long texts go through the buffer encoder
    cut = t.anchors(text)
    total, cut2, head, tail = t.measure(text)
    assert cut == cut2 and total == t.count(text) == len(t.encode(text))
    if cut is None:
        return
    first, last = cut
    assert 0 <= first <= last < len(text)
    assert head == (t.count(text[:first]) if first else 0) and tail == t.count(text[last:])
    a = before + "\n\n" if joined_before else ""  # sections are joined by a blank line
    b = "\n\n" + after if joined_after else ""
    assert t.count(a + text + b) == t.count(a + text[:first]) + t.count(text[first:last]) + t.count(text[last:] + b)


@pytest.mark.parametrize("name", [*EXACT, "heuristic"])
@FAST
@given(start=st.lists(texts, min_size=1, max_size=8), ops=st.lists(st.tuples(st.integers(0, 7), texts), max_size=8))
def test_joined_total_is_the_count_of_the_joined_text(name, start, ops):
    t = tok(name)
    counter = TokenCounter(t, generation_chars=64)  # tiny generations: turnovers happen mid-way
    joined = JoinedTotal(counter, list(start))
    current = list(start)
    assert joined.total == t.count("\n\n".join(x for x in current if x))
    for index, new in ops:
        live = [i for i, x in enumerate(current) if x]
        if not live:
            break
        i = live[index % len(live)]
        joined.replace(i, new)  # an empty text removes it
        current[i] = new
        assert joined.total == t.count("\n\n".join(x for x in current if x))


behaviour = st.builds(
    Behavior,
    name=st.sampled_from(["a", "b-c", "x y", "日本"]),
    kind=st.sampled_from(["constraint", "directive", "procedure", "preference"]),
    activation=st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0]),
    content=texts,
    summary=st.one_of(st.none(), texts),
    tags=st.lists(st.sampled_from(["git", "t\nx", "🙂"]), max_size=2).map(tuple),
)


@pytest.mark.parametrize("name", EXACT)
@FAST
@given(items=st.lists(behaviour, min_size=1, max_size=8).map(tuple), budget=st.integers(0, 60), jumps=st.lists(st.booleans(), max_size=30))
def test_block_counts_follow_demotions(name, items, budget, jumps):
    t = tok(name)
    tiers = [behaviors.tier_for(b) for b in items]
    block = behaviors.BlockCount(items, tiers, t.count)
    demote = behaviors.Demoter(items, tiers)
    assert block.total == t.count(behaviors.render(items, tiers))
    for jump in jumps:
        moved = demote.next()
        if moved is None:
            break
        block.set_tier(moved, behaviors.Tier.OMITTED if jump else behaviors.Tier(tiers[moved] + 1))
        assert block.total == t.count(behaviors.render(items, tiers))
        assert behaviors.render(items, tiers, {}) == behaviors.render(items, tiers)
    assert behaviors.fit_budget(items, budget, t.count, additive=True) == behaviors.fit_budget(items, budget, t.count)


# ---------------------------------------------------------------------------------------- rank cache


def test_the_rank_cache_writes_nothing_unless_asked(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    ranks, _ = bpe.cached_ranks("cl100k_base", env)
    assert ranks == bpe.load_ranks("cl100k_base")[0]
    assert list(tmp_path.iterdir()) == []


def test_the_rank_cache_is_private_and_read_back(tmp_path, monkeypatch):
    env = {"XDG_CACHE_HOME": str(tmp_path), "TOKENBOX_CACHE": "1"}
    first, source = bpe.cached_ranks("cl100k_base", env)
    directory = tmp_path / "tokenbox"
    files = list(directory.iterdir())
    assert len(files) == 1 and bpe.EXPECTED_SHA256["cl100k_base"][:32] in files[0].name
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600

    def no_package_read(name):
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(bpe, "load_ranks", no_package_read)
    again, source_again = bpe.cached_ranks("cl100k_base", env)
    assert again == first and list(again) == list(first) and source_again == source


@pytest.mark.parametrize("damage", ["truncate", "flip", "open_to_group", "symlink"])
def test_a_bad_cache_file_is_ignored_and_replaced(tmp_path, damage):
    env = {"XDG_CACHE_HOME": str(tmp_path), "TOKENBOX_CACHE": "1"}
    good, _ = bpe.cached_ranks("cl100k_base", env)
    path = next((tmp_path / "tokenbox").iterdir())
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 1]) + data[-9:])
    elif damage == "open_to_group":
        os.chmod(path, 0o620)
    else:
        elsewhere = tmp_path / "elsewhere.ranks"
        elsewhere.write_bytes(data)
        os.chmod(elsewhere, 0o600)
        path.unlink()
        path.symlink_to(elsewhere)
    again, _ = bpe.cached_ranks("cl100k_base", env)
    assert again == good
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600 and not path.is_symlink()


def test_big_batches_are_measured_in_two_threads_with_the_same_results(monkeypatch):
    import tokenbox.core.tokens.counting as counting

    monkeypatch.setattr(counting, "PARALLEL_MIN_CHARS", 10)
    monkeypatch.setattr(counting, "_idle_core", lambda: True)
    t = tok("o200k_base")
    batch = [f"Section {i}:\nsome text, {i} words\n  indented line {i}" * (i % 7 + 1) for i in range(60)]
    threaded = TokenCounter(t)
    threaded._threads = 2
    threaded.prepare(batch)
    single = TokenCounter(t)
    single._threads = 1
    single.prepare(batch)
    for text in batch:
        assert threaded.pieces(text) == single.pieces(text) == (t.anchors(text), *t.measure(text)[2:])
        assert threaded.count(text) == single.count(text) == t.count(text)
    more = [*batch[::-1], "new one", "another"]
    assert threaded.count_many(more) == [t.count(x) for x in more]
    calls = []

    def failing(text):
        calls.append(text)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        counting._in_threads(failing, ["a", "b", "c"])
