"""What the memory's processes are asked and told: the requests (each typed with its reply,
`supervision.Request`), the casts and the embedder's answers, and what a search finds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

import supervision as sv
from beamclaw_base import Database

if TYPE_CHECKING:
    from ._embedding import Vectors


# --- what a search finds --------------------------------------------------------------------


@attrs.frozen
class Hit:
    """One chunk found: where it is (a document and its lines), how well it matched, its text
    and kind (a file, a daily log, a kept conversation)."""

    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    kind: str


@attrs.frozen
class SearchResult:
    """What a search answers: its hits, best first."""

    hits: list[Hit]
    #: Said when the search was keyword-only or partial (why), else "".
    note: str = ""


# --- an agent's index -----------------------------------------------------------------------


@attrs.frozen
class Sync(sv.Request[int]):
    """Index what changed in the workspace now; the reply is how many documents changed.
    Cast by the watcher's tick, it does the same without a reply."""


@attrs.frozen
class Remember(sv.Request[None]):
    """Keep one exchange of *owner*'s conversation as the document *doc* (cast: best effort)."""

    owner: str
    doc: str
    text: str


@attrs.frozen
class Search(sv.Request[SearchResult]):
    """The chunks best matching *query* that *owner* may see (None: the files only)."""

    query: str
    owner: str | None
    limit: int


@attrs.frozen
class ReadLines(sv.Request[str]):
    """*count* lines from *start* of an indexed document (`LookupError`: not one *owner* may see)."""

    path: str
    owner: str | None
    start: int
    count: int


@attrs.frozen
class IndexStatus(sv.Request[dict[str, Any]]):
    """The index's counts (documents, chunks, embedded, keyword chunks, vector model)."""


@attrs.frozen
class Reindex(sv.Request[dict[str, Any]]):
    """Index the files from scratch and make every vector again; the reply is the new status."""


#: Every request an agent's index answers.
IndexRequest = Sync | Remember | Search | ReadLines | IndexStatus | Reindex


# --- the agents' process ----------------------------------------------------------------------


@attrs.frozen
class StartIndex(sv.Request[str]):
    """Start *agent*'s index unless it runs; the reply is its registered name."""

    agent: str


@attrs.frozen
class StartedIndexes(sv.Request[list[str]]):
    """Every agent whose index was started (running or not now), sorted."""


@attrs.frozen
class SharedDatabase(sv.Request[Database]):
    """The database every agent's kept documents share (PostgreSQL; see `_remembered_db`)."""


@attrs.frozen
class RememberFor:
    """Cast: hand *exchange* to *agent*'s index, started first if it does not run."""

    agent: str
    exchange: Remember


# --- the embedder -------------------------------------------------------------------------------


@attrs.frozen
class Embed(sv.Request[tuple[str, "Vectors"]]):
    """(model, one unit vector per text) of *texts* (`EmbeddingUnavailable`: why there are none)."""

    texts: list[str]


@attrs.frozen
class EmbedFor:
    """Cast: an index's batch of *texts*, answered by `Embedded` or `EmbeddingFailed` sent to
    *pid* with *token*, so the index goes on answering meanwhile."""

    pid: sv.Pid
    token: int
    texts: list[str]


@attrs.frozen
class Embedded:
    """The vectors of the batch *token*, made by *model*."""

    token: int
    model: str
    vectors: Vectors


@attrs.frozen
class EmbeddingFailed:
    """The batch *token* has no vectors: *why*."""

    token: int
    why: str
