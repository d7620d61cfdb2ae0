"""The store layer on PostgreSQL only: nodes migrating together, a newer schema, a server
that restarts under writes, one that is not there, a cancelled call, text PostgreSQL refuses."""

from __future__ import annotations

import threading

import attrs
import pytest
import trio

from beamclaw_base import (
    Database,
    Schema,
    Secret,
    Step,
    StoreConfig,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    Tx,
    open_store,
)
from tests.support.postgres import DSN_VARIABLE, PostgresServer, StopMode, require_postgres
from tests.support.stores import sql

pytestmark = pytest.mark.postgres

_V1 = Step.portable("CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);")
_V2 = Step.portable("ALTER TABLE notes ADD COLUMN stars BIGINT NOT NULL DEFAULT 0;")
_SCHEMA = Schema("notes", (_V1, _V2))


def _opened(config: StoreConfig, schema: Schema = _SCHEMA) -> Database:
    return open_store(config, schema, sqlite_file=None)


def test_two_nodes_starting_at_once_both_open_the_migrated_schema(postgres_store_config: StoreConfig) -> None:
    together = threading.Barrier(2)
    opened: list[Database] = []
    failed: list[BaseException] = []

    def node() -> None:
        together.wait()
        try:
            opened.append(_opened(postgres_store_config))
        except BaseException as exc:
            failed.append(exc)

    nodes = [threading.Thread(target=node) for _ in range(2)]
    for thread in nodes:
        thread.start()
    for thread in nodes:
        thread.join()
    assert failed == []
    first, second = opened
    first.transact(lambda tx: tx.execute("INSERT INTO notes (id, body) VALUES ('a', 'from one')"))
    assert sql(second, "SELECT id, body, stars FROM notes") == [("a", "from one", 0)]
    assert sql(second, "SELECT component, version FROM schema_versions") == [("notes", 2)]
    for db in opened:
        db.close()


def test_a_database_with_a_newer_schema_is_refused_and_left_as_it_was(postgres_store_config: StoreConfig) -> None:
    db = _opened(postgres_store_config)
    sql(db, "UPDATE schema_versions SET version = 7 WHERE component = 'notes'")
    db.close()
    with pytest.raises(StoreError, match="the database has notes schema 7, this BeamClaw knows 2; upgrade this node"):
        _opened(postgres_store_config)
    older = _opened(postgres_store_config, Schema("other", (Step.portable("CREATE TABLE other (x TEXT);"),)))
    assert sql(older, "SELECT component, version FROM schema_versions ORDER BY component") == [
        ("notes", 7),
        ("other", 1),
    ]
    older.close()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_every_write_acknowledged_around_a_server_restart_is_kept(
    postgres_server: PostgresServer, postgres_store_config: StoreConfig, mode: StopMode
) -> None:
    log = Schema("log", (Step.portable("CREATE TABLE log (n BIGINT PRIMARY KEY);"),))
    db = _opened(postgres_store_config, log)
    acknowledged: list[int] = []
    stop = False

    async def writer(first: int) -> None:
        n = first
        while not stop:
            # Idempotent by its key: a retry after a commit in doubt finds its own row.
            await db.run(lambda tx, n=n: tx.execute("INSERT INTO log VALUES (?) ON CONFLICT (n) DO NOTHING", (n,)))
            acknowledged.append(n)
            n += 2

    async def until(count: int) -> None:
        while len(acknowledged) < count:
            await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer, 0)
        nursery.start_soon(writer, 1)
        await until(30)
        await trio.to_thread.run_sync(postgres_server.restart, mode)
        await until(len(acknowledged) + 30)  # the same Database goes on writing: no reopening
        stop = True
    stored = {n for (n,) in sql(db, "SELECT n FROM log")}
    db.close()
    assert set(acknowledged) <= stored


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_the_first_call_after_a_restart_gets_a_working_connection(
    postgres_server: PostgresServer, postgres_store_config: StoreConfig, mode: StopMode
) -> None:
    db = _opened(postgres_store_config)
    sql(db, "INSERT INTO notes (id, body) VALUES ('a', 'before')")
    postgres_server.restart(mode)
    # `transact` does not retry: the pool checks a connection before handing it out.
    assert sql(db, "SELECT body FROM notes") == [("before",)]
    db.close()


@pytest.mark.parametrize(
    "dsn",
    [
        "host=/nonexistent/beamclaw port=5433 user=beamclaw password=hunter2-secret dbname=beamclaw",
        "postgresql://beamclaw:hunter2-secret@127.0.0.1:1/beamclaw",
    ],
)
def test_a_server_that_is_not_there_is_unavailable_and_the_error_shows_no_password(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_postgres()
    monkeypatch.setenv(DSN_VARIABLE, dsn)
    with pytest.raises(StoreUnavailable) as raised:
        _opened(StoreConfig(backend="postgres", dsn=Secret(DSN_VARIABLE)))
    message = str(raised.value)
    assert "hunter2" not in message
    assert "port 5433" in message or "port 1" in message
    assert "/nonexistent/beamclaw" in message or "127.0.0.1" in message


def test_a_dsn_variable_that_is_not_set_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    monkeypatch.delenv("BEAMCLAW_NO_SUCH_DSN", raising=False)
    with pytest.raises(StoreError, match="BEAMCLAW_NO_SUCH_DSN"):
        _opened(StoreConfig(backend="postgres", dsn=Secret("BEAMCLAW_NO_SUCH_DSN")))


async def test_a_cancelled_call_stops_its_query_and_frees_its_connection(postgres_store_config: StoreConfig) -> None:
    db = _opened(attrs.evolve(postgres_store_config, pool_size=1))

    def sleep_long(tx: Tx) -> None:
        tx.execute("SET LOCAL statement_timeout = '30s'")  # a backstop: the test ends even if the cancel does not
        tx.execute("SELECT pg_sleep(60)")

    with trio.fail_after(20):  # reached only if the query ran on to its backstop
        with trio.move_on_after(0.3) as waited:
            await db.run(sleep_long)
    assert waited.cancelled_caught
    # The one connection is free again, and nothing of the cancelled call still runs.
    running = await db.run(
        lambda tx: tx.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND position('pg_sleep' in query) > 0"
            " AND pid <> pg_backend_pid()"
        ).fetchone(),
        write=False,
    )
    db.close()
    assert running == (0,)


def test_text_with_a_nul_character_is_refused_clearly_and_nothing_is_stored(postgres_store_config: StoreConfig) -> None:
    db = _opened(postgres_store_config)

    def insert(tx: Tx) -> None:
        tx.execute("INSERT INTO notes (id, body) VALUES (?, ?)", ("ok", "kept"))
        tx.execute("INSERT INTO notes (id, body) VALUES (?, ?)", ("bad", "a\x00b"))

    with pytest.raises(StoreRefused, match=r"NUL \(0x00\)"):
        db.transact(insert)
    assert sql(db, "SELECT id FROM notes") == []
    db.close()


def test_a_percent_sign_in_a_statement_is_refused_before_it_runs(postgres_store_config: StoreConfig) -> None:
    db = _opened(postgres_store_config)
    with pytest.raises(StoreError, match="'%' in a statement"):
        db.transact(lambda tx: tx.execute("SELECT id FROM notes WHERE body LIKE 'a%'"))
    db.close()
