"""What `beamclaw cluster status` shows: the members, what each owns, and the named leases."""

from __future__ import annotations

import attrs

from beamclaw_base import Tx

from ._nodes import NodeRow, nodes


@attrs.frozen
class NamedLeaseRow:
    name: str
    #: The holder's node name, or None when nobody holds it.
    node_id: str | None
    epoch: int
    #: Seconds the holder's lease runs for yet (negative: it ran out).
    expires_in: float


@attrs.frozen
class ClusterStatus:
    nodes: list[NodeRow]
    named_leases: list[NamedLeaseRow]
    #: Conversations whose owner is not alive: taken over at their next message.
    orphaned: int


def cluster_status(tx: Tx) -> ClusterStatus:
    """The cluster as the database sees it now (read in one snapshot)."""
    named = tx.execute(
        "SELECT l.name, n.node_id, l.epoch, extract(epoch FROM l.expires_at - now())::float8 "
        "FROM named_leases l LEFT JOIN cluster_nodes n ON n.instance_id = l.owner ORDER BY l.name"
    ).fetchall()
    (orphaned,) = tx.execute(
        "SELECT count(*) FROM conversation_leases l WHERE l.owner IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM cluster_nodes n WHERE n.instance_id = l.owner AND n.expires_at > now() "
        "AND n.stopped_at IS NULL)"
    ).fetchone()
    return ClusterStatus(
        nodes(tx),
        [NamedLeaseRow(name, node, int(epoch), float(left)) for name, node, epoch, left in named],
        int(orphaned),
    )
