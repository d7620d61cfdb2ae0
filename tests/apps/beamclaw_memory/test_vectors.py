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


def test_a_chunk_scores_its_best_window() -> None:
    # Chunk 7's rows (not next to each other): one far, one that answers; chunk 8's one middling row.
    matrix = normalised([[0, 1, 0], [0.6, 0.8, 0], [1, 0.1, 0]])
    vectors = VectorSet([7, 8, 7], ["", "", ""], matrix)
    query = normalised([[1, 0, 0]])[0]
    assert len(vectors) == 2
    assert [(cid, round(score, 3)) for cid, score in vectors.search(query, [""], 5)] == [(7, 0.995), (8, 0.6)]


def test_candidates_score_the_keyword_sides_chunks_too() -> None:
    matrix = normalised([[1, 0, 0], [0.9, 0.1, 0], [0.1, 1, 0], [0, 0, 1]])
    vectors = VectorSet([1, 2, 3, 4], ["", "", "", "bob"], matrix)
    query = normalised([[1, 0, 0]])[0]
    found = vectors.candidates(query, [""], 1, [3, 1, 99])  # 99 has no vector; 1 is already the nearest
    assert [cid for cid, _ in found] == [1, 3]
    assert round(dict(found)[3], 3) == 0.1
    assert vectors.candidates(normalised([[1, 0]])[0], [""], 1, [3]) == []  # another model's length
