"""The hybrid merge of keyword and vector hits."""

from __future__ import annotations

import pytest

from beamclaw_memory import Scored, merge
from beamclaw_memory._hybrid import prefer_own


def _scores(merged: list[Scored]) -> dict[int, float]:
    return {s.chunk_id: s.score for s in merged}


def test_both_sides_are_weighted_after_normalising_keywords_by_the_best() -> None:
    vectors = [(1, 0.5), (3, 0.9), (2, 0.1)]  # every candidate's cosine, the keyword side's too
    merged = merge([(1, 8.0), (2, 4.0)], vectors, vector_weight=0.7, bm25_weight=0.3, min_score=0.0)
    assert [s.chunk_id for s in merged] == [1, 3, 2]
    assert _scores(merged) == pytest.approx({1: 0.7 * 0.5 + 0.3 * 1.0, 3: 0.7 * 0.9, 2: 0.7 * 0.1 + 0.3 * 0.5})
    one = merged[0]
    assert (one.keyword, one.vector) == pytest.approx((1.0, 0.5))
    assert merged[1].keyword == 0.0


def test_a_chunk_without_a_vector_yet_is_scored_by_its_keywords_alone() -> None:
    merged = merge([(1, 8.0), (2, 4.0)], [(1, 0.5)], vector_weight=0.7, bm25_weight=0.3, min_score=0.0)
    assert _scores(merged) == pytest.approx({1: 0.7 * 0.5 + 0.3 * 1.0, 2: 0.5})


def test_the_best_keyword_hit_passes_min_score_when_its_vector_is_weak() -> None:
    # The keyword side's best, with a middling cosine, beats a vector-only neighbour: with
    # only the vector side's best scored, it would have counted as cosine 0 (0.3 < 0.35).
    merged = merge([(1, 5.0)], [(2, 0.45), (1, 0.25)], vector_weight=0.7, bm25_weight=0.3, min_score=0.35)
    assert [s.chunk_id for s in merged] == [1]


def test_weights_are_scaled_to_sum_to_one() -> None:
    a = merge([(1, 2.0)], [(1, 0.6), (2, 0.2)], vector_weight=0.7, bm25_weight=0.3, min_score=0.0)
    b = merge([(1, 2.0)], [(1, 0.6), (2, 0.2)], vector_weight=1.4, bm25_weight=0.6, min_score=0.0)
    assert _scores(a) == pytest.approx(_scores(b))
    only_keywords = merge([(1, 2.0)], [(1, 0.6)], vector_weight=0.0, bm25_weight=0.5, min_score=0.0)
    assert _scores(only_keywords) == pytest.approx({1: 1.0})


def test_negative_cosines_count_as_zero_and_above_one_as_one() -> None:
    merged = merge([(1, 1.0)], [(1, -0.8), (2, 1.5)], vector_weight=0.5, bm25_weight=0.5, min_score=0.0)
    assert _scores(merged) == pytest.approx({1: 0.5, 2: 0.5})


@pytest.mark.parametrize("vector_weight", [0.0, 0.2, 0.9])
def test_no_vector_hits_give_the_keywords_all_the_weight(vector_weight: float) -> None:
    merged = merge([(1, 3.0), (2, 1.5)], [], vector_weight=vector_weight, bm25_weight=0.3, min_score=0.0)
    assert _scores(merged) == pytest.approx({1: 1.0, 2: 0.5})


@pytest.mark.parametrize("bm25_weight", [0.0, 0.3, 1.0])
def test_no_keyword_hits_give_the_vectors_all_the_weight(bm25_weight: float) -> None:
    merged = merge([], [(1, 0.8), (2, 0.4)], vector_weight=0.7, bm25_weight=bm25_weight, min_score=0.0)
    assert _scores(merged) == pytest.approx({1: 0.8, 2: 0.4})
    assert merge([(5, 0.0)], [(1, 0.8)], vector_weight=0.7, bm25_weight=0.3, min_score=0.0)[0].score == (
        pytest.approx(0.8)
    )  # keyword scores all zero: as if none


def test_nothing_on_either_side_is_nothing() -> None:
    assert merge([], [], vector_weight=0.7, bm25_weight=0.3, min_score=0.0) == []


def test_min_score_drops_weak_hits_inclusively() -> None:
    merged = merge([(1, 10.0), (2, 5.0), (3, 1.0)], [], vector_weight=0.7, bm25_weight=0.3, min_score=0.5)
    assert [s.chunk_id for s in merged] == [1, 2]


def test_per_chunk_weights_multiply_and_can_reorder() -> None:
    keyword = [(1, 10.0), (2, 10.0), (3, 9.0)]
    merged = merge(keyword, [], vector_weight=0.7, bm25_weight=0.3, min_score=0.0, weights={1: 0.7})
    assert [s.chunk_id for s in merged] == [2, 3, 1]
    assert _scores(merged) == pytest.approx({1: 0.7, 2: 1.0, 3: 0.9})
    dropped = merge(keyword, [], vector_weight=0.7, bm25_weight=0.3, min_score=0.8, weights={1: 0.7})
    assert [s.chunk_id for s in dropped] == [2, 3]


def test_equal_scores_are_ordered_by_chunk_id() -> None:
    merged = merge([(9, 1.0), (4, 1.0), (6, 1.0)], [], vector_weight=0.7, bm25_weight=0.3, min_score=0.0)
    assert [s.chunk_id for s in merged] == [4, 6, 9]


def test_prefer_own_drops_the_agents_copy_of_a_users_text() -> None:
    hits = [Scored(1, 0.9, 1, 1), Scored(2, 0.8, 1, 1), Scored(3, 0.7, 1, 1), Scored(4, 0.6, 1, 1)]
    text = {1: "likes tea", 2: "likes tea", 3: "likes coffee", 4: "other"}
    owner = {1: "", 2: "alice", 3: "", 4: "alice"}
    assert [h.chunk_id for h in prefer_own(hits, text, owner)] == [2, 3, 4]
    assert prefer_own(hits, text, {1: "", 2: "", 3: "", 4: ""}) == hits  # the agent's own duplicates stay
