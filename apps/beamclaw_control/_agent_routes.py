"""The agents, their skills, and what their model calls cost: read by any role.

A principal sees only the agents it may talk to (``agents`` patterns of its token).
The usage report counts tokens per agent and UTC day, prompt and completion apart, as
core records them after every model call, and each agent's spend of today against its
daily budget (`beamclaw_core.budgets`).
"""

from __future__ import annotations

from typing import Final

from quart import Blueprint, Response, request

import beamclaw_core as core
from beamclaw_gateway import BadRequest, Role, needs, principal

from ._common import answer, handle_errors

agent_routes = handle_errors(Blueprint("agent_routes", __name__))

#: The most days one usage report covers.
MAX_DAYS: Final = 366


@agent_routes.get("/v1/agents")
@needs(Role.VIEWER)
async def agents() -> Response:
    names, default = await core.known_agents()
    who = principal()
    return answer({"agents": [{"name": name, "default": name == default} for name in names if who.may_use(name)]})


@agent_routes.get("/v1/skills")
@needs(Role.VIEWER)
async def skills() -> Response:
    """Every skill of every agent the principal may use, whether it can run here or not."""
    names, _ = await core.known_agents()
    who = principal()
    found = []
    for agent in (name for name in names if who.may_use(name)):
        agent_skills, _ = await core.agent_skills(agent)
        found += [
            {"name": skill.name, "description": skill.description, "agent": agent, "eligible": skill.eligible}
            for skill in sorted(agent_skills.values(), key=lambda skill: skill.name)
        ]
    return answer({"skills": found})


@agent_routes.get("/v1/usage")
@needs(Role.VIEWER)
async def usage() -> Response:
    """The tokens of the last ``?days=N`` UTC days (7 by default), today's included, and the budgets."""
    raw = request.args.get("days", "7")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_DAYS:
        raise BadRequest(f'"days" must be a whole number from 1 to {MAX_DAYS}')
    who = principal()
    days = [
        {"day": row.day, "agent": row.agent_id, "prompt_tokens": row.prompt_tokens,
         "completion_tokens": row.completion_tokens, "total_tokens": row.total_tokens}
        for row in await core.token_days(int(raw)) if who.may_use(row.agent_id)
    ]  # fmt: skip
    budgets = [
        {"agent": use.agent_id, "daily_tokens": use.daily_tokens, "used_today": use.used_today}
        for use in await core.budgets() if who.may_use(use.agent_id)
    ]  # fmt: skip
    return answer({"days": days, "budgets": budgets})
