"""Embedders: text into unit vectors, locally or through an OpenAI-compatible API.

An `Embedder` has a ``model`` name (the cache and the stored vectors are keyed by it)
and ``embed(texts)``, which returns one L2-normalised float32 row per text. The remote
one speaks ``POST {base_url}/embeddings`` (OpenAI, OpenRouter, Ollama, llama.cpp) in
batches of ``batch_size``; an answer that is not one vector of one length per text is
an `EmbeddingError` saying what was wrong, never a crash with a half-filled index.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import httpx
import trio

from beamclaw_base import MissingSecret

from ._config import EmbeddingConfig

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]


#: The longest vector taken (the largest models give 3,072), and the largest answer read.
MAX_DIMENSIONS: Final = 8_192
MAX_ANSWER_BYTES: Final = 64_000_000


class EmbeddingError(Exception):
    """Vectors could not be had; the message says why (the search goes on with keywords)."""


class Embedder(Protocol):
    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> Vectors: ...


def normalised(rows: Any) -> Vectors:
    """*rows* as float32 unit vectors (a zero row stays zero)."""
    import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbeddingError(f"expected one vector per text, got an array of shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Vectors = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    return unit


class OpenAIEmbedder:
    """``/v1/embeddings`` of an OpenAI-compatible server, through *client*."""

    def __init__(self, config: EmbeddingConfig, client: httpx.AsyncClient) -> None:
        self.config = config
        self._client = client

    @property
    def model(self) -> str:
        dimensions = f"@{self.config.dimensions}" if self.config.dimensions else ""
        return f"openai:{self.config.base_url}:{self.config.model}{dimensions}"

    def _headers(self) -> dict[str, str]:
        key = self.config.api_key.get_optional() if self.config.api_key else None
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        rows: list[Any] = []
        for start in range(0, len(texts), self.config.batch_size):
            rows.extend(await self._batch(list(texts[start : start + self.config.batch_size])))
        if len({len(row) for row in rows}) > 1:
            raise EmbeddingError("the embeddings server gave vectors of different lengths in different batches")
        return normalised(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    async def _batch(self, batch: list[str]) -> list[Any]:
        body: dict[str, Any] = {"model": self.config.model, "input": batch, "encoding_format": "float"}
        if self.config.dimensions:
            body["dimensions"] = self.config.dimensions
        url = f"{self.config.base_url.rstrip('/')}/embeddings"
        try:
            # httpx's timeout is per read: a server that drips a byte at a time never hits it.
            with trio.fail_after(self.config.timeout_seconds):
                status, answer = await self._post(url, body)
        except trio.TooSlowError:
            raise EmbeddingError(
                f"the embeddings server at {url} did not answer within {self.config.timeout_seconds:g} s"
            ) from None
        except MissingSecret as exc:
            raise EmbeddingError(str(exc)) from None
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"the embeddings server at {url} could not be reached: {exc!r}") from None
        if status != 200:
            text = answer[:200].decode("utf-8", "replace")
            raise EmbeddingError(f"the embeddings server answered HTTP {status}: {text}")
        return await trio.to_thread.run_sync(_vectors_of, answer, len(batch))

    async def _post(self, url: str, body: dict[str, Any]) -> tuple[int, bytes]:
        """The status and body of the answer; past MAX_ANSWER_BYTES the rest is read and
        dropped (memory stays bounded, and the request's deadline bounds the time), then the
        answer refused. Read to its end: an unfinished httpcore body makes Trio warn."""
        request = self._client.build_request(
            "POST", url, json=body, headers=self._headers(), timeout=self.config.timeout_seconds
        )
        response = await self._client.send(request, stream=True)
        answer, size = bytearray(), 0
        try:
            async for piece in response.aiter_bytes():
                size += len(piece)
                if size <= MAX_ANSWER_BYTES:
                    answer += piece
        finally:
            await response.aclose()
        if size > MAX_ANSWER_BYTES:
            raise EmbeddingError(f"the embeddings server's answer is over {MAX_ANSWER_BYTES // 1_000_000} MB")
        return response.status_code, bytes(answer)


def _vectors_of(answer: bytes, expected: int) -> list[Any]:
    import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

    try:
        data = json.loads(answer)["data"]
        rows = [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]
    except (ValueError, KeyError, TypeError) as exc:
        raise EmbeddingError(f"the embeddings server's answer is not an embeddings list ({exc!r})") from None
    if len(rows) != expected:
        raise EmbeddingError(f"the embeddings server gave {len(rows)} vectors for {expected} texts")
    if not all(isinstance(row, list) and row and len(row) == len(rows[0]) for row in rows):
        raise EmbeddingError("the embeddings server gave vectors of different lengths, or empty ones")
    if len(rows[0]) > MAX_DIMENSIONS:
        raise EmbeddingError(f"the embeddings server gave vectors of {len(rows[0])} numbers (at most {MAX_DIMENSIONS})")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) for row in rows for x in row):
        raise EmbeddingError("the embeddings server gave a vector with a value that is not a finite number")
    return rows
