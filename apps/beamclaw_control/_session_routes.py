"""The conversations: list, open, read, forget, stop a turn, answer an approval.

Every route reaches only the conversations of users the principal may act as (an admin,
or a token without a ``users`` list, reaches all): a session named by id is looked up
first and refused (403) when its user is outside that reach, so an operator never reads,
stops, forgets or approves in another token's conversation. A session id may be given
whole or as a unique prefix, as `beamclaw sessions` prints it.
"""

from __future__ import annotations

from typing import Any, Final

from quart import Blueprint, Response, request

import beamclaw_core as core
from beamclaw_gateway import BadRequest, Forbidden, Role, error, json_body, needs, principal

from ._common import answer, handle_errors, text_field


def handle_name_errors(blueprint: Blueprint) -> Blueprint:
    """Register on *blueprint*'s routes the answers to a user or agent name that is refused
    (400) or an agent that does not exist (404); *blueprint*."""

    @blueprint.errorhandler(core.InvalidUserId)
    async def bad_user(exc: core.InvalidUserId) -> Response:
        return error(f"'user' is refused: {exc}", 400)

    @blueprint.errorhandler(core.InvalidAgentName)
    async def bad_agent(exc: core.InvalidAgentName) -> Response:
        if isinstance(exc, core.UnknownAgent):
            return error(str(exc), 404, "not_found")
        return error(str(exc), 400)

    return blueprint


session_routes = handle_name_errors(handle_errors(Blueprint("session_routes", __name__)))

#: The channels a client may open a conversation on (and run its turns from): the terminal's,
#: an MCP host's (its /yes answers only its own), and the web console's.
CHANNELS: Final = frozenset({"cli", "mcp", "console"})
#: The most conversations one list returns.
_MAX_LIMIT: Final = 1_000_000
_ANSWERS: Final = frozenset({"yes", "no", "always"})


def channel_field(body: dict[str, Any]) -> str:
    """The body's ``channel`` (``cli`` when absent), one of `CHANNELS`."""
    channel = body.get("channel", "cli")
    if channel not in CHANNELS:
        raise BadRequest(f'"channel" must be one of {", ".join(sorted(CHANNELS))}')
    return str(channel)


async def own_session(prefix: str) -> core.SessionSummary:
    """The stored conversation *prefix* names, if the principal may reach it (else `Forbidden`)."""
    summary = await core.find_session(prefix)
    who = principal()
    if not who.may_act_as(summary.user_id):
        raise Forbidden(f"session {summary.id[:12]} is another user's; this token may not act as its user")
    who.check_agent(summary.agent_id)
    return summary


async def own_handle(prefix: str) -> core.SessionHandle:
    """A handle on the conversation *prefix* names (see `own_session`), started if it sleeps."""
    return await core.reopen_session(await own_session(prefix))


async def named_session(body: dict[str, Any], channel: str) -> core.SessionHandle:
    """The conversation of the body's ``user`` (a name within the principal's reach; none:
    its own user) with its ``agent`` (none: the default agent), opened on *channel*."""
    who = principal()
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise BadRequest('"user" must be a string')
    user_id = who.check_user(core.check_user_id(who.user_for(user or None)))
    agent = body.get("agent") or (await core.known_agents())[1]
    if not isinstance(agent, str):
        raise BadRequest('"agent" must be the name of an agent')
    who.check_agent(core.check_agent_name(agent))
    return await core.open_session(user_id, agent, channel)  # `UnknownAgent` (404) when there is none


def handle_fields(handle: core.SessionHandle) -> dict[str, str]:
    return {"id": handle.id, "user_id": handle.user_id, "agent_id": handle.agent_id, "channel": handle.channel}


async def _listed(summary: core.SessionSummary) -> dict[str, Any]:
    usage = await core.stored_context_usage(summary)
    return {
        "id": summary.id, "user_id": summary.user_id, "agent_id": summary.agent_id, "channel": summary.channel,
        "messages": summary.messages, "created_at": summary.created_at, "last_active": summary.updated_at,
        "running": summary.running, "context_used": usage.used, "context_window": usage.window,
    }  # fmt: skip


@session_routes.get("/v1/sessions")
@needs(Role.OPERATOR)
async def sessions() -> Response:
    """The conversations used last, newest first (``?limit=N``, 50 by default), of the
    principal's users only, each with its last activity and how full its context is."""
    raw = request.args.get("limit", "50")
    if not raw.isdigit() or not 1 <= int(raw) <= _MAX_LIMIT:
        raise BadRequest(f'"limit" must be a whole number from 1 to {_MAX_LIMIT}')
    who = principal()
    found, total = await core.list_sessions(int(raw), who.users)
    listed = [await _listed(summary) for summary in found if who.may_use(summary.agent_id)]
    return answer({"sessions": listed, "total": total})


@session_routes.post("/v1/sessions")
@needs(Role.OPERATOR)
async def open_session() -> Response:
    """Open (or find) the conversation of ``{user, agent, channel?}``."""
    body = await json_body("{user, agent, channel?}")
    return answer({"session": handle_fields(await named_session(body, channel_field(body)))})


@session_routes.get("/v1/sessions/<prefix>")
@needs(Role.OPERATOR)
async def session(prefix: str) -> Response:
    """One conversation, and how full its context window is (from what is stored: a
    sleeping conversation is not woken to be looked at)."""
    summary = await own_session(prefix)
    listed = await _listed(summary)
    context = {"used": listed["context_used"], "window": listed["context_window"], "messages": summary.messages}
    return answer({"session": listed, "context": context})


@session_routes.get("/v1/sessions/<prefix>/history")
@needs(Role.OPERATOR)
async def history(prefix: str) -> Response:
    """The conversation's messages, in OpenAI's shape."""
    handle = await own_handle(prefix)
    messages = [message.to_openai() for message in await core.history(handle)]
    return answer({"session": handle_fields(handle), "messages": messages})


@session_routes.delete("/v1/sessions/<prefix>")
@needs(Role.OPERATOR)
async def forget(prefix: str) -> Response:
    """Forget the conversation, as ``/new`` does: how many messages were dropped."""
    return answer({"dropped": await core.reset_session(await own_handle(prefix))})


@session_routes.post("/v1/sessions/<prefix>/stop")
@needs(Role.OPERATOR)
async def stop(prefix: str) -> Response:
    """Stop the turn being worked on (``/stop``, Ctrl-C): whether there was one."""
    return answer({"stopped": await core.stop_turn(await own_handle(prefix))})


@session_routes.post("/v1/sessions/<prefix>/approval")
@needs(Role.OPERATOR)
async def approval(prefix: str) -> Response:
    """Answer the approval the conversation waits for: an admin's (the owner's socket, as
    `beamclaw approve`) whichever channel asked; another principal's only one its own runs
    asked (another client acting as the same user approves nothing); 409 when nothing waits."""
    word = text_field(await json_body("{answer: yes|no|always}"), "answer")
    if word not in _ANSWERS:
        raise BadRequest('"answer" must be "yes", "no" or "always"')
    who = principal()
    answered = await core.answer_approval(await own_handle(prefix), word, None if who.role >= Role.ADMIN else who.name)
    if answered == "none":
        return error("that conversation is not waiting for an approval", 409, "nothing_waits")
    return answer({"answer": answered})
