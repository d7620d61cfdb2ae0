"""`jq`, `web_search`, argument checking and the registry process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import supervision as sv
from beamclaw_base import ConfigError, Secret
from beamclaw_tools import (
    JqTool,
    ToolContext,
    ToolResult,
    ToolSession,
    WebSearchTool,
    lookup_tool,
    register_tool,
    run_tool,
    supervision_tree,
    tool_definitions,
    unregister_tool,
)
from beamclaw_tools import ToolDefinition as Definition
from tests.support.asgi_server import Receive, Scope, Send, respond, serve_asgi


async def test_jq_filters_json(context: ToolContext, session: ToolSession) -> None:
    result = await run_tool(
        JqTool(), {"filter": ".items[].n", "input": '{"items": [{"n": 1}, {"n": "b"}]}'}, session, context
    )
    assert result == ToolResult('1\n"b"')
    bad = await run_tool(JqTool(), {"filter": ".[", "input": "{}"}, session, context)
    assert bad.is_error and bad.text.startswith("jq: ") and "syntax error" in bad.text


async def test_web_search_without_a_key_names_the_variable(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    result = await run_tool(WebSearchTool(), {"query": "trio"}, session, context)
    assert result.is_error and "BRAVE_API_KEY" in result.text


async def test_web_search_formats_results(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_BRAVE", "brave-key-123456")
    seen: list[Any] = []

    async def brave(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            seen.append((scope["query_string"], dict(scope["headers"])))
            results = [{"title": "Trio", "url": "https://trio.rtfd.io", "description": "async I/O"}]
            await respond(send, 200, {"web": {"results": results}})

    async with serve_asgi(brave) as base:
        tool = WebSearchTool(Secret("TEST_BRAVE"), f"{base}/search")
        result = await run_tool(tool, {"query": "trio", "max_results": 1}, session, context)
    assert result.text == "1. Trio\nhttps://trio.rtfd.io\nasync I/O"
    assert seen[0][0] == b"q=trio&count=1" and seen[0][1][b"x-subscription-token"] == b"brave-key-123456"


async def test_web_search_max_results_is_bounded_by_the_config(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TEST_BRAVE", "brave-key-123456")
    seen: list[bytes] = []

    async def brave(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            seen.append(scope["query_string"])
            results = [{"title": f"r{i}", "url": f"https://e.org/{i}", "description": ""} for i in range(20)]
            await respond(send, 200, {"web": {"results": results}})  # more than asked: only the asked are kept

    async with serve_asgi(brave) as base:
        tool = WebSearchTool(Secret("TEST_BRAVE"), f"{base}/search", max_results=3)
        two = await run_tool(tool, {"query": "trio", "max_results": 2}, session, context)
        unsaid = await run_tool(tool, {"query": "trio"}, session, context)
        too_many = await run_tool(tool, {"query": "trio", "max_results": 4}, session, context)
    assert two.text.count("https://e.org/") == 2 and unsaid.text.count("https://e.org/") == 3
    assert too_many.is_error and "max_results: 4 is greater than the maximum of 3" in too_many.text
    assert seen == [b"q=trio&count=2", b"q=trio&count=3"]  # the bad call never reached the API
    with pytest.raises(ConfigError, match=r"tools.web_search: max_results must be 1 to 20, not 50"):
        supervision_tree({"web_search": {"max_results": 50}}, tmp_path)


class Exploding:
    definition = Definition("explode", "raises", {"type": "object"})
    requires_approval = False
    min_autonomy = 0

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        raise KeyError("inner")


async def test_a_tool_bug_and_bad_json_become_error_results(context: ToolContext, session: ToolSession) -> None:
    crashed = await run_tool(Exploding(), {}, session, context)  # type: ignore[arg-type]
    assert crashed == ToolResult("tool 'explode' failed: KeyError: 'inner'", is_error=True)
    bad_json = await run_tool(JqTool(), '{"filter": ', session, context)
    assert bad_json.is_error and "not valid JSON" in bad_json.text
    not_object = await run_tool(JqTool(), "[1]", session, context)
    assert not_object.text == "arguments for 'jq' must be a JSON object, not list"


async def test_the_registry_holds_the_configured_builtins(tmp_path: Path) -> None:
    tree = supervision_tree({"disabled": ["web_search"], "bash": {"timeout_seconds": 5}}, tmp_path)
    async with sv.open_supervisor(tree):
        names = [d.name for d in await tool_definitions()]
        assert names == ["bash", "terminal", "curl", "jq", "read_file", "write_file", "delete_file"]
        await register_tool(Exploding())  # type: ignore[arg-type]
        assert await lookup_tool("explode") is not None
        assert await unregister_tool("explode") is True
        assert await lookup_tool("explode") is None
        with pytest.raises(TypeError):
            await register_tool(object())  # type: ignore[arg-type]


def test_bad_tool_config_names_the_key(tmp_path: Path) -> None:
    from beamclaw_base import ConfigError

    with pytest.raises(ConfigError, match=r"tools.bash.timeout_seconds: expected a number, got 'x'"):
        supervision_tree({"bash": {"timeout_seconds": "x"}}, tmp_path)
    with pytest.raises(ConfigError, match=r"tools.web_search.api_key: a secret must be written"):
        supervision_tree({"web_search": {"api_key": "literal-key"}}, tmp_path)
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        supervision_tree({"disabled": ["nope"]}, tmp_path)
