"""Which tool calls may run: the policy before anyone is asked."""

from __future__ import annotations

import enum
from collections.abc import Collection
from typing import Any

from beamclaw_tools import Autonomy, Tool, ToolError, approval_reason, parse_arguments


class Decision(enum.Enum):
    APPROVE = "approve"
    DENY = "deny"
    ASK = "ask"


def allow_key(tool: Tool, args: str | dict[str, Any] | None) -> str:
    """What ``/always`` allows for the rest of the conversation when *tool* is called with *args*.

    A tool that runs a command (its parameters have a ``command``: bash, terminal) is
    allowed for that very command only, ``bash\x00git status``: "always" answers what was
    asked, and must not let the model run any later command unasked. Any other tool is
    allowed by name.
    """
    name = tool.definition.name
    if "command" not in tool.definition.parameters.get("properties", {}):
        return name
    try:
        command = parse_arguments(name, args).get("command")
    except ToolError:
        command = None
    return f"{name}\x00{command}" if isinstance(command, str) else f"{name}\x00"


def decide(
    tool: Tool, autonomy: Autonomy, allowlist: Collection[str], args: str | dict[str, Any] | None = None
) -> tuple[Decision, str]:
    """The decision for one call, and its reason: given to the model when the call is
    denied, and, when the user is asked, why (empty when it is just the tool's setting).

    A tool needing more autonomy than the agent has is denied. Then the call itself, by
    its *args* (the raw JSON text or the parsed object): a call the tool marks as
    needing approval (`beamclaw_tools.approval_reason`: ``write_file`` or
    ``delete_file`` of a file that enters the system prompt of a single-user agent,
    ``AGENTS.md``, ``skills/x/SKILL.md``...; a multi-user agent's loop refuses those
    before asking, see `beamclaw_tools.refusal_reason`) asks the user under
    ``supervised`` *every time*: the
    session allowlist does not cover it, since "always allow write_file" given for notes
    must not let a hostile model rewrite the agent's own rules. ``full`` autonomy
    approves it (the user asked never to be asked, and bash writes the workspace
    anyway) and ``read_only`` denies it.

    Otherwise a tool that needs no approval runs; then the session allowlist approves,
    ``full`` autonomy approves, ``read_only`` denies, and anything else asks the user.
    """
    name = tool.definition.name
    if autonomy < tool.min_autonomy:
        return (
            Decision.DENY,
            f"{name} needs autonomy {tool.min_autonomy.name.lower()}; this agent is {autonomy.name.lower()}",
        )
    reason = approval_reason(tool, args) if args is not None else None
    if reason is not None:
        if autonomy is Autonomy.FULL:
            return Decision.APPROVE, ""
        if autonomy is Autonomy.READ_ONLY:
            return Decision.DENY, f"{reason}, and this agent is read_only"
        return Decision.ASK, reason
    if not tool.requires_approval or allow_key(tool, args) in allowlist or autonomy is Autonomy.FULL:
        return Decision.APPROVE, ""
    if autonomy is Autonomy.READ_ONLY:
        return Decision.DENY, f"{name} needs approval, and this agent is read_only"
    return Decision.ASK, ""
