"""The requests the session store answers, each typed with its reply (`supervision.Request`)
and carrying the SQL it runs in one transaction (`beamclaw_base.Tx`).

The SQL is written once for SQLite and PostgreSQL. A request's work may run more than
once (PostgreSQL runs it again after a serialisation failure), so it only reads and
writes rows: whatever else follows from it happens in the caller, after the reply."""

from __future__ import annotations

import abc
import json
import time
from typing import TYPE_CHECKING, ClassVar, TypeVar

import attrs

import beamclaw_cluster as cluster
import supervision as sv
from beamclaw_base import Tx

from . import _pairing as pairing
from ._messages import Message

if TYPE_CHECKING:  # the session module calls the store: its info is only a type here
    from ._session import SessionInfo

R = TypeVar("R")


class StoreRequest(sv.Request[R], abc.ABC):
    """What the store is asked: `run` is the work of one transaction."""

    __slots__ = ()

    #: Small commits run in the store process itself: in WAL mode with synchronous=NORMAL a
    #: commit is one write() to the log, tens of microseconds, less than a hop to a worker
    #: thread and back (measured 38 us against 174 us). Everything that can take long
    #: (loading or replacing a history, deleting, listing) runs in a worker thread, so a
    #: slow disk never stalls the loop for long.
    inline: ClassVar[bool] = False
    #: Whether the work writes: a write takes the write lock at its start; a read sees one snapshot.
    write: ClassVar[bool] = True

    @abc.abstractmethod
    def run(self, tx: Tx) -> R:
        """Do the work in *tx* (in the store process, or in a worker thread)."""


@attrs.frozen
class StoredSession:
    id: str
    user_id: str
    agent_id: str
    channel: str
    updated_at: float
    allowlist: frozenset[str]
    history: list[Message]


@attrs.frozen
class SessionRow:
    """A stored conversation as `beamclaw sessions` lists it."""

    id: str
    user_id: str
    agent_id: str
    channel: str
    created_at: float
    updated_at: float
    messages: int


_ROW_COLUMNS = (
    "s.id, s.user_id, s.agent_id, s.channel, s.created_at, s.updated_at, "
    "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)"
)


def _upsert(tx: Tx, info: SessionInfo, allowlist: frozenset[str]) -> None:
    # Every write into a conversation goes through here: in a cluster, first the fence
    # (`beamclaw_cluster.LeaseLost` when another node took the conversation over).
    if info.lease is not None:
        cluster.fence(tx, info.lease)
    now = time.time()
    tx.execute(
        "INSERT INTO sessions (id, user_id, agent_id, channel, created_at, updated_at, allowlist) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, "
        "allowlist = excluded.allowlist",
        (info.id, info.user_id, info.agent_id, info.channel, now, now, json.dumps(sorted(allowlist))),
    )


def _insert_messages(tx: Tx, session_id: str, start: int, messages: list[Message]) -> None:
    tx.executemany(
        "INSERT INTO messages (session_id, seq, message) VALUES (?, ?, ?)",
        [(session_id, start + i, m.to_record()) for i, m in enumerate(messages)],
    )


@attrs.frozen
class LoadSession(StoreRequest[StoredSession | None]):
    """The stored conversation *session_id*, history included; None if there is none."""

    write: ClassVar[bool] = False

    session_id: str

    def run(self, tx: Tx) -> StoredSession | None:
        row = tx.execute(
            "SELECT id, user_id, agent_id, channel, updated_at, allowlist FROM sessions WHERE id = ?",
            (self.session_id,),
        ).fetchone()
        if row is None:
            return None
        rows = tx.execute(
            "SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (self.session_id,)
        ).fetchall()
        history = [Message.from_record(text) for (text,) in rows]
        sid, user_id, agent_id, channel, updated_at, allowlist = row
        return StoredSession(sid, user_id, agent_id, channel, updated_at, frozenset(json.loads(allowlist)), history)


@attrs.frozen
class TouchSession(StoreRequest[None]):
    """Store the conversation's metadata (listed by `beamclaw sessions` from now on)."""

    info: SessionInfo
    allowlist: frozenset[str]

    def run(self, tx: Tx) -> None:
        _upsert(tx, self.info, self.allowlist)


