"""`read_file`, `write_file` and `delete_file`, confined to the agent's workspace.

A path is normalised as text (``..`` and all) and must stay inside the workspace; it is
then reached through `Beneath`, one component at a time from the workspace's fd, never
following a symbolic link. So neither ``../../etc/passwd`` nor a symlink planted in the
workspace, nor a folder swapped for a symlink while the tool runs, reaches outside it.
A link can be deleted (the link itself, never its target) but not read or written
through, and a file with more than one name (a hard link, which may be a file outside
the workspace under a name inside it) is neither read nor appended to; replacing it
writes a new file in its place and leaves the other name alone. FIFOs, sockets and
devices are refused without blocking; every read is capped in size and in time. The
daemon's own files in the data dir (the session database, logs, the control socket)
are refused even when a workspace would contain them.

A file that enters the system prompt (``AGENTS.md``, ``MEMORY.md``, a skill...) is in
every user's prompt: where the agent serves several users, writing or deleting it is
refused (``refusal_reason``, checked again when the call runs), so one user's approval
cannot put words into another's prompt; a user's own notes and profile go through
``workspace_memory``. Only in an agent the operator marked single-user may these tools
change it, and then with the user's approval on every call: see `prompt_file` and
``approval_reason``.
"""

from __future__ import annotations

import errno
import os
import posixpath
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import re2
import trio

from beamclaw_base import Beneath, PathRefused

from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

T = TypeVar("T")

INTERNAL_NAMES: Final = frozenset(
    {"sessions.db", "sessions.db-wal", "sessions.db-shm", "logs", "control.sock", "config.toml"}
)


#: How long one file operation may take (a read or write is capped in size as well).
FILE_TIMEOUT: Final = 10.0
#: How many entries of a directory `read_file` lists.
MAX_ENTRIES: Final = 1000

#: The workspace files read into the agent's system prompt or run as its instructions
#: (beamclaw_core's context files and HEARTBEAT.md), compared case-folded: on a
#: case-insensitive file system ``agents.md`` is ``AGENTS.md``.
_PROMPT_NAMES: Final = ("IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md")
PROMPT_FILES: Final = frozenset(name.casefold() for name in (*_PROMPT_NAMES, "HEARTBEAT.md"))
#: The workspace folder of the agent's own skills (each SKILL.md goes into the prompt,
#: each script may be run) and the daily logs (today's and yesterday's go into it).
SKILLS_DIR: Final = "skills"
_DAILY_LOG: Final = re2.compile(r"memory/[0-9]{4}-[0-9]{2}-[0-9]{2}\.md")


def _prompt_path(parts: tuple[str, ...]) -> bool:
    if not parts:
        return False
    if parts[0] == SKILLS_DIR:
        return True
    return (len(parts) == 1 and parts[0] in PROMPT_FILES) or bool(_DAILY_LOG.fullmatch("/".join(parts)))


def prompt_file(path: str) -> bool:
    """Whether *path*, however it is spelled, may name a workspace file that enters the system prompt.

    The check is on text alone and errs towards yes: ``./AGENTS.md``,
    ``skills/../AGENTS.md``, ``AGENTS.md/``, ``agents.md``, a full-width or otherwise
    compatible spelling, and any absolute or ``..`` path that ends in such a place (the
    workspace could be any folder above it) all count. See `resolve_in_workspace` for
    how the tools read a path.
    """
    return any(_spelled_prompt_file(spelling) for spelling in {path, unicodedata.normalize("NFKC", path)})


def _spelled_prompt_file(path: str) -> bool:
    if path.startswith("~"):
        path = "/" + path  # whatever it expands to, it is a full path
    normal = posixpath.normpath(path)
    parts = tuple(p.casefold() for p in normal.split("/") if p not in ("", "."))
    if not normal.startswith("/") and ".." not in parts:
        return _prompt_path(parts)
    return any(_prompt_path(parts[i:]) for i in range(len(parts)) if parts[i] != "..")


