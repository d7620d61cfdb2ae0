"""/mcp: BeamClaw's agents as an MCP server, reached with the official `mcp` client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.model_server import Call, Reply

from .conftest import Gateway, RunGateway

TOKEN = "mcp-gateway-token-0123456789"


@contextlib.asynccontextmanager
async def _client(g: Gateway, token: str | None = TOKEN) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{g.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _text(result: object) -> str:
    return "\n".join(block.text for block in result.content)  # type: ignore[attr-defined]


async def test_an_mcp_host_talks_to_an_agent_and_answers_its_approval(run_gateway: RunGateway) -> None:
    steps = [
        Reply("Hello from the agent."),
        Reply(tool_calls=(Call("bash", {"command": "command echo approved"}, id="b"),)),
        Reply("The command said approved."),
    ]
    async with run_gateway(*steps, token=TOKEN, autonomy_level="supervised") as g, _client(g) as mcp:
        assert {tool.name for tool in (await mcp.list_tools()).tools} == {"chat", "agents"}
        assert _text(await mcp.call_tool("agents", {})) == "default"
        first = await mcp.call_tool("chat", {"message": "hi", "user": "ide-user"})
        assert (_text(first), first.is_error) == ("Hello from the agent.", False)
        asked = _text(await mcp.call_tool("chat", {"message": "run it", "user": "ide-user"}))
        assert asked.startswith('Approve bash with {"command": "command echo approved"}?')
        waiting = _text(await mcp.call_tool("chat", {"message": "something else", "user": "ide-user"}))
        assert waiting.startswith("The agent is still waiting for an answer to: Approve bash")
        done = _text(await mcp.call_tool("chat", {"message": "/yes", "user": "ide-user"}))
        assert done == "The command said approved."
        # One conversation: the host user's, with this agent, kept by the daemon.
        assert [r["messages"][-1]["content"] for r in g.model.requests[:2]] == ["hi", "run it"]
        assert [m["content"] for m in g.model.requests[1]["messages"] if m["role"] == "user"] == ["hi", "run it"]


async def test_the_endpoint_is_behind_the_token_and_names_a_bad_agent(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("ok"), token=TOKEN) as g:
        async with httpx2.AsyncClient() as http:
            refused = await http.post(f"{g.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        async with _client(g) as mcp:
            bad = await mcp.call_tool("chat", {"message": "hi", "agent": "nosuch"})
            assert bad.is_error and _text(bad).endswith(
                "there is no agent 'nosuch' (agents: default); create it with `beamclaw agent create nosuch`"
            )


async def test_a_user_that_would_drive_a_terminal_is_refused(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("ok"), token=TOKEN) as g, _client(g) as mcp:
        for user, why in [("ada\x1b]0;pwned\x07", "must be printable"), ("x" * 200, "at most 128 characters")]:
            bad = await mcp.call_tool("chat", {"message": "hi", "user": user})
            assert bad.is_error and why in _text(bad)
        assert g.model.count == 0
