"""The PostgreSQL backend: one database shared by every node, through a connection pool.

psycopg has no Trio support, so its blocking API runs on worker threads: `run` waits for
one of the *pool_size* seats of its own `trio.CapacityLimiter` first (no thread ever
blocks waiting for a connection, and the threads other parts of BeamClaw share are not
used up), and a Trio cancel while a query runs cancels it on the server, so the caller's
connection comes back at once instead of when the query would have ended.

Write transactions are SERIALIZABLE, and the whole of the work is run again when
PostgreSQL reports a conflict (40001, 40P01): read-check-write code written for one
SQLite writer stays correct across nodes. Migrations run per component under an
advisory lock, so nodes starting together take turns; the versions live in
``schema_versions`` in the configured namespace (a PostgreSQL schema).
"""

from __future__ import annotations

import contextlib
import functools
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar

import attrs
import outcome
import psycopg
import psycopg.adapt
import psycopg.errors
import trio
from psycopg import pq
from psycopg.abc import Buffer
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout, TooManyRequests

from beamclaw_obs import register_secret

from ._secret import MissingSecret
from ._store import Dialect, Rows, Schema, StoreConfig, StoreError, StoreRefused, StoreUnavailable, Tx
from ._store_retry import run_retried

R = TypeVar("R")

#: Seconds to wait for the first connections when the store opens, and for a free
#: connection in a blocking `transact` (`run` uses the caller's deadline when nearer).
OPEN_TIMEOUT: Final = 10.0
GETCONN_TIMEOUT: Final = 30.0
#: How often a write transaction is run in all when PostgreSQL keeps reporting a
#: serialisation conflict or a deadlock; past it the call is `StoreUnavailable` (and
#: `run` tries again later, within the caller's deadline).
CONFLICT_ATTEMPTS: Final = 40


class _NumericLoader(psycopg.adapt.Loader):
    """``numeric`` read as SQLite answers it: an int when whole, else a float. PostgreSQL's
    ``sum()`` of BIGINTs is numeric, which psycopg would read as a `Decimal`."""

    def load(self, data: Buffer) -> int | float:
        text = bytes(data).decode()
        return int(text) if text.lstrip("-").isdigit() else float(text)


_ADAPTERS: Final = psycopg.adapt.AdaptersMap(psycopg.adapters)
_ADAPTERS.register_loader("numeric", _NumericLoader)

#: The settings of every connection. The libpq ones make a server that stops answering (a
#: cut network) an error within seconds, not a hang (TCP only; a Unix socket ignores them).
_CONNECTION_SETTINGS: Final[dict[str, Any]] = {
    "autocommit": True,
    "context": _ADAPTERS,
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10000,
    "application_name": "beamclaw",
}

_BEGIN: Final = {True: "BEGIN ISOLATION LEVEL SERIALIZABLE", False: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}

#: A namespace is written into DDL and the connection options unquoted: a plain name only.
_NAMESPACE: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")