@attrs.frozen
class AppendMessages(StoreRequest[None]):
    """Add *messages* to the history from position *start* (a clash is a `StoreError`),
    and *tokens*, the model call that wrote them, to its agent's day in the same
    transaction: one store call where a reply took two."""

    inline: ClassVar[bool] = True

    info: SessionInfo
    allowlist: frozenset[str]
    start: int
    messages: list[Message]
    tokens: RecordTokens | None = None

    def run(self, tx: Tx) -> None:
        _upsert(tx, self.info, self.allowlist)
        _insert_messages(tx, self.info.id, self.start, self.messages)
        if self.tokens is not None:
            self.tokens.run(tx)


@attrs.frozen
class ReplaceHistory(StoreRequest[None]):
    """The conversation's whole history becomes *messages* (a compaction, a reset, a repair)."""

    info: SessionInfo
    allowlist: frozenset[str]
    messages: list[Message]

    def run(self, tx: Tx) -> None:
        _upsert(tx, self.info, self.allowlist)
        tx.execute("DELETE FROM messages WHERE session_id = ?", (self.info.id,))
        _insert_messages(tx, self.info.id, 0, self.messages)
        # The new history is flushed again from its start: a summary may repeat what was
        # kept, never lose what was not.
        tx.execute(
            "UPDATE sessions SET flushed_seq = 0, history_epoch = history_epoch + 1 WHERE id = ?", (self.info.id,)
        )


@attrs.frozen
class ListSessions(StoreRequest[tuple[list[SessionRow], int]]):
    """The *limit* conversations used last, newest first, and how many there are in all;
    with *users*, only the conversations of those users (each an exact id, or a prefix
    ending in ``*``)."""

    write: ClassVar[bool] = False

    limit: int
    users: tuple[str, ...] | None = None

    def run(self, tx: Tx) -> tuple[list[SessionRow], int]:
        where, args = self._where()
        rows = tx.execute(
            f"SELECT {_ROW_COLUMNS} FROM sessions s{where} ORDER BY s.updated_at DESC LIMIT ?", (*args, self.limit)
        ).fetchall()
        (total,) = tx.execute(f"SELECT COUNT(*) FROM sessions s{where}", args).fetchone()
        return [SessionRow(*row) for row in rows], int(total)

    def _where(self) -> tuple[str, tuple[str | int, ...]]:
        if self.users is None:
            return "", ()
        if not self.users:
            return " WHERE 1 = 0", ()
        tests: list[str] = []
        args: list[str | int] = []
        for pattern in self.users:
            if pattern.endswith("*"):  # substr, not LIKE: no wildcard in an id to escape
                tests.append("substr(s.user_id, 1, ?) = ?")
                args += [len(pattern) - 1, pattern[:-1]]
            else:
                tests.append("s.user_id = ?")
                args.append(pattern)
        return f" WHERE {' OR '.join(tests)}", tuple(args)


@attrs.frozen
class FindSessions(StoreRequest[list[SessionRow]]):
    """The stored conversations whose id starts with *prefix* (two at most: enough to say it is ambiguous)."""

    write: ClassVar[bool] = False

    prefix: str

    def run(self, tx: Tx) -> list[SessionRow]:
        rows = tx.execute(
            f"SELECT {_ROW_COLUMNS} FROM sessions s WHERE s.id >= ? AND s.id < ? ORDER BY s.id LIMIT 2",
            (self.prefix, self.prefix + "\U0010ffff"),
        ).fetchall()
        return [SessionRow(*row) for row in rows]


#: The messages of a conversation not through the memory flush of maintenance yet.
_UNFLUSHED = "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) - s.flushed_seq"


