"""The cluster: several BeamClaw daemons (nodes) sharing one PostgreSQL database.

Each node joins a registry with a heartbeat (`Membership`); each conversation is owned by
at most one live node through a lease with an epoch (`acquire`, `fence`, `release`), and
each singleton (a Telegram bot's poller) through a named lease (`acquire_named`). All
of it is rows in PostgreSQL compared with the database's clock: no consensus of our
own, and no node's clock is trusted. On one node (``[cluster] enabled = false``, the
default) the app's tree is empty and `membership` answers None.
"""

from ._config import ClusterConfig, parse_cluster_config
from ._leases import (
    Elsewhere,
    Lease,
    LeaseLost,
    acquire,
    acquire_named,
    fence,
    owned_elsewhere,
    release,
    release_named,
    still_owner,
)
from ._membership import Membership
from ._node import NODE, membership
from ._nodes import ALIVE, NodeRow
from ._schema import SCHEMA
from ._signing import Forwarded, is_forwarded, signed_headers, verified_principal
from ._status import ClusterStatus, NamedLeaseRow, cluster_status
from ._tree import supervision_tree

__all__ = [
    "ALIVE",
    "NODE",
    "SCHEMA",
    "ClusterConfig",
    "ClusterStatus",
    "Elsewhere",
    "Forwarded",
    "Lease",
    "LeaseLost",
    "Membership",
    "NamedLeaseRow",
    "NodeRow",
    "acquire",
    "acquire_named",
    "cluster_status",
    "fence",
    "is_forwarded",
    "membership",
    "owned_elsewhere",
    "parse_cluster_config",
    "release",
    "release_named",
    "signed_headers",
    "still_owner",
    "supervision_tree",
    "verified_principal",
]
