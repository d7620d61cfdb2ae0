"""``[store]``: read and checked with the rest of the configuration, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamclaw._apps import store_config
from beamclaw._config import ConfigError, load_config
from beamclaw_base import Secret, StoreConfig


def _load(tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def test_without_a_store_table_the_data_stays_in_sqlite_files(tmp_path: Path) -> None:
    assert store_config(_load(tmp_path, "[core]\n")) == StoreConfig(backend="sqlite")


def test_postgres_is_named_with_its_dsn_from_the_environment(tmp_path: Path) -> None:
    config = _load(tmp_path, '[store]\nbackend = "postgres"\ndsn = { env = "BEAMCLAW_DATABASE_URL" }\npool_size = 8\n')
    assert store_config(config) == StoreConfig(backend="postgres", dsn=Secret("BEAMCLAW_DATABASE_URL"), pool_size=8)


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('backend = "mysql"', "store.backend"),
        ('dsn = "postgresql://beamclaw:hunter2hunter2@db/beamclaw"', "store.dsn"),
        ("pool_size = 0", "store.pool_size"),
        ("pool_sise = 4", "pool_sise"),
        ('backend = "postgres"', "store.dsn is needed"),
    ],
)
def test_a_bad_store_table_stops_the_load_naming_the_key(tmp_path: Path, table: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named) as caught:
        _load(tmp_path, f"[store]\n{table}\n")
    assert "hunter2" not in str(caught.value)
