"""GET /ws: chat over a WebSocket, with streamed chunks and tool events.

The client sends ``{"type": "message", "id": "...", "text": "...", "agent"?, "user"?}``;
the server answers with ``run_started``, ``chunk`` (new text), ``message`` (an
approval question, an error), ``tool_call`` / ``tool_result``, and ``run_completed``,
each carrying the message id. A message id seen before (on this gateway, recently)
is answered with ``duplicate`` and not run again, so a client that resends after a
reconnect does not run a turn twice.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Final

import trio
from quart import Blueprint, current_app, websocket

import beamclaw_cluster as cluster
import beamclaw_core as core

from ._forwarding import ForwardedTurn, OwnerUnreachable, TurnRefused, forward_turn
from ._http_api import RESTARTING, context, principal
from ._rate_limit import ClientLimiter, retry_after
from ._request_models import MAX_MESSAGE_ID, WS_MESSAGE, WsMessage
from ._turns import BadRequest, agent_for, checked_text, parse_json, run_events, user_id

_REMEMBERED_IDS: Final = 10_000
ws_api = Blueprint("ws", __name__)
_seen: OrderedDict[tuple[str, str], None] = OrderedDict()


def _first_time(user: str, message_id: str) -> bool:
    key = (user, message_id)
    if key in _seen:
        return False
    _seen[key] = None
    while len(_seen) > _REMEMBERED_IDS:
        _seen.popitem(last=False)
    return True


def _parse(raw: str | bytes) -> WsMessage:
    message = WS_MESSAGE.parse(parse_json(raw, "a message"))
    if not message.id.isprintable():
        raise BadRequest(f"'id' must be a non-empty printable string of at most {MAX_MESSAGE_ID} characters")
    checked_text(message.text, "'text'")
    return message


@ws_api.websocket("/ws")
async def chat_socket() -> None:
    ctx = context()
    who = principal()
    header_user = websocket.headers.get("X-User-Id")
    limiter: ClientLimiter = current_app.config["RATE_LIMITER"]
    lock = trio.Lock()

    async def send(**event: Any) -> None:
        async with lock:
            await websocket.send(json.dumps(event))

    async def run(handle: core.SessionHandle, message_id: str, text: str) -> None:
        await send(type="run_started", id=message_id, session=handle.id)
        async for event in run_events(handle, text, who.origin("ws")):
            kind = event.pop("type")
            if kind == "done":
                result: core.TurnResult = event["result"]
                error = result.error.value if result.error else None
                await send(type="run_completed", id=message_id, ok=result.ok, text=result.text, error=error)
            elif kind in {"chunk", "message", "tool_call", "tool_result"}:
                await send(type=kind, id=message_id, **event)

    async def run_elsewhere(
        where: cluster.Elsewhere, member: cluster.Membership, message_id: str, turn: ForwardedTurn
    ) -> None:
        """A turn of a conversation another node owns: asked of it, its answer streamed here."""
        await send(type="run_started", id=message_id, session=where.session_id)
        parts: list[str] = []
        try:
            async for text in forward_turn(where, member, who, turn):
                parts.append(text)
                await send(type="chunk", id=message_id, text=text)
        except (OwnerUnreachable, TurnRefused) as exc:
            await send(type="run_completed", id=message_id, ok=False, text=str(exc), error="unavailable")
            return
        await send(type="run_completed", id=message_id, ok=True, text="".join(parts), error=None)

    await websocket.accept()
    async with trio.open_nursery() as nursery:
        while True:
            raw = await websocket.receive()
            try:
                message = _parse(raw)
                user = user_id(message.user, header_user, who)
                wait = limiter.check(websocket.remote_addr, user, trio.current_time())
                if wait is not None:
                    raise BadRequest(f"rate limit reached; retry in {retry_after(wait)} s", 429, "rate_limited")
                agent = agent_for(message.agent, ctx.data_dir, ctx.config.default_agent, who, "agent")
                handle = await core.open_session(user, agent, "ws")
            except core.OwnedElsewhere as elsewhere:
                if ctx.member is None or not _first_time(user, message.id):
                    await send(type="error", id=message.id, error=f"{elsewhere}; retry")
                    continue
                text = core.truncated(message.text, ctx.config.http.max_user_chars)
                turn = ForwardedTurn(user, agent, text)
                nursery.start_soon(run_elsewhere, elsewhere.where, ctx.member, message.id, turn)
                continue
            except (BadRequest, core.InvalidAgentName, core.InvalidUserId) as exc:
                await send(type="error", id=None, error=str(exc))
                continue
            except RESTARTING as exc:
                await send(type="error", id=message.id, error=f"BeamClaw is restarting ({type(exc).__name__}); retry")
                continue
            if not _first_time(user, message.id):
                await send(type="duplicate", id=message.id)
                continue
            text = core.truncated(message.text, ctx.config.http.max_user_chars)
            nursery.start_soon(run, handle, message.id, text)
