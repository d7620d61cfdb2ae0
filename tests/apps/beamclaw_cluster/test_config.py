"""``[cluster]``: a cluster refuses to start without PostgreSQL, a secret, or a way to be reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from beamclaw._config import ConfigError, load_config
from beamclaw_base import ConfigError as TableError
from beamclaw_base import Secret, StoreConfig
from beamclaw_cluster import ClusterConfig, parse_cluster_config, supervision_tree

_NODE = {"enabled": True, "advertise_url": "http://127.0.0.1:18801", "secret": {"env": "BEAMCLAW_CLUSTER_SECRET"}}
_POSTGRES = StoreConfig(backend="postgres", dsn=Secret("BEAMCLAW_DATABASE_URL"))


def test_off_by_default_and_then_its_tree_is_empty(tmp_path: Path) -> None:
    assert parse_cluster_config({}).enabled is False
    assert supervision_tree({}, tmp_path).children == ()


def test_a_node_on_sqlite_is_refused_when_the_configuration_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[cluster]\nenabled = true\nadvertise_url = "http://127.0.0.1:1"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r'needs \[store\] backend = "postgres"'):
        load_config(path)
    with pytest.raises(ValueError, match="PostgreSQL"):
        supervision_tree(_NODE, tmp_path, StoreConfig())


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"secret": None}, "cluster.secret is needed"),
        ({"advertise_url": ""}, "cluster.advertise_url"),
        ({"lease_seconds": 0.2}, "cluster.lease_seconds"),
        ({"node_id": "a\nb"}, "cluster.node_id"),
        ({"secret": "a-literal-secret-value"}, "cluster.secret"),
    ],
)
def test_a_node_without_what_it_needs_is_refused_naming_the_key(change: dict[str, object], named: str) -> None:
    table = {k: v for k, v in {**_NODE, **change}.items() if v is not None}
    with pytest.raises(TableError, match=named):
        parse_cluster_config(table)


def test_a_complete_node_builds_its_tree(tmp_path: Path) -> None:
    config = parse_cluster_config(_NODE)
    secret = Secret("BEAMCLAW_CLUSTER_SECRET")
    assert config == ClusterConfig(True, config.node_id, "http://127.0.0.1:18801", 10.0, secret)
    assert [c.id for c in supervision_tree(_NODE, tmp_path, _POSTGRES).children] == ["node", "heartbeat"]
