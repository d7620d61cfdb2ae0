"""`beamclaw cluster status` reads the cluster from its database, no daemon needed; the
commands that change stored data change the configured store."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

import beamclaw_core as core
from beamclaw_base import StoreConfig, open_store
from beamclaw_cli import main
from beamclaw_cluster import SCHEMA, acquire, acquire_named
from beamclaw_cluster import _nodes as nodes
from tests.support.postgres import DSN_VARIABLE
from tests.support.stores import sql


def _config(tmp_path: Path) -> str:
    path = tmp_path / "config.toml"
    path.write_text(f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n', encoding="utf-8")
    return str(path)


@pytest.mark.postgres
def test_status_shows_each_node_what_it_owns_and_who_holds_each_lease(
    postgres_store_config: StoreConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = open_store(postgres_store_config, SCHEMA, sqlite_file=None)
    alive, dead = uuid.uuid4().hex, uuid.uuid4().hex
    db.transact(lambda tx: nodes.register(tx, alive, "web-1", "http://10.0.0.1:18800", 10.0))
    db.transact(lambda tx: nodes.register(tx, dead, "web-2", "http://10.0.0.2:18800", 10.0))
    db.transact(lambda tx: [acquire(tx, sid, alive) for sid in ("conv-a", "conv-b")])
    db.transact(lambda tx: acquire(tx, "conv-c", dead))
    db.transact(lambda tx: acquire_named(tx, "telegram:123", alive, 30.0))
    sql(db, "UPDATE cluster_nodes SET expires_at = now() - interval '5 seconds' WHERE instance_id = ?", (dead,))
    db.close()

    assert main(["cluster", "status", "--config", _config(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    web1 = next(line for line in lines if line.startswith("web-1"))
    web2 = next(line for line in lines if line.startswith("web-2"))
    assert "alive" in web1 and web1.rstrip().endswith("2") and "http://10.0.0.1:18800" in web1
    assert "dead" in web2 and web2.rstrip().endswith("1")
    assert any(line.startswith("telegram:123") and "web-1" in line for line in lines)
    assert "1 conversation(s) owned by dead nodes" in out

    assert main(["cluster", "status", "--json", "--config", _config(tmp_path)]) == 0
    status = json.loads(capsys.readouterr().out)
    rows = [(n["node_id"], n["alive"], n["conversations"]) for n in status["nodes"]]
    assert rows == [("web-1", True, 2), ("web-2", False, 1)]
    assert status["named_leases"][0]["node_id"] == "web-1" and status["orphaned"] == 1


def test_status_on_sqlite_says_there_is_no_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[core]\n", encoding="utf-8")
    assert main(["cluster", "status", "--config", str(path)]) == 1
    assert "no cluster: this configuration keeps its data in SQLite" in capsys.readouterr().err


@pytest.mark.postgres
def test_status_with_the_database_away_says_so_without_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_VARIABLE, "postgresql://beamclaw:pw-never-shown-4242@127.0.0.1:1/beamclaw?connect_timeout=2")
    assert main(["cluster", "status", "--config", _config(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("beamclaw: ") and "pw-never-shown-4242" not in err


@pytest.mark.postgres
def test_pair_approves_in_the_store_of_the_configuration_not_a_local_file(
    postgres_store_config: StoreConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("BEAMCLAW_HOME", str(tmp_path / "home"))
    db = core.open_session_store(postgres_store_config, tmp_path)
    code = db.transact(lambda tx: core.request_code(tx, "telegram", "telegram:42", "Ada"))
    assert main(["pair", "telegram", code, "--config", _config(tmp_path)]) == 0
    assert db.transact(lambda tx: core.allowed_agent(tx, "telegram", "telegram:42"), write=False) == "default"
    db.close()
    assert not (tmp_path / "home" / "sessions.db").exists()
