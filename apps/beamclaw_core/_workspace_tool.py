"""The `workspace_memory` tool: the agent's own memory files, and nothing else.

The workspace comes from the session's agent (the tool context), never from the
arguments, and only named files are reachable: MEMORY.md, the daily logs and
BOOTSTRAP.md. Reading needs no approval, at every autonomy level. Each of these files
enters every later system prompt, of every user of the agent, so a write asks the
user every time under ``supervised`` (as ``write_file`` of them does): a hostile model
cannot plant a lasting prompt injection as "memory" unasked. Ending the first-run
ritual (an empty BOOTSTRAP.md) only takes text out, and does not ask. The files are
reached without following links (see `Workspace`): a ``memory`` folder or MEMORY.md
replaced by a symlink is refused with an error, never written through.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

import attrs
import trio

from beamclaw_tools import Autonomy, PathRefused, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

from ._workspace import BOOTSTRAP, MEMORY, Workspace, parse_day

_ACTIONS: Final = (
    "read", "append", "replace", "read_daily", "append_daily", "list_daily", "read_bootstrap", "update_bootstrap",
)  # fmt: skip
_NEEDS_CONTENT: Final = frozenset({"append", "replace", "append_daily", "update_bootstrap"})
#: The actions that write, and the file each writes.
_WRITES: Final = {"append": MEMORY, "replace": MEMORY, "append_daily": "memory/DAY.md", "update_bootstrap": BOOTSTRAP}


def _run(workspace: Workspace, action: str, content: str | None, day: datetime.date) -> str:
    if action in _NEEDS_CONTENT and content is None:
        raise ToolError(f"action {action!r} needs 'content'")
    match action:
        case "read":
            return workspace.read(MEMORY) or "(MEMORY.md is empty)"
        case "append":
            workspace.append(MEMORY, ("" if workspace.read(MEMORY).endswith("\n") else "\n") + f"{content}\n")
            return "appended to MEMORY.md"
        case "replace":
            workspace.write(MEMORY, f"{content}")
            return "replaced MEMORY.md"
        case "read_daily":
            return workspace.read(Workspace.daily_name(day)) or f"(no log for {day.isoformat()})"
        case "append_daily":
            now = datetime.datetime.now().strftime("%H:%M")
            workspace.append(Workspace.daily_name(day), f"- {now} {content}\n")
            return f"appended to memory/{day.isoformat()}.md"
        case "list_daily":
            return "\n".join(workspace.daily_logs()) or "(no daily logs yet)"
        case "read_bootstrap":
            return workspace.read(BOOTSTRAP) or "(there is no BOOTSTRAP.md: the first-run ritual is over)"
        case "update_bootstrap":
            workspace.write(BOOTSTRAP, f"{content}")
            return "BOOTSTRAP.md deleted: the first-run ritual is over" if not f"{content}".strip() else "updated"
    raise ToolError(f"unknown action {action!r}")  # pragma: no cover - the schema allows only _ACTIONS


@attrs.define
class WorkspaceMemoryTool:
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "workspace_memory",
            "Read and write your own memory: MEMORY.md (long-term), daily logs memory/YYYY-MM-DD.md, "
            "and BOOTSTRAP.md (write it empty to end the first-run ritual).",
            object_schema(
                {
                    "action": {"enum": list(_ACTIONS)},
                    "content": {"type": "string"},
                    "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "default: today"},
                },
                ("action",),
            ),
        )

    def approval_reason(self, args: dict[str, Any]) -> str | None:
        """A write of a file that enters the system prompt asks every time (see the module)."""
        action, content = args["action"], args.get("content")
        if action not in _WRITES or (action == "update_bootstrap" and not str(content or "").strip()):
            return None
        name = _WRITES[action].replace("DAY", args.get("date") or datetime.date.today().isoformat())
        return f"{name} is read into every later system prompt: changing it needs the user's approval every time"

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        workspace = Workspace(session.agent_id, context.workspace)
        day = parse_day(args["date"]) if "date" in args else datetime.date.today()
        try:
            return await trio.to_thread.run_sync(_run, workspace, args["action"], args.get("content"), day)
        except PathRefused as exc:
            raise ToolError(str(exc)) from None
