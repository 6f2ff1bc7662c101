"""The claude-estimate's fast arithmetic against its definition, and the fit of a recorded context."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.model.session import Section
from tokenbox.core.sources.readers.claude_truth import fit_within, visible_tokens
from tokenbox.core.tokens.charclass import base_estimate, reference_estimate, scaled

# letters, digits, ASCII and Unicode white space, punctuation, wide characters: every class the estimate counts
_ALPHABET = "aZ09_ \n\t\r\x0b\x0c\x1c\x1f\xa0\u3000\u2028\x85é日😀-.{}\"'"
texts = st.text(alphabet=st.sampled_from(_ALPHABET) | st.characters(), max_size=60)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_fast_estimate_is_the_patterns_estimate(text):
    assert base_estimate(text) == reference_estimate(text)


def test_long_words_and_lone_newlines():
    assert base_estimate("abcdefgh") == reference_estimate("abcdefgh")
    assert base_estimate("a\nb\nc\n\n d") == reference_estimate("a\nb\nc\n\n d")
    assert base_estimate("x" * 40) == reference_estimate("x" * 40)


def _brute_force(sections: list[Section], target: int, scale: float) -> float:
    best = 0.0
    for step in range(round(scale * 10_000) + 1):
        if visible_tokens(sections, step / 10_000) <= target:
            best = step / 10_000
    return best


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="ab cd\n{}", min_size=0, max_size=40), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=400),
    st.floats(min_value=0.01, max_value=0.4),
    st.integers(min_value=0, max_value=30),
)
def test_fit_within_finds_the_largest_scale_that_fits(bodies, target, scale, fixed):
    sections = [Section(id=f"s{i}", kind="text", text=body) for i, body in enumerate(bodies)]
    sections.append(Section(id="image", kind="text", tokens=fixed))
    found = fit_within(sections, target, scale)
    assert found == _brute_force(sections, target, scale)
    assert found == 0.0 or visible_tokens(sections, found) <= target


def test_scaled_rounds_each_part_and_blank_text_counts_nothing():
    assert scaled("   \n", 1.3) == 0
    assert scaled("word", 0.01) == 1
