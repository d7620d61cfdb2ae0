"""One store interface, two backends: what every app's durable data goes through.

An app writes its SQL once, with ``?`` placeholders and portable statements (``ON
CONFLICT``, ``RETURNING``, ``CASE`` for a scalar max), and hands a function of one
transaction (`Tx`) to its `Database`. SQLite (a file in the data dir, the default: the
README's commands need no server) and PostgreSQL (one database shared by every node of
a cluster) run the same function; where the two really differ a step branches on
`Tx.dialect`.

Three errors say what the caller may do: `StoreError`, the store cannot be used as
configured (a newer schema, a corrupt file); `StoreRefused`, this write broke a
constraint (the caller's own mistake, never retried); `StoreUnavailable`, the database
is away for now (locked, restarting, cut off), retried within the caller's deadline and
then answered as 503 at the edge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, TypeVar, final

import attrs

from ._secret import Secret

R = TypeVar("R")

Dialect = Literal["sqlite", "postgres"]


class StoreError(Exception):
    """The store cannot be used as configured (a newer schema, a corrupt file, a bad DSN);
    the message says which and what to do."""


class StoreRefused(StoreError):
    """A write broke a constraint (a clashing key, a foreign key): the caller's error."""


class StoreUnavailable(StoreError):
    """The database is away for now (busy, restarting, unreachable): worth another try."""


class Rows(Protocol):
    """What a statement answers: its rows and how many it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    """One transaction on one connection, as the work passed to `Database.transact` sees it."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows:
        """Run one statement (``?`` placeholders; no ``%`` in the text)."""

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        """Run one statement once per row of parameters."""


class Database(Protocol):
    """A store opened with its schema applied; each app store process holds one."""

    @property
    def dialect(self) -> Dialect: ...

    def transact(self, work: Callable[[Tx], R], *, write: bool = True) -> R:
        """Run *work* in one transaction in the calling thread, committed when it returns
        and rolled back when it raises. *write* takes the write lock at once (SQLite
        ``BEGIN IMMEDIATE``; PostgreSQL ``SERIALIZABLE``, the whole of *work* run again on a
        serialisation failure); read-only work sees one snapshot. Blocks: call it from a
        worker thread, or use `run`."""

    async def run(self, work: Callable[[Tx], R], *, write: bool = True, inline: bool = False) -> R:
        """`transact` from Trio: in a worker thread, retried while `StoreUnavailable` within
        the enclosing deadline. *inline* lets SQLite run short work on the loop itself (a
        WAL commit is cheaper than the hop to a thread); PostgreSQL always uses a thread."""

    def close(self) -> None:
        """Close every connection (blocks; the SQLite file is checkpointed)."""


@final
@attrs.frozen
class Step:
    """One schema version: its statements, the same for both backends or one text each.

    *repeat* runs the step at every SQLite open (``CREATE ... IF NOT EXISTS`` only): a
    table added to the first version without a version bump still reaches older files.
    """

    sqlite: str
    postgres: str
    repeat: bool = False

    @classmethod
    def portable(cls, sql: str, *, repeat: bool = False) -> Step:
        return cls(sql, sql, repeat)


@final
@attrs.frozen
class Schema:
    """An app's tables, as the versions that build them (version *n* is ``steps[n - 1]``).

    *component* names the schema in PostgreSQL's ``schema_versions`` table and in errors;
    SQLite keeps the version in the file's ``PRAGMA user_version``.
    """

    component: str
    steps: tuple[Step, ...]

    @property
    def version(self) -> int:
        return len(self.steps)


@final
@attrs.frozen
class StoreConfig:
    """Where durable data lives (``[store]``): SQLite files in the data dir, or PostgreSQL."""

    #: ``sqlite``: files in the data dir; ``postgres``: the database at *dsn*.
    backend: Literal["sqlite", "postgres"] = "sqlite"
    #: The PostgreSQL connection string, only ever from the environment.
    dsn: Secret | None = None
    #: The PostgreSQL schema (namespace) that holds BeamClaw's tables.
    namespace: str = "beamclaw"
    #: Connections per app store process to PostgreSQL.
    pool_size: int = 4

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.pool_size <= 64:
            raise ValueError(f"store.pool_size must be from 1 to 64, not {self.pool_size}")
        if self.backend == "postgres" and self.dsn is None:
            raise ValueError('store.dsn is needed for backend = "postgres": dsn = { env = "BEAMCLAW_DATABASE_URL" }')
