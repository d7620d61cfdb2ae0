"""Vector search: cosine similarity of a query against an agent's chunk vectors.

A chunk has one vector per window of a few lines (see `_index`), and scores the best of
them: an average over a whole 400-token chunk drowns the one line that answers (the
local model averages word vectors), a window of a sentence or two does not. Vectors are
unit length, so cosines are one matrix-vector product, and a chunk's score is the
maximum over its rows (``np.maximum.reduceat``). A brute-force scan of 100,000 chunks
takes milliseconds (bench/memory_bench.py), and an agent's memory is far smaller.
Built from the chunk store (`ChunkStore.vectors`) and rebuilt after a change.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ._embedding import Vectors


class VectorSet:
    """*ids* and *owners* name the chunk of each row of *matrix* (a chunk's rows together)."""

    def __init__(self, ids: Sequence[int], owners: Sequence[str], matrix: Vectors) -> None:
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        chunk_of = np.asarray(ids, dtype=np.int64)
        order = np.argsort(chunk_of, kind="stable")
        chunk_of = chunk_of[order]
        self._matrix = matrix[order] if len(order) else matrix
        #: The first row of each chunk, and the chunks in that order.
        self._starts = np.flatnonzero(np.r_[True, chunk_of[1:] != chunk_of[:-1]]) if len(chunk_of) else chunk_of
        self._chunks = chunk_of[self._starts]
        # Owners as small integers: filtering 100,000 of them is then one vector compare.
        self._codes: dict[str, int] = {}
        owner_rows = [owners[i] for i in order[self._starts]] if len(order) else []
        self._owners = np.asarray([self._codes.setdefault(o, len(self._codes)) for o in owner_rows], dtype=np.int32)
        self._position = {int(chunk_id): n for n, chunk_id in enumerate(self._chunks)}

    def __len__(self) -> int:
        """The chunks that have vectors."""
        return len(self._chunks)

    @property
    def dimensions(self) -> int:
        return int(self._matrix.shape[1]) if len(self) else 0

    def _chunk_scores(self, query: Vectors) -> npt.NDArray[np.float32] | None:
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        if not len(self) or query.shape[-1] != self.dimensions:
            return None  # nothing, or another model's vectors
        rows: npt.NDArray[np.float32] = self._matrix @ query.reshape(-1)
        best: npt.NDArray[np.float32] = np.maximum.reduceat(rows, self._starts)
        return best

    def search(self, query: Vectors, owners: Collection[str], limit: int) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the *limit* nearest chunks of *owners*; none when the
        query's length is not the vectors' (another model's)."""
        return self.candidates(query, owners, limit, ())

    def candidates(
        self, query: Vectors, owners: Collection[str], limit: int, found: Collection[int]
    ) -> list[tuple[int, float]]:
        """The vector side of a hybrid search: the *limit* nearest chunks of *owners*, and the
        cosine of each chunk in *found* (the keyword side's) that has vectors."""
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        scores = self._chunk_scores(query)
        if scores is None:
            return []
        visible = np.isin(self._owners, [self._codes[o] for o in owners if o in self._codes])
        nearest: list[tuple[int, float]] = []
        count = min(limit, int(visible.sum()))
        if count > 0:
            masked = np.where(visible, scores, -np.inf)
            best = np.argpartition(-masked, count - 1)[:count]
            best = best[np.argsort(-masked[best], kind="stable")]
            nearest = [(int(self._chunks[i]), float(scores[i])) for i in best]
        taken = {chunk_id for chunk_id, _ in nearest}
        extra = [
            (chunk_id, float(scores[self._position[chunk_id]]))
            for chunk_id in found
            if chunk_id not in taken and chunk_id in self._position
        ]
        return nearest + extra
