"""Every node's supervision tree from one place: `beamclaw tree --cluster` (the nodes from
the database, each asked at its advertised URL with the configured gateway token) and
``GET /v1/supervision/tree?cluster=1`` (each asked by the node that was asked). A real
daemon is one node; the registry also holds a dead node and one that does not answer."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

import beamclaw_cluster as cluster
from beamclaw_base import StoreConfig, open_store
from tests.support.model_server import Echo, scripted_model
from tests.support.postgres import DSN_VARIABLE
from tests.support.stores import sql

from .daemon import cli, free_port, running_daemon

pytestmark = pytest.mark.postgres

_TOKEN = "gateway-token-of-the-test-0123456789"


def _other_nodes(store: StoreConfig) -> None:
    """A node that died a minute ago, and one alive by its lease that nothing answers for."""
    db = open_store(store, cluster.SCHEMA, sqlite_file=None)
    try:
        sql(db, "INSERT INTO cluster_nodes (instance_id, node_id, advertise_url, heartbeat_at, expires_at) "
                "VALUES (?, 'node-dead', 'http://127.0.0.1:9', now() - interval '60 seconds', "
                "now() - interval '50 seconds')", (uuid.uuid4().hex,))  # fmt: skip
        sql(db, "INSERT INTO cluster_nodes (instance_id, node_id, advertise_url, expires_at) "
                "VALUES (?, 'node-silent', ?, now() + interval '1 hour')",
                (uuid.uuid4().hex, f"http://127.0.0.1:{free_port()}"))  # fmt: skip
    finally:
        db.close()


async def test_every_nodes_tree_is_shown_and_a_dead_or_silent_node_says_so(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_CLUSTER_SECRET", "cluster-secret-of-the-test-0123456789")
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", _TOKEN)
    port, home = free_port(), tmp_path / "home"
    async with scripted_model(repeat=Echo()) as model:
        config = tmp_path / "node-a.toml"
        config.write_text(
            f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n'
            f'[cluster]\nenabled = true\nnode_id = "node-a"\nadvertise_url = "http://127.0.0.1:{port}"\n'
            f'secret = {{ env = "BEAMCLAW_CLUSTER_SECRET" }}\n'
            f'[core]\ndefault_provider = "scripted"\n'
            f'[core.providers.scripted]\nbase_url = "{model.base_url}"\nmodel = "scripted-model"\n'
            f"[gateway.http]\nport = {port}\n",
            encoding="utf-8",
        )
        async with running_daemon(config, home):
            _other_nodes(postgres_store_config)

            shown = await cli(home, "tree", "--cluster", "--config", str(config))
            out = shown.stdout.decode()
            assert shown.returncode == 1, shown.stderr.decode()  # not every node answered
            assert f"node node-a at http://127.0.0.1:{port}: alive" in out
            assert "beamclaw  <" in out and "cluster" in out and "memory" in out  # node-a's tree, drawn
            assert "node node-dead at http://127.0.0.1:9: dead (no heartbeat for" in out
            assert "node node-silent" in out and "unreachable" in out

            without = await cli(home, "tree", "--cluster", "--config", str(config), env={"BEAMCLAW_GATEWAY_TOKEN": ""})
            assert "node node-a" in without.stdout.decode() and "HTTP 401" in without.stdout.decode()

            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {_TOKEN}"}) as http:
                url = f"http://127.0.0.1:{port}/v1/supervision/tree"
                answer = (await http.get(url, params={"cluster": "1"}, timeout=30)).json()
                assert (await http.get(url)).json()["id"] == answer["nodes"][0]["tree"]["id"]  # its own, plain
        nodes = answer["nodes"]
        assert [(n["node_id"], n["state"]) for n in nodes] == [
            ("node-a", "alive"), ("node-silent", "unreachable"), ("node-dead", "dead"),
        ]  # fmt: skip
        assert nodes[0]["tree"]["children"] and nodes[2]["tree"] is None
        assert "does not answer" in nodes[1]["error"]
