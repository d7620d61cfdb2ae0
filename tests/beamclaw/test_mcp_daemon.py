"""The MCP host in the running daemon, through the real commands: an agent calling an MCP
server's tool, `beamclaw mcp list|tools|restart`, a server killed and back, and
`beamclaw mcp serve` driven by the official client."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import trio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.model_server import Call, Reply, scripted_model

from .daemon import api, cli, environment, running_daemon, write_config

ROOT = Path(__file__).parents[2]


def _mcp_table() -> str:
    command = ", ".join(f'"{part}"' for part in (sys.executable, "-m", "tests.support.mcp_server"))
    return f'[mcp.servers.test]\ncommand = [{command}]\ncwd = "{ROOT}"\n'


async def _until_ready(home: Path) -> str:
    with trio.fail_after(120):
        while "ready" not in (listed := (await cli(home, "mcp", "list")).stdout.decode()):
            await trio.sleep(0.2)
    return listed


async def test_an_agent_calls_an_mcp_tool_and_the_server_survives_a_kill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [
        Reply(tool_calls=(Call("mcp__test__add", {"a": 19, "b": 23}, id="m1"),)),
        Reply("The server says 42."),
        Reply(tool_calls=(Call("mcp__test__pid", {}, id="m2"),)),
        Reply("noted the pid"),
        Reply(tool_calls=(Call("mcp__test__add", {"a": 1, "b": 1}, id="m3"),)),
        Reply("still adding"),
    ]
    async with scripted_model(*steps) as model, running_daemon(write_config(tmp_path, model, extra=_mcp_table()), home):
        listed = await _until_ready(home)
        assert "test" in listed and "stdio" in listed and "broken: its input schema is invalid" in listed
        tools = (await cli(home, "mcp", "tools", "test")).stdout.decode()
        assert "mcp__test__add  [asks]  [MCP server test] Add two numbers." in tools
        assert (await cli(home, "chat", "what is 19 + 23?")).stdout == b"The server says 42.\n"
        assert [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"] == ["42"]

        await cli(home, "chat", "which pid?")
        pid = int(next(m["content"] for m in model.requests[3]["messages"] if m.get("tool_call_id") == "m2"))
        os.kill(pid, signal.SIGKILL)
        with trio.fail_after(120):
            while " 1 " not in (await cli(home, "mcp", "list")).stdout.decode().split("\n")[1]:
                await trio.sleep(0.2)
        await _until_ready(home)
        assert (await cli(home, "chat", "and again")).stdout == b"still adding\n"
        assert [m["content"] for m in model.requests[5]["messages"] if m.get("tool_call_id") == "m3"] == ["2"]

        restarted = await cli(home, "mcp", "restart", "test")
        assert restarted.returncode == 0 and b"restarting test" in restarted.stdout
        unknown = await cli(home, "mcp", "restart", "nosuch")
        assert unknown.returncode == 1 and b"no MCP server 'nosuch' is configured (configured: test)" in unknown.stderr


async def test_beamclaw_serves_its_agents_over_stdio_to_an_mcp_host(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("hello, host")) as model,
        running_daemon(write_config(tmp_path, model), home),
    ):
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "beamclaw", "mcp", "serve", "--user", "local:ide"],
            env={k: v for k, v in environment(home).items() if k in {"BEAMCLAW_HOME", "PYTHONPATH"}}, cwd=str(ROOT),
        )  # fmt: skip
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert {tool.name for tool in (await session.list_tools()).tools} == {"chat", "agents"}
            answer = await session.call_tool("chat", {"message": "hi from the IDE"})
            assert answer.content[0].text == "hello, host"  # type: ignore[union-attr]
        history = (await cli(home, "history", "--user", "local:ide")).stdout.decode()
        assert "user: hi from the IDE" in history and "assistant: hello, host" in history


async def test_an_mcp_host_answers_an_approval_with_yes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    create = Call("scheduler", {"action": "create", "every": "1h", "message": "water the plants"})
    steps = [Reply(tool_calls=(create,)), Reply("I will remind you every hour.")]
    quiet = "[scheduler.heartbeat]\nenabled = false\n"
    async with (
        scripted_model(*steps, repeat=Reply("ok")) as model,
        running_daemon(write_config(tmp_path, model, autonomy="supervised", extra=quiet), home),
    ):
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "beamclaw", "mcp", "serve", "--user", "local:ide"],
            env={k: v for k, v in environment(home).items() if k in {"BEAMCLAW_HOME", "PYTHONPATH"}}, cwd=str(ROOT),
        )  # fmt: skip
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            asked = await session.call_tool("chat", {"message": "remind me to water the plants every hour"})
            question = asked.content[0].text  # type: ignore[union-attr]
            assert "Approve scheduler" in question and "act later on its own" in question
            waiting = await session.call_tool("chat", {"message": "and the roses?"})
            assert "still waiting for an answer" in waiting.content[0].text  # type: ignore[union-attr]
            done = await session.call_tool("chat", {"message": "/yes"})
            assert done.content[0].text == "I will remind you every hour."  # type: ignore[union-attr]
        jobs = (await api(home, "GET", "/v1/scheduler/jobs")).json()["jobs"]
        assert [(job["user"], job["message"], job["created_by"]) for job in jobs] == [
            ("local:ide", "water the plants", "agent")
        ]