@attrs.frozen
class ExpiredSessions(StoreRequest[list[str]]):
    """The ids of the conversations not used since *cutoff*; with *flushed_only*, only those
    whose every message has been through the memory flush (see `_maintenance`)."""

    write: ClassVar[bool] = False

    cutoff: float
    flushed_only: bool = False
    #: In a cluster, this node: conversations another live node owns are left to it.
    node: str | None = None

    def run(self, tx: Tx) -> list[str]:
        flushed = f" AND {_UNFLUSHED} <= 0" if self.flushed_only else ""
        params: tuple[object, ...] = (self.cutoff,)
        if self.node is not None:
            flushed += f" AND NOT {cluster.owned_elsewhere('s.id')}"
            params += (self.node,)
        rows = tx.execute(f"SELECT s.id FROM sessions s WHERE s.updated_at < ?{flushed}", params)
        return [r[0] for r in rows.fetchall()]


@attrs.frozen
class FlushCandidates(StoreRequest[list[str]]):
    """The conversations not used since *updated_before* with at least *min_unflushed*
    messages not through the memory flush yet, the least recently used first."""

    write: ClassVar[bool] = False

    min_unflushed: int
    updated_before: float
    #: In a cluster, this node: conversations another live node owns are left to it.
    node: str | None = None

    def run(self, tx: Tx) -> list[str]:
        elsewhere = "" if self.node is None else f" AND NOT {cluster.owned_elsewhere('s.id')}"
        params = (self.updated_before, self.min_unflushed) + (() if self.node is None else (self.node,))
        rows = tx.execute(
            f"SELECT s.id FROM sessions s WHERE s.updated_at < ? AND {_UNFLUSHED} >= ?{elsewhere} "
            "ORDER BY s.updated_at",
            params,
        )
        return [r[0] for r in rows.fetchall()]


@attrs.frozen
class Unflushed:
    """The messages of a conversation not through the memory flush yet: those before *end*
    of the history of *epoch*."""

    session_id: str
    user_id: str
    agent_id: str
    channel: str
    epoch: int
    end: int
    messages: list[Message]


@attrs.frozen
class LoadUnflushed(StoreRequest[Unflushed | None]):
    """What *session_id* has not flushed yet; None if there is no such conversation."""

    write: ClassVar[bool] = False

    session_id: str

    def run(self, tx: Tx) -> Unflushed | None:
        # One read transaction, one snapshot: the position and the messages agree.
        row = tx.execute(
            "SELECT user_id, agent_id, channel, flushed_seq, history_epoch FROM sessions WHERE id = ?",
            (self.session_id,),
        ).fetchone()
        if row is None:
            return None
        user_id, agent_id, channel, start, epoch = row
        rows = tx.execute(
            "SELECT message FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq", (self.session_id, start)
        ).fetchall()
        messages = [Message.from_record(text) for (text,) in rows]
        return Unflushed(self.session_id, user_id, agent_id, channel, epoch, start + len(rows), messages)


@attrs.frozen
class MarkFlushed(StoreRequest[None]):
    """The messages before *end* of the history of *epoch* have been through the memory flush
    (nothing changes if the history was replaced meanwhile: it is flushed again)."""

    session_id: str
    epoch: int
    end: int

    def run(self, tx: Tx) -> None:
        tx.execute(
            "UPDATE sessions SET flushed_seq = ? WHERE id = ? AND history_epoch = ? AND flushed_seq < ?",
            (self.end, self.session_id, self.epoch, self.end),
        )


@attrs.frozen
class DeleteSession(StoreRequest[bool]):
    """Delete the conversation and its history; whether there was one."""

    session_id: str

    def run(self, tx: Tx) -> bool:
        tx.execute("DELETE FROM messages WHERE session_id = ?", (self.session_id,))
        return tx.execute("DELETE FROM sessions WHERE id = ?", (self.session_id,)).rowcount > 0


@attrs.frozen
class ReserveTokens(StoreRequest[int | None]):
    """Add *tokens* to the agent's use of *day* unless that passes *limit*; the new total or None."""

    inline: ClassVar[bool] = True

    agent_id: str
    day: str
    tokens: int
    limit: int

    def run(self, tx: Tx) -> int | None:
        # One statement, the check and the add together: a row is written (and returned)
        # only while the total stays within the limit, so two reservers on two nodes can
        # never both pass it. The SELECT's WHERE also lets SQLite parse the upsert.
        rows = tx.execute(
            "INSERT INTO token_usage (agent_id, day, tokens) SELECT ?, ?, ? WHERE ? <= ? "
            "ON CONFLICT (agent_id, day) DO UPDATE SET tokens = token_usage.tokens + excluded.tokens "
            "WHERE token_usage.tokens + excluded.tokens <= ? RETURNING tokens",
            (self.agent_id, self.day, self.tokens, self.tokens, self.limit, self.limit),
        ).fetchall()  # all of them: a statement left unfinished would keep SQLite from committing
        return int(rows[0][0]) if rows else None


