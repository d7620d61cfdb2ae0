"""The offline default embedder: WordLlama, whose weights ship inside its PyPI wheel.

Chosen for a daemon on a small machine (measured on 2 cores; see the README's Memory
section): the ``wordllama`` wheel is 19 MB with its 256-dimension ``l2_supercat`` token
table, needs no torch and no network (nothing is fetched from a model hub: the files
are loaded from the package's own folder, downloads disabled), loads in about 0.15 s and
embeds over a thousand chunks a second. It averages token vectors, so it finds
paraphrases less well than a transformer (all-MiniLM-L6-v2 int8 retrieved 62% top-1
against its 52% on the same set, but at 23 chunks a second); the hybrid merge leans on
keywords for what it misses. Not installed, the memory app searches by keywords and
says so.

The model is loaded by the first `embed`, in its worker thread, not when the embedder
process starts: a daemon that has kept and searched nothing yet neither holds its table
nor pays its load before answering ``/health``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from ._embedding import EmbeddingError, normalised

if TYPE_CHECKING:
    from ._embedding import Vectors


MODEL: Final = "l2_supercat"
DIMENSIONS: Final = 256


class LocalModelMissing(EmbeddingError):
    """The local embedding model is not installed; the message says how to get it (the
    search goes on with keywords, as for any `EmbeddingError`)."""


def _load() -> Any:
    try:
        wordllama = importlib.import_module("wordllama")
    except ImportError:
        raise LocalModelMissing(
            "the local embedding model is not installed (pip install wordllama); searching by keywords only"
        ) from None
    folder = Path(str(wordllama.__file__)).parent
    try:
        return wordllama.WordLlama.load(MODEL, cache_dir=folder, dim=DIMENSIONS, disable_download=True)
    except (OSError, ValueError, FileNotFoundError) as exc:
        raise LocalModelMissing(f"the local embedding model could not be loaded from {folder}: {exc}") from None


class LocalEmbedder:
    """WordLlama in this process; `embed` loads it (the first time) and runs it in a worker thread."""

    def __init__(self) -> None:
        self._model: Any = None
        self._loading = threading.Lock()

    def load(self) -> None:
        """Load the model, unless it is already (blocking: from a worker thread); `LocalModelMissing`
        when it is not installed or cannot be loaded."""
        with self._loading:
            if self._model is None:
                self._model = _load()

    @property
    def model(self) -> str:
        return f"wordllama:{MODEL}:{DIMENSIONS}"

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        return normalised(self._model.embed(list(texts), norm=False))

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return await trio.to_thread.run_sync(self.embed_sync, texts)
