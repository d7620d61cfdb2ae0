"""Servers that misbehave, by accident or on purpose: each is contained to itself.

A banner on stdout, bytes that are not UTF-8, a message too large to read, a listing of
tools no model can use (or far too many), a schema crafted to take exponential time, a
child process left behind: none stops the daemon, blocks its event loop, or reaches
another server.
"""

from __future__ import annotations

import os
import signal
import sys
import unicodedata
from pathlib import Path
from typing import Any

import trio

from .conftest import RunMcp, stdio
from .hostile_stdio import FLOOD
from .test_stdio import _alive

ROOT = Path(__file__).parents[3]


def raw(mode: str, **table: Any) -> dict[str, Any]:
    """A server table running the hand-written server in *mode*."""
    return {"command": [sys.executable, "-m", "tests.support.raw_mcp_server", mode], "cwd": str(ROOT), **table}


async def test_lines_that_are_not_messages_are_skipped_and_the_server_serves(run_mcp: RunMcp) -> None:
    async with run_mcp({"servers": {"raw": raw("noise")}}) as m:
        status = await m.until("raw", lambda s: s.state == "ready")
        assert status.tools == ["mcp__raw__ok"] and status.restarts == 0
        assert (await m.call("mcp__raw__ok", {"q": 1})).text == 'called ok {"q": 1}'


async def test_a_message_too_large_ends_the_connection_and_says_so(run_mcp: RunMcp) -> None:
    table = {"max_message_bytes": 100_000, "servers": {"raw": raw("huge"), "good": stdio()}}
    async with run_mcp(table) as m:
        status = await m.until("raw", lambda s: s.restarts >= 1 and bool(s.last_error))
        assert "larger than 100,000 bytes (mcp.max_message_bytes)" in status.last_error
        await m.until("good", lambda s: s.state == "ready")
        assert (await m.call("mcp__good__add", {"a": 1, "b": 2})).text == "3"


async def test_a_message_nested_too_deeply_ends_the_connection_and_says_so(run_mcp: RunMcp) -> None:
    async with run_mcp({"servers": {"raw": raw("deep")}}) as m:
        status = await m.until("raw", lambda s: s.restarts >= 1 and bool(s.last_error))
        assert "not valid JSON-RPC: Invalid JSON: recursion limit exceeded" in status.last_error


async def test_tools_no_model_can_use_are_skipped_each_with_its_reason(run_mcp: RunMcp) -> None:
    async with run_mcp({"servers": {"raw": raw("bad-tools")}}) as m:
        status = await m.until("raw", lambda s: s.state == "ready")
        assert status.tools == ["mcp__raw__ok", "mcp__raw__redos"]
        reasons = "\n".join(status.skipped)
        for words in (
            "tool #1: it is not a valid tool (",
            "tool #2: it is not a valid tool",
            "strings: it is not a valid tool (inputSchema.type: Input should be 'object')",
            "huge_schema: its input schema is 100,",
            "its name is 200 characters, not 1 to 128",
            "bad_description: it is not a valid tool (description:",
            "ok: listed twice (the first is offered)",
        ):
            assert words in reasons, (words, reasons)
        assert (await m.tool("mcp__raw__ok")).definition.description == "[MCP server raw] The one usable tool."


async def test_a_schema_crafted_to_take_exponential_time_is_not_run_here(run_mcp: RunMcp) -> None:
    """``^(a+)+$`` against 40 a's and a '!' would hold the event loop for hours: the server checks its own."""
    async with run_mcp({"servers": {"raw": raw("bad-tools")}}) as m:
        await m.until("raw", lambda s: s.state == "ready")
        text = "a" * 40 + "!"
        assert (await m.call("mcp__raw__redos", {"s": text})).text == f'called redos {{"s": "{text}"}}'
        assert (await m.call("mcp__raw__redos", {"s": 1})).text == 'called redos {"s": 1}'  # the server's to refuse
        refused = await m.call("mcp__raw__redos", '["not", "an", "object"]')
        assert refused.is_error and "must be a JSON object" in refused.text


async def test_only_the_tools_chosen_are_offered_and_at_most_the_limit(run_mcp: RunMcp) -> None:
    table = {
        "max_tools_per_server": 10,
        "servers": {"many": raw("many-tools"), "chosen": stdio(tools=["add", "s*"])},
    }
    async with run_mcp(table) as m:
        many = await m.until("many", lambda s: s.state == "ready")
        assert len(many.tools) == 10 and len(many.skipped) == 90
        assert "tool10: beyond mcp.max_tools_per_server (10)" in many.skipped
        chosen = await m.until("chosen", lambda s: s.state == "ready")
        assert chosen.tools == ["mcp__chosen__add", "mcp__chosen__secret", "mcp__chosen__slow"]
        assert [line.split(":")[0] for line in chosen.skipped] == ["broken"]  # not chosen is not a problem


