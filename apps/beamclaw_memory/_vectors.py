"""Vector search: cosine similarity of a query against an agent's chunk vectors.

The vectors are unit length, so cosine is one matrix-vector product; a brute-force scan
of 100,000 chunks takes milliseconds, and an agent's memory is far smaller. Built from
the chunk store (`ChunkStore.vectors`) and rebuilt after a change.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from ._embedding import Vectors


class VectorSet:
    def __init__(self, ids: Sequence[int], owners: Sequence[str], matrix: Vectors) -> None:
        self._ids = np.asarray(ids, dtype=np.int64)
        # Owners as small integers: filtering 100,000 of them is then one vector compare.
        self._codes: dict[str, int] = {}
        self._owners = np.asarray([self._codes.setdefault(o, len(self._codes)) for o in owners], dtype=np.int32)
        self._matrix = matrix

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def dimensions(self) -> int:
        return int(self._matrix.shape[1]) if len(self) else 0

    def search(self, query: Vectors, owners: Collection[str], limit: int) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the *limit* nearest chunks of *owners*; none when the
        query's length is not the vectors' (another model's)."""
        if not len(self) or query.shape[-1] != self.dimensions:
            return []
        scores: npt.NDArray[np.float32] = self._matrix @ query.reshape(-1)
        visible = np.isin(self._owners, [self._codes[o] for o in owners if o in self._codes])
        scores = np.where(visible, scores, -np.inf)
        count = min(limit, int(visible.sum()))
        if count <= 0:
            return []
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(self._ids[i]), float(scores[i])) for i in best]
