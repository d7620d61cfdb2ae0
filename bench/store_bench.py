"""One append and one read through the store layer, SQLite against PostgreSQL.

    python -m bench.store_bench [--quick]

Both stores hold a history-like table (conversation, seq, a 500-byte message). Per
backend, from Trio as the apps call it (`Database.run`):

  append    one write transaction inserting the next message of a conversation
            (SQLite inline on the loop, as core runs its short writes; PostgreSQL on a
            worker thread, SERIALIZABLE, through the pool)
  read      one read-only transaction fetching a conversation's last 20 messages

and the same two through the blocking `transact` (no thread hop, no Trio). SQLite is a
file in a temporary directory (WAL, synchronous=NORMAL); PostgreSQL the tests' throwaway
server (a Unix socket, fsync off, synchronous_commit on), so the figures show the layer's
and the protocol's cost, not a disk's. Medians and 99th percentiles in microseconds, and
PostgreSQL's ratio to SQLite; printed and written to bench/results/store.json. Measured
only, never asserted.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from beamclaw_base import Database, Schema, Secret, Step, StoreConfig, Tx, open_store
from tests.support.postgres import PostgresServer

from ._cli import quick_flag, save

_SCHEMA = Schema(
    "bench",
    (
        Step(
            sqlite="CREATE TABLE history (conversation TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL,"
            " PRIMARY KEY (conversation, seq));",
            postgres='CREATE TABLE history (conversation TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL,'
            " message TEXT NOT NULL, PRIMARY KEY (conversation, seq));",
        ),
    ),
)
_MESSAGE = '{"role": "user", "content": "' + "x" * 470 + '"}'


def _append(seq: int) -> Callable[[Tx], None]:
    def work(tx: Tx) -> None:
        tx.execute("INSERT INTO history (conversation, seq, message) VALUES (?, ?, ?)", ("c1", seq, _MESSAGE))

    return work


def _read(tx: Tx) -> list[Any]:
    return tx.execute(
        "SELECT seq, message FROM history WHERE conversation = ? ORDER BY seq DESC LIMIT 20", ("c1",)
    ).fetchall()


def _figures(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": round(statistics.median(ordered) * 1e6, 1),
        "p99_us": round(ordered[int(len(ordered) * 0.99) - 1] * 1e6, 1),
    }


async def _timed(n: int, call: Callable[[int], Awaitable[object]]) -> list[float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - started)
    return samples


def _timed_blocking(n: int, call: Callable[[int], object]) -> list[float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
    return samples


async def _measure(db: Database, n: int) -> dict[str, dict[str, float]]:
    inline = db.dialect == "sqlite"
    return {
        "append (run)": _figures(await _timed(n, lambda i: db.run(_append(i), inline=inline))),
        "read (run)": _figures(await _timed(n, lambda i: db.run(_read, write=False, inline=inline))),
        "append (transact)": _figures(_timed_blocking(n, lambda i: db.transact(_append(n + i)))),
        "read (transact)": _figures(_timed_blocking(n, lambda i: db.transact(_read, write=False))),
    }


async def _main(quick: bool) -> dict[str, Any]:
    n = 200 if quick else 2000
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = open_store(StoreConfig(), _SCHEMA, sqlite_file=Path(tmp) / "bench.db")
        try:
            on_sqlite = await _measure(sqlite, n)
        finally:
            sqlite.close()
    server = PostgresServer.create()
    try:
        server.admin("CREATE DATABASE bench")
        os.environ["BEAMCLAW_BENCH_DSN"] = server.dsn("bench")
        postgres = open_store(
            StoreConfig(backend="postgres", dsn=Secret("BEAMCLAW_BENCH_DSN")), _SCHEMA, sqlite_file=None
        )
        try:
            on_postgres = await _measure(postgres, n)
        finally:
            postgres.close()
    finally:
        server.remove()
    ratios = {k: round(on_postgres[k]["median_us"] / on_sqlite[k]["median_us"], 2) for k in on_sqlite}
    return {"iterations": n, "sqlite": on_sqlite, "postgres": on_postgres, "postgres_over_sqlite_median": ratios}


def main() -> None:
    result = trio.run(_main, quick_flag(__doc__))
    print(f"{'':20} {'SQLite median/p99 us':>22} {'PostgreSQL median/p99 us':>26} {'ratio':>7}")
    for key, ratio in result["postgres_over_sqlite_median"].items():
        s, p = result["sqlite"][key], result["postgres"][key]
        print(f"{key:20} {s['median_us']:>12} / {s['p99_us']:<8} {p['median_us']:>14} / {p['p99_us']:<9} {ratio:>7}")
    save("store", result)


if __name__ == "__main__":
    main()