async def test_a_servers_children_do_not_outlive_it(run_mcp: RunMcp, tmp_path: Path) -> None:
    """Killed with the server (kill -9: the connection ends), and when the daemon stops it."""
    marks = tmp_path / "children.txt"
    os.environ["MCP_TEST_MARKS_PATH"] = str(marks)
    try:
        server = raw("fork", env={"MCP_TEST_MARKS": {"env": "MCP_TEST_MARKS_PATH"}})
        async with run_mcp({"servers": {"raw": server}}) as m:
            await m.until("raw", lambda s: s.state == "ready")
            first_child = int(marks.read_text().split()[0])
            assert _alive(first_child)
            server_pid = os.getpgid(first_child)  # the server leads its own process group
            os.kill(server_pid, signal.SIGKILL)
            await _until_dead(first_child)
            await m.until("raw", lambda s: s.state == "ready" and s.restarts == 1)
            second_child = int(marks.read_text().split()[1])
            assert _alive(second_child)
        await _until_dead(second_child)
    finally:
        del os.environ["MCP_TEST_MARKS_PATH"]


async def _until_dead(pid: int) -> None:
    with trio.fail_after(20):
        while _alive(pid):
            await trio.sleep(0.05)


def hostile(mode: str, log: Path, **table: Any) -> dict[str, Any]:
    """A server table running `hostile_stdio` in *mode*, its log in *log*."""
    command = [sys.executable, "-m", "tests.apps.beamclaw_mcp.hostile_stdio", mode, str(log)]
    return {"command": command, "cwd": str(ROOT), **table}


async def test_a_flood_of_list_changed_lists_the_tools_no_more_often_than_the_interval(
    run_mcp: RunMcp, tmp_path: Path
) -> None:
    """Thousands of notifications a second, within one interval: not one listing more."""
    log = tmp_path / "flood.log"
    async with run_mcp({"relist_interval_seconds": 3600, "servers": {"flood": hostile("flood", log)}}) as m:
        await m.until("flood", lambda s: s.state == "ready")
        with trio.fail_after(60):
            while f"flooded {FLOOD}" not in log.read_text():
                await trio.sleep(0.05)
        # The server answers after its last notification: once answered, all were read.
        assert (await m.call("mcp__flood__ok", {})).text == "called"
        assert log.read_text().splitlines().count("list") == 1  # the handshake's
        assert (await m.status("flood")).restarts == 0


async def test_after_a_flood_of_list_changed_the_last_change_is_seen(run_mcp: RunMcp, tmp_path: Path) -> None:
    """The notifications are coalesced, not dropped: the tool added before the last one
    is offered (relist_interval_seconds is 1 s by default)."""
    log = tmp_path / "flood.log"
    async with run_mcp({"servers": {"flood": hostile("flood", log)}}) as m:
        await m.until("flood", lambda s: "mcp__flood__late" in s.tools)
        assert f"flooded {FLOOD}" in log.read_text().splitlines()
        assert (await m.call("mcp__flood__late", {})).text == "called"
        assert (await m.status("flood")).restarts == 0


async def test_tool_descriptions_lose_what_would_act_instead_of_showing(run_mcp: RunMcp, tmp_path: Path) -> None:
    """Escape sequences (a clipboard write, a screen clear), C1 and bidi controls reach
    neither the model nor the terminal; line feeds and tabs stay."""
    async with run_mcp({"servers": {"esc": hostile("escapes", tmp_path / "esc.log")}}) as m:
        status = await m.until("esc", lambda s: s.state == "ready")
        definition = (await m.tool("mcp__esc__read")).definition
        assert definition.description == "[MCP server esc] Reads a file.\nSafe\tto call."
        schema = definition.parameters
        assert schema["title"] == "Args"
        assert schema["properties"]["path"]["description"] == "Where to read.\n\tRelative."
        assert schema["properties"]["description"]["description"] == "A field named so."
        assert schema["properties"]["description"]["enum"] == ["a", "b"]  # data the server checks: kept
        assert status.tools == ["mcp__esc__read"]
        (skipped,) = status.skipped
        assert skipped == "evil: its name holds control or format characters (escape sequences, bidi overrides...)"
        shown = "".join(_strings([definition.description, schema, status.skipped]))
        assert not [char for char in shown if char not in "\n\t" and unicodedata.category(char) in {"Cc", "Cf"}]


def _strings(value: Any) -> list[str]:
    """Every string in *value*, keys included, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (*_strings(key), *_strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
