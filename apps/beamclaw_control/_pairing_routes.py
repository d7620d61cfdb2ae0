"""Pairing: the chat users waiting with a code, the ones paired, approve and revoke.

Who may reach an agent from a chat channel at all is the owner's decision: an admin's
only. Each change is one transaction in the session store (where the channels read a
pairing again at each message), as `beamclaw pair` makes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import trio
from quart import Blueprint, Response

import beamclaw_core as core
from beamclaw_base import Tx
from beamclaw_gateway import BadRequest, Role, context, json_body, needs

from ._common import answer, handle_errors, text_field
from ._daemon_config import default_agent, session_store

pairing_routes = handle_errors(Blueprint("pairing_routes", __name__))

R = TypeVar("R")


async def _in_store(work: Callable[[Tx], R], *, write: bool = True) -> R:
    """*work* in one transaction of the session store (``[store]``: SQLite's ``sessions.db``
    in the data dir, or PostgreSQL), opened for the request as the command line opens it
    (SQLite in WAL mode: beside the daemon's own connection)."""
    store, data_dir = await session_store(), context().data_dir

    def once() -> R:
        db = core.open_session_store(store, data_dir)
        try:
            return db.transact(work, write=write)
        finally:
            db.close()

    try:
        return await trio.to_thread.run_sync(once)
    except core.StoreError as exc:
        raise BadRequest(f"the session store cannot be used now: {exc}", 503, "unavailable") from None


@pairing_routes.get("/v1/pairing")
@needs(Role.ADMIN)
async def list_pairing() -> Response:
    """``{pending: [{channel, code, user_id, display, created_at}], approved: [{channel, user_id,
    agent_id, approved_at, linked_user}]}``."""
    codes, users = await _in_store(lambda tx: (core.pending(tx), core.paired(tx)), write=False)
    return answer({"pending": [attrs.asdict(c) for c in codes], "approved": [attrs.asdict(u) for u in users]})


@pairing_routes.post("/v1/pairing/approve")
@needs(Role.ADMIN)
async def approve() -> Response:
    """``{channel, code, agent?}``: allow the user who asked for *code*, with *agent* (the
    default one when absent); ``{user, channel, agent}``."""
    body = await json_body("a pairing code to approve: channel, code, agent")
    default = await default_agent()
    channel, code = text_field(body, "channel"), text_field(body, "code")
    agent: Any = body.get("agent") or default
    if not isinstance(agent, str):
        raise BadRequest('"agent" must be the name of an agent')
    try:
        agent = core.check_agent_exists(context().data_dir, agent, default)
    except core.UnknownAgent as exc:
        raise BadRequest(str(exc), 404, "not_found") from None
    except core.InvalidAgentName as exc:
        raise BadRequest(str(exc)) from None
    try:
        user = await _in_store(lambda tx: core.approve(tx, channel, code, agent))
    except core.PairingError as exc:  # no such code pending (or it expired)
        raise BadRequest(str(exc), 404, "not_found") from None
    return answer({"user": user, "channel": channel, "agent": agent})


@pairing_routes.post("/v1/pairing/revoke")
@needs(Role.ADMIN)
async def revoke() -> Response:
    """``{channel, user}``: take the user's pairing (and link) away; ``{revoked: user, channel}``."""
    body = await json_body("a paired user to revoke: channel, user")
    channel, user = text_field(body, "channel"), text_field(body, "user")
    if not await _in_store(lambda tx: core.revoke(tx, channel, user)):
        raise BadRequest(f"{user} is not paired on {channel}", 404, "not_found")
    return answer({"revoked": user, "channel": channel})
