"""`read_file`, `write_file` and `delete_file`, confined to the agent's workspace.

A path is resolved first (symlinks and ``..`` included), and only then compared with
the workspace, so neither ``../../etc/passwd`` nor a symlink planted in the workspace
reaches outside it. The daemon's own files in the data dir (the session database,
logs, the control socket) are refused even when a workspace would contain them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

INTERNAL_NAMES: Final = frozenset(
    {"sessions.db", "sessions.db-wal", "sessions.db-shm", "logs", "control.sock", "config.toml"}
)


def resolve_in_workspace(context: ToolContext, path: str, *, follow_last: bool = True) -> Path:
    """The real path *path* names, which must lie inside the workspace; else `ToolError`.

    With ``follow_last=False`` a final symlink is the path itself (to delete a link,
    never its target); everything before it is still resolved.
    """
    if "\x00" in path:
        raise ToolError("the path contains a NUL character")
    root = Path(os.path.realpath(context.workspace))
    raw = Path(path).expanduser() if path.startswith("~") else Path(path)
    full = raw if raw.is_absolute() else root / raw
    if follow_last or full.name in {"", ".", ".."}:
        real = Path(os.path.realpath(full))
    else:
        real = Path(os.path.realpath(full.parent)) / full.name
    if real != root and not real.is_relative_to(root):
        raise ToolError(f"the path {path!r} is outside the workspace")
    data = Path(os.path.realpath(context.data_dir))
    if real.is_relative_to(data):
        parts = real.relative_to(data).parts
        if parts and parts[0] in INTERNAL_NAMES:
            raise ToolError(f"the path {path!r} is one of BeamClaw's internal files")
    return real


def _path_parameter(
    description: str, extra: dict[str, Any] | None = None, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    return object_schema(
        {"path": {"type": "string", "minLength": 1, "description": description}, **(extra or {})}, ("path", *required)
    )


def _read(path: Path, limit: int) -> str:
    if path.is_dir():
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
        return "directory:\n" + "\n".join(entries)
    with path.open("rb") as f:
        data = f.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    return text + (f"\n[... truncated at {limit} bytes]" if len(data) > limit else "")


def _write(path: Path, content: str, append: bool) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    if append:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            return f.write(content)
    # Write beside the target and rename over it: a reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            written = f.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return written


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
        if not path.exists():
            raise ToolError(f"no such file: {args['path']}")
        return await trio.to_thread.run_sync(_read, path, self.max_bytes)


@attrs.define
class WriteFileTool:
    max_bytes: int = 2_000_000
    requires_approval: bool = False
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
        if path.is_dir():
            raise ToolError(f"{args['path']} is a directory")
        written = await trio.to_thread.run_sync(_write, path, content, bool(args.get("append", False)))
        return f"wrote {written} characters to {args['path']}"


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
        path = resolve_in_workspace(context, args["path"], follow_last=False)
        if path == Path(os.path.realpath(context.workspace)):
            raise ToolError("the workspace itself cannot be deleted")
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            try:
                path.rmdir()
            except OSError:
                raise ToolError(f"{args['path']} is a directory that is not empty") from None
        else:
            raise ToolError(f"no such file: {args['path']}")
        return f"deleted {args['path']}"
