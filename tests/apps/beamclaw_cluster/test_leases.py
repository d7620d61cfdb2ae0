"""Members, conversation leases and named leases on a real PostgreSQL server.

Death is made the way the cluster sees it: a member's lease in the registry runs out
(``expires_at`` moved into the past), judged by the database's clock.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from beamclaw_base import Database, StoreConfig, Tx, open_store
from beamclaw_cluster import SCHEMA, Elsewhere, Lease, LeaseLost, acquire, acquire_named, cluster_status, fence, release
from beamclaw_cluster import _nodes as nodes
from tests.support.stores import sql

pytestmark = pytest.mark.postgres


@pytest.fixture
def db(postgres_store_config: StoreConfig) -> Iterator[Database]:
    database = open_store(postgres_store_config, SCHEMA, sqlite_file=None)
    yield database
    database.close()


def _member(db: Database, name: str) -> str:
    instance = uuid.uuid4().hex
    db.transact(lambda tx: nodes.register(tx, instance, name, f"http://{name}.internal:18800", 10.0))
    return instance


def _owns(db: Database, session_id: str, instance: str) -> Lease:
    lease = db.transact(lambda tx: acquire(tx, session_id, instance))
    assert isinstance(lease, Lease), lease
    return lease


def _dies(db: Database, instance: str) -> None:
    sql(db, "UPDATE cluster_nodes SET expires_at = now() - interval '1 second' WHERE instance_id = ?", (instance,))


def test_a_heartbeat_renews_a_live_member_and_tells_a_dead_one_it_is_over(db: Database) -> None:
    a = _member(db, "a")
    left = db.transact(lambda tx: nodes.heartbeat(tx, a, 10.0))
    assert left is not None and 9.0 < left <= 10.0
    _dies(db, a)
    assert db.transact(lambda tx: nodes.heartbeat(tx, a, 10.0)) is None
    assert sql(db, "SELECT expires_at < now() FROM cluster_nodes WHERE instance_id = ?", (a,)) == [(True,)]


def test_one_live_owner_per_conversation_and_a_dead_owners_conversation_moves_on(db: Database) -> None:
    a, b = _member(db, "a"), _member(db, "b")
    first = _owns(db, "conv-1", a)
    assert first == Lease("conv-1", a, 1)
    assert db.transact(lambda tx: acquire(tx, "conv-1", a)) == first  # already ours: same epoch
    assert db.transact(lambda tx: acquire(tx, "conv-1", b)) == Elsewhere("conv-1", "a", "http://a.internal:18800")

    _dies(db, a)
    taken = _owns(db, "conv-1", b)
    assert taken == Lease("conv-1", b, 2)

    with pytest.raises(LeaseLost, match="moved to another node"):
        db.transact(lambda tx: fence(tx, first))
    assert db.transact(lambda tx: release(tx, first)) is False  # the old owner cannot free it either
    db.transact(lambda tx: fence(tx, taken))


def test_a_released_conversation_is_taken_by_the_next_node_with_a_new_epoch(db: Database) -> None:
    a, b = _member(db, "a"), _member(db, "b")
    lease = _owns(db, "conv-2", a)
    assert db.transact(lambda tx: release(tx, lease)) is True
    assert db.transact(lambda tx: acquire(tx, "conv-2", b)) == Lease("conv-2", b, 2)


def test_a_clean_stop_frees_every_conversation_and_singleton_at_once(db: Database) -> None:
    a, b = _member(db, "a"), _member(db, "b")
    db.transact(lambda tx: acquire(tx, "conv-3", a))
    assert db.transact(lambda tx: acquire_named(tx, "telegram:bot", a, 30.0)) == 1
    db.transact(lambda tx: nodes.stop(tx, a))
    assert db.transact(lambda tx: acquire(tx, "conv-3", b)) == Lease("conv-3", b, 2)
    assert db.transact(lambda tx: acquire_named(tx, "telegram:bot", b, 30.0)) == 2
    status = db.transact(cluster_status, write=False)
    assert [(n.node_id, n.alive, n.conversations) for n in status.nodes] == [("b", True, 1)]
    assert [(lease.name, lease.node_id, lease.epoch) for lease in status.named_leases] == [("telegram:bot", "b", 2)]


def test_a_takeover_waits_for_a_fenced_write_in_progress_and_the_write_is_kept(db: Database) -> None:
    a, b = _member(db, "a"), _member(db, "b")
    lease = _owns(db, "conv-4", a)
    sql(db, "CREATE TABLE history (session_id TEXT, seq BIGINT, PRIMARY KEY (session_id, seq))")
    fenced, go_on = threading.Event(), threading.Event()

    def slow_write(tx: Tx) -> None:
        fence(tx, lease)
        tx.execute("INSERT INTO history VALUES ('conv-4', 1)")
        fenced.set()
        go_on.wait(10)

    writer = threading.Thread(target=lambda: db.transact(slow_write))
    writer.start()
    assert fenced.wait(10)
    _dies(db, a)
    taken: list[Lease | Elsewhere] = []
    taker = threading.Thread(target=lambda: taken.append(db.transact(lambda tx: acquire(tx, "conv-4", b))))
    taker.start()
    taker.join(0.5)
    assert taker.is_alive() and taken == []  # held by the write's FOR SHARE
    go_on.set()
    writer.join(10)
    taker.join(10)
    assert taken == [Lease("conv-4", b, 2)]
    assert sql(db, "SELECT seq FROM history") == [(1,)]

    def late_write(tx: Tx) -> None:
        fence(tx, lease)
        tx.execute("INSERT INTO history VALUES ('conv-4', 2)")

    with pytest.raises(LeaseLost):
        db.transact(late_write)
    assert sql(db, "SELECT seq FROM history") == [(1,)]


def test_a_named_lease_moves_only_when_its_holder_stops_renewing(db: Database) -> None:
    a, b = _member(db, "a"), _member(db, "b")
    assert db.transact(lambda tx: acquire_named(tx, "telegram:1", a, 30.0)) == 1
    assert db.transact(lambda tx: acquire_named(tx, "telegram:1", b, 30.0)) is None
    assert db.transact(lambda tx: acquire_named(tx, "telegram:1", a, 30.0)) == 1  # renewed, same epoch
    sql(db, "UPDATE named_leases SET expires_at = now() - interval '1 second' WHERE name = 'telegram:1'")
    assert db.transact(lambda tx: acquire_named(tx, "telegram:1", b, 30.0)) == 2
    assert db.transact(lambda tx: acquire_named(tx, "telegram:1", a, 30.0)) is None


def test_many_nodes_racing_for_one_conversation_leave_exactly_one_owner(db: Database) -> None:
    members = [_member(db, f"n{i}") for i in range(6)]
    results: list[Lease | Elsewhere] = []
    lock = threading.Lock()

    def race(instance: str) -> None:
        outcome = db.transact(lambda tx: acquire(tx, "conv-5", instance))
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=race, args=(m,)) for m in members]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    owners = [r for r in results if isinstance(r, Lease)]
    assert len(results) == 6 and len(owners) == 1 and owners[0].epoch == 1
    winner = f"n{members.index(owners[0].owner)}"
    assert all(isinstance(r, Elsewhere) and r.node_id == winner for r in results if r not in owners)
