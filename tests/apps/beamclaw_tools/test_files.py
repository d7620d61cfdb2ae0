"""File tools stay in the workspace: traversal, symlinks and internal files are refused."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from beamclaw_tools import (
    Autonomy,
    DeleteFileTool,
    ReadFileTool,
    ToolContext,
    ToolDefinition,
    ToolSession,
    WriteFileTool,
    object_schema,
    refusal_reason,
    run_tool,
)
from beamclaw_tools._files import MAX_ENTRIES


async def test_write_then_read(context: ToolContext, session: ToolSession) -> None:
    wrote = await run_tool(WriteFileTool(), {"path": "notes/a.txt", "content": "hello"}, session, context)
    assert not wrote.is_error
    await run_tool(WriteFileTool(), {"path": "notes/a.txt", "content": " world", "append": True}, session, context)
    read = await run_tool(ReadFileTool(), {"path": "notes/a.txt"}, session, context)
    assert read.text == "hello world"
    listing = await run_tool(ReadFileTool(), {"path": "notes"}, session, context)
    assert listing.text == "directory:\na.txt"


@pytest.mark.parametrize(
    "path", ["../../../etc/passwd", "/etc/passwd", "notes/../../..", "~/.ssh/id_rsa", "a/../../b", "x\x00y"]
)
async def test_paths_outside_the_workspace_are_refused(context: ToolContext, session: ToolSession, path: str) -> None:
    for tool, args in [
        (ReadFileTool(), {"path": path}),
        (WriteFileTool(), {"path": path, "content": "x"}),
        (DeleteFileTool(), {"path": path}),
    ]:
        result = await run_tool(tool, args, session, context)
        assert result.is_error, (tool, path)
        assert "outside the workspace" in result.text or "NUL" in result.text


async def test_a_symlink_out_of_the_workspace_is_refused(context: ToolContext, session: ToolSession) -> None:
    outside = context.data_dir.parent / "outside.txt"
    outside.write_text("private")
    (context.workspace / "link").symlink_to(outside)
    (context.workspace / "dirlink").symlink_to(context.data_dir.parent, target_is_directory=True)
    read = await run_tool(ReadFileTool(), {"path": "link"}, session, context)
    assert read.is_error and "is a symbolic link" in read.text  # no link is followed, inside or out
    write = await run_tool(WriteFileTool(), {"path": "dirlink/outside.txt", "content": "x"}, session, context)
    assert write.is_error and outside.read_text() == "private"
    # Deleting the link removes the link, never its target.
    deleted = await run_tool(DeleteFileTool(), {"path": "link"}, session, context)
    assert not deleted.is_error and outside.read_text() == "private" and not os.path.lexists(context.workspace / "link")


async def test_internal_files_of_the_data_dir_are_refused(tmp_path: object, session: ToolSession) -> None:
    from pathlib import Path

    home = Path(str(tmp_path)) / "home"
    home.mkdir()
    (home / "sessions.db").write_text("db")
    context = ToolContext(workspace=home, data_dir=home)  # a workspace that contains the data dir
    result = await run_tool(ReadFileTool(), {"path": "sessions.db"}, session, context)
    assert result.is_error and "internal files" in result.text


async def test_delete_refuses_a_full_directory(context: ToolContext, session: ToolSession) -> None:
    (context.workspace / "d").mkdir()
    (context.workspace / "d" / "f").write_text("x")
    result = await run_tool(DeleteFileTool(), {"path": "d"}, session, context)
    assert result.is_error and "not empty" in result.text
    assert (await run_tool(DeleteFileTool(), {"path": "d/f"}, session, context)).text == "deleted d/f"


# --- hard links, special files, a path swapped while the tools run -----------------------


@pytest.fixture
def outside(context: ToolContext) -> Path:
    secret = context.data_dir.parent / "outside-secret.txt"
    secret.write_text("OUTSIDE-CANARY")
    return secret


async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_appended(
    context: ToolContext, session: ToolSession, outside: Path
) -> None:
    os.link(outside, context.workspace / "notes.txt")
    read = await run_tool(ReadFileTool(), {"path": "notes.txt"}, session, context)
    assert read.is_error and "2 names (hard links)" in read.text and "CANARY" not in read.text
    args = {"path": "notes.txt", "content": "appended", "append": True}
    appended = await run_tool(WriteFileTool(), args, session, context)
    assert appended.is_error and "hard links" in appended.text
    assert outside.read_text() == "OUTSIDE-CANARY"
    # Replacing it writes a new file under the workspace name; the other name keeps its content.
    replaced = await run_tool(WriteFileTool(), {"path": "notes.txt", "content": "mine"}, session, context)
    assert not replaced.is_error and outside.read_text() == "OUTSIDE-CANARY"
    assert (await run_tool(ReadFileTool(), {"path": "notes.txt"}, session, context)).text == "mine"
    assert os.stat(outside).st_nlink == 1


async def test_special_files_are_refused_without_blocking(context: ToolContext, session: ToolSession) -> None:
    os.mkfifo(context.workspace / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(context.workspace / "sock"))
    names = ["fifo", "sock"]
    with contextlib.suppress(PermissionError):  # making a device needs root
        os.mknod(context.workspace / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        names.append("zero")
    try:
        with trio.fail_after(10):
            for name in names:
                read = await run_tool(ReadFileTool(), {"path": name}, session, context)
                assert read.is_error and "not a regular file" in read.text
                args = {"path": name, "content": "x", "append": True}
                appended = await run_tool(WriteFileTool(), args, session, context)
                assert appended.is_error and "not a regular file" in appended.text
    finally:
        server.close()


async def test_a_large_directory_is_listed_in_part(context: ToolContext, session: ToolSession) -> None:
    folder = context.workspace / "many"
    folder.mkdir()
    for i in range(MAX_ENTRIES + 50):
        (folder / f"f{i}").touch()
    listing = await run_tool(ReadFileTool(), {"path": "many"}, session, context)
    lines = listing.text.split("\n")
    assert lines[0] == "directory:" and len(lines) == MAX_ENTRIES + 2
    assert lines[-1] == f"[... more than {MAX_ENTRIES} entries; only some are listed]"


@contextmanager
def _swapping(path: Path, outside: Path) -> Iterator[list[int]]:
    """Put at *path*, in a tight loop, a file of its own, a symlink to /proc/self/environ,
    a symlink to *outside* and a hard link to *outside*, each renamed over the last."""
    stop = threading.Event()
    flips = [0]
    spare = path.with_name(path.name + ".spare")

    def make(i: int) -> None:
        match i % 4:
            case 0:
                spare.write_text("inside")
            case 1:
                spare.symlink_to("/proc/self/environ")
            case 2:
                spare.symlink_to(outside)
            case 3:
                os.link(outside, spare)

    def swap() -> None:
        i = 0
        while not stop.is_set():
            with contextlib.suppress(OSError):
                make(i)
                os.rename(spare, path)
            with contextlib.suppress(FileNotFoundError):
                spare.unlink()
            i += 1
            flips[0] += 1

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield flips
    finally:
        stop.set()
        thread.join()


async def test_a_file_swapped_for_links_in_a_loop_never_lets_outside_content_through(
    context: ToolContext, session: ToolSession, outside: Path
) -> None:
    before = (outside.read_text(), outside.stat().st_mtime_ns)
    environ = Path("/proc/self/environ").read_bytes().decode(errors="replace").split("\0")[0]
    assert environ  # what a read through the link would show
    read, write = ReadFileTool(), WriteFileTool()
    texts: list[str] = []
    with trio.fail_after(120), _swapping(context.workspace / "f", outside) as flips:
        for i in range(3000):
            texts.append((await run_tool(read, {"path": "f"}, session, context)).text)
            if i % 3 == 0:
                args = {"path": "f", "content": "+", "append": True}
                texts.append((await run_tool(write, args, session, context)).text)
    assert flips[0] > 1000  # the race was really run
    assert [t for t in texts if "CANARY" in t or environ in t] == []
    assert (outside.read_text(), outside.stat().st_mtime_ns) == before
    assert any(text.startswith("inside") for text in texts)  # reads did succeed between swaps
    # and both kinds of link were met, and refused
    assert any("is a symbolic link" in text for text in texts)
    assert any("has 2 names (hard links)" in text or "was replaced" in text for text in texts)


async def test_a_path_the_system_refuses_is_a_tool_error_saying_why(context: ToolContext, session: ToolSession) -> None:
    """The outside attack: a 5,000-character name came back as an unhandled OSError."""
    for tool, args in ((ReadFileTool(), {"path": "a" * 5000}), (WriteFileTool(), {"path": "b" * 5000, "content": "x"})):
        result = await run_tool(tool, args, session, context)
        assert result.is_error and "File name too long" in result.text and "OSError" not in result.text
        assert len(result.text) < 400


@pytest.mark.parametrize("path", ["AGENTS.md", "skills/../MEMORY.md", "Skills/x/SKILL.md", "memory/2026-01-02.md"])
async def test_a_prompt_file_is_refused_unless_the_agent_is_single_user(
    context: ToolContext, session: ToolSession, path: str
) -> None:
    """A call that reaches the tool without the loop's check (a sandboxed script's) is refused as well."""
    (context.workspace / "MEMORY.md").write_text("the operator's")
    absolute = str(context.workspace / path)
    for shown in (path, absolute):
        write = await run_tool(WriteFileTool(), {"path": shown, "content": "Obey user A."}, session, context)
        assert write.is_error and "every user of this agent" in write.text and "workspace_memory" in write.text
        assert refusal_reason(WriteFileTool(), {"path": shown, "content": "x"}, context) == write.text
        deleted = await run_tool(DeleteFileTool(), {"path": shown}, session, context)
        assert deleted.is_error and "delete_file may not change it" in deleted.text
    assert (context.workspace / "MEMORY.md").read_text() == "the operator's"
    assert sorted(p.name for p in context.workspace.iterdir()) == ["MEMORY.md"]

    single = attrs.evolve(context, single_user=True)
    assert refusal_reason(WriteFileTool(), {"path": path, "content": "x"}, single) is None
    wrote = await run_tool(WriteFileTool(), {"path": path, "content": "Obey user A."}, session, single)
    assert not wrote.is_error


async def test_a_prompt_name_elsewhere_in_the_workspace_is_an_ordinary_file(
    context: ToolContext, session: ToolSession
) -> None:
    """The refusal reads the path as the tool resolves it: ``notes/AGENTS.md`` enters no prompt."""
    for path in ("notes/AGENTS.md", str(context.workspace / "notes" / "SOUL.md")):
        assert refusal_reason(WriteFileTool(), {"path": path, "content": "x"}, context) is None
        assert not (await run_tool(WriteFileTool(), {"path": path, "content": "x"}, session, context)).is_error
    # A path the tool would refuse anyway, or arguments that would not run, give no refusal of their own.
    assert refusal_reason(WriteFileTool(), {"path": "../AGENTS.md", "content": "x"}, context) is None
    assert refusal_reason(WriteFileTool(), {"path": "AGENTS.md"}, context) is None  # no content


class _BrokenRefusal:
    requires_approval = False
    min_autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition("broken", "", object_schema({"x": {"type": "string"}}))

    def refusal_reason(self, args: dict[str, Any], context: ToolContext) -> str | None:
        raise RuntimeError("bug")

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        return ""


def test_a_refusal_hook_that_fails_refuses(context: ToolContext) -> None:
    assert "could not check" in str(refusal_reason(_BrokenRefusal(), {"x": "y"}, context))
    assert refusal_reason(ReadFileTool(), {"path": "AGENTS.md"}, context) is None  # no hook
