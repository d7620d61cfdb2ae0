"""The node process: it joins the cluster at start, sends the heartbeat, and leaves at stop.

A heartbeat that finds this member already taken for dead (the database answered no
row: the lease ran out while the node was cut off or stalled) ends the membership at
once and joins again as a new member: every conversation the old member owned has moved
or will be taken afresh, and the writes of the old member are refused by their epochs.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

import attrs
import trio
from loguru import logger

import supervision as sv
from beamclaw_base import Database, StoreConfig, StoreError, open_store
from beamclaw_obs import emit

from . import _nodes as nodes
from ._config import ClusterConfig
from ._membership import Membership
from ._schema import SCHEMA

NODE: Final = "beamclaw_cluster.node"


@attrs.frozen
class WhoAmI(sv.Request[Membership]):
    """This node's current membership."""


@attrs.frozen
class Beat(sv.Request[None]):
    """Renew the membership now (sent by the heartbeat process)."""


@attrs.define
class _State:
    config: ClusterConfig
    database: Database
    membership: Membership


async def _join(config: ClusterConfig, database: Database) -> Membership:
    secret = config.secret.get("a cluster node") if config.secret is not None else ""
    member = Membership(uuid.uuid4().hex, config.node_id, config.advertise_url, config.lease_seconds, database, secret)
    await database.run(
        lambda tx: nodes.register(tx, member.instance_id, member.node_id, member.advertise_url, member.lease_seconds)
    )
    member.renewed(config.lease_seconds)
    emit("cluster_joined", node_id=member.node_id, instance_id=member.instance_id)
    logger.info("cluster: joined as {} ({})", member.node_id, member.instance_id)
    return member


class Node(sv.GenServer):
    """``call(NODE, WhoAmI())`` for the membership; joins in `init`, leaves in `terminate`."""

    async def init(self, config: ClusterConfig, store: StoreConfig) -> _State:
        if config.secret is not None:
            config.secret.get("a cluster node")  # MissingSecret, naming the variable, before anything is opened
        database = await trio.to_thread.run_sync(lambda: open_store(store, SCHEMA, sqlite_file=None))
        try:
            membership = await _join(config, database)
        except BaseException:
            await trio.to_thread.run_sync(database.close)
            raise
        sv.register(NODE)
        return _State(config, database, membership)

    async def handle_call(self, request: sv.Request[Any], caller: sv.Caller, state: _State) -> sv.Reply:
        match request:
            case WhoAmI():
                return sv.Reply(state.membership, state)
            case Beat():
                await self._beat(state)
                return sv.Reply(None, state)
        raise ValueError(f"unknown node request {request!r}")

    @staticmethod
    async def _beat(state: _State) -> None:
        member = state.membership
        try:
            left = await member.database.run(lambda tx: nodes.heartbeat(tx, member.instance_id, member.lease_seconds))
        except StoreError as exc:  # the database is away: the membership runs out on its own clock
            logger.warning("cluster: heartbeat failed ({}); this node acts for {:.1f} s more at most",
                           exc, max(0.0, member.valid_until - trio.current_time()))  # fmt: skip
            return
        if left is not None:
            member.renewed(left)
            return
        member.over()
        emit("cluster_fenced", node_id=member.node_id, instance_id=member.instance_id)
        logger.error("cluster: this node ({}) was taken for dead; joining again as a new member", member.instance_id)
        state.membership = await _join(state.config, state.database)

    async def terminate(self, reason: Any, state: _State) -> None:
        member = state.membership
        member.over()
        with trio.move_on_after(5), trio.CancelScope(shield=True):
            try:
                await member.database.run(lambda tx: nodes.stop(tx, member.instance_id))
            except StoreError as exc:
                logger.warning(
                    "cluster: could not say this node stopped ({}); it is taken for dead when its lease ends", exc
                )
        await trio.to_thread.run_sync(state.database.close)


async def heartbeat(lease_seconds: float, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Renew this node's membership three times per lease."""
    task_status.started()
    while True:
        await trio.sleep(lease_seconds / 3)
        await sv.call(NODE, Beat(), timeout=lease_seconds)


async def membership() -> Membership | None:
    """This node's membership, or None when it is not part of a cluster."""
    if sv.whereis(NODE) is None:
        return None
    member: Membership = await sv.call(NODE, WhoAmI())
    return member
