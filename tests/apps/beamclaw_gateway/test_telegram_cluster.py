"""The Telegram channel's share of a cluster, on a real PostgreSQL: one poller per bot
(the named lease), a new poller going on from the stored offset, and the unanswered
updates of a dead member told once while a live member's are left alone.

Members are rows of the real registry, renewed by a heartbeat task as the cluster's node
process does; a member dies the way the cluster sees it: its heartbeat stops (a stalled
or killed node), or its lease in the registry runs out.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import beamclaw_cluster as cluster
import beamclaw_gateway as gateway
import supervision as sv
from beamclaw_base import Database, Notified, StoreConfig, listener, notify_group, open_store
from beamclaw_cluster import _nodes as nodes
from beamclaw_gateway._telegram_lease import PollerLease, lease_name, while_holding
from beamclaw_gateway._telegram_ledger import WEBHOOK_CHANNEL, Ledger, store_pushed
from tests.support.stores import sql

pytestmark = pytest.mark.postgres

_LEASE = 3.0  # seconds: short, so that a takeover happens within the test


@pytest.fixture
def cluster_db(postgres_store_config: StoreConfig) -> Iterator[Database]:
    database = open_store(postgres_store_config, cluster.SCHEMA, sqlite_file=None)
    yield database
    database.close()


@pytest.fixture
def gateway_db(postgres_store_config: StoreConfig, cluster_db: Database) -> Iterator[Database]:
    database = open_store(postgres_store_config, gateway.SCHEMA, sqlite_file=None)
    yield database
    database.close()


def _join(db: Database, name: str) -> cluster.Membership:
    member = cluster.Membership(uuid.uuid4().hex, name, f"http://{name}.internal", _LEASE, db, "secret")
    db.transact(lambda tx: nodes.register(tx, member.instance_id, name, member.advertise_url, _LEASE))
    return member


async def _heartbeat(member: cluster.Membership) -> None:
    """What the cluster's node process does for a member (until cancelled: the node stalls)."""
    member.renewed(_LEASE)
    while True:
        left = await member.database.run(lambda tx: nodes.heartbeat(tx, member.instance_id, _LEASE))
        assert left is not None
        member.renewed(left)
        await trio.sleep(_LEASE / 3)


@asynccontextmanager
async def _alive(nursery: trio.Nursery, member: cluster.Membership) -> AsyncIterator[trio.CancelScope]:
    """*member* heartbeats until the scope it gives is cancelled."""
    scope = trio.CancelScope()

    async def beat() -> None:
        with scope:
            await _heartbeat(member)

    nursery.start_soon(beat)
    yield scope


async def test_two_nodes_never_poll_one_bot_at_once_and_the_lease_moves_when_its_holder_dies(
    cluster_db: Database,
) -> None:
    a, b = _join(cluster_db, "a"), _join(cluster_db, "b")
    events: list[tuple[str, str]] = []
    name = lease_name("bot-1")

    def poller(member: cluster.Membership) -> Any:
        async def current() -> cluster.Membership:
            return member

        async def work(lease: PollerLease) -> None:
            events.append((member.node_id, "polls"))
            try:
                await trio.sleep_forever()
            finally:
                events.append((member.node_id, "stops"))

        return while_holding(current, name, work)

    async with trio.open_nursery() as nursery, _alive(nursery, a) as a_beats, _alive(nursery, b):
        nursery.start_soon(lambda: poller(a))
        with trio.fail_after(30):
            while not events:
                await trio.sleep(0.05)
        nursery.start_soon(lambda: poller(b))
        await trio.sleep(_LEASE * 2)  # b keeps trying all the while
        assert {who for who, _ in events} == {"a"}

        a_beats.cancel()  # a's node stalls: no more heartbeats, so no more renewals that count
        with trio.fail_after(30):
            while ("b", "polls") not in events:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    # One poller at a time: each stops before the next starts (a slow renewal may stop a
    # for a moment, then it takes its own lease again), and the lease went to b.
    polling = None
    for who, what in events:
        assert (polling, what) in {(None, "polls"), (who, "stops")}, events
        polling = who if what == "polls" else None
    assert {who for who, _ in events[: events.index(("b", "polls"))]} == {"a"}
    rows = sql(cluster_db, "SELECT owner, epoch FROM named_leases WHERE name = ?", (name,))
    assert [tuple(row) for row in rows] == [(b.instance_id, 2)]


