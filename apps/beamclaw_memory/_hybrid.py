"""The hybrid merge: keyword and vector hits into one ranked list.

Keyword (BM25) scores are divided by the best one, so both sides are in [0, 1] (vector
scores are cosine similarities, below 0 counted as 0). A chunk's score is
``vector_weight * vector + bm25_weight * keyword`` with the two weights scaled to sum
to 1; when one side found nothing (no vectors yet, no embedder, no word in common),
the other carries all the weight. Then each chunk's own weight applies (an old daily
log weighs less), chunks under ``min_score`` are dropped, and where a user's chunk and
one of the agent's have the same text, the user's is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs


@attrs.frozen
class Scored:
    chunk_id: int
    score: float
    #: The two sides' scores after normalising (0 where that side did not find it).
    keyword: float
    vector: float


def merge(
    keyword_hits: list[tuple[int, float]],
    vector_hits: list[tuple[int, float]],
    *,
    vector_weight: float,
    bm25_weight: float,
    min_score: float,
    weights: Mapping[int, float] | None = None,
) -> list[Scored]:
    """The merged hits, best first (see the module); *weights* are per-chunk multipliers."""
    best = max((score for _, score in keyword_hits), default=0.0)
    keyword = {cid: score / best for cid, score in keyword_hits} if best > 0 else {}
    vector = {cid: min(1.0, max(0.0, score)) for cid, score in vector_hits}
    if not keyword:
        vector_weight, bm25_weight = 1.0, 0.0
    elif not vector:
        vector_weight, bm25_weight = 0.0, 1.0
    else:
        total = vector_weight + bm25_weight
        vector_weight, bm25_weight = vector_weight / total, bm25_weight / total
    merged = []
    for cid in keyword.keys() | vector.keys():
        k, v = keyword.get(cid, 0.0), vector.get(cid, 0.0)
        score = (vector_weight * v + bm25_weight * k) * (weights or {}).get(cid, 1.0)
        if score >= min_score:
            merged.append(Scored(cid, score, k, v))
    merged.sort(key=lambda s: (-s.score, s.chunk_id))
    return merged


def prefer_own(hits: list[Scored], text_of: Mapping[int, str], owner_of: Mapping[int, str]) -> list[Scored]:
    """*hits* without a chunk of the agent's whose text a user's own chunk repeats."""
    owned = {text_of[h.chunk_id] for h in hits if owner_of[h.chunk_id]}
    return [h for h in hits if owner_of[h.chunk_id] or text_of[h.chunk_id] not in owned]
