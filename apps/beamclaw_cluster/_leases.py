"""Leases: a conversation is owned by at most one live node, and a named singleton (a
Telegram bot's poller) runs on at most one.

A conversation's lease lives as long as its owner node does (one heartbeat renews all of
a node's conversations); it carries an epoch that grows at every change of owner. Every
write into the conversation checks the epoch in the same transaction (`fence`), holding
the lease row ``FOR SHARE`` until it commits: a node that was cut off and comes back
finds a newer epoch and writes nothing, and a takeover waits for a write in progress
rather than racing it.

A named lease has its own expiry, renewed by its holder: the poller stops when it cannot
renew, before anyone else may take it.
"""

from __future__ import annotations

import attrs

from beamclaw_base import StoreRefused, Tx

from ._nodes import ALIVE


class LeaseLost(StoreRefused):
    """This node no longer owns the conversation (another node took it over): stop, write nothing."""


@attrs.frozen
class Lease:
    """This node's ownership of one conversation."""

    session_id: str
    owner: str
    epoch: int


@attrs.frozen
class Elsewhere:
    """A live node owns the conversation: reach it there."""

    session_id: str
    node_id: str
    advertise_url: str


def acquire(tx: Tx, session_id: str, instance_id: str) -> Lease | Elsewhere:
    """Own *session_id*: take it when it is free, already ours, or its owner is dead (the
    epoch moves on); else where its live owner is."""
    row = tx.execute(
        "INSERT INTO conversation_leases AS l (session_id, owner, epoch) VALUES (?, ?, 1) "
        "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, acquired_at = now(), "
        "epoch = CASE WHEN l.owner = excluded.owner THEN l.epoch ELSE l.epoch + 1 END "
        "WHERE l.owner IS NULL OR l.owner = excluded.owner OR NOT EXISTS "
        f"(SELECT 1 FROM cluster_nodes n WHERE n.instance_id = l.owner AND {ALIVE}) "
        "RETURNING epoch",
        (session_id, instance_id),
    ).fetchone()
    if row is not None:
        return Lease(session_id, instance_id, int(row[0]))
    owner = tx.execute(
        "SELECT n.node_id, n.advertise_url FROM conversation_leases l "
        "JOIN cluster_nodes n ON n.instance_id = l.owner WHERE l.session_id = ?",
        (session_id,),
    ).fetchone()
    if owner is None:  # the owner row went between the two statements: a later try takes it
        raise LeaseLost(f"conversation {session_id} is changing hands; try again")
    return Elsewhere(session_id, owner[0], owner[1])


def still_owner(tx: Tx, where: Elsewhere) -> bool:
    """Whether the live node at *where* still owns the conversation (a forwarded request
    to a node that died or lost it meanwhile is given up, not waited for)."""
    row = tx.execute(
        "SELECT 1 FROM conversation_leases l JOIN cluster_nodes n ON n.instance_id = l.owner "
        f"WHERE l.session_id = ? AND n.advertise_url = ? AND {ALIVE}",
        (where.session_id, where.advertise_url),
    ).fetchone()
    return row is not None


def release(tx: Tx, lease: Lease) -> bool:
    """Give the conversation up (it went to sleep); whether it was still ours. The epoch
    stays: the next owner moves it on."""
    return (
        tx.execute(
            "UPDATE conversation_leases SET owner = NULL WHERE session_id = ? AND owner = ? AND epoch = ?",
            (lease.session_id, lease.owner, lease.epoch),
        ).rowcount
        == 1
    )


def fence(tx: Tx, lease: Lease) -> None:
    """Raise `LeaseLost` unless *lease* still holds; held until *tx* commits (call it first
    in every transaction that writes into the conversation)."""
    row = tx.execute(
        "SELECT 1 FROM conversation_leases WHERE session_id = ? AND owner = ? AND epoch = ? FOR SHARE",
        (lease.session_id, lease.owner, lease.epoch),
    ).fetchone()
    if row is None:
        raise LeaseLost(f"conversation {lease.session_id} moved to another node (epoch {lease.epoch} is over)")


def owned_elsewhere(session_column: str) -> str:
    """A SQL condition (one ``?``: this node's instance id) true when the conversation in
    *session_column* is owned by another live node: the cleaner and the memory flush of
    this node leave it to its owner."""
    return (
        "EXISTS (SELECT 1 FROM conversation_leases l JOIN cluster_nodes n ON n.instance_id = l.owner "
        f"WHERE l.session_id = {session_column} AND l.owner <> ? AND {ALIVE})"
    )


def acquire_named(tx: Tx, name: str, instance_id: str, lease_seconds: float) -> int | None:
    """Take or renew the singleton lease *name* for *lease_seconds*: its epoch, or None
    while another holder's lease runs."""
    row = tx.execute(
        "INSERT INTO named_leases AS l (name, owner, epoch, expires_at) "
        "VALUES (?, ?, 1, now() + make_interval(secs => ?)) "
        "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, "
        "epoch = CASE WHEN l.owner = excluded.owner THEN l.epoch ELSE l.epoch + 1 END "
        "WHERE l.owner = excluded.owner OR l.owner IS NULL OR l.expires_at <= now() "
        "RETURNING epoch",
        (name, instance_id, lease_seconds),
    ).fetchone()
    return None if row is None else int(row[0])


def release_named(tx: Tx, name: str, instance_id: str) -> None:
    """Give the singleton up at once (a clean stop), so the next holder need not wait."""
    tx.execute("UPDATE named_leases SET owner = NULL WHERE name = ? AND owner = ?", (name, instance_id))
