"""One poller per bot across a cluster: the channel acts only while its node holds the
named lease ``telegram:<bot id>``.

Two nodes polling one token would each get a 409 half the time and, worse, each act on
what it got. So the channel's work (polling, or acting on webhook updates) runs inside
`while_holding`: the lease is taken, renewed three times per lease, and the work is
cancelled as soon as a renewal fails or this node's membership may no longer act, at a
deadline set a third short of the lease's end by this node's clock, so it has stopped
before any other node may take the lease. The other nodes keep trying, and the first to
find the lease run out takes it (a new epoch), at the stored offset.

Every write of the work checks the lease in its own transaction (`hold`): a node that
stalled past its deadline and wakes up stores nothing.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Final, NoReturn

import attrs
import trio
from loguru import logger

import beamclaw_cluster as cluster
from beamclaw_base import StoreError, Tx

#: The share of the lease this node trusts (as `cluster.Membership` does for its own).
_TRUSTED: Final = 2 / 3


@attrs.frozen
class PollerLease:
    """This node holds the bot's lease *name* at *epoch*."""

    name: str
    instance_id: str
    epoch: int


def lease_name(bot: str) -> str:
    """The named lease of the bot whose ledger id is *bot*."""
    return f"telegram:{bot}"


def hold(tx: Tx, lease: PollerLease) -> None:
    """Raise `cluster.LeaseLost` unless *lease* still holds (run time by the database's
    clock); held until *tx* commits."""
    row = tx.execute(
        "SELECT 1 FROM named_leases WHERE name = ? AND owner = ? AND epoch = ? AND expires_at > now() FOR SHARE",
        (lease.name, lease.instance_id, lease.epoch),
    ).fetchone()
    if row is None:
        raise cluster.LeaseLost(f"the Telegram lease {lease.name} (epoch {lease.epoch}) is over")


async def _renew(member: cluster.Membership, name: str) -> tuple[int, float] | None:
    """Take or renew *name*: its epoch and the local time until which it surely holds;
    None while another node holds it, or when the store cannot say."""
    if not member.alive():
        return None
    asked = trio.current_time()
    try:
        epoch = await member.database.run(
            lambda tx: cluster.acquire_named(tx, name, member.instance_id, member.lease_seconds)
        )
    except StoreError as exc:
        logger.warning("Telegram: the lease {} could not be renewed: {}", name, exc)
        return None
    if epoch is None:
        return None
    return epoch, min(asked + member.lease_seconds * _TRUSTED, member.valid_until)


async def while_holding(
    membership: Callable[[], Awaitable[cluster.Membership]],
    name: str,
    work: Callable[[PollerLease], Awaitable[None]],
) -> NoReturn:
    """Run *work* whenever this node holds the lease *name*, never otherwise, forever.

    *membership* gives this node's current membership (a new one after it was taken for
    dead and joined again). *work* returning or losing its lease (`cluster.LeaseLost`)
    goes back to waiting for the lease.
    """
    while True:
        member = await membership()
        taken = await _renew(member, name)
        if taken is None:  # another node holds it: try again a third of a lease later, spread out
            await trio.sleep(member.lease_seconds / 3 * random.uniform(0.75, 1.25))
            continue
        epoch, until = taken
        lease = PollerLease(name, member.instance_id, epoch)
        logger.info("Telegram: this node holds {} (epoch {}) and acts for the bot", name, epoch)
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope(deadline=until)
            nursery.start_soon(_keep, member, lease, scope)
            try:
                with scope:
                    await work(lease)
            except cluster.LeaseLost as exc:
                logger.warning("Telegram: {}; stopped", exc)
            nursery.cancel_scope.cancel()
        if scope.cancelled_caught:
            logger.warning("Telegram: this node no longer surely holds {}; stopped acting for the bot", name)


async def _keep(member: cluster.Membership, lease: PollerLease, scope: trio.CancelScope) -> None:
    """Renew the lease three times per lease, moving *scope*'s deadline on; cancel it at
    once when a renewal fails or finds the lease gone to a new epoch."""
    while True:
        await trio.sleep(member.lease_seconds / 3)
        taken = await _renew(member, lease.name)
        if taken is None or taken[0] != lease.epoch:
            scope.cancel()
            return
        scope.deadline = taken[1]
