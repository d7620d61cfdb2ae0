"""The stores a store test runs on: every backend this machine can run.

A test that takes the `store_config` fixture runs once per backend: SQLite (files in the
test's data dir) and PostgreSQL (a database of the test's own on the session's throwaway
server, `tests.support.postgres`; marked ``postgres``, so ``-m "not postgres"`` leaves
those runs out locally). Tests that read or change stored rows directly do it through
`sql`, never through a backend's own driver, so the same test holds on both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from beamclaw_base import Database, StoreConfig

BACKENDS = ("sqlite", pytest.param("postgres", marks=pytest.mark.postgres))


@pytest.fixture(params=BACKENDS)
def store_config(request: pytest.FixtureRequest) -> Iterator[StoreConfig]:
    """A `StoreConfig` for each backend."""
    if request.param == "postgres":
        yield request.getfixturevalue("postgres_store_config")
    else:
        yield StoreConfig(backend=request.param)


def sql(db: Database, statement: str, params: Sequence[object] = ()) -> list[Any]:
    """The rows of one statement (``?`` placeholders), run in its own transaction."""
    return db.transact(lambda tx: _rows(tx.execute(statement, params)))


def _rows(result: Any) -> list[Any]:
    # A statement that answers no rows (an UPDATE) has no description on either driver
    # (psycopg's fetchall would raise).
    return list(result.fetchall()) if result.description is not None else []
