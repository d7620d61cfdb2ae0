"""The embedding cache: a real SQLite file, an injected clock."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from beamclaw_memory import EmbeddingCache


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _rows(*values: float) -> np.ndarray:
    return np.array([[v, v + 1, v + 2] for v in values], dtype=np.float32)


def test_a_cached_text_is_a_hit_and_others_are_misses(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.db", ttl=60, clock=Clock())
    cache.put("m", ["alpha", "beta"], _rows(1, 2))
    found = cache.get("m", ["gamma", "beta", "alpha", "beta"])
    assert sorted(found) == [1, 2, 3]
    np.testing.assert_array_equal(found[1], _rows(2)[0])
    np.testing.assert_array_equal(found[2], _rows(1)[0])
    assert found[2].dtype == np.float32
    assert cache.get("m", []) == {}
    assert len(cache) == 2
    cache.close()


def test_the_cache_is_keyed_by_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.db", ttl=60, clock=Clock())
    cache.put("model-a", ["text"], _rows(1))
    cache.put("model-b", ["text"], _rows(5))
    assert cache.get("model-c", ["text"]) == {}
    np.testing.assert_array_equal(cache.get("model-a", ["text"])[0], _rows(1)[0])
    np.testing.assert_array_equal(cache.get("model-b", ["text"])[0], _rows(5)[0])
    cache.close()


def test_an_entry_expires_after_the_ttl_and_is_deleted_at_the_next_open(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "cache.db"
    cache = EmbeddingCache(path, ttl=100, clock=clock)
    cache.put("m", ["old"], _rows(1))
    clock.now += 60
    cache.put("m", ["new"], _rows(2))
    clock.now += 40  # "old" is exactly 100 s old: still fresh
    assert sorted(cache.get("m", ["old", "new"])) == [0, 1]
    clock.now += 1
    assert sorted(cache.get("m", ["old", "new"])) == [1]
    cache.close()
    reopened = EmbeddingCache(path, ttl=100, clock=clock)
    assert len(reopened) == 1
    clock.now += 100
    assert reopened.get("m", ["new"]) == {}
    reopened.close()


def test_putting_a_text_again_refreshes_it(tmp_path: Path) -> None:
    clock = Clock()
    cache = EmbeddingCache(tmp_path / "cache.db", ttl=10, clock=clock)
    cache.put("m", ["t"], _rows(1))
    clock.now += 8
    cache.put("m", ["t"], _rows(3))
    clock.now += 8
    np.testing.assert_array_equal(cache.get("m", ["t"])[0], _rows(3)[0])
    assert len(cache) == 1
    cache.close()


def test_the_cache_outlives_its_process(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "cache.db"
    first = EmbeddingCache(path, ttl=60, clock=Clock())
    first.put("m", ["kept"], _rows(4))
    first.close()
    second = EmbeddingCache(path, ttl=60, clock=Clock())
    np.testing.assert_array_equal(second.get("m", ["kept"])[0], _rows(4)[0])
    second.close()


def test_a_put_with_mismatched_counts_stores_nothing(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.db", ttl=60, clock=Clock())
    with pytest.raises(ValueError):
        cache.put("m", ["a", "b"], _rows(1))
    assert len(cache) == 0
    cache.put("m", ["a"], _rows(1))  # the failed transaction left the connection usable
    assert len(cache) == 1
    cache.close()


@pytest.mark.parametrize(
    "garbage", [b"\x00" * 4096, b"this is not a database" * 300, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_a_corrupted_cache_file_is_replaced(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "cache.db"
    path.write_bytes(garbage)
    cache = EmbeddingCache(path, ttl=60, clock=Clock())
    assert len(cache) == 0
    cache.put("m", ["fresh"], _rows(1))
    cache.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone() == (1,)
    db.close()


def test_an_in_memory_cache_works(tmp_path: Path) -> None:
    cache = EmbeddingCache(None, ttl=60, clock=Clock())
    cache.put("m", ["x"], _rows(1))
    assert list(cache.get("m", ["x"])) == [0]
    cache.close()
