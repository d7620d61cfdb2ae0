"""Opening an app's store on the configured backend."""

from __future__ import annotations

from pathlib import Path

from ._store import Database, Schema, StoreConfig
from ._store_sqlite import Synchronous, open_sqlite


def open_store(
    config: StoreConfig,
    schema: Schema,
    *,
    sqlite_file: Path | None,
    synchronous: Synchronous = "NORMAL",
    checkpoint_every: int | None = None,
) -> Database:
    """*schema* opened (created or migrated) on *config*'s backend; blocks, `StoreError` if unusable.

    SQLite keeps it in *sqlite_file* (None: in memory) with the given durability and
    checkpoint policy; PostgreSQL in the configured database, shared by every node.
    """
    if config.backend == "postgres":
        from ._store_postgres import open_postgres  # noqa: PLC0415 - psycopg is loaded only where it is used

        return open_postgres(config, schema)
    return open_sqlite(sqlite_file, schema, synchronous=synchronous, checkpoint_every=checkpoint_every)
