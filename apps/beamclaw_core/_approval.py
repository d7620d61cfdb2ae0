"""Which tool calls may run: the policy before anyone is asked."""

from __future__ import annotations

import enum
from collections.abc import Collection
from typing import Any

from beamclaw_tools import Autonomy, Tool, Verdict, approval_reason, command_verdict, exact_pattern


class Decision(enum.Enum):
    APPROVE = "approve"
    DENY = "deny"
    ASK = "ask"


def allow_keys(tool: Tool, args: str | dict[str, Any] | None) -> tuple[str, ...]:
    """What ``/always`` adds to the conversation's allowlist when *tool*, called with
    *args*, asks; empty when ``/always`` cannot cover this call (the question then
    offers only /yes and /no).

    A tool under permission rules (bash, terminal) adds the exact simple commands that
    made it ask, one pattern each, ``bash\\x00git push origin main``: "always" answers
    what was asked, so the same command runs unasked next time and no other does. A
    wider pattern (``git push *``) is the user's to write in ``[tools.bash] allow``:
    it is not taken from a chat answer to a question the model chose. Nothing is offered
    when an ``ask`` rule matched (it would ask again anyway), when the line could not be
    split, or when a word is computed (``$x``: no exact pattern exists). A call the tool
    marks as needing approval every time (a prompt file) adds nothing; any other tool is
    allowed by name.
    """
    if args is not None and approval_reason(tool, args) is not None:
        return ()
    verdict = command_verdict(tool, args, ()) if args is not None else None
    if verdict is None:
        return (tool.definition.name,)
    patterns = [exact_pattern(command) for command in verdict.asking]
    if verdict.reason or not patterns or None in patterns:
        return ()
    return tuple(f"{tool.definition.name}\x00{pattern}" for pattern in patterns)


def describe_keys(keys: Collection[str]) -> str:
    """*keys* as the question names them: commands in backticks, tools by name."""
    return ", ".join(f"`{key.partition(chr(0))[2]}`" if "\x00" in key else key for key in keys)


def _asking(verdict: Verdict) -> str:
    if verdict.reason:
        return verdict.reason
    return "not in the allow list: " + "; ".join(f"`{command.text}`" for command in verdict.asking)


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

    A tool under permission rules (`beamclaw_tools.command_verdict`: bash, terminal)
    is decided by them: a deny rule refuses; a line whose simple commands all match
    ``allow`` (or the session's ``/always`` patterns) runs under every autonomy;
    otherwise ``full`` runs it, ``read_only`` refuses it and ``supervised`` asks, the
    reason naming the simple commands that asked.

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
    verdict = command_verdict(tool, args, allowlist) if args is not None else None
    if verdict is not None:
        if verdict.denied is not None:
            return Decision.DENY, f"command refused: {verdict.denied}"
        if verdict.allowed or autonomy is Autonomy.FULL:
            return Decision.APPROVE, ""
        if autonomy is Autonomy.READ_ONLY:
            return Decision.DENY, f"{name}: {_asking(verdict)}, and this agent is read_only"
        return Decision.ASK, _asking(verdict)
    if not tool.requires_approval or name in allowlist or autonomy is Autonomy.FULL:
        return Decision.APPROVE, ""
    if autonomy is Autonomy.READ_ONLY:
        return Decision.DENY, f"{name} needs approval, and this agent is read_only"
    return Decision.ASK, ""
