"""`beamclaw doctor` checks the store and the cluster: the DSN's variable, the server
answering (named without the password), schema versions no newer than this BeamClaw's,
``synchronous_commit``, the cluster's secret and the advertised URL."""

from __future__ import annotations

from pathlib import Path

import pytest

import beamclaw_core as core
from beamclaw_base import StoreConfig, open_store
from tests.support.postgres import DSN_VARIABLE
from tests.support.stores import sql

from .daemon import cli, free_port

_PASSWORD = "pw-of-the-test-4f1c9e"


def _config(tmp_path: Path, extra: str = "") -> Path:
    """A configuration on PostgreSQL whose other checks stay on this machine."""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n'
        '[core]\ndefault_provider = "local"\n[core.providers.local]\nbase_url = "http://127.0.0.1:9"\nmodel = "x"\n'
        f'[memory.embedding]\nprovider = "none"\n[gateway.http]\nport = {free_port()}\n{extra}',
        encoding="utf-8",
    )
    return path


async def _doctor(tmp_path: Path, config: Path, env: dict[str, str]) -> str:
    done = await cli(tmp_path / "home", "doctor", "--config", str(config), env=env)
    assert done.returncode == 1  # the model server at port 9 does not answer, at least
    return done.stdout.decode() + done.stderr.decode()


async def test_a_dsn_pointing_at_nothing_says_so_without_the_password_and_the_cluster_is_checked(
    tmp_path: Path,
) -> None:
    port, advertised = free_port(), free_port()
    config = _config(
        tmp_path,
        f'[cluster]\nenabled = true\nadvertise_url = "http://127.0.0.1:{advertised}"\n'
        'secret = { env = "BEAMCLAW_CLUSTER_SECRET" }\n',
    )
    dsn = f"postgresql://beamclaw:{_PASSWORD}@127.0.0.1:{port}/beamclaw"
    out = await _doctor(tmp_path, config, {DSN_VARIABLE: dsn, "BEAMCLAW_CLUSTER_SECRET": ""})
    assert f"✗ PostgreSQL at 127.0.0.1:{port} (database beamclaw, user beamclaw) does not answer: " in out
    assert f"fix: start the server, or fix the DSN in {DSN_VARIABLE}" in out
    assert _PASSWORD not in out
    assert "✗ cluster: the secret's variable BEAMCLAW_CLUSTER_SECRET is not set" in out
    assert f"! cluster: this node's advertise_url http://127.0.0.1:{advertised} does not answer from here" in out

    out = await _doctor(tmp_path, config, {DSN_VARIABLE: "", "BEAMCLAW_CLUSTER_SECRET": "s" * 40})
    assert f'✗ [store] backend = "postgres", but {DSN_VARIABLE} (its DSN) is not set' in out
    assert "BEAMCLAW_CLUSTER_SECRET is not set" not in out

    out = await _doctor(tmp_path, config, {DSN_VARIABLE: f"host=db password={_PASSWORD} user"})  # malformed
    assert f"✗ {DSN_VARIABLE} cannot be read as a PostgreSQL DSN" in out and _PASSWORD not in out


@pytest.mark.postgres
async def test_a_newer_schema_and_synchronous_commit_off_are_named(
    tmp_path: Path, postgres_store_config: StoreConfig, postgres_dsn: str
) -> None:
    config = _config(tmp_path)
    out = await _doctor(tmp_path, config, {DSN_VARIABLE: postgres_dsn})
    assert "✓ PostgreSQL at " in out and " answers" in out
    assert "✓ no BeamClaw tables in schema 'beamclaw' yet" in out
    assert "✓ synchronous_commit = on" in out

    db = open_store(postgres_store_config, core.SCHEMA, sqlite_file=None)
    try:
        sql(db, "UPDATE schema_versions SET version = 99 WHERE component = 'core'")
        database = postgres_dsn.rpartition("dbname=")[2]
        sql(db, f"ALTER DATABASE {database} SET synchronous_commit = off")
    finally:
        db.close()
    out = await _doctor(tmp_path, config, {DSN_VARIABLE: postgres_dsn})
    assert (
        f"✗ the database has newer schemas than this BeamClaw's: core 99 (this BeamClaw knows {core.SCHEMA.version})"
        in out
    )
    assert "! the server has synchronous_commit = off" in out
