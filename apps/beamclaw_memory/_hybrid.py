"""The hybrid merge: keyword and vector hits into one ranked list.

Keyword (BM25) scores are divided by the best one, so both sides are in [0, 1] (vector
scores are cosine similarities, below 0 counted as 0). Every candidate, whichever side
found it, is scored on both: the caller gives the cosine of each candidate that has a
vector (not only of the vector side's best), and a candidate the keyword side did not
find has a keyword score of 0. A chunk's score is then
``vector_weight * vector + bm25_weight * keyword`` with the two weights scaled to sum
to 1. When one side has nothing (no word in common; no vectors at all, or none for
this chunk yet, or no embedder), the other carries all the weight, for the whole
search or for that chunk. Then each chunk's own weight applies (an old daily log
weighs less), chunks under ``min_score`` are dropped, and where a user's chunk and one
of the agent's have the same text, the user's is kept.

Scoring both sides matters: with the vector side's best alone, a chunk the keywords
found and the vectors ranked 41st would count as cosine 0, and at the default weights
(0.3 for keywords) no keyword-only hit could ever reach ``min_score`` 0.35.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs


@attrs.frozen
class Scored:
    chunk_id: int
    score: float
    #: The two sides' scores after normalising (0 where that side has none for it).
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
    """The merged hits, best first (see the module). *vector_hits* holds the cosine of every
    candidate that has a vector; *weights* are per-chunk multipliers."""
    best = max((score for _, score in keyword_hits), default=0.0)
    keyword = {cid: score / best for cid, score in keyword_hits} if best > 0 else {}
    vector = {cid: min(1.0, max(0.0, score)) for cid, score in vector_hits}
    total = vector_weight + bm25_weight
    merged = []
    for cid in keyword.keys() | vector.keys():
        k, v = keyword.get(cid, 0.0), vector.get(cid)
        if v is None:  # no vector for this chunk (or none at all): its keywords carry the weight
            score = k
        elif not keyword:  # no word in common anywhere: the vectors carry it
            score = v
        else:
            score = (vector_weight * v + bm25_weight * k) / total
        score *= (weights or {}).get(cid, 1.0)
        v = v or 0.0
        if score >= min_score:
            merged.append(Scored(cid, score, k, v))
    merged.sort(key=lambda s: (-s.score, s.chunk_id))
    return merged


def prefer_own(hits: list[Scored], text_of: Mapping[int, str], owner_of: Mapping[int, str]) -> list[Scored]:
    """*hits* without a chunk of the agent's whose text a user's own chunk repeats."""
    owned = {text_of[h.chunk_id] for h in hits if owner_of[h.chunk_id]}
    return [h for h in hits if owner_of[h.chunk_id] or text_of[h.chunk_id] not in owned]
