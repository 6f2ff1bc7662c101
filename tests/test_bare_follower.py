"""``benchmarks.follower.BareFollower``, figure 8's watchfiles floor: a write the follower reads half done
(the file truncated, then filled, as the benchmark writes each edit in place) is not the end of it — the rest
of the write is reported and loaded. CI once caught the read between the two: the follower's thread died on
the torn JSON and the figure timed out."""

from __future__ import annotations

import json
import time

from benchmarks import follower


def test_a_write_caught_half_done_is_loaded_once_it_is_complete(tmp_path, monkeypatch):
    monkeypatch.setattr(follower, "TIMEOUT", 10.0)
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"sections": []}))
    whole = json.dumps({"sections": [{"id": f"s{k}", "text": "x" * 200} for k in range(50)]}).encode()

    def torn_write() -> None:
        with open(path, "wb") as handle:
            handle.write(whole[: len(whole) // 2])
            handle.flush()
            time.sleep(0.3)  # several watch steps: the follower reads the half-written file
            handle.write(whole[len(whole) // 2:])

    with follower.BareFollower(str(path), step_ms=5, debounce_ms=5) as bare:
        started = time.perf_counter()
        latency = bare.latency(torn_write)
        finished = time.perf_counter() - started
    assert 0.3 <= latency <= finished  # loaded after the second half, not at the torn read
    with open(path, "rb") as handle:
        assert handle.read() == whole


def test_a_whole_write_is_loaded(tmp_path):
    path = tmp_path / "session.json"
    path.write_text("{}")
    with follower.BareFollower(str(path), step_ms=5, debounce_ms=5) as bare:
        latency = bare.latency(lambda: path.write_text(json.dumps({"a": 1})))
    assert 0 < latency < follower.TIMEOUT


def test_the_line_follower_loads_an_append_once_its_line_is_complete(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text(json.dumps({"type": "user"}) + "\n")
    line = (json.dumps({"type": "assistant", "text": "y" * 500}) + "\n").encode()
    loaded: list[bytes] = []

    def torn_append() -> None:
        with open(path, "ab") as handle:
            handle.write(line[:100])
            handle.flush()
            time.sleep(0.3)
            handle.write(line[100:])

    with follower.LineFollower(str(path), step_ms=5, debounce_ms=5,
                               loads=lambda raw: loaded.append(raw) or json.loads(raw)) as tail:
        latency = tail.latency(torn_append)
    assert latency >= 0.3  # not counted at the half line
    assert loaded == [line.rstrip(b"\n")]  # the old line is not read again, the new one once


class _Failing(follower.BareFollower):
    def load(self) -> bool:
        raise OSError("the disk went away")


def test_a_follower_that_fails_says_so_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(follower, "TIMEOUT", 20.0)
    path = tmp_path / "session.json"
    path.write_text("{}")
    with _Failing(str(path), step_ms=5, debounce_ms=5) as bare:
        started = time.perf_counter()
        try:
            bare.latency(lambda: path.write_text("[]"))
        except RuntimeError as exc:
            assert isinstance(exc.__cause__, OSError)
        else:
            raise AssertionError("a failed follower measured a latency")
        assert time.perf_counter() - started < 10  # not the whole timeout
