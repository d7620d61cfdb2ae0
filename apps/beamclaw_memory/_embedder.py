"""The embedder process: one per daemon, it turns texts into vectors for every agent.

It owns the embedding model (the local one is loaded by its first use, in a worker thread) and the
embedding cache. A crash here (a model that raises, a malformed remote answer that gets
past the checks) restarts only this process: the indexes wait, searches answer from
keywords meanwhile (`embed` raises `EmbeddingUnavailable`, which they report).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import httpx
import trio

import supervision as sv

from ._cache import EmbeddingCache
from ._config import EmbeddingConfig
from ._embedding import Embedder, EmbeddingError, OpenAIEmbedder
from ._local import LocalEmbedder
from ._messages import Embed, Embedded, EmbeddingFailed, EmbedFor

if TYPE_CHECKING:
    from ._embedding import Vectors


EMBEDDER: Final = "beamclaw_memory.embedder"


class EmbeddingUnavailable(Exception):
    """No vectors now: the embedder is down, restarting, not configured or failing (says which)."""


@attrs.define
class _State:
    embedder: Embedder | None
    #: Why there is no embedder (the local model is not installed), for every caller.
    missing: str
    cache: EmbeddingCache
    client: httpx.AsyncClient | None
    #: The length of the vectors each model gave last (cached ones of another are stale).
    lengths: dict[str, int] = attrs.field(factory=dict)


def _make(config: EmbeddingConfig) -> tuple[Embedder | None, str, httpx.AsyncClient | None]:
    if config.provider == "openai":
        client = httpx.AsyncClient(follow_redirects=False)
        return OpenAIEmbedder(config, client), "", client
    if config.provider == "local":
        return LocalEmbedder(), "", None  # a missing model is said by its first embed (LocalModelMissing)
    return None, 'memory.embedding.provider is "none"', None


class EmbedderServer(sv.GenServer):
    async def init(self, config: EmbeddingConfig, cache_path: Path | None) -> _State:
        embedder, missing, client = _make(config)
        cache = await trio.to_thread.run_sync(EmbeddingCache, cache_path, config.cache_ttl_seconds)
        return _State(embedder, missing, cache, client)

    async def terminate(self, reason: Any, state: _State) -> None:
        state.cache.close()
        if state.client is not None:
            await state.client.aclose()

    async def handle_call(self, request: Embed, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        match request:
            case Embed(texts):
                answer = await self._answer(state, texts)
                if isinstance(answer, str):
                    sv.reply_error(caller, EmbeddingUnavailable(answer))
                    return sv.NoReply(state)
                return sv.Reply(answer, state)
        raise ValueError(f"unknown embedder request {request!r}")

    async def handle_cast(self, message: EmbedFor, state: _State) -> sv.NoReply:
        match message:
            case EmbedFor(pid, token, texts):
                answer = await self._answer(state, texts)
                sv.send(pid, EmbeddingFailed(token, answer) if isinstance(answer, str) else Embedded(token, *answer))
        return sv.NoReply(state)

    @classmethod
    async def _answer(cls, state: _State, texts: list[str]) -> tuple[str, Vectors] | str:
        """(model, vectors) of *texts*, or why there are none."""
        if state.embedder is None:
            return state.missing
        try:
            return state.embedder.model, await cls._embed(state, state.embedder, texts)
        except EmbeddingError as exc:
            return str(exc)

    @classmethod
    async def _embed(cls, state: _State, embedder: Embedder, texts: list[str]) -> Vectors:
        """Vectors of *texts*: from the cache where fresh, the rest from the model (and cached).

        A model whose output changed length (a server swapped the model behind the name)
        makes the cached vectors of the old length misses, so they are asked for again.
        """
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        model = embedder.model
        cached = await trio.to_thread.run_sync(state.cache.get, model, texts)
        rows: dict[int, Vectors] = {i: v for i, v in cached.items() if len(v) == state.lengths.get(model, len(v))}
        wanted = [i for i in range(len(texts)) if i not in rows]
        if wanted:
            fresh = await cls._fresh(state, embedder, [texts[i] for i in wanted])
            rows.update(zip(wanted, fresh, strict=True))
            stale = [i for i, row in rows.items() if len(row) != fresh.shape[1]]
            if stale:
                rows.update(zip(stale, await cls._fresh(state, embedder, [texts[i] for i in stale]), strict=True))
        return np.stack([rows[i] for i in range(len(texts))]).astype(np.float32)

    @staticmethod
    async def _fresh(state: _State, embedder: Embedder, texts: list[str]) -> Vectors:
        fresh = await embedder.embed(texts)
        if len(fresh) != len(texts):
            raise EmbeddingError(f"the embedder gave {len(fresh)} vectors for {len(texts)} texts")
        state.lengths[embedder.model] = fresh.shape[1]
        await trio.to_thread.run_sync(state.cache.put, embedder.model, texts, fresh)
        return fresh


async def embed(texts: Sequence[str], *, timeout: float | None) -> tuple[str, Vectors]:
    """(model, one unit vector per text) from the embedder process; `EmbeddingUnavailable` otherwise."""
    try:
        return await sv.call(EMBEDDER, Embed(list(texts)), timeout=timeout)
    except (sv.NoProc, sv.CallTimeout, sv.ProcessExited) as exc:
        raise EmbeddingUnavailable(f"the embedder is not answering ({type(exc).__name__}); restarting") from None
