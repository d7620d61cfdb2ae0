"""File tools stay in the workspace: traversal, symlinks and internal files are refused."""

from __future__ import annotations

import os

import pytest

from beamclaw_tools import DeleteFileTool, ReadFileTool, ToolContext, ToolSession, WriteFileTool, run_tool


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