_VERSIONS_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_versions (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    applied_at double precision NOT NULL
)
"""


@functools.lru_cache(maxsize=1024)
def _placeholders(sql: str) -> str:
    """*sql* with each ``?`` outside quotes as ``%s``; a ``%`` anywhere is refused (psycopg
    would read it as a placeholder of its own)."""
    if "%" in sql:
        raise StoreError(f"a '%' in a statement is not portable (write it as a parameter): {sql[:200]!r}")
    out, quote = [], ""
    for char in sql:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append(char)
    return "".join(out)


@attrs.define
class _PostgresTx:
    connection: psycopg.Connection[Any]
    dialect: Final[Dialect] = "postgres"

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows:
        return self.connection.execute(_placeholders(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(_placeholders(sql), rows)


def _mapped(exc: psycopg.Error, what: str) -> StoreError:
    """The store's error for a psycopg one: a constraint or bad text is the caller's, a lost
    or busy server is for now, anything else (a cancel, a bug in the SQL) is final."""
    if isinstance(exc, psycopg.IntegrityError):
        return StoreRefused(f"{what}: {exc}")
    if isinstance(exc, psycopg.DataError) and "NUL" in str(exc):
        return StoreRefused(f"{what}: text with a NUL (0x00) character cannot be stored in PostgreSQL")
    final = (PoolClosed, TooManyRequests, psycopg.errors.QueryCanceled, psycopg.errors.ProgramLimitExceeded)
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, final):
        return StoreUnavailable(f"{what}: {exc}")
    return StoreError(f"{what}: {exc}")


def _rollback(connection: psycopg.Connection[Any]) -> None:
    """End a transaction left open by a failure; a broken connection is left to the pool."""
    if connection.info.transaction_status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
        with contextlib.suppress(psycopg.Error):
            connection.execute("ROLLBACK")


def _cancel_query(connection: psycopg.Connection[Any]) -> None:
    """Ask the server to cancel what *connection* runs; a server gone meanwhile ends it anyway."""
    with contextlib.suppress(psycopg.Error):
        connection.cancel_safe(timeout=5.0)


class PostgresDatabase:
    """A `Database` on a PostgreSQL pool (*pool_size* connections at most)."""

    dialect: Final[Dialect] = "postgres"

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]], name: str, pool_size: int) -> None:
        self._pool = pool
        self._name = name
        self._limiter = trio.CapacityLimiter(pool_size)

    def transact(self, work: Callable[[Tx], R], *, write: bool = True) -> R:
        connection = self._connection(GETCONN_TIMEOUT)
        try:
            return self._transact_on(connection, work, write)
        finally:
            self._pool.putconn(connection)

    async def run(self, work: Callable[[Tx], R], *, write: bool = True, inline: bool = False) -> R:
        return await run_retried(lambda: self._run_once(work, write))

    async def _run_once(self, work: Callable[[Tx], R], write: bool) -> R:
        async with self._limiter:
            left = trio.current_effective_deadline() - trio.current_time()
            connection = await trio.to_thread.run_sync(self._connection, max(0.1, min(GETCONN_TIMEOUT, left)))
            try:
                return await self._cancellable(connection, lambda: self._transact_on(connection, work, write))
            finally:
                with trio.CancelScope(shield=True):  # a cancelled caller's connection goes back too
                    await trio.to_thread.run_sync(self._pool.putconn, connection)

    @staticmethod
    async def _cancellable(connection: psycopg.Connection[Any], call: Callable[[], R]) -> R:
        """``call()`` in a worker thread; a Trio cancel meanwhile cancels its query on the server
        (from another thread: the worker holds the connection), so the call ends soon."""
        finished = False

        async def cancel_when_cancelled() -> None:
            try:
                await trio.sleep_forever()
            finally:
                if not finished:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(_cancel_query, connection)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_when_cancelled)
            try:
                # Captured, not raised: an error raised in here would reach the caller
                # wrapped in the nursery's exception group.
                result = await outcome.acapture(trio.to_thread.run_sync, call)
            finally:
                finished = True
                nursery.cancel_scope.cancel()
        return result.unwrap()

    def _connection(self, timeout: float) -> psycopg.Connection[Any]:
        try:
            return self._pool.getconn(timeout=timeout)
        except psycopg.Error as exc:
            raise _mapped(exc, f"{self._name}: no connection") from exc

    def _transact_on(self, connection: psycopg.Connection[Any], work: Callable[[Tx], R], write: bool) -> R:
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            try:
                return self._once(connection, work, write)
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as exc:
                if attempt == CONFLICT_ATTEMPTS:
                    raise StoreUnavailable(f"{self._name}: still conflicting after {attempt} tries: {exc}") from exc
                time.sleep(random.uniform(0, min(0.1, 0.001 * 2**attempt)))
            except psycopg.Error as exc:
                raise _mapped(exc, self._name) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _once(connection: psycopg.Connection[Any], work: Callable[[Tx], R], write: bool) -> R:
        connection.execute(_BEGIN[write])
        try:
            result = work(_PostgresTx(connection))
            connection.execute("COMMIT")
        except BaseException:
            _rollback(connection)
            raise
        return result

    def close(self) -> None:
        self._pool.close()


def open_postgres(config: StoreConfig, schema: Schema) -> PostgresDatabase:
    """*schema* opened (created or migrated) in *config*'s database and namespace; blocks.

    `StoreUnavailable` when the server cannot be reached (the message says where: host
    and port, never the password), `StoreError` when it is misconfigured or its schema is
    newer than this BeamClaw's.
    """
    if config.dsn is None:
        raise StoreError('[store] backend = "postgres" needs dsn = { env = "..." } (the connection string)')
    try:
        dsn = config.dsn.get("the PostgreSQL store")
    except MissingSecret as exc:
        raise StoreError(str(exc)) from None
    if not _NAMESPACE.fullmatch(config.namespace):
        raise StoreError(f"[store] namespace must be a lowercase name (letters, digits, _), not {config.namespace!r}")
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error:
        raise StoreError(f"the PostgreSQL connection string in {config.dsn.env} cannot be read") from None
    if parts.get("password"):
        register_secret(str(parts["password"]))
    where = f"PostgreSQL at {parts.get('host') or 'the default socket'}, port {parts.get('port') or 5432}"
    name = f"the {schema.component} store ({where})"
    settings = {**_CONNECTION_SETTINGS, "options": f"-c search_path={config.namespace}"}
    try:
        with psycopg.connect(dsn, **settings) as connection:
            _migrate(connection, schema, config.namespace)
    except psycopg.Error as exc:
        raise _mapped(exc, f"cannot open {name}") from None
    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
        dsn,
        open=False,
        min_size=1,
        max_size=config.pool_size,
        check=ConnectionPool.check_connection,
        kwargs=settings,
        name=f"beamclaw-{schema.component}",
    )
    try:
        pool.open(wait=True, timeout=OPEN_TIMEOUT)
    except PoolTimeout:
        pool.close()
        raise StoreUnavailable(f"cannot open {name}: no connection within {OPEN_TIMEOUT:g} s") from None
    return PostgresDatabase(pool, name, config.pool_size)


def _migrate(connection: psycopg.Connection[Any], schema: Schema, namespace: str) -> None:
    """Bring *schema* to its version in one transaction, under a lock per component (DDL is
    transactional: a failed step leaves the old version whole); a newer version is refused."""
    lock = "SELECT pg_advisory_xact_lock(hashtext(%s))"
    with connection.transaction():
        connection.execute(lock, (f"beamclaw:{namespace}",))  # CREATE ... IF NOT EXISTS races otherwise
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {namespace}")
        connection.execute(_VERSIONS_TABLE)
    with connection.transaction():
        connection.execute(lock, (f"beamclaw:{namespace}.{schema.component}",))
        row = connection.execute(
            "SELECT version FROM schema_versions WHERE component = %s", (schema.component,)
        ).fetchone()
        version = 0 if row is None else int(row[0])
        if version > schema.version:
            raise StoreError(
                f"the database has {schema.component} schema {version}, this BeamClaw knows "
                f"{schema.version}; upgrade this node"
            )
        if version == schema.version:
            return
        for step in schema.steps[version:]:
            if step.postgres.strip():
                connection.execute(step.postgres)  # several statements are fine without parameters
        connection.execute(
            "INSERT INTO schema_versions (component, version, applied_at) VALUES (%s, %s, extract(epoch FROM now()))"
            " ON CONFLICT (component) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at",
            (schema.component, schema.version),
        )
