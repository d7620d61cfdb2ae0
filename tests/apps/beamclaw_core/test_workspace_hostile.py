"""A hostile model plants links, FIFOs, huge and non-UTF-8 files in its workspace.

The daemon reads and writes that folder on the host; none of it may leak a file from
outside into what the model sees, write outside, block the event loop, or fail a turn.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

import beamclaw_core as core
from beamclaw_core._skills import discover
from beamclaw_core._workspace import READ_HEAD, READ_TAIL, Workspace
from beamclaw_core._workspace_tool import WorkspaceMemoryTool
from beamclaw_tools import DeleteFileTool, ReadFileTool, Tool, ToolContext, ToolSession, WriteFileTool, run_tool
from tests.support.model_server import Call, Reply

from .conftest import RunCore

PLANTED = "PLANTED-env-secret-4242"
SAFETY_NET = 60  # seconds: only so a regression fails instead of hanging the suite


def _workspace(home: Path, agent: str = "ada") -> Path:
    root = home / "agents" / agent
    (root / "memory").mkdir(parents=True, exist_ok=True)
    return root


async def test_symlinks_in_the_workspace_never_reach_the_model(
    run_core: RunCore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_TEST_PLANTED", PLANTED)
    home = tmp_path / "home"
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-CANARY-7")
    other = _workspace(home, "other")
    (other / "MEMORY.md").write_text("OTHER-AGENT-SECRET-9")
    root = _workspace(home)
    (root / "MEMORY.md").symlink_to("/proc/self/environ")
    (root / "USER.md").symlink_to("../other/MEMORY.md")
    (root / "TOOLS.md").symlink_to(outside)
    (root / "memory" / "2030-01-01.md").symlink_to(outside)
    calls = (
        Call("workspace_memory", {"action": "read"}, id="c1"),
        Call("read_file", {"path": "MEMORY.md"}, id="c2"),
        Call("read_file", {"path": "TOOLS.md"}, id="c3"),
    )
    with trio.fail_after(SAFETY_NET):
        async with run_core(Reply(tool_calls=calls), Reply("done"), home=home, single_user_agents=["ada"]) as r:
            result = await core.send_message(await r.open(agent="ada"), "hi", core.CollectingChannel())
    assert result.text == "done"
    seen = "\n".join(str(m.get("content")) for req in r.model.requests for m in req["messages"])
    for secret in (PLANTED, "OTHER-AGENT-SECRET-9", "OUTSIDE-CANARY-7"):
        assert secret not in seen
    system = r.model.requests[0]["messages"][0]["content"]
    assert "MEMORY.md is a symbolic link; BeamClaw does not follow links in a workspace" in system
    tool_results = [m["content"] for m in r.model.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 3 and all("symbolic link" in text for text in tool_results)


async def test_a_memory_folder_swapped_for_a_link_is_never_written_through(tmp_path: Path) -> None:
    other = _workspace(tmp_path, "other")
    root = _workspace(tmp_path, "ada")
    os.rename(root / "memory", root / "memory.real")
    (root / "memory").symlink_to("../other/memory")
    tool, session = WorkspaceMemoryTool(lambda _agent: True), ToolSession("s", "ada", "u")  # the agent's own files
    context = ToolContext(workspace=root, data_dir=tmp_path)
    appended = await run_tool(tool, {"action": "append_daily", "content": "x", "date": "2030-01-01"}, session, context)
    assert appended.is_error and "memory is a symbolic link" in appended.text
    assert list((other / "memory").iterdir()) == []
    listed = await run_tool(tool, {"action": "list_daily"}, session, context)
    assert listed.is_error and "symbolic link" in listed.text


@contextmanager
def _flipping(folder: Path, target: Path) -> Iterator[list[int]]:
    """Swap *folder* between a real directory and a symlink to *target*, as fast as possible."""
    stop = threading.Event()
    flips = [0]
    real = folder.with_name(folder.name + ".real")
    link = folder.with_name(folder.name + ".link")
    link.symlink_to(target, target_is_directory=True)

    def flip() -> None:
        while not stop.is_set():
            for source, spare in ((link, real), (real, link)):
                try:
                    os.rename(folder, spare)  # the one in place goes back to its spare name
                    os.rename(source, folder)  # and the other one takes its place
                except OSError:
                    pass
            flips[0] += 1

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield flips
    finally:
        stop.set()
        thread.join()


async def test_a_folder_swapped_for_a_link_in_a_loop_never_lets_a_tool_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("secret.txt", "2030-01-01.md"):
        (outside / name).write_text("OUTSIDE-CANARY")
    before = {p.name: (p.read_text(), p.stat().st_mtime_ns) for p in outside.iterdir()}
    root = _workspace(tmp_path, "ada")
    (root / "d").mkdir()
    (root / "d" / "secret.txt").write_text("inside")
    context = ToolContext(workspace=root, data_dir=tmp_path)
    session = ToolSession("s", "ada", "u")
    memory = WorkspaceMemoryTool()
    read, write, delete = ReadFileTool(), WriteFileTool(), DeleteFileTool()
    texts: list[str] = []
    steps: list[tuple[Tool, dict[str, object]]]
    with trio.fail_after(SAFETY_NET):
        with _flipping(root / "d", outside) as flips, _flipping(root / "memory", outside):
            for i in range(400):
                steps = [
                    (write, {"path": "d/secret.txt", "content": f"w{i}"}),
                    (write, {"path": "d/secret.txt", "content": "a", "append": True}),
                    (read, {"path": "d/secret.txt"}),
                    (read, {"path": "d"}),
                    (delete, {"path": "d/secret.txt"}),
                    (memory, {"action": "append_daily", "content": "m", "date": "2030-01-01"}),
                    (memory, {"action": "read_daily", "date": "2030-01-01"}),
                ]
                for tool, args in steps:
                    texts.append((await run_tool(tool, args, session, context)).text)
    assert flips[0] > 100  # the race was really run
    assert not any("OUTSIDE-CANARY" in text for text in texts)
    assert {p.name: (p.read_text(), p.stat().st_mtime_ns) for p in outside.iterdir()} == before
    assert any(text.startswith("wrote") for text in texts)  # and the tools did work between flips


async def test_fifos_never_block(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _workspace(home)
    os.mkfifo(root / "MEMORY.md")
    os.mkfifo(root / "fifo.txt")
    (root / "skills" / "zz").mkdir(parents=True)
    os.mkfifo(root / "skills" / "zz" / "SKILL.md")
    call = Call("read_file", {"path": "fifo.txt"}, id="c1")
    with trio.fail_after(SAFETY_NET):
        async with run_core(Reply(tool_calls=(call,)), Reply("done"), home=home) as r:
            result = await core.send_message(await r.open(agent="ada"), "hi", core.CollectingChannel())
    assert result.text == "done"
    system = r.model.requests[0]["messages"][0]["content"]
    assert "MEMORY.md is not a regular file" in system
    tool = next(m["content"] for m in r.model.requests[1]["messages"] if m["role"] == "tool")
    assert "fifo.txt is not a regular file" in tool
    _, problems = discover(core.skill_places(None, home, "ada"))
    assert any("zz/SKILL.md" in p and "not a regular file" in p for p in problems)


async def test_a_huge_sparse_memory_is_read_only_up_to_the_cap(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _workspace(home)
    with open(root / "MEMORY.md", "wb") as f:
        f.write(b"HEAD-OF-MEMORY\n")
        f.truncate(1 << 30)
        f.seek((1 << 30) - 15)
        f.write(b"NEWEST-MEMORY\n")
    text = Workspace.of(home, "ada").read("MEMORY.md")
    assert len(text) < READ_HEAD + READ_TAIL + 200
    assert "HEAD-OF-MEMORY" in text and "NEWEST-MEMORY" in text
    with trio.fail_after(SAFETY_NET):
        async with run_core(Reply("done"), home=home) as r:
            result = await core.send_message(await r.open(agent="ada"), "hi", core.CollectingChannel())
    system = r.model.requests[0]["messages"][0]["content"]
    assert result.text == "done" and "HEAD-OF-MEMORY" in system and "NEWEST-MEMORY" in system


async def test_non_utf8_memory_does_not_fail_the_turn(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _workspace(home)
    (root / "MEMORY.md").write_bytes(b"likes \xff\xfe tea")
    (root / "USER.md").mkdir()  # a folder where a file belongs is skipped too
    with trio.fail_after(SAFETY_NET):
        async with run_core(Reply("done"), home=home) as r:
            result = await core.send_message(await r.open(agent="ada"), "hi", core.CollectingChannel())
    system = r.model.requests[0]["messages"][0]["content"]
    assert result.text == "done" and "likes \ufffd\ufffd tea" in system and "USER.md is a directory" in system
