"""What a followed Claude Code transcript keeps of each section's ``meta`` (issue 27, "memory stays flat").

A followed reader keeps every message's sections for as long as it follows the file, each with a meta of
about a dozen keys (where the part came from, its label, its call). As a dict, each held a hash table of
its own (≈470 bytes), the same keys again for every part of an uncompacted chain. Counted here: what a
section's meta holds beside its values, and the meta reading as the dict it stands for to every caller.
"""

from __future__ import annotations

import gc
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.sources.readers.common import section_meta

from tests.importers.followed_chain import bytes_beside_values as _bytes_beside_values
from tests.importers.followed_chain import followed as _followed


def _followed_turn(tmp_path):
    return _followed(tmp_path)[1].main_turns()[-1]



def test_a_followed_sections_meta_holds_little_beside_its_values(tmp_path) -> None:
    turn = _followed_turn(tmp_path)
    gc.collect()
    metas = [section.meta for section in turn.sections if "message" in section.meta]  # a message's parts
    assert len(metas) >= 20
    seen: set[int] = set()
    held = sum(_bytes_beside_values(meta, seen) for meta in metas) / len(metas)
    # a dict each before: 425 bytes a section on average on this chain; now the values' tuple and a small
    # object, the keys' places shared by every meta of the same keys: 222 bytes
    assert held < 260, held


def test_a_followed_sections_meta_reads_as_its_dict(tmp_path) -> None:
    turn = _followed_turn(tmp_path)
    calls = [section for section in turn.sections if section.meta.get("block") == "tool_use"]
    assert calls
    for section in turn.sections:
        meta = section.meta
        plain = dict(meta)
        assert meta == plain and plain == meta and {**meta} == plain
        assert list(meta) == list(plain) and len(meta) == len(plain)
        assert meta.get("label") == plain.get("label") and meta.get("no such key", 3) == 3
        assert ("category" in meta) == ("category" in plain)


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _VALUES, max_size=14), st.text(max_size=6))
def test_a_compact_meta_is_the_dict_it_stands_for(fields: dict, other_key: str) -> None:
    meta = section_meta(fields)
    assert meta == fields and fields == meta and not (meta != fields)
    assert dict(meta) == fields and list(dict(meta).items()) == list(fields.items())  # keys in their order
    assert list(meta) == list(fields) and len(meta) == len(fields) and bool(meta) == bool(fields)
    assert meta.get(other_key, "absent") == fields.get(other_key, "absent")
    assert (other_key in meta) == (other_key in fields)
    for key, value in fields.items():
        assert meta[key] == value and meta[key] is fields[key]
    assert json.dumps(dict(meta)) == json.dumps(fields)
    again = section_meta(dict(reversed(list(fields.items()))))
    assert again == meta and meta == again  # keys in another order: equal, as dicts are
    assert (section_meta({**fields, other_key: "changed"}) == meta) == (fields.get(other_key, None) == "changed")