async def test_a_poller_that_lost_the_lease_stores_nothing_and_the_next_goes_on_from_the_stored_offset(
    cluster_db: Database, gateway_db: Database
) -> None:
    a, b = _join(cluster_db, "a"), _join(cluster_db, "b")
    name = lease_name("bot-1")
    epoch = cluster_db.transact(lambda tx: cluster.acquire_named(tx, name, a.instance_id, _LEASE))
    assert epoch == 1
    first = await Ledger.open(gateway_db, "bot-1", a.instance_id, members=True)
    await first.reopen(PollerLease(name, a.instance_id, 1))
    assert await first.receive([{"update_id": 10, "message": {}}, {"update_id": 11, "message": {}}]) == 2
    assert await first.claim(10, None) is None and await first.claim(11, None) is None  # acted on

    sql(cluster_db, "UPDATE named_leases SET expires_at = now() WHERE name = ?", (name,))  # a stalled
    assert cluster_db.transact(lambda tx: cluster.acquire_named(tx, name, b.instance_id, _LEASE)) == 2
    second = await Ledger.open(gateway_db, "bot-1", b.instance_id, members=True)
    await second.reopen(PollerLease(name, b.instance_id, 2))
    assert second.next_update == 12

    # a wakes up with a poll's answer that Telegram resent (11, already acted on) and a new one.
    with pytest.raises(cluster.LeaseLost):
        await first.receive([{"update_id": 11, "message": {}}, {"update_id": 12, "message": {}}])
    assert await second.inbox() == []
    # Even a poller of its own that went on from an old offset stores nothing it had before.
    second.next_update = 0
    assert await second.receive([{"update_id": 11, "message": {}}, {"update_id": 12, "message": {}}]) == 2
    assert [u["update_id"] for u in await second.inbox()] == [12]
    assert second.next_update == 13


async def test_a_dead_members_unanswered_updates_are_told_once_and_a_live_members_left_alone(
    cluster_db: Database, gateway_db: Database
) -> None:
    a, b, c = _join(cluster_db, "a"), _join(cluster_db, "b"), _join(cluster_db, "c")
    ledgers = {m.node_id: await Ledger.open(gateway_db, "bot-1", m.instance_id, members=True) for m in (a, b, c)}
    await ledgers["a"].receive([{"update_id": 1, "message": {}}, {"update_id": 2, "message": {}}])
    assert await ledgers["a"].claim(1, 501, "asked a") is not None  # a's turn runs
    assert await ledgers["b"].claim(2, 502, "asked b") is not None  # b's turn runs

    # While both live, no node reports the other's turn (another boot is not a dead one).
    for ledger in ledgers.values():
        assert await ledger.orphaned() == []

    sql(cluster_db, "UPDATE cluster_nodes SET expires_at = now() WHERE instance_id = ?", (a.instance_id,))
    found_by_b, found_by_c = await ledgers["b"].orphaned(), await ledgers["c"].orphaned()
    assert (
        [(u.chat_id, u.preview) for u in found_by_b]
        == [(501, "asked a")]
        == [(u.chat_id, u.preview) for u in found_by_c]
    )
    # Both look at once: one of them adopts the row and tells the user, the other does not.
    assert await ledgers["c"].adopt(found_by_c[0]) is True
    assert await ledgers["b"].adopt(found_by_b[0]) is False
    assert await ledgers["b"].orphaned() == []  # c is alive: the row is c's now
    # c could not reach the user: the row goes back to the dead member, for the next look.
    await ledgers["c"].give_back(found_by_c[0])
    [again] = await ledgers["b"].orphaned()
    assert await ledgers["b"].adopt(again) is True
    await again.pending.answered()
    rows = sql(gateway_db, "SELECT update_id, boot FROM telegram_unanswered ORDER BY update_id")
    assert [tuple(row) for row in rows] == [(2, b.instance_id)]


async def test_a_webhook_update_stored_by_any_node_wakes_the_lease_holder_once(
    postgres_store_config: StoreConfig, gateway_db: Database
) -> None:
    tree = sv.Supervisor([sv.ChildSpec("listener", listener, args=(postgres_store_config, [WEBHOOK_CHANNEL]))])
    with sv.as_process():
        sv.pg.join(notify_group(WEBHOOK_CHANNEL))  # as the holder's channel does

        async def woken() -> Notified:
            message: Notified = await sv.receive(timeout=30, match=lambda m: isinstance(m, Notified))
            return message

        async with sv.open_supervisor(tree):
            assert await woken() == Notified(WEBHOOK_CHANNEL, None)  # connected: drain what is there
            update = {"update_id": 40, "message": {}}
            await store_pushed(gateway_db, "bot-1", update)  # through another node's webhook route
            assert await woken() == Notified(WEBHOOK_CHANNEL, "bot-1")
            await store_pushed(gateway_db, "bot-1", update)  # Telegram sent it again: nothing to do
            await store_pushed(gateway_db, "bot-1", {"update_id": 41, "message": {}})
            assert await woken() == Notified(WEBHOOK_CHANNEL, "bot-1")
            with pytest.raises(sv.ReceiveTimeout):
                await sv.receive(timeout=1, match=lambda m: isinstance(m, Notified))
    holder = await Ledger.open(gateway_db, "bot-1", "node-a", members=True)
    assert [u["update_id"] for u in await holder.inbox()] == [40, 41]