def _prompt_file_reason(path: str) -> str | None:
    if not isinstance(path, str) or not prompt_file(path):
        return None
    return (
        f"{path} is (or may be) read into the agent's system prompt or its skills: "
        "changing it needs the user's approval every time"
    )


def _shared_prompt_file(context: ToolContext, tool: str, shown: str, relative: str) -> str | None:
    """Why *tool* may not change *relative* (the workspace path *shown* names): a file in
    every user's prompt of an agent that serves several users is the operator's alone."""
    if context.single_user or not prompt_file(relative):
        return None
    return (
        f"{shown} is read into the system prompt of every user of this agent, so {tool} may not change it: "
        "for this user's own notes, profile or heartbeat checks (MEMORY.md, USER.md, HEARTBEAT.md, "
        "the daily log) use workspace_memory; the agent's own files (IDENTITY.md, SOUL.md, AGENTS.md, "
        "TOOLS.md, skills) are changed by its operator"
    )


def _prompt_file_refusal(context: ToolContext, tool: str, path: str) -> str | None:
    """`_shared_prompt_file` for the model's *path*, as the tool will resolve it; None when it
    does not resolve (the call then fails on its own, saying why)."""
    try:
        relative = resolve_in_workspace(context, path)
    except ToolError:
        return None
    return _shared_prompt_file(context, tool, path, relative)


def resolve_in_workspace(context: ToolContext, path: str) -> str:
    """*path* relative to the workspace (``""`` for the workspace itself); else `ToolError`.

    Only text is looked at here (no file is touched, no link followed): ``..`` is
    resolved lexically, and an absolute path must name a place inside the workspace.
    """
    if "\x00" in path:
        raise ToolError("the path contains a NUL character")
    root = Path(os.path.abspath(context.workspace))
    real_root = Path(os.path.realpath(context.workspace))
    raw = Path(path).expanduser() if path.startswith("~") else Path(path)
    full = Path(os.path.normpath(raw if raw.is_absolute() else root / raw))
    for base in (root, real_root):
        if full == base or full.is_relative_to(base):
            relative = full.relative_to(base)
            break
    else:
        raise ToolError(f"the path {path!r} is outside the workspace")
    data = Path(os.path.realpath(context.data_dir))
    inside = real_root / relative
    if inside.is_relative_to(data):
        parts = inside.relative_to(data).parts
        if parts and parts[0] in INTERNAL_NAMES:
            raise ToolError(f"the path {path!r} is one of BeamClaw's internal files")
    return relative.as_posix() if relative.parts else ""


