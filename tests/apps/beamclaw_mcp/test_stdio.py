"""MCP servers over stdio: tools offered and called, a kill -9 mid-call, hangs and crash loops."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import trio

import beamclaw_mcp as mcp
from beamclaw_tools import Autonomy, list_tools

from .conftest import RunMcp, stdio


async def test_the_servers_tools_are_offered_under_their_prefix_and_answer(run_mcp: RunMcp) -> None:
    async with run_mcp({"servers": {"test": stdio()}}) as m:
        status = await m.until("test", lambda s: s.state == "ready")
        assert "mcp__test__add" in status.tools and "mcp__test__pid" in status.tools
        assert "mcp__test__broken" not in status.tools  # its schema is not a JSON schema: skipped, said why
        assert any(line.startswith("broken: its input schema is invalid") for line in status.skipped)
        result = await m.call("mcp__test__add", {"a": 2, "b": 40})
        assert (result.text, result.is_error) == ("42", False)
        refused = await m.call("mcp__test__add", {"a": "two"})  # the server checks against its own schema
        assert refused.is_error and "validation errors for addArguments" in refused.text
        add = await m.tool("mcp__test__add")
        assert add.requires_approval and add.min_autonomy is Autonomy.SUPERVISED  # trust = "ask"
        assert add.definition.description.startswith("[MCP server test] Add two numbers")


async def test_trust_decides_which_tools_ask(run_mcp: RunMcp) -> None:
    servers = {"hints": stdio(trust="read_only_hints"), "trusted": stdio(trust="always")}
    async with run_mcp({"servers": servers}) as m:
        for name in servers:
            await m.until(name, lambda s: s.state == "ready")
        assert not (await m.tool("mcp__hints__add")).requires_approval  # annotated read-only
        assert (await m.tool("mcp__hints__write_note")).requires_approval  # no hint: asks
        assert not (await m.tool("mcp__trusted__write_note")).requires_approval


async def test_a_kill_9_mid_call_fails_the_call_at_once_and_the_server_comes_back(
    run_mcp: RunMcp, tmp_path: Path
) -> None:
    async with run_mcp({"call_timeout_seconds": 120, "servers": {"test": stdio()}}) as m:
        await m.until("test", lambda s: s.state == "ready")
        first_pid = int((await m.call("mcp__test__pid", {})).text)
        outcome: list[mcp.ServerStatus | object] = []

        async def call() -> None:
            outcome.append(await m.call("mcp__test__slow", {"seconds": 100}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await trio.sleep(1.0)
            started = trio.current_time()
            os.kill(first_pid, signal.SIGKILL)
        failed_after = trio.current_time() - started
        (result,) = outcome
        assert result.is_error and "closed the connection during the call" in result.text  # type: ignore[attr-defined]
        assert failed_after < 10  # not the call timeout (120 s)
        status = await m.until("test", lambda s: s.state == "ready" and s.restarts == 1)
        assert "mcp__test__add" in status.tools
        assert int((await m.call("mcp__test__pid", {})).text) != first_pid
        assert (await m.call("mcp__test__add", {"a": 1, "b": 1})).text == "2"


async def test_a_server_that_never_finishes_initialize_is_retried(run_mcp: RunMcp) -> None:
    # A shell, not the Python test server: its line on stderr comes well within the
    # handshake's timeout however loaded the machine (importing the SDK may not).
    hang = ["sh", "-c", "echo 'test-server: waiting for something that never comes' >&2; exec sleep 3600"]
    table = {"init_timeout_seconds": 0.5, "servers": {"stuck": {"command": hang}}}
    async with run_mcp(table) as m:
        status = await m.until("stuck", lambda s: s.restarts >= 2 and "never comes" in s.stderr)
        assert status.state in {"restarting", "connecting", "failed"}
        assert "the handshake (initialize, tools/list) took more than 0.5 s" in status.last_error
        assert "waiting for something that never comes" in status.stderr


async def test_a_crash_loop_leaves_the_server_failed_with_its_stderr_and_the_rest_running(run_mcp: RunMcp) -> None:
    table = {"max_restarts": 2, "servers": {"bad": stdio("--mode", "crash"), "good": stdio()}}
    async with run_mcp(table) as m:
        failed = await m.until("bad", lambda s: s.state == "failed")
        assert failed.restarts >= 2 and "cannot open /nonexistent/config.json" in failed.stderr
        assert (await m.until("good", lambda s: s.state == "ready")).tools
        assert (await m.call("mcp__good__add", {"a": 1, "b": 2})).text == "3"
        assert not [t for t in await list_tools() if t.definition.name.startswith("mcp__bad__")]
        await mcp.restart_server("bad")  # `beamclaw mcp restart bad`: tried again, failing again
        assert (await m.status("bad")).state != "failed"
        await m.until("bad", lambda s: s.state == "failed")


async def test_a_changed_tool_list_is_listed_again(run_mcp: RunMcp) -> None:
    async with run_mcp({"servers": {"test": stdio()}}) as m:
        await m.until("test", lambda s: s.state == "ready")
        assert (await m.call("mcp__test__grow", {})).text == "grown"
        await m.until("test", lambda s: "mcp__test__extra" in s.tools)
        assert (await m.call("mcp__test__extra", {})).text == "extra!"


async def test_a_server_gets_its_own_env_and_no_secret_of_the_daemon(run_mcp: RunMcp, monkeypatch: object) -> None:
    os.environ["BEAMCLAW_TEST_HELD_TOKEN"] = "held-by-the-daemon-0123456789"
    os.environ["MCP_TEST_VALUE"] = "given-to-the-server-9876543210"
    try:
        server = stdio(env={"MCP_TEST_SECRET": {"env": "MCP_TEST_VALUE"}, "MODE": "quiet"})
        async with run_mcp({"servers": {"test": server}}) as m:
            await m.until("test", lambda s: s.state == "ready")
            assert (await m.call("mcp__test__secret", {})).text == "given-to-the-server-9876543210"
            names = (await m.call("mcp__test__env_names", {})).text.split()
            assert "MODE" in names and "BEAMCLAW_TEST_HELD_TOKEN" not in names
    finally:
        del os.environ["BEAMCLAW_TEST_HELD_TOKEN"], os.environ["MCP_TEST_VALUE"]


async def test_big_results_are_cut(run_mcp: RunMcp) -> None:
    async with run_mcp({"max_result_bytes": 1000, "servers": {"test": stdio()}}) as m:
        await m.until("test", lambda s: s.state == "ready")
        result = await m.call("mcp__test__big", {"size": 5000})
        assert result.text.startswith("x" * 1000) and "4,000 more bytes (mcp.max_result_bytes)" in result.text


async def test_stopping_stops_the_server_and_does_not_start_it_again(run_mcp: RunMcp) -> None:
    async with run_mcp({"servers": {"test": stdio()}}) as m:
        await m.until("test", lambda s: s.state == "ready")
        pid = int((await m.call("mcp__test__pid", {})).text)
    with trio.fail_after(10):
        while _alive(pid):
            await trio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


async def test_a_skill_needing_an_mcp_server_is_usable_only_while_it_offers_tools(
    run_mcp: RunMcp, tmp_path: Path
) -> None:
    from beamclaw_core import parse_skill

    skill_md = tmp_path / "notes-search" / "SKILL.md"
    skill_md.parent.mkdir()
    skill_md.write_text(
        "---\nname: notes-search\ndescription: Search notes\nmetadata:\n  requires:\n    mcp: [test]\n"
        "    tools: [mcp__test__add]\n---\nUse mcp__test__add.\n"
    )
    skill = parse_skill(skill_md, "home")
    assert skill.eligible  # without the daemon, nothing says otherwise
    assert skill.unmet(set()) == [
        "needs the MCP server 'test', which offers no tools now (`beamclaw mcp list`)",
        "needs the tool 'mcp__test__add', which is not there now",
    ]
    async with run_mcp({"servers": {"test": stdio()}}) as m:
        await m.until("test", lambda s: s.state == "ready")
        assert skill.unmet({t.definition.name for t in await list_tools()}) == []


async def test_a_call_cancelled_by_stop_is_cancelled_on_the_server_too(run_mcp: RunMcp, tmp_path: Path) -> None:
    """`/stop` cancels the loop's step, and with it the call: the server gets notifications/cancelled."""
    marks = tmp_path / "marks.txt"
    os.environ["MCP_TEST_MARKS_PATH"] = str(marks)
    try:
        server = stdio(env={"MCP_TEST_MARKS": {"env": "MCP_TEST_MARKS_PATH"}})
        async with run_mcp({"servers": {"test": server}}) as m:
            await m.until("test", lambda s: s.state == "ready")
            with trio.move_on_after(1.0):
                await m.call("mcp__test__slow", {"seconds": 60})
            with trio.fail_after(10):
                while not marks.exists():
                    await trio.sleep(0.05)
            assert marks.read_text() == "cancelled\n"
            assert (await m.call("mcp__test__add", {"a": 1, "b": 2})).text == "3"  # the server goes on
    finally:
        del os.environ["MCP_TEST_MARKS_PATH"]
