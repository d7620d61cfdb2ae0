"""One agent's memory: a process that owns its chunk store, keyword index and vectors.

Started on first use under the ``indexes`` DynamicSupervisor, one per agent, by name.
Everything it holds is derived from the workspace files and the conversations core
hands it, so its start repairs what a crash left: a chunk store that cannot be read is
rebuilt from the files, a keyword index that cannot be opened (or disagrees with the
store) is rebuilt from the store. Vectors are filled in behind the keyword index, a
batch at a time, by the embedder process: until they are (or while the embedder is
down) a search answers from keywords alone, and says so.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit, scrub

from ._bm25 import Bm25Index, IndexCorrupted
from ._chunker import chunk_text, split_lines, windows
from ._config import MemoryConfig
from ._embedder import EmbeddingUnavailable, embed
from ._hybrid import merge, prefer_own
from ._sources import read, scan, workspace_of
from ._store import ChunkStore, Document, StoreCorrupted
from ._vectors import VectorSet

INDEXES_SUP: Final = "beamclaw_memory.indexes"
#: Daily logs older than ``daily_log_lookback`` days weigh this much in the merge.
OLD_LOG_WEIGHT: Final = 0.7
#: How long a search waits for its query's vector before answering from keywords alone.
QUERY_EMBED_TIMEOUT: Final = 5.0
#: After the embedder failed, seconds before the index asks it again.
EMBED_RETRY_SECONDS: Final = 30.0
#: Tokens of one vector's window of a chunk (a sentence or two: see `_vectors`).
WINDOW_TOKENS: Final = 48
#: Candidates taken from each side per result asked for, before the merge.
_WIDEN: Final = 4


def index_name(agent: str) -> str:
    return f"beamclaw_memory.index:{agent}"


@attrs.frozen
class Hit:
    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    kind: str


@attrs.frozen
class SearchResult:
    hits: list[Hit]
    #: Said when the search was keyword-only or partial (why), else "".
    note: str = ""


@attrs.define
class _State:
    agent: str
    root: Path
    folder: Path
    config: MemoryConfig
    clock: Callable[[], float]
    store: ChunkStore
    keywords: Bm25Index
    vectors: VectorSet | None = None  # None: rebuild from the store before the next search
    embedding: bool = False  # an "embed" message is on its way
    embed_after: float = 0.0  # the embedder failed: not before this time
    embed_error: str = ""


def _open_store(folder: Path, root: Path) -> ChunkStore:
    try:
        return ChunkStore(folder / "chunks.db")
    except StoreCorrupted as exc:
        logger.warning("memory: {}; rebuilding it from the files of {}", exc, root)
        emit("memory_rebuilt", part="store", reason=str(exc))
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                (folder / f"chunks.db{suffix}").unlink()
        return ChunkStore(folder / "chunks.db")


def _open_keywords(folder: Path, store: ChunkStore) -> Bm25Index:
    """The keyword index, rebuilt from *store* when it cannot be opened or may lack a change."""
    path = folder / "bm25"
    try:
        index = _opened(path)
        if not store.keywords_behind() and len(index) == store.counts()["chunks"]:
            return index
        reason = "it does not hold the chunks the store does"
        index.close()
        del index
    except IndexCorrupted as exc:
        reason = str(exc)
    logger.warning("memory: rebuilding the keyword index in {} ({})", path, reason)
    emit("memory_rebuilt", part="keywords", reason=reason)
    gc.collect()  # the old index object releases its writer lock
    index = Bm25Index.rebuilt(path)
    index.add_many(store.all_for_keywords())
    store.keywords_caught_up()
    return index


def _opened(path: Path) -> Bm25Index:
    try:
        return Bm25Index(path)
    except IndexCorrupted:
        gc.collect()  # a writer of a crashed predecessor may hold the lock until collected
        return Bm25Index(path)


class AgentIndex(sv.GenServer):
    """Requests: ``("sync",)``, ``("remember", owner, doc, text)``, ``("search", query,
    owner, limit)``, ``("get", path, owner, start, count)``, ``"status"``, ``"reindex"``."""

    async def init(self, agent: str, data_dir: Path, config: MemoryConfig, clock: Callable[[], float]) -> _State:
        folder = data_dir / "memory" / agent
        root = workspace_of(data_dir, agent)

        def open_all() -> tuple[ChunkStore, Bm25Index]:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            store = _open_store(folder, root)
            return store, _open_keywords(folder, store)

        store, keywords = await trio.to_thread.run_sync(open_all)
        state = _State(agent, root, folder, config, clock, store, keywords)
        await self._sync(state)
        self._want_vectors(state)
        return state

    def terminate(self, reason: Any, state: _State) -> None:
        with contextlib.suppress(Exception):
            state.keywords.close()
        with contextlib.suppress(Exception):
            state.store.close()

    async def handle_call(self, request: Any, caller: sv.Caller, state: _State) -> Any:
        match request:
            case ("sync",):
                return sv.Reply(await self._sync(state), state)
            case ("remember", str() as owner, str() as doc, str() as text):
                await self._remember(state, owner, doc, text)
                return sv.Reply(None, state)
            case ("search", str() as query, str() | None as owner, int() as limit):
                return sv.Reply(await self._search(state, query, owner, limit), state)
            case ("get", str() as path, str() | None as owner, int() as start, int() as count):
                try:
                    return sv.Reply(await self._get(state, path, owner, start, count), state)
                except LookupError as exc:  # the caller's mistake, not this process's
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
            case "status":
                return sv.Reply(self._status(state), state)
            case "reindex":
                return sv.Reply(await self._reindex(state), state)
        raise ValueError(f"unknown memory request {request!r}")

    async def handle_cast(self, message: Any, state: _State) -> sv.NoReply:
        match message:
            case ("sync",):  # the watcher's tick
                await self._sync(state)
            case ("remember", str() as owner, str() as doc, str() as text):
                await self._remember(state, owner, doc, text)
        self._want_vectors(state)
        return sv.NoReply(state)

    async def handle_info(self, message: Any, state: _State) -> sv.NoReply:
        if message == "embed":
            state.embedding = False
            await self._embed_batch(state)
            self._want_vectors(state)
        return sv.NoReply(state)

    # --- keeping up with the files --------------------------------------------------------

    async def _sync(self, state: _State) -> int:
        """Index what changed in the workspace since the last look; the documents changed."""
        search = state.config.search
        files = await trio.to_thread.run_sync(scan, state.root, search.workspace_files)
        known = await trio.to_thread.run_sync(state.store.signatures, ("file", "daily"))
        changed = 0
        for source in files:
            if known.pop(source.path, None) == source.signature:
                continue
            text = await trio.to_thread.run_sync(read, state.root, source.path)
            if text is None:
                continue
            await self._put(state, Document(source.path, "", source.kind, source.signature, source.day), text)
            changed += 1
        for gone in known:
            await trio.to_thread.run_sync(self._drop, state, gone)
            changed += 1
        if changed:
            emit("memory_indexed", agent_id=state.agent, documents=changed)
        return changed

    async def _remember(self, state: _State, owner: str, doc: str, text: str) -> None:
        """Keep one exchange of *owner*'s conversation (searchable by *owner* alone)."""
        if not owner:  # "" owns the agent's own files, which every user searches
            logger.warning("memory: a conversation without a user ({}) is not kept", doc)
            return
        text = scrub(text)
        await self._put(state, Document(doc, owner, "conversation", _digest(text), body=text), text)

    async def _put(self, state: _State, document: Document, text: str) -> None:
        search = state.config.search
        chunks = chunk_text(scrub(text), search.chunk_size, search.chunk_overlap)

        def write() -> None:
            ids = state.store.put(document, chunks)
            rows = [(i, document.owner, c.text) for i, c in zip(ids, chunks, strict=True)]
            state.keywords.replace(document.doc, rows)
            state.store.keywords_caught_up()

        await trio.to_thread.run_sync(write)
        state.vectors = None

    @staticmethod
    def _drop(state: _State, doc: str) -> None:
        state.store.remove(doc)
        state.keywords.remove(doc)
        state.store.keywords_caught_up()
        state.vectors = None

    async def _reindex(self, state: _State) -> dict[str, Any]:
        """The files indexed from scratch, the keyword index rebuilt and every vector made
        again (conversations, which have no file, are kept as stored); the new status."""

        def wipe() -> None:
            for doc in state.store.signatures(("file", "daily")):
                state.store.remove(doc)
            state.store.reset_vectors(state.store.vector_model() or "")
            state.keywords.close()
            state.keywords = Bm25Index.rebuilt(state.folder / "bm25")
            state.keywords.add_many(state.store.all_for_keywords())
            state.store.keywords_caught_up()

        await trio.to_thread.run_sync(wipe)
        state.vectors = None
        await self._sync(state)
        self._want_vectors(state)
        return self._status(state)

    # --- vectors --------------------------------------------------------------------------

    def _want_vectors(self, state: _State) -> None:
        """Ask self for the next batch of vectors, unless one is coming or the embedder rests."""
        if state.embedding or state.config.embedding.provider == "none" or state.clock() < state.embed_after:
            return
        if state.store.unembedded(1):
            state.embedding = True
            sv.send(sv.self(), "embed")

    async def _embed_batch(self, state: _State) -> None:
        # A chunk of 400 tokens has about nine windows: a batch of chunks is a few calls' worth.
        chunks = max(1, state.config.embedding.batch_size // 8)
        batch = await trio.to_thread.run_sync(state.store.unembedded, chunks)
        if not batch:
            return
        pieces = [(cid, piece) for cid, text in batch for piece in windows(text, WINDOW_TOKENS)]
        try:
            model, vectors = await embed([piece for _, piece in pieces], timeout=None)
        except EmbeddingUnavailable as exc:
            state.embed_after = state.clock() + EMBED_RETRY_SECONDS
            state.embed_error = str(exc)
            return
        state.embed_error = ""

        def save() -> None:
            if state.store.vector_model() != model:
                state.store.reset_vectors(model)  # another model's vectors cannot be compared with these
            state.store.set_vectors([cid for cid, _ in pieces], vectors)

        await trio.to_thread.run_sync(save)
        state.vectors = None

    async def _vector_set(self, state: _State) -> VectorSet:
        if state.vectors is None:
            state.vectors = VectorSet(*await trio.to_thread.run_sync(state.store.vectors))
        return state.vectors

    # --- answering ------------------------------------------------------------------------

    async def _search(self, state: _State, query: str, owner: str | None, limit: int) -> SearchResult:
        owners = ("",) if owner is None else ("", owner)
        search = state.config.search
        try:
            keyword_hits = await trio.to_thread.run_sync(state.keywords.search, query, owners, limit * _WIDEN)
        except (ValueError, OSError, RuntimeError) as exc:
            raise IndexCorrupted(f"the keyword index failed a search: {exc}") from exc  # the restart rebuilds it
        found = [cid for cid, _ in keyword_hits]
        vector_hits, note = await self._vector_hits(state, query, owners, limit * _WIDEN, found)
        candidates = {cid for cid, _ in keyword_hits} | {cid for cid, _ in vector_hits}
        chunks = await trio.to_thread.run_sync(state.store.chunks, sorted(candidates))
        oldest_full = (
            datetime.date.fromtimestamp(state.clock()) - datetime.timedelta(days=search.daily_log_lookback)
        ).isoformat()
        weights = {c.id: OLD_LOG_WEIGHT for c in chunks.values() if c.kind == "daily" and (c.day or "") < oldest_full}
        merged = merge(
            [h for h in keyword_hits if h[0] in chunks], [h for h in vector_hits if h[0] in chunks],
            vector_weight=search.vector_weight, bm25_weight=search.bm25_weight, min_score=search.min_score,
            weights=weights,
        )  # fmt: skip
        merged = prefer_own(merged, {c: chunks[c].text for c in chunks}, {c: chunks[c].owner for c in chunks})
        hits = []
        for scored in merged[:limit]:
            chunk = chunks[scored.chunk_id]
            if chunk.owner not in owners:  # the indexes filter already; this is the last word
                continue
            score = round(scored.score, 4)
            hits.append(Hit(chunk.doc, chunk.start_line, chunk.end_line, score, chunk.text, chunk.kind))
        emit("memory_search", agent_id=state.agent, hits=len(hits), keyword_only=bool(note))
        return SearchResult(hits, note)

    async def _vector_hits(
        self, state: _State, query: str, owners: tuple[str, ...], limit: int, found: list[int]
    ) -> tuple[list[tuple[int, float]], str]:
        """The cosine of the *limit* nearest chunks and of every chunk in *found* (the keyword
        side's), and a note when the vector side could not take part (or only in part)."""
        if state.config.embedding.provider == "none":
            return [], 'keyword search only: memory.embedding.provider is "none"'
        vectors = await self._vector_set(state)
        if not len(vectors):
            why = f" (the embedder: {state.embed_error})" if state.embed_error else " yet"
            return [], f"keyword search only: no chunk has a vector{why}"
        try:
            model, query_vector = await embed([query], timeout=QUERY_EMBED_TIMEOUT)
        except EmbeddingUnavailable as exc:
            return [], f"keyword search only: {exc}"
        if model != state.store.vector_model():
            return [], "keyword search only: the vectors are being remade for a new embedding model"
        waiting = len(state.keywords) - len(vectors)
        note = f"{waiting} newest chunks are found by keyword only until embedded" if waiting > 0 else ""
        return vectors.candidates(query_vector[0], owners, limit, found), note

    async def _get(self, state: _State, path: str, owner: str | None, start: int, count: int) -> str:
        """Lines *start*..*start+count-1* of an indexed document the caller may see."""
        documents = await trio.to_thread.run_sync(state.store.document_chunks, path)
        if not documents or documents[0].owner not in (("",) if owner is None else ("", owner)):
            raise LookupError(f"{path!r} is not in this agent's memory (memory_search gives the paths there are)")
        if documents[0].kind == "conversation":
            lines = split_lines(await trio.to_thread.run_sync(state.store.body, path))
        else:
            text = await trio.to_thread.run_sync(read, state.root, path)
            if text is None:
                raise LookupError(f"{path!r} cannot be read now (it was removed or replaced by something not a file)")
            lines = split_lines(scrub(text))
        return "\n".join(lines[max(0, start - 1) : max(0, start - 1) + count])

    def _status(self, state: _State) -> dict[str, Any]:
        counts = state.store.counts()
        return {
            "agent": state.agent, **counts, "keyword_chunks": len(state.keywords),
            "vector_model": state.store.vector_model() or "", "embed_error": state.embed_error,
        }  # fmt: skip


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
