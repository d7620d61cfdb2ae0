"""Calling a tool: arguments parsed and checked against its schema first, every failure a result.

A model that sends bad arguments gets an error result that says what was wrong, so it
can correct itself; nothing a tool raises escapes to the agent loop.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import trio
from loguru import logger

from ._shell_rules import Pattern, Verdict
from ._tool import Tool, ToolContext, ToolError, ToolResult, ToolSession


def _schema_errors(tool: Tool, args: Any) -> list[str]:
    import jsonschema  # noqa: PLC0415 - imported by the first tool call, not at start

    schema = getattr(tool, "argument_schema", None)
    validator = jsonschema.Draft202012Validator(schema if isinstance(schema, dict) else tool.definition.parameters)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in error.absolute_path) or 'arguments'}: {error.message}" for error in errors[:5]]


def parse_arguments(tool_name: str, raw: str | dict[str, Any] | None) -> dict[str, Any]:
    """The call's arguments as a dict; raises `ToolError` naming what was wrong."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ToolError(f"arguments for {tool_name!r} must be a JSON object, not {type(raw).__name__}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments for {tool_name!r} are not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(value, dict):
        raise ToolError(f"arguments for {tool_name!r} must be a JSON object, not {type(value).__name__}")
    return value


def approval_reason(tool: Tool, raw_args: str | dict[str, Any] | None) -> str | None:
    """Why this call of *tool* needs the user's approval whatever the tool's own setting, or None.

    The tool's optional ``approval_reason(args)`` hook decides, on the arguments exactly
    as `run_tool` will parse them. Arguments that do not parse or fail the schema give
    None: such a call never runs. A hook that raises fails closed (it gives a reason).
    """
    hook = getattr(tool, "approval_reason", None)
    args = _runnable_arguments(tool, raw_args) if hook is not None else None
    if hook is None or args is None:
        return None
    try:
        reason: str | None = hook(args)
    except Exception as exc:  # noqa: BLE001 - a broken hook must ask, not approve
        logger.opt(exception=exc).warning("approval_reason of {} failed", tool.definition.name)
        return f"BeamClaw could not check the arguments of this {tool.definition.name} call"
    return reason


def refusal_reason(tool: Tool, raw_args: str | dict[str, Any] | None, context: ToolContext) -> str | None:
    """Why this call of *tool* may not run at all in *context*, whoever approves it, or None.

    The tool's optional ``refusal_reason(args, context)`` hook decides, on the arguments
    as `run_tool` will parse them; arguments that would not run give None (the call fails
    on its own, saying why). A hook that raises fails closed (the call is refused).
    """
    hook = getattr(tool, "refusal_reason", None)
    args = _runnable_arguments(tool, raw_args) if hook is not None else None
    if hook is None or args is None:
        return None
    try:
        reason: str | None = hook(args, context)
    except Exception as exc:  # noqa: BLE001 - a broken hook must refuse, not allow
        logger.opt(exception=exc).warning("refusal_reason of {} failed", tool.definition.name)
        return f"BeamClaw could not check the arguments of this {tool.definition.name} call"
    return reason


def command_verdict(tool: Tool, raw_args: str | dict[str, Any] | None, allowlist: Collection[str]) -> Verdict | None:
    """The permission rules' verdict on this call of a tool that runs commands, or None
    for a tool without rules (or arguments that would not run).

    The tool's optional ``command_verdict(args, allowed)`` hook decides; *allowed* are
    the patterns the session's *allowlist* holds for this tool (``/always``: keys
    ``name\x00pattern``; one that does not parse is ignored). A hook that raises fails
    closed: the call asks.
    """
    hook = getattr(tool, "command_verdict", None)
    args = _runnable_arguments(tool, raw_args) if hook is not None else None
    if hook is None or args is None:
        return None
    name = tool.definition.name
    try:
        verdict: Verdict = hook(args, tuple(_session_patterns(name, allowlist)))
    except Exception as exc:  # noqa: BLE001 - a broken hook must ask, not allow
        logger.opt(exception=exc).warning("command_verdict of {} failed", name)
        return Verdict(reason=f"BeamClaw could not check the arguments of this {name} call")
    return verdict


def _session_patterns(name: str, allowlist: Collection[str]) -> list[Pattern]:
    patterns = []
    for key in allowlist:
        tool, found, text = key.partition("\x00")
        if found and tool == name:
            try:
                patterns.append(Pattern(text))
            except ValueError:
                continue  # a key from before the rules (a whole command line): it allows nothing
    return patterns


def _runnable_arguments(tool: Tool, raw_args: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """The arguments `run_tool` would pass to *tool*, or None when it would refuse them."""
    try:
        args = parse_arguments(tool.definition.name, raw_args)
    except ToolError:
        return None
    return None if _schema_errors(tool, args) else args


async def run_tool(
    tool: Tool, raw_args: str | dict[str, Any] | None, session: ToolSession, context: ToolContext
) -> ToolResult:
    """Validate and execute one call. Never raises, except for cancellation."""
    name = tool.definition.name
    try:
        args = parse_arguments(name, raw_args)
        problems = _schema_errors(tool, args)
        if problems:
            raise ToolError(f"invalid arguments for {name!r}: " + "; ".join(problems))
        result = await tool.execute(args, session, context)
    except ToolError as exc:
        return ToolResult(str(exc), is_error=True)
    except trio.Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - a tool's bug becomes an error result, not a crash
        logger.opt(exception=exc).warning("tool {} failed", name)
        return ToolResult(f"tool {name!r} failed: {type(exc).__name__}: {exc}", is_error=True)
    return result if isinstance(result, ToolResult) else ToolResult(str(result))