@attrs.frozen
class AdjustTokens(StoreRequest[None]):
    """Add *delta* (negative to give back) to the agent's use of *day*, never below 0."""

    inline: ClassVar[bool] = True

    agent_id: str
    day: str
    delta: int

    def run(self, tx: Tx) -> None:
        tx.execute(
            "INSERT INTO token_usage (agent_id, day, tokens) VALUES (?, ?, CASE WHEN ? > 0 THEN ? ELSE 0 END) "
            "ON CONFLICT (agent_id, day) DO UPDATE SET tokens = "
            "CASE WHEN token_usage.tokens + ? > 0 THEN token_usage.tokens + ? ELSE 0 END",
            (self.agent_id, self.day, self.delta, self.delta, self.delta, self.delta),
        )


@attrs.frozen
class TokensUsed(StoreRequest[int]):
    """The tokens the agent used on *day*."""

    inline: ClassVar[bool] = True
    write: ClassVar[bool] = False

    agent_id: str
    day: str

    def run(self, tx: Tx) -> int:
        row = tx.execute(
            "SELECT tokens FROM token_usage WHERE agent_id = ? AND day = ?", (self.agent_id, self.day)
        ).fetchone()
        return int(row[0]) if row else 0


@attrs.frozen
class RecordTokens(StoreRequest[None]):
    """Add a model call's tokens to the agent's use of *day* (`_usage`)."""

    inline: ClassVar[bool] = True

    agent_id: str
    day: str
    prompt_tokens: int
    completion_tokens: int

    def run(self, tx: Tx) -> None:
        tx.execute(
            "INSERT INTO token_days (agent_id, day, prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (agent_id, day) DO UPDATE SET prompt_tokens = token_days.prompt_tokens + "
            "excluded.prompt_tokens, completion_tokens = token_days.completion_tokens + excluded.completion_tokens",
            (self.agent_id, self.day, self.prompt_tokens, self.completion_tokens),
        )


@attrs.frozen
class TokenDays(StoreRequest[list[tuple[str, str, int, int]]]):
    """Each agent's tokens of each day from *since* on: (day, agent, prompt, completion), newest day first."""

    write: ClassVar[bool] = False

    since: str

    def run(self, tx: Tx) -> list[tuple[str, str, int, int]]:
        rows = tx.execute(
            "SELECT day, agent_id, prompt_tokens, completion_tokens FROM token_days WHERE day >= ? "
            "ORDER BY day DESC, agent_id",
            (self.since,),
        ).fetchall()
        return [(str(day), str(agent), int(prompt), int(completion)) for day, agent, prompt, completion in rows]


@attrs.frozen
class PairingCode(StoreRequest[str]):
    """A pairing code for *user_id* on *channel* (see `_pairing.request_code`)."""

    channel: str
    user_id: str
    display: str

    def run(self, tx: Tx) -> str:
        return pairing.request_code(tx, self.channel, self.user_id, self.display)


@attrs.frozen
class PairedAgent(StoreRequest[str | None]):
    """The agent *user_id* was paired with on *channel*, or None."""

    inline: ClassVar[bool] = True
    write: ClassVar[bool] = False

    channel: str
    user_id: str

    def run(self, tx: Tx) -> str | None:
        return pairing.allowed_agent(tx, self.channel, self.user_id)


@attrs.frozen
class Speaker(StoreRequest[str]):
    """Whom *user_id* on *channel* speaks as (see `_pairing.speaker`)."""

    inline: ClassVar[bool] = True
    write: ClassVar[bool] = False

    channel: str
    user_id: str
    listed: bool
    canonical: str | None

    def run(self, tx: Tx) -> str:
        return pairing.speaker(tx, self.channel, self.user_id, listed=self.listed, canonical=self.canonical)
