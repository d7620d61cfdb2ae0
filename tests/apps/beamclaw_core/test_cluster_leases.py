"""Conversations in a cluster: one live owner each, every write fenced by its epoch.

The node under test runs core on PostgreSQL; the other node is rows in the registry
(a second daemon is the daemon tests' business), made alive, dead or a taker-over by SQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import beamclaw_cluster as cluster
import beamclaw_core as core
from beamclaw_base import Database, StoreConfig, open_store
from tests.support.model_server import Reply
from tests.support.stores import sql

from .conftest import RunCore, session_store

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _cluster_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAMCLAW_CLUSTER_SECRET", "cluster-secret-of-the-test-0123456789")


_NODE = {"enabled": True, "node_id": "node-a", "advertise_url": "http://127.0.0.1:18801", "lease_seconds": 30.0,
         "secret": {"env": "BEAMCLAW_CLUSTER_SECRET"}}  # fmt: skip
_ALICE = core.session_id("local:alice", "default")


@pytest.fixture
def registry(postgres_store_config: StoreConfig) -> Iterator[Database]:
    db = open_store(postgres_store_config, cluster.SCHEMA, sqlite_file=None)
    yield db
    db.close()


def _other_node(db: Database, name: str = "node-b") -> str:
    instance = uuid.uuid4().hex
    db.transact(lambda tx: cluster._nodes.register(tx, instance, name, f"http://{name}.internal:18800", 30.0))
    return instance


async def test_a_conversation_a_live_node_owns_is_not_opened_here_but_pointed_to(
    run_core: RunCore, postgres_store_config: StoreConfig, registry: Database
) -> None:
    other = _other_node(registry)
    registry.transact(lambda tx: cluster.acquire(tx, _ALICE, other))
    async with run_core(store=postgres_store_config, cluster=_NODE) as r:
        with pytest.raises(core.OwnedElsewhere) as elsewhere:
            await r.open()
        assert elsewhere.value.where == cluster.Elsewhere(_ALICE, "node-b", "http://node-b.internal:18800")
        assert "node-b" in str(elsewhere.value)
        bob = await r.open("local:bob")  # not owned by anyone: this node takes it
        await core.send_message(bob, "hello", core.CollectingChannel())


async def test_a_dead_owners_conversation_is_taken_over_with_its_history(
    run_core: RunCore, postgres_store_config: StoreConfig, registry: Database, tmp_path: Path
) -> None:
    other = _other_node(registry)
    async with run_core(Reply("noted"), store=postgres_store_config, cluster=_NODE, home=tmp_path / "b") as r:
        pass  # the schema and an old conversation written by "node-b" below
    registry.transact(lambda tx: cluster.acquire(tx, _ALICE, other))
    with session_store(tmp_path, postgres_store_config) as db:
        sql(db, "INSERT INTO sessions (id, user_id, agent_id, channel, created_at, updated_at) "
                "VALUES (?, 'local:alice', 'default', '', 0, 0)", (_ALICE,))  # fmt: skip
        sql(db, "INSERT INTO messages VALUES (?, 0, ?)", (_ALICE, core.Message("user", "my name is Ada").to_record()))
    sql(registry, "UPDATE cluster_nodes SET expires_at = now() - interval '1 second' WHERE instance_id = ?", (other,))

    async with run_core(Reply("You are Ada."), store=postgres_store_config, cluster=_NODE) as r:
        session = await r.open()
        result = await core.send_message(session, "who am I?", core.CollectingChannel())
        assert result.ok and result.text == "You are Ada."
        sent = [m["content"] for m in r.model.requests[0]["messages"][1:]]
        assert sent == ["my name is Ada", "who am I?"]
    assert sql(registry, "SELECT epoch FROM conversation_leases WHERE session_id = ?", (_ALICE,)) == [(2,)]


async def test_a_node_whose_conversation_was_taken_writes_nothing_more_and_lets_it_go(
    run_core: RunCore, postgres_store_config: StoreConfig, registry: Database, tmp_path: Path
) -> None:
    async with run_core(Reply("first answer"), Reply("never stored"), store=postgres_store_config, cluster=_NODE) as r:
        session = await r.open()
        assert (await core.send_message(session, "first", core.CollectingChannel())).ok
        # This node was cut off long enough to be taken for dead, and node-b took the conversation.
        me = sql(registry, "SELECT instance_id FROM cluster_nodes WHERE node_id = 'node-a'")[0][0]
        sql(registry, "UPDATE cluster_nodes SET expires_at = now() - interval '1 second' WHERE instance_id = ?", (me,))
        other = _other_node(registry)
        taken = registry.transact(lambda tx: cluster.acquire(tx, _ALICE, other))
        assert taken == cluster.Lease(_ALICE, other, 2)

        result = await core.send_message(session, "second", core.CollectingChannel())
        assert not result.ok
        with trio.fail_after(60), pytest.raises(core.OwnedElsewhere):  # the tree stops; then node-b is named
            while True:
                await r.open()
                await trio.sleep(0.05)
        with session_store(tmp_path, postgres_store_config) as db:
            stored = sql(db, "SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (_ALICE,))
        assert [core.Message.from_record(m).content for (m,) in stored] == ["first", "first answer"]


async def test_the_cleaner_leaves_a_live_nodes_conversation_to_it(
    run_core: RunCore, postgres_store_config: StoreConfig, registry: Database, tmp_path: Path
) -> None:
    other = _other_node(registry)
    async with run_core(store=postgres_store_config, cluster=_NODE, session_ttl_seconds=60) as r:
        with session_store(tmp_path, postgres_store_config) as db:
            for sid, owner in (("kept-by-b", other), ("nobodys", None)):
                sql(db, "INSERT INTO sessions (id, user_id, agent_id, channel, created_at, updated_at) "
                        "VALUES (?, 'local:x', 'default', '', 0, 0)", (sid,))  # fmt: skip
                if owner is not None:
                    registry.transact(lambda tx, sid=sid, owner=owner: cluster.acquire(tx, sid, owner))
            assert await core.sweep_expired() == ["nobodys"]
            assert sql(db, "SELECT id FROM sessions") == [("kept-by-b",)]
        await r.settle()
