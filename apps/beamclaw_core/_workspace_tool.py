"""The `workspace_memory` tool: the agent's own memory files, and nothing else.

The workspace comes from the session's agent and user (the tool context), never from
the arguments, and only named files are reachable: the user's MEMORY.md, USER.md,
HEARTBEAT.md and daily logs, and the agent's BOOTSTRAP.md. Where the agent serves several
users each has these files of their own (see `user_workspace`): what user A has written
goes into A's prompt and heartbeat alone, never into B's. For an agent the operator lists
in ``core.single_user_agents`` they are the agent's own files, in every user's prompt.
BOOTSTRAP.md is the agent's, shared by every user: any user may end the first-run
ritual (an empty BOOTSTRAP.md only takes text out, and does not ask), and only in a
single-user agent may the model write it.

Reading needs no approval, at every autonomy level. Each written file enters every later
system prompt (or heartbeat) of its user, so a write asks the user every time under
``supervised`` (as ``write_file`` of them does): a hostile model cannot plant a lasting
prompt injection as "memory" unasked. These files are read-only to jailed commands, so
this tool is the one way the model changes them. The files are reached without following
links (see `Workspace`): a ``memory`` folder or MEMORY.md replaced by a symlink is
refused with an error, never written through.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio

from beamclaw_base import PathRefused
from beamclaw_tools import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

from ._memory import remember_user_file
from ._workspace import BOOTSTRAP, HEARTBEAT, MEMORY, USER, Workspace, parse_day, user_workspace

_ACTIONS: Final = (
    "read", "append", "replace", "read_daily", "append_daily", "list_daily", "read_user", "update_user",
    "read_heartbeat", "update_heartbeat", "read_bootstrap", "update_bootstrap",
)  # fmt: skip
_NEEDS_CONTENT: Final = frozenset({"append", "replace", "append_daily", "update_user", "update_heartbeat",
                                   "update_bootstrap"})  # fmt: skip
#: The actions that write, and the file each writes.
_WRITES: Final = {
    "append": MEMORY, "replace": MEMORY, "append_daily": "memory/DAY.md", "update_user": USER,
    "update_heartbeat": HEARTBEAT, "update_bootstrap": BOOTSTRAP,
}  # fmt: skip
#: What the replacing actions write.
_UPDATES: Final = {"replace": MEMORY, "update_user": USER, "update_heartbeat": HEARTBEAT}


def _never(agent_id: str) -> bool:
    return False


@attrs.frozen
class _Files:
    """Where one call's files are: the agent's workspace, and the user's own files."""

    agent: Workspace
    user: Workspace

    @property
    def single_user(self) -> bool:
        return self.agent == self.user


def _run(files: _Files, action: str, content: str | None, day: datetime.date) -> str:
    if action in _NEEDS_CONTENT and content is None:
        raise ToolError(f"action {action!r} needs 'content'")
    user = files.user
    match action:
        case "read":
            return user.read(MEMORY) or "(MEMORY.md is empty)"
        case "append":
            user.append(MEMORY, ("" if user.read(MEMORY).endswith("\n") else "\n") + f"{content}\n")
            return "appended to MEMORY.md"
        case "replace" | "update_user" | "update_heartbeat":
            user.write(_UPDATES[action], f"{content}")
            return f"replaced {_UPDATES[action]}"
        case "read_user":
            return user.read(USER) or "(USER.md is empty)"
        case "read_heartbeat":
            return user.read(HEARTBEAT) or "(HEARTBEAT.md is empty: no heartbeat runs for it)"
        case "read_daily":
            return user.read(Workspace.daily_name(day)) or f"(no log for {day.isoformat()})"
        case "append_daily":
            now = datetime.datetime.now().strftime("%H:%M")
            user.append(Workspace.daily_name(day), f"- {now} {content}\n")
            return f"appended to memory/{day.isoformat()}.md"
        case "list_daily":
            return "\n".join(user.daily_logs()) or "(no daily logs yet)"
        case "read_bootstrap":
            return files.agent.read(BOOTSTRAP) or "(BOOTSTRAP.md is empty: the first-run ritual is over)"
        case "update_bootstrap":
            ending = not f"{content}".strip()
            if not ending and not files.single_user:
                raise ToolError(
                    "BOOTSTRAP.md is shared by every user of this agent: only the operator changes it "
                    "(you may end the ritual: update_bootstrap with empty content)"
                )
            files.agent.write(BOOTSTRAP, f"{content}")
            return "BOOTSTRAP.md emptied: the first-run ritual is over" if ending else "updated"
    raise ToolError(f"unknown action {action!r}")  # pragma: no cover - the schema allows only _ACTIONS


@attrs.define
class WorkspaceMemoryTool:
    """*single_user* says whether an agent is single-user (the daemon's config, as it is now)."""

    single_user: Callable[[str], bool] = _never
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "workspace_memory",
            "Read and write your own memory of this user: MEMORY.md (long-term), daily logs "
            "memory/YYYY-MM-DD.md, USER.md (who the user is), HEARTBEAT.md (checks your heartbeat runs "
            "for this user); and BOOTSTRAP.md (write it empty to end the first-run ritual).",
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
        agent = Workspace(session.agent_id, context.workspace)
        single = self.single_user(session.agent_id)
        user = (
            agent if single else user_workspace(context.data_dir, session.agent_id, session.user_id, single_user=False)
        )
        action = args["action"]
        day = parse_day(args["date"]) if "date" in args else datetime.date.today()
        try:
            said = await trio.to_thread.run_sync(_run, _Files(agent, user), action, args.get("content"), day)
            if action in _WRITES and action != "update_bootstrap":
                written = _WRITES[action].replace("DAY", day.isoformat())
                await remember_user_file(session.agent_id, session.user_id, user, written)
        except PathRefused as exc:
            raise ToolError(str(exc)) from None
        return said
