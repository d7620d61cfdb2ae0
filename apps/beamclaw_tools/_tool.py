"""What a tool is: a definition the model sees, an async `execute`, and its risk level."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, final, runtime_checkable

import attrs

from beamclaw_base import Jail


class Autonomy(enum.IntEnum):
    """How far an agent may act on its own, in increasing order."""

    READ_ONLY = 0
    SUPERVISED = 1
    FULL = 2

    @classmethod
    def parse(cls, text: str) -> Autonomy:
        try:
            return cls[text.upper()]
        except KeyError:
            names = ", ".join(a.name.lower() for a in cls)
            raise ValueError(f"unknown autonomy level {text!r} (expected one of {names})") from None


@final
@attrs.frozen
class ToolDefinition:
    """Name, description and JSON-schema parameters: what the model is shown."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def object_schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON schema of a tool's arguments: an object with these properties, and no others."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


@final
@attrs.frozen
class ToolResult:
    """The text that goes back to the model; ``is_error`` marks a failed call."""

    text: str
    is_error: bool = False


@final
@attrs.frozen
class ToolSession:
    """The conversation a call belongs to."""

    id: str
    agent_id: str
    user_id: str
    channel: str = ""


@final
@attrs.frozen
class ToolContext:
    """Where a call may act: the agent's workspace, and the data dir it must never touch.

    ``jails`` are the isolation backends a command may run in, by name ("bubblewrap",
    "docker"); the agent loop fills them from the sandbox app, so a tool reaches a jail
    without this app importing that one. ``readonly_dirs`` are folders a jailed command
    may read besides the system (the agent's skill folders, for their scripts).
    ``single_user`` says whether the operator marked the agent as serving one user
    (``core.single_user_agents``): only then may a tool change the files that enter
    every user's system prompt, since otherwise one user's words would reach the others'.
    """

    workspace: Path
    data_dir: Path
    jails: Mapping[str, Jail] = attrs.field(factory=dict)
    readonly_dirs: tuple[Path, ...] = ()
    single_user: bool = False
    #: The agent loop's tool dispatcher, for code that calls tools itself (the sandbox's
    #: bridge): ``await call_tool(name, arguments)`` runs the tool under the loop's own
    #: rules (autonomy, approvals, scrubber). None where no loop is behind the call.
    call_tool: Callable[[str, dict[str, Any]], Awaitable[ToolResult]] | None = None


class ToolError(Exception):
    """Raised by a tool for a failure the model should read (bad path, denied command...)."""


@runtime_checkable
class Tool(Protocol):
    """The tool behaviour. ``execute`` returns the result text or a `ToolResult`, and
    raises `ToolError` for a failure the model should see.

    ``requires_approval`` is the tool's risk as a whole. A tool whose risk depends on the
    call may also define ``approval_reason(args) -> str | None``: given arguments that
    passed its schema, why this one call needs the user's approval even where the tool
    would not (``write_file`` of ``AGENTS.md``), or None. It is optional (a Protocol
    cannot say so: read it with `approval_reason`), must not block and must not raise.
    Likewise optional, ``refusal_reason(args, context) -> str | None`` says why this call
    may not run at all where *context* says it would act (``write_file`` of ``AGENTS.md``
    in an agent that serves several users), or None: read it with `refusal_reason`, which
    the agent loop does before anyone is asked, since no answer could allow the call.

    A tool whose ``definition.parameters`` is not BeamClaw's own (an MCP server's) may
    define ``argument_schema``, the schema its arguments are checked against here instead.
    """

    @property
    def definition(self) -> ToolDefinition: ...

    @property
    def requires_approval(self) -> bool: ...

    @property
    def min_autonomy(self) -> Autonomy: ...

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str | ToolResult: ...
