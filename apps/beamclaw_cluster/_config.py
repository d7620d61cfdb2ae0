"""``[cluster]`` of config.toml: whether this daemon is one node of several, and how it is reached."""

from __future__ import annotations

import socket
from typing import Any

import attrs

from beamclaw_base import Secret, structure_config


@attrs.frozen
class ClusterConfig:
    """Several daemons (nodes) sharing one PostgreSQL database (``[store] backend =
    "postgres"``): each conversation has one live owner, and a node's death costs its
    conversations the lease time, not their data."""

    #: true: this daemon is a node of a cluster (needs PostgreSQL and a secret).
    enabled: bool = False
    #: This node's name in `beamclaw cluster status` (default: the host name).
    node_id: str = attrs.field(factory=socket.gethostname)
    #: Where the other nodes reach this one's gateway (e.g. ``http://10.0.0.5:18800``).
    advertise_url: str = ""
    #: Seconds without a heartbeat after which a node is taken for dead and its
    #: conversations move; heartbeats are sent three times in that time.
    lease_seconds: float = 10.0
    #: What the nodes prove to each other on the internal routes (from the environment).
    secret: Secret | None = None

    def __attrs_post_init__(self) -> None:
        if not 1.0 <= self.lease_seconds <= 600.0:
            raise ValueError(f"cluster.lease_seconds must be from 1 to 600, not {self.lease_seconds}")
        if not self.node_id or len(self.node_id) > 64 or not self.node_id.isprintable():
            raise ValueError("cluster.node_id must be 1 to 64 printable characters")
        if self.enabled and self.secret is None:
            raise ValueError(
                'cluster.secret is needed when the cluster is enabled: secret = { env = "BEAMCLAW_CLUSTER_SECRET" }'
            )
        if self.enabled and not self.advertise_url.startswith(("http://", "https://")):
            raise ValueError(
                "cluster.advertise_url must say where the other nodes reach this one (http:// or https://)"
            )


def parse_cluster_config(table: dict[str, Any]) -> ClusterConfig:
    """*table* as a `ClusterConfig`; `beamclaw_base.ConfigError` naming each bad key."""
    return structure_config(table, ClusterConfig, "cluster")
