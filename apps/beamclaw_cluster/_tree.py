"""The cluster app's tree: the node (membership) and its heartbeat, or nothing on one node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import supervision as sv
from beamclaw_base import StoreConfig

from ._config import parse_cluster_config
from ._node import Node, heartbeat


def supervision_tree(table: dict[str, Any], data_dir: Path, store: StoreConfig | None = None) -> sv.Supervisor:
    """The node and its heartbeat (one_for_all: a heartbeat without its node means
    nothing), when ``[cluster] enabled``; else an empty tree."""
    config = parse_cluster_config(table)  # a bad table stops the daemon at start, naming the key
    children = []
    if config.enabled:
        if store is None or store.backend != "postgres":
            raise ValueError('a cluster keeps its state in PostgreSQL: set [store] backend = "postgres"')
        children = [
            sv.ChildSpec("node", Node.start, args=(config, store)),
            sv.ChildSpec("heartbeat", heartbeat, args=(config.lease_seconds,)),
        ]
    return sv.Supervisor(children, strategy=sv.ONE_FOR_ALL, intensity=10, period=30.0, name="beamclaw_cluster")
