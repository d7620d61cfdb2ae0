"""The node registry: who is in the cluster, where it is reached, and whether it is alive.

A node is alive while its lease (``expires_at``) is in the future by the database's
clock and it has not stopped: every comparison uses ``now()`` of PostgreSQL in a short
transaction of its own, never a node's clock, so a node whose clock is wrong cannot
keep itself alive or declare another dead. ``instance_id`` is new at every start, so a
node that was taken for dead and comes back is a new member, never the old one again.
"""

from __future__ import annotations

from typing import Final

import attrs

from beamclaw_base import Tx

#: The condition of a live node, on a row of cluster_nodes named ``n``.
ALIVE: Final = "n.expires_at > now() AND n.stopped_at IS NULL"


@attrs.frozen
class NodeRow:
    """One member as `beamclaw cluster status` shows it."""

    instance_id: str
    node_id: str
    advertise_url: str
    alive: bool
    #: Seconds since its last heartbeat, by the database's clock.
    heartbeat_age: float
    #: The conversations it owns now.
    conversations: int


def register(tx: Tx, instance_id: str, node_id: str, advertise_url: str, lease_seconds: float) -> None:
    """Add this start of a node to the registry, alive for *lease_seconds*."""
    tx.execute(
        "INSERT INTO cluster_nodes (instance_id, node_id, advertise_url, expires_at) "
        "VALUES (?, ?, ?, now() + make_interval(secs => ?))",
        (instance_id, node_id, advertise_url, lease_seconds),
    )


def heartbeat(tx: Tx, instance_id: str, lease_seconds: float) -> float | None:
    """Renew the node's lease: the seconds it is now alive for, or None if it was already
    taken for dead (its lease ran out, or it stopped): then it must fence itself."""
    row = tx.execute(
        "UPDATE cluster_nodes n SET heartbeat_at = now(), expires_at = now() + make_interval(secs => ?) "
        f"WHERE instance_id = ? AND {ALIVE} RETURNING extract(epoch FROM n.expires_at - now())::float8",
        (lease_seconds, instance_id),
    ).fetchone()
    return None if row is None else float(row[0])


def stop(tx: Tx, instance_id: str) -> None:
    """A clean stop: the node is no longer alive, and its conversations are free at once."""
    tx.execute("UPDATE cluster_nodes SET stopped_at = now() WHERE instance_id = ?", (instance_id,))
    tx.execute("UPDATE conversation_leases SET owner = NULL WHERE owner = ?", (instance_id,))
    tx.execute("UPDATE named_leases SET owner = NULL WHERE owner = ?", (instance_id,))


def nodes(tx: Tx, *, include_stopped: bool = False) -> list[NodeRow]:
    """The members, alive first, then by name."""
    where = "" if include_stopped else "WHERE n.stopped_at IS NULL"
    rows = tx.execute(
        f"SELECT n.instance_id, n.node_id, n.advertise_url, ({ALIVE}), "
        "extract(epoch FROM now() - n.heartbeat_at)::float8, "
        "(SELECT count(*) FROM conversation_leases l WHERE l.owner = n.instance_id) "
        f"FROM cluster_nodes n {where} ORDER BY 4 DESC, n.node_id, n.started_at"
    ).fetchall()
    return [NodeRow(i, name, url, bool(alive), float(age), int(count)) for i, name, url, alive, age, count in rows]
