"""``Loader``: each loader owns what it remembers of the files it read (the package's functions use one
default loader); following a growing log through a loader gives what a cold load gives."""

from __future__ import annotations

import json
import threading
from dataclasses import astuple
from pathlib import Path

from tokenbox.core import load_turns
from tokenbox.core.sources.loader import DEFAULT_LOADER, Loader

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def sample_text(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def _turns(turns) -> list[tuple]:
    return [astuple(turn) for turn in turns]


def test_a_loader_follows_a_growing_log_like_a_cold_load(tmp_path):
    lines = sample_text("agent_log.jsonl").splitlines(keepends=True)
    path = tmp_path / "log.jsonl"
    path.write_text("", encoding="utf-8")
    mine = Loader()
    for count in range(1, len(lines) + 1):
        path.write_text("".join(lines[:count]), encoding="utf-8")
        followed = mine.load_turns(path)
        assert _turns(followed) == _turns(Loader().load_turns(path))  # a fresh loader reads it cold
        assert len(followed) == count
    assert mine.load_session(path).turn == len(lines)


def test_loaders_do_not_share_what_they_remember(tmp_path):
    path = tmp_path / "session.json"
    doc = {"tokenbox": 1, "budget": {"max_ctx": 500}, "sections": [{"id": "a", "kind": "user", "text": "hello"}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    one, two = Loader(), Loader()
    first = one.load_session(path)
    assert one.load_session(path) is first  # the same text again: the same session object
    assert two.load_session(path) is not first  # another loader read the file itself
    one.forget(path)
    assert one.load_session(path) is not first  # forgotten: read cold again
    assert DEFAULT_LOADER.load_session(path) is not first  # the package's loader is one more


def test_one_loader_serves_several_threads(tmp_path):
    lines = sample_text("agent_log.jsonl").splitlines(keepends=True)
    path = tmp_path / "log.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    expected = _turns(load_turns(path))
    shared, errors, results = Loader(readers_kept=1), [], []

    def work() -> None:
        try:
            for _ in range(20):
                results.append(_turns(shared.load_turns(path)))
                shared.forget()
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and results and all(r == expected for r in results)
