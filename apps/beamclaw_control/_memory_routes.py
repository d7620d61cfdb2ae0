"""The agents' long-term memory: search, reindex, status.

A search without a user sees the agent's files only (everyone's); with one, that user's
past conversations with the agent too, and the user must be one the principal may act
as: an operator never reads another user's conversations through memory.
"""

from __future__ import annotations

from typing import Final

import attrs
from quart import Blueprint, Response, request

import beamclaw_core as core
import beamclaw_memory as memory
from beamclaw_gateway import BadRequest, Role, context, json_body, needs, principal

from ._common import answer, handle_errors
from ._daemon_config import default_agent, search_limit

memory_routes = handle_errors(Blueprint("memory_routes", __name__))

#: The most hits one search returns.
MAX_HITS: Final = 50


async def _agent(name: object) -> str:
    """The agent a request names (absent: the default one); it must exist and be the principal's."""
    default = await default_agent()
    if name is None or name == "":
        name = default
    if not isinstance(name, str):
        raise BadRequest('"agent" must be the name of an agent, or absent for the default one')
    try:
        return core.check_agent_exists(context().data_dir, principal().check_agent(name), default)
    except core.UnknownAgent as exc:
        raise BadRequest(str(exc), 404, "not_found") from None
    except core.InvalidAgentName as exc:
        raise BadRequest(str(exc)) from None


async def _limit(text: str | None) -> int:
    if text is None or text == "":
        return await search_limit()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_HITS:
        raise BadRequest(f'"limit" must be a whole number from 1 to {MAX_HITS}')
    return int(text)


def _refusal(exc: Exception) -> BadRequest:
    """What a memory call's failure answers: the app away (503), or a request it refused (400)."""
    if isinstance(exc, memory.MemoryUnavailable):
        return BadRequest(str(exc), 503, "unavailable")
    return BadRequest(str(exc))


@memory_routes.get("/v1/memory/search")
@needs(Role.OPERATOR)
async def search() -> Response:
    """``?q=&agent=&user=&limit=``: the passages best matching *q*, with their lines."""
    query = request.args.get("q", "")
    if not query.strip():
        raise BadRequest('"q" must say what to look for')
    if len(query) > memory.MAX_QUERY_CHARS:
        raise BadRequest(f"a memory query is at most {memory.MAX_QUERY_CHARS} characters")
    agent = await _agent(request.args.get("agent"))
    limit = await _limit(request.args.get("limit"))
    user = None
    if (name := request.args.get("user")) is not None:
        if not name:
            raise BadRequest('"user" must be a non-empty string (or absent: the agent\'s files only)')
        who = principal()
        try:
            user = core.check_user_id(who.check_user(who.user_for(name)))
        except core.InvalidUserId as exc:
            raise BadRequest(str(exc)) from None
    try:
        result = await memory.search(agent, query, owner=user, limit=limit)
    except (memory.MemoryUnavailable, LookupError, ValueError) as exc:
        raise _refusal(exc) from None
    hits = [attrs.asdict(hit) for hit in result.hits]
    return answer({"agent": agent, "user": user, "hits": hits, "note": result.note})


@memory_routes.post("/v1/memory/reindex")
@needs(Role.ADMIN)
async def reindex() -> Response:
    """``{agent?}``: the agent's files indexed again from scratch; its new status."""
    body = await json_body("the agent to reindex, or {} for the default one")
    agent = await _agent(body.get("agent"))
    try:
        return answer({"status": await memory.reindex(agent)})
    except (memory.MemoryUnavailable, LookupError, ValueError) as exc:
        raise _refusal(exc) from None


@memory_routes.get("/v1/memory/status")
@needs(Role.VIEWER)
async def status() -> Response:
    """Each agent's memory the principal may use: documents, chunks, vectors, the embedder's last error."""
    who = principal()
    agents = [name for name in core.agent_names(context().data_dir, await default_agent()) if who.may_use(name)]
    try:
        found = await memory.status(agents)
    except (memory.MemoryUnavailable, LookupError, ValueError) as exc:
        raise _refusal(exc) from None
    return answer({"agents": [item for item in found if who.may_use(str(item["agent"]))]})
