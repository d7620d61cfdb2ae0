"""One agent's memory: a process that owns its chunk store, keyword index and vectors.

Started on first use under the ``indexes`` DynamicSupervisor, one per agent, by name.
Everything it holds is derived from the workspace files and the conversations core
hands it, so its start repairs what a crash left: a chunk store that cannot be read is
rebuilt from the files, a keyword index that cannot be opened (or disagrees with the
store) is rebuilt from the store. Vectors are filled in behind the keyword index, a
batch at a time, by the embedder process: until they are (or while the embedder is
down) a search answers from keywords alone, and says so.

The kept documents are the truth; what of them the index holds is caught up with them
at start, and, on PostgreSQL, whenever a node keeps one for this agent (the listener's
`Notified`, or its reconnection: see `_catch_up`).
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import hashlib
import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio
from loguru import logger

import supervision as sv
from beamclaw_base import Notified, StoreConfig, StoreRefused, notify_group
from beamclaw_obs import emit, scrub

from ._bm25 import Bm25Index, IndexCorrupted
from ._chunker import chunk_text, split_lines, windows
from ._config import MemoryConfig
from ._embedder import EMBEDDER, EmbeddingUnavailable, embed
from ._hybrid import merge, prefer_own
from ._messages import (
    Embedded,
    EmbeddingFailed,
    EmbedFor,
    Hit,
    IndexRequest,
    IndexStatus,
    ReadLines,
    Reindex,
    Remember,
    Search,
    SearchResult,
    Sync,
)
from ._remembered import CHANNEL, SQLITE_FILES, Kept, RememberedStore, check_keepable, open_remembered
from ._remembered_db import shared_database
from ._sources import read, scan, workspace_of
from ._store import ChunkStore, Document
from ._vectors import VectorSet

if TYPE_CHECKING:
    from ._embedding import Vectors


INDEXES_SUP: Final = "beamclaw_memory.indexes"
#: Daily logs older than ``daily_log_lookback`` days weigh this much in the merge.
OLD_LOG_WEIGHT: Final = 0.7
#: How long a search waits for its query's vector before answering from keywords alone.
QUERY_EMBED_TIMEOUT: Final = 5.0
#: After the embedder failed, seconds before the index asks it again.
EMBED_RETRY_SECONDS: Final = 30.0
#: Tokens of one vector's window of a chunk (a sentence or two: see `_vectors`).
WINDOW_TOKENS: Final = 48
#: Kept exchanges waiting to be indexed together, at most.
PENDING_LIMIT: Final = 64
#: Exchanges told (cast) waiting to be kept together, at most (see `_remember`).
UNKEPT_LIMIT: Final = 32
#: Seconds the stop (or a kill) waits for the store to keep the exchanges told: a store
#: that is down (PostgreSQL's pool waits 30 s for a connection) must not hold the stop.
EXIT_KEEP_SECONDS: Final = 3.0
#: Candidates taken from each side per result asked for, before the merge.
_WIDEN: Final = 4
#: Change sequence numbers read again below the highest indexed: a number is taken when
#: a write starts, so a write committed late (by any node, for any agent) can carry a
#: lower one than writes already seen. Documents unchanged since indexed are skipped.
CATCH_UP_WINDOW: Final = 256


_TOKENS: Final = itertools.count(1)


def vector_identity(model: str, dimensions: int) -> str:
    """What makes two vectors comparable: the same model, and the same length (a server
    that changes its output length under one model name starts the vectors afresh)."""
    return f"{model}#{dimensions}"


def index_name(agent: str) -> str:
    return f"beamclaw_memory.index:{agent}"


@attrs.define
class _State:
    agent: str
    root: Path
    folder: Path
    config: MemoryConfig
    clock: Callable[[], float]
    store: ChunkStore
    remembered: RememberedStore
    keywords: Bm25Index
    vectors: VectorSet | None = None  # None: rebuild from the store before the next search
    #: The batch the embedder is working on for this index (its token and chunk ids), and
    #: since when: the index goes on answering meanwhile.
    embedding: tuple[int, list[int]] | None = None
    embedding_since: float = 0.0
    embed_after: float = 0.0  # the embedder failed: not before this time
    embed_error: str = ""
    #: Exchanges told and not yet kept, as (doc, owner, text): see `_remember`.
    unkept: list[tuple[str, str, str]] = attrs.field(factory=list)
    #: Exchanges kept (in the remembered store) and not yet indexed: see `_remember`.
    pending: list[tuple[Document, str]] = attrs.field(factory=list)
    #: The highest change sequence number of the kept documents indexed (see `_catch_up`).
    seen: int = 0


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
    """Answers an `IndexRequest`; `Sync` and `Remember` come as casts too."""

    async def init(
        self,
        agent: str,
        data_dir: Path,
        config: MemoryConfig,
        clock: Callable[[], float],
        store: StoreConfig = SQLITE_FILES,
    ) -> _State:
        folder = data_dir / "memory" / agent
        root = workspace_of(data_dir, agent)
        shared = await shared_database(store)

        def open_all() -> tuple[ChunkStore, RememberedStore, Bm25Index]:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            remembered = open_remembered(store, folder, agent, shared)  # the truth first: its error stops all
            try:
                chunks = ChunkStore(folder / "chunks.db")
                return chunks, remembered, _open_keywords(folder, chunks)
            except BaseException:
                remembered.close()
                raise

        chunks, remembered, keywords = await trio.to_thread.run_sync(open_all)
        state = _State(agent, root, folder, config, clock, chunks, remembered, keywords)
        sv.pg.join(notify_group(CHANNEL))  # told of every node's puts (PostgreSQL only; none on SQLite)
        await self._sync(state)
        await self._catch_up(state)
        self._want_vectors(state)
        return state

    async def terminate(self, reason: Any, state: _State) -> None:
        closers: list[Callable[[], object]] = [state.keywords.close, state.store.close]
        if await self._keep_at_exit(state):
            closers.append(state.remembered.close)  # else a worker thread still writes to it: left open
        for close in closers:
            with contextlib.suppress(Exception):
                close()

    async def _keep_at_exit(self, state: _State) -> bool:
        """Keep the exchanges told before the stop, the crash or the kill (indexed at the
        next start), waiting at most `EXIT_KEEP_SECONDS` for the store, in a worker thread
        (a store that is down never freezes the daemon's loop) and shielded (a kill cannot
        cut it short); whether the store is free to close (no write left running)."""
        unkept, state.unkept = state.unkept, []
        if not unkept:
            return True

        def keep() -> None:
            state.remembered.put_many([(doc, owner, scrub(text)) for doc, owner, text in unkept])

        with trio.CancelScope(shield=True), trio.move_on_after(EXIT_KEEP_SECONDS):
            try:
                await trio.to_thread.run_sync(keep, abandon_on_cancel=True)
            except Exception:  # noqa: BLE001 - the store itself failed: said, and the stop goes on
                logger.opt(exception=True).error("memory: {} exchange(s) not kept", len(unkept))
            return True
        logger.error(
            "memory: {} exchange(s) not kept: the store did not answer in {} s", len(unkept), EXIT_KEEP_SECONDS
        )
        return False

    @contextlib.asynccontextmanager
    async def _kept_if_killed(self, state: _State) -> AsyncIterator[None]:
        """Keep the exchanges told when the process is killed (cancelled) in a callback,
        busy past its stop's grace: `terminate` does not run then. A kill during a worker
        thread's work is seen when the thread is done: looked for before the callback ends.
        (A stop of an idle index runs `terminate`; only a kill of an idle one, which
        nothing but an operator's `sv.kill` does, loses what was told since the last tick.)"""
        try:
            yield
            await trio.lowlevel.checkpoint_if_cancelled()
        except trio.Cancelled:
            await self._keep_at_exit(state)
            raise

    async def handle_call(self, request: IndexRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        async with self._kept_if_killed(state):
            return await self._answer(request, caller, state)

    async def _answer(self, request: IndexRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        if not isinstance(request, Remember):
            await self._index_pending(state)  # every answer sees every exchange kept before it
        match request:
            case Sync():
                return sv.Reply(await self._sync(state), state)
            case Remember(owner, doc, text):
                try:
                    await self._remember(state, owner, doc, text, now=True)
                except StoreRefused as exc:  # the text, not this process
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
                return sv.Reply(None, state)
            case Search(query, owner, limit):
                return sv.Reply(await self._search(state, query, owner, limit), state)
            case ReadLines(path, owner, start, count):
                try:
                    return sv.Reply(await self._get(state, path, owner, start, count), state)
                except LookupError as exc:  # the caller's mistake, not this process's
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
            case IndexStatus():
                return sv.Reply(self._status(state), state)
            case Reindex():
                return sv.Reply(await self._reindex(state), state)
        raise ValueError(f"unknown memory request {request!r}")

    async def handle_cast(self, message: Sync | Remember, state: _State) -> sv.NoReply:
        async with self._kept_if_killed(state):
            await self._told(message, state)
        self._want_vectors(state)
        return sv.NoReply(state)

    async def _told(self, message: Sync | Remember, state: _State) -> None:
        match message:
            case Sync():  # the watcher's tick
                await self._index_pending(state)
                await self._sync(state)
            case Remember(owner, doc, text):
                try:
                    await self._remember(state, owner, doc, text)
                except StoreRefused as exc:
                    logger.warning("memory: not kept: {}", exc)

    async def handle_info(self, message: object, state: _State) -> sv.NoReply:
        async with self._kept_if_killed(state):
            await self._informed(message, state)
        self._want_vectors(state)
        return sv.NoReply(state)

    async def _informed(self, message: object, state: _State) -> None:
        match message:
            case Embedded(token, model, vectors) if state.embedding:
                await self._embedded(state, token, model, vectors)
            case EmbeddingFailed(token, why) if state.embedding:
                if state.embedding[0] == token:
                    state.embedding = None
                    state.embed_after = state.clock() + EMBED_RETRY_SECONDS
                    state.embed_error = why
            case Notified(_, payload) if payload is None or payload == state.agent:
                await self._catch_up(state)

    # --- keeping up with the files --------------------------------------------------------

    async def _sync(self, state: _State) -> int:
        """Index what changed in the workspace since the last look; the documents changed."""
        search = state.config.search
        files, complete = await trio.to_thread.run_sync(scan, state.root, search.workspace_files)
        known = await trio.to_thread.run_sync(state.store.signatures, ("file", "daily"))
        changed = 0
        for source in files:
            was = known.pop(source.path, None)
            if was == source.signature:
                continue
            text = await trio.to_thread.run_sync(read, state.root, source.path)
            if text is None:  # not a plain file of its own now (a hard link, a FIFO...): forget it
                if was is not None:
                    await trio.to_thread.run_sync(self._drop, state, source.path)
                    changed += 1
                continue
            await self._put(state, Document(source.path, "", source.kind, source.signature, source.day), text)
            changed += 1
        for gone in known:
            if not complete and gone.startswith("memory/"):
                continue  # the folder was too full to list whole: not seen is not gone
            await trio.to_thread.run_sync(self._drop, state, gone)
            changed += 1
        if changed:
            emit("memory_indexed", agent_id=state.agent, documents=changed)
        return changed

    async def _remember(self, state: _State, owner: str, doc: str, text: str, *, now: bool = False) -> None:
        """Keep one exchange of *owner*'s conversation (searchable by *owner* alone): at once
        when *now* (the caller waits for it), else with the others told meanwhile.

        A told exchange is kept (one transaction, one sync to disk for the batch) at the
        watcher's next tick, before the next call (a search sees it), when `UNKEPT_LIMIT`
        wait, or when the process stops, crashes or is killed (`_keep_at_exit`): one sync
        to disk for each turn's exchange cost more than the rest of the memory's work on it.
        """
        if not owner:  # "" owns the agent's own files, which every user searches
            logger.warning("memory: a conversation without a user ({}) is not kept", doc)
            return
        check_keepable(doc, owner, text)
        state.unkept.append((doc, owner, text))
        if now or len(state.unkept) >= UNKEPT_LIMIT:
            await self._keep_unkept(state)

    async def _keep_unkept(self, state: _State) -> None:
        """Keep the exchanges told since the last time, and queue them to be indexed."""
        unkept, state.unkept = state.unkept, []
        if not unkept:
            return

        def keep() -> list[tuple[Document, str]]:
            scrubbed = [(doc, owner, scrub(text)) for doc, owner, text in unkept]
            state.remembered.put_many(scrubbed)  # first: this is the only copy
            return [(Document(doc, owner, "conversation", _digest(body)), body) for doc, owner, body in scrubbed]

        # Indexed with the others kept meanwhile: at the watcher's next tick, before the next
        # search or read, or when enough wait (one keyword commit each would cost every turn).
        try:
            kept = await trio.to_thread.run_sync(keep)
        except BaseException:
            state.unkept[:0] = unkept  # not kept: tried again at the next keep, or at the exit
            raise
        state.pending += kept
        if len(state.pending) >= PENDING_LIMIT:
            await self._index_pending(state)

    async def _catch_up(self, state: _State) -> None:
        """Index the kept documents changed since the last one indexed (every one at start)
        that the chunk store lacks or holds otherwise: kept through another node, or the
        chunk store was rebuilt, or a crash came between the two writes. This node's own
        puts come back here too: those still pending are left to their batch."""
        after = max(0, state.seen - CATCH_UP_WINDOW)

        def read() -> tuple[dict[str, str], list[Kept]]:
            return state.store.signatures(("conversation",)), state.remembered.changed_since(after)

        indexed, changed = await trio.to_thread.run_sync(read)
        waiting = {document.doc: document.signature for document, _ in state.pending}
        fresh = [
            (Document(doc, owner, "conversation", digest), body)
            for _, doc, owner, body in changed
            if (digest := _digest(body)) not in {indexed.get(doc), waiting.get(doc)}
        ]
        renewed = {document.doc for document, _ in fresh}
        state.pending = [item for item in state.pending if item[0].doc not in renewed]  # never older over newer
        await self._put_many(state, fresh)
        state.seen = max([state.seen, *(sequence for sequence, *_ in changed)])
        if fresh:
            logger.info("memory: {} kept document(s) of agent {} indexed from the store", len(fresh), state.agent)

    async def _put(self, state: _State, document: Document, text: str) -> None:
        await self._put_many(state, [(document, text)])

    async def _put_many(self, state: _State, items: list[tuple[Document, str]]) -> None:
        """Index the documents: one store transaction and one keyword commit for them all."""
        if not items:
            return
        search = state.config.search

        def write() -> None:  # all of it in a worker thread: a hostile file may be big
            chunked = [(doc, chunk_text(scrub(text), search.chunk_size, search.chunk_overlap)) for doc, text in items]
            ids = state.store.put_many(chunked)
            state.keywords.replace_many(
                (doc.doc, [(i, doc.owner, c.text) for i, c in zip(chunk_ids, chunks, strict=True)])
                for (doc, chunks), chunk_ids in zip(chunked, ids, strict=True)
            )
            state.store.keywords_caught_up()

        await trio.to_thread.run_sync(write)
        state.vectors = None

    async def _index_pending(self, state: _State) -> None:
        """Index the exchanges kept since the last time, together (see `_remember`), those
        told and not yet kept first."""
        await self._keep_unkept(state)
        pending, state.pending = state.pending, []
        await self._put_many(state, pending)

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
        """Hand the embedder the next batch of chunks without vectors, unless one is out, the
        embedder rests after a failure, or there is none. Its answer comes as a message
        (`_embedded`), so a slow or hanging embeddings server never stops this process from
        answering searches and syncs; an answer lost with a restarted embedder is given up
        after a while, and the batch handed over again."""
        if state.embedding is not None and state.clock() - state.embedding_since > self._patience(state):
            state.embedding = None
        if state.embedding is not None or state.config.embedding.provider == "none":
            return
        if state.clock() < state.embed_after:
            return
        batch = state.store.unembedded(max(1, state.config.embedding.batch_size // 8))
        if not batch:
            return
        # A chunk of 400 tokens has about nine windows: a batch of chunks is a few calls' worth.
        pieces = [(cid, piece) for cid, text in batch for piece in windows(text, WINDOW_TOKENS)]
        token = next(_TOKENS)
        try:
            sv.cast(EMBEDDER, EmbedFor(sv.self(), token, [piece for _, piece in pieces]))
        except sv.NoProc:
            state.embed_after = state.clock() + EMBED_RETRY_SECONDS
            state.embed_error = "the embedder is not running (restarting)"
            return
        state.embedding, state.embedding_since = (token, [cid for cid, _ in pieces]), state.clock()

    @staticmethod
    def _patience(state: _State) -> float:
        """How long an embedding batch may take before its answer is taken as lost."""
        return 4 * state.config.embedding.timeout_seconds + 30.0

    async def _embedded(self, state: _State, token: int, model: str, vectors: Vectors) -> None:
        assert state.embedding is not None
        expected, ids = state.embedding
        if token != expected:
            return  # the answer to a batch given up on
        state.embedding = None
        if len(vectors) != len(ids):
            state.embed_error = f"the embedder gave {len(vectors)} vectors for {len(ids)} texts"
            state.embed_after = state.clock() + EMBED_RETRY_SECONDS
            return
        state.embed_error = ""
        identity = vector_identity(model, vectors.shape[1])

        def save() -> None:
            if state.store.vector_model() != identity:
                state.store.reset_vectors(identity)  # another model's (or length's) vectors cannot be compared
            state.store.set_vectors(ids, vectors)

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
            model, query_vector = await embed([scrub(query)], timeout=QUERY_EMBED_TIMEOUT)
        except EmbeddingUnavailable as exc:
            return [], f"keyword search only: {exc}"
        if vector_identity(model, query_vector.shape[1]) != state.store.vector_model():
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
            lines = split_lines(await trio.to_thread.run_sync(state.remembered.body, path))
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
