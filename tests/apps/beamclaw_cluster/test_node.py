"""The node process: it joins at start, keeps itself alive, joins afresh when the cluster
took it for dead, and leaves at stop."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import trio

import supervision as sv
from beamclaw_base import StoreConfig, open_store
from beamclaw_cluster import NODE, SCHEMA, Lease, acquire, membership, supervision_tree
from beamclaw_cluster._node import Beat
from tests.support.stores import sql

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _cluster_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAMCLAW_CLUSTER_SECRET", "cluster-secret-of-the-test-0123456789")


_TABLE = {"enabled": True, "node_id": "node-a", "advertise_url": "http://127.0.0.1:18801",
          "lease_seconds": 3.0, "secret": {"env": "BEAMCLAW_CLUSTER_SECRET"}}  # fmt: skip


async def test_a_node_joins_renews_rejoins_after_being_taken_for_dead_and_leaves(
    postgres_store_config: StoreConfig, tmp_path: Path
) -> None:
    db = open_store(postgres_store_config, SCHEMA, sqlite_file=None)
    try:
        assert await membership() is None  # no cluster app: one node
        async with sv.open_supervisor(supervision_tree(_TABLE, tmp_path, postgres_store_config)):
            first = await membership()
            assert first is not None and first.node_id == "node-a" and first.alive()
            rows = sql(db, "SELECT node_id, advertise_url, expires_at > now() FROM cluster_nodes")
            assert rows == [("node-a", "http://127.0.0.1:18801", True)]
            lease = db.transact(lambda tx: acquire(tx, "conv-1", first.instance_id))
            assert isinstance(lease, Lease)

            await trio.sleep(2.5)  # past a lease/3 heartbeat: renewed, still the same member
            assert await membership() is first and first.alive()

            sql(db, "UPDATE cluster_nodes SET expires_at = now() - interval '1 second'")  # cut off too long
            await sv.call(NODE, Beat())
            second = await membership()
            assert second is not None and second.instance_id != first.instance_id
            assert not first.alive() and second.alive()
            # The new member owns nothing of the old one's, and takes it as a new epoch.
            taken = db.transact(lambda tx: acquire(tx, "conv-1", second.instance_id))
            assert taken == Lease("conv-1", second.instance_id, lease.epoch + 1)
        stopped = sql(db, "SELECT count(*) FROM cluster_nodes WHERE stopped_at IS NULL AND expires_at > now()")
        assert stopped == [(0,)]
        assert sql(db, "SELECT owner FROM conversation_leases") == [(None,)]
    finally:
        db.close()


async def test_a_node_without_its_secret_in_the_environment_does_not_start_and_says_which(
    postgres_store_config: StoreConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BEAMCLAW_CLUSTER_SECRET")
    with pytest.raises(BaseException) as failed:
        async with sv.open_supervisor(supervision_tree(_TABLE, tmp_path, postgres_store_config)):
            pass
    assert "BEAMCLAW_CLUSTER_SECRET" in "".join(traceback.format_exception(failed.value))
