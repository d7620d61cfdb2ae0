"""Vector search: cosine over unit vectors, filtered by owner."""

from __future__ import annotations

import numpy as np

from beamclaw_memory import VectorSet
from beamclaw_memory._embedding import normalised


def test_nearest_first_and_only_the_owners_asked_for() -> None:
    matrix = normalised([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [1, 0.05, 0]])
    vectors = VectorSet([10, 11, 12, 13], ["", "", "", "alice"], matrix)
    query = normalised([[1, 0, 0]])[0]
    assert [cid for cid, _ in vectors.search(query, [""], 10)] == [10, 11, 12]
    assert [cid for cid, _ in vectors.search(query, ["", "alice"], 2)] == [10, 13]
    assert [cid for cid, _ in vectors.search(query, ["alice"], 10)] == [13]
    assert vectors.search(query, ["bob"], 10) == []
    assert vectors.search(query, [], 10) == []
    score = dict(vectors.search(query, [""], 10))
    assert score[10] == np.float32(1.0) and abs(score[12]) < 1e-6


def test_a_query_of_another_length_finds_nothing() -> None:
    vectors = VectorSet([1], [""], normalised([[1, 0, 0]]))
    assert vectors.search(normalised([[1, 0]])[0], [""], 5) == []
    empty = VectorSet([], [], np.zeros((0, 0), dtype=np.float32))
    assert len(empty) == 0 and empty.search(normalised([[1, 0]])[0], [""], 5) == []
