"""Which tool calls may run: the policy before anyone is asked."""

from __future__ import annotations

import enum
from collections.abc import Collection

from beamclaw_tools import Autonomy, Tool


class Decision(enum.Enum):
    APPROVE = "approve"
    DENY = "deny"
    ASK = "ask"


def decide(tool: Tool, autonomy: Autonomy, allowlist: Collection[str]) -> tuple[Decision, str]:
    """The decision for one call, and the reason given to the model when it is denied.

    A tool needing more autonomy than the agent has is denied; a tool that needs no
    approval runs; then the session allowlist approves, ``full`` autonomy approves,
    ``read_only`` denies, and anything else asks the user.
    """
    name = tool.definition.name
    if autonomy < tool.min_autonomy:
        return (
            Decision.DENY,
            f"{name} needs autonomy {tool.min_autonomy.name.lower()}; this agent is {autonomy.name.lower()}",
        )
    if not tool.requires_approval or name in allowlist or autonomy is Autonomy.FULL:
        return Decision.APPROVE, ""
    if autonomy is Autonomy.READ_ONLY:
        return Decision.DENY, f"{name} needs approval, and this agent is read_only"
    return Decision.ASK, ""
