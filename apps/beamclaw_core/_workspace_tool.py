"""The `workspace_memory` tool: the agent's own memory files, and nothing else.

The workspace comes from the session's agent and user (the tool context), never from
the arguments, and only named files are reachable: the user's MEMORY.md, USER.md,
HEARTBEAT.md and daily logs, and the agent's bootstrap files (``file``: IDENTITY, SOUL,
TOOLS, AGENTS, BOOTSTRAP; USER is the user's own). Where the agent serves several
users each has their own files (see `user_workspace`): what user A has written goes
into A's prompt and heartbeat alone, never into B's. For an agent the operator lists in
``core.single_user_agents`` they are the agent's own files, in every user's prompt.
IDENTITY, SOUL, TOOLS, AGENTS and BOOTSTRAP are the agent's, shared by every user: any
user may end the first-run ritual (an empty BOOTSTRAP.md only takes text out, and does
not ask), and only in a single-user agent may the model write them.

Reading needs no approval, at every autonomy level. Nor do MEMORY.md and the daily
logs, as the spec says: an agent must be able to remember unattended (a scheduled job
has nobody to ask), and in an agent with several users those notes are the user's
own. A file that shapes the system prompt (the bootstrap files, HEARTBEAT.md) asks the
user every time under ``supervised``, a deliberate departure from the spec (which
asks for nothing): a hostile model cannot rewrite the agent's rules unasked. These
files are read-only to jailed commands, so this tool is the one way the model changes
them. The files are reached without following links (see `Workspace`): a ``memory``
folder or MEMORY.md replaced by a symlink is refused with an error, never written through.
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
from ._workspace import (
    BOOTSTRAP,
    BOOTSTRAP_FILES,
    HEARTBEAT,
    MEMORY,
    USER,
    Workspace,
    parse_day,
    user_workspace,
)

_ACTIONS: Final = (
    "read", "append", "replace", "read_daily", "append_daily", "list_daily", "delete_daily", "read_user",
    "update_user", "read_heartbeat", "update_heartbeat", "read_bootstrap", "update_bootstrap",
)  # fmt: skip
#: The ``file`` of read_bootstrap / update_bootstrap: a bootstrap file by its name without ``.md``.
_FILES: Final = {name.removesuffix(".md"): name for name in BOOTSTRAP_FILES}
_NEEDS_CONTENT: Final = frozenset({"append", "replace", "append_daily", "update_user", "update_heartbeat",
                                   "update_bootstrap"})  # fmt: skip
#: The actions that write the user's own files, and the file each writes (update_bootstrap: see `_target`).
_WRITES: Final = {
    "append": MEMORY, "replace": MEMORY, "append_daily": "memory/DAY.md", "delete_daily": "memory/DAY.md",
    "update_user": USER, "update_heartbeat": HEARTBEAT,
}  # fmt: skip
#: The actions that write a file read into the system prompt, so ask (see the module).
_ASKING: Final = frozenset({"update_user", "update_heartbeat", "update_bootstrap"})
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


def _target(args: dict[str, Any]) -> str:
    """The bootstrap file read_bootstrap / update_bootstrap names (BOOTSTRAP.md unless ``file`` says)."""
    return _FILES[args.get("file", "BOOTSTRAP")]


def _shared_refusal(name: str, content: str | None) -> str | None:
    """Why the model of an agent serving several users may not write the agent's *name*."""
    if name == USER or (name == BOOTSTRAP and not str(content or "").strip()):
        return None
    ending = " (you may end the first-run ritual: update_bootstrap with empty content)" if name == BOOTSTRAP else ""
    return f"{name} is shared by every user of this agent: only the operator changes it{ending}"


def _run(files: _Files, action: str, content: str | None, day: datetime.date, name: str) -> str:
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
        case "delete_daily":
            if not user.delete(Workspace.daily_name(day)):
                raise ToolError(f"there is no daily log for {day.isoformat()}")
            return f"deleted memory/{day.isoformat()}.md"
        case "read_bootstrap":
            if name == BOOTSTRAP:
                return files.agent.read(BOOTSTRAP) or "(BOOTSTRAP.md is empty: the first-run ritual is over)"
            return (user if name == USER else files.agent).read(name) or f"({name} is empty)"
        case "update_bootstrap":
            if not files.single_user and (refusal := _shared_refusal(name, content)):
                raise ToolError(refusal)
            (user if name == USER else files.agent).write(name, f"{content}")
            if name == BOOTSTRAP and not f"{content}".strip():
                return "BOOTSTRAP.md emptied: the first-run ritual is over"
            return f"replaced {name}"
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
            "memory/YYYY-MM-DD.md (delete_daily removes one), USER.md (who the user is), HEARTBEAT.md "
            "(checks your heartbeat runs for this user); and your bootstrap files with read_bootstrap / "
            "update_bootstrap and 'file' (IDENTITY, USER, SOUL, TOOLS, AGENTS, BOOTSTRAP; write BOOTSTRAP "
            "empty to end the first-run ritual). Memory and daily logs are written unasked; a bootstrap "
            "file or HEARTBEAT.md may need the user's approval.",
            object_schema(
                {
                    "action": {"enum": list(_ACTIONS)},
                    "content": {"type": "string"},
                    "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "default: today"},
                    "file": {
                        "enum": list(_FILES),
                        "description": "read_bootstrap / update_bootstrap: which file (default BOOTSTRAP)",
                    },
                },
                ("action",),
            ),
        )

    def approval_reason(self, args: dict[str, Any]) -> str | None:
        """A write of a file that shapes the system prompt asks every time; memory and daily logs
        do not (see the module)."""
        action = args["action"]
        if action not in _ASKING:
            return None
        name = _target(args) if action == "update_bootstrap" else _WRITES[action]
        if name == BOOTSTRAP and not str(args.get("content") or "").strip():
            return None  # ending the first-run ritual only takes text out
        return f"{name} is read into every later system prompt: changing it needs the user's approval every time"

    def refusal_reason(self, args: dict[str, Any], context: ToolContext) -> str | None:
        """The agent's own files of an agent serving several users are the operator's: refused before asking."""
        if args["action"] != "update_bootstrap" or context.single_user:
            return None
        return _shared_refusal(_target(args), args.get("content"))

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        agent = Workspace(session.agent_id, context.workspace)
        single = self.single_user(session.agent_id)
        user = (
            agent if single else user_workspace(context.data_dir, session.agent_id, session.user_id, single_user=False)
        )
        action, name = args["action"], _target(args)
        if action == "delete_daily" and "date" not in args:
            raise ToolError("delete_daily needs 'date' (YYYY-MM-DD): the log to delete")
        day = parse_day(args["date"]) if "date" in args else datetime.date.today()
        try:
            said = await trio.to_thread.run_sync(_run, _Files(agent, user), action, args.get("content"), day, name)
            written = _WRITES.get(action) or (name if action == "update_bootstrap" and name == USER else None)
            if written is not None:
                day_name = written.replace("DAY", day.isoformat())
                await remember_user_file(session.agent_id, session.user_id, user, day_name)
        except PathRefused as exc:
            raise ToolError(str(exc)) from None
        return said