def _path_parameter(
    description: str, extra: dict[str, Any] | None = None, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    return object_schema(
        {"path": {"type": "string", "minLength": 1, "description": description}, **(extra or {})}, ("path", *required)
    )


async def _in_workspace(context: ToolContext, shown: str, fn: Callable[..., T], *args: Any) -> T:
    """Run *fn(Beneath(workspace), *args)* in a worker thread; a refusal or a missing file is a `ToolError`.

    Every read and write is capped in size; this caps it in time too: a file system that
    stops answering (a dead network mount) costs the call `FILE_TIMEOUT` seconds, and the
    thread is left to finish on its own.
    """

    def run() -> T:
        with Beneath(context.workspace) as workspace:
            result: T = fn(workspace, *args)
            return result

    try:
        with trio.fail_after(FILE_TIMEOUT):
            return await trio.to_thread.run_sync(run, abandon_on_cancel=True)
    except trio.TooSlowError:
        raise ToolError(f"{shown}: the file system did not answer within {FILE_TIMEOUT:g} s") from None
    except PathRefused as exc:
        raise ToolError(str(exc)) from None
    except FileNotFoundError:
        raise ToolError(f"no such file: {shown}") from None
    except NotADirectoryError:
        raise ToolError(f"{shown}: a part of the path is not a directory") from None
    except OSError as exc:  # a name too long, a full disk, a read-only file system...
        raise ToolError(f"{shown[:200]}: {exc.strerror or type(exc).__name__}") from None


def _read(workspace: Beneath, path: str, limit: int) -> str:
    if workspace.kind(path) == "directory":
        found = workspace.list_dir(path, limit=MAX_ENTRIES + 1)
        entries = [name + ("/" if kind == "directory" else "") for name, kind in found[:MAX_ENTRIES]]
        more = f"\n[... more than {MAX_ENTRIES} entries; only some are listed]" if len(found) > MAX_ENTRIES else ""
        return "directory:\n" + "\n".join(entries) + more
    excerpt = workspace.read_text(path, limit=limit)
    return excerpt.head + (f"\n[... truncated at {limit} bytes]" if excerpt.truncated else "")


def _write(workspace: Beneath, path: str, content: str, append: bool) -> int:
    if workspace.kind(path) == "directory":
        raise PathRefused(path, "directory", f"{path} is a directory")
    if append:
        workspace.append(path, content.encode(), parents=True)
    else:
        workspace.write(path, content.encode(), parents=True)  # a reader never sees half a file
    return len(content)


def _delete(workspace: Beneath, path: str) -> None:
    try:
        workspace.remove(path)
    except OSError as exc:
        if exc.errno == errno.ENOTEMPTY:
            raise ToolError(f"{path} is a directory that is not empty") from None
        raise


@attrs.define
class ReadFileTool:
    max_bytes: int = 200_000
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "read_file",
            "Read a text file (or list a directory) in the agent's workspace.",
            _path_parameter("Path relative to the workspace"),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        path = resolve_in_workspace(context, args["path"])
        return await _in_workspace(context, args["path"], _read, path, self.max_bytes)


@attrs.define
class WriteFileTool:
    """Asks under ``supervised`` before it writes (ADR-011: a write replaces without
    confirmation); ``/always`` allows it for the conversation, except for a prompt file."""

    max_bytes: int = 2_000_000
    requires_approval: bool = True
    min_autonomy: Autonomy = Autonomy.SUPERVISED

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "write_file",
            "Create or replace (or append to) a text file in the agent's workspace.",
            _path_parameter(
                "Path relative to the workspace",
                {"content": {"type": "string"}, "append": {"type": "boolean", "default": False}},
                required=("content",),
            ),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        content: str = args["content"]
        if len(content.encode()) > self.max_bytes:
            raise ToolError(f"content is larger than {self.max_bytes} bytes")
        path = resolve_in_workspace(context, args["path"])
        if not path:
            raise ToolError(f"{args['path']} is a directory")
        if refusal := _shared_prompt_file(context, "write_file", args["path"], path):
            raise ToolError(refusal)
        written = await _in_workspace(context, args["path"], _write, path, content, bool(args.get("append")))
        return f"wrote {written} characters to {args['path']}"

    def refusal_reason(self, args: dict[str, Any], context: ToolContext) -> str | None:
        """A file in every user's prompt is refused where the agent serves several users."""
        return _prompt_file_refusal(context, "write_file", args["path"])

    def approval_reason(self, args: dict[str, Any]) -> str | None:
        """A file that enters the system prompt asks every time: else a hostile model writes its own rules."""
        return _prompt_file_reason(args["path"])


@attrs.define
class DeleteFileTool:
    requires_approval: bool = True
    min_autonomy: Autonomy = Autonomy.SUPERVISED

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "delete_file",
            "Delete a file (or an empty directory) in the agent's workspace.",
            _path_parameter("Path relative to the workspace"),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        path = resolve_in_workspace(context, args["path"])
        if not path:
            raise ToolError("the workspace itself cannot be deleted")
        if refusal := _shared_prompt_file(context, "delete_file", args["path"], path):
            raise ToolError(refusal)
        await _in_workspace(context, args["path"], _delete, path)
        return f"deleted {args['path']}"

    def refusal_reason(self, args: dict[str, Any], context: ToolContext) -> str | None:
        """Deleting a file in every user's prompt is refused where the agent serves several users."""
        return _prompt_file_refusal(context, "delete_file", args["path"])

    def approval_reason(self, args: dict[str, Any]) -> str | None:
        """Deleting a prompt file (the rules in AGENTS.md, a skill) asks every time, allowlisted or not."""
        return _prompt_file_reason(args["path"])
