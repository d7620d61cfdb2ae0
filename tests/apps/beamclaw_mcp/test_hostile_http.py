"""A compromised HTTP MCP server answering far too much: read only to the cap, and let go.

Each attack (see `hostile_http`) answers a call with 200 MB: the call fails saying why,
the daemon's memory grows by about the cap (1 MB here) rather than by the answer, the
connection is made anew (a restart, with backoff) and the next call is served.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from .conftest import RunMcp
from .hostile_http import ATTACKS, CHATTY_EVENTS, serve_hostile

_CAP = 1_000_000
_ANSWER = 200_000_000
_TOO_LARGE = "the server sent a message larger than 1,000,000 bytes (mcp.max_message_bytes)"
_COMPRESSED = "the server sent a compressed answer (gzip), which was not asked for"


@pytest.mark.parametrize("attack", ATTACKS)
async def test_a_huge_answer_is_read_only_to_the_cap_and_ends_the_connection(run_mcp: RunMcp, attack: str) -> None:
    reason = _COMPRESSED if attack == "gzip" else _TOO_LARGE
    table: dict[str, Any] = {"max_message_bytes": _CAP, "ping_interval_seconds": 600}
    async with serve_hostile(attack, _ANSWER) as server:
        table["servers"] = {"evil": {"url": server.url}}
        async with run_mcp(table) as m:
            await m.until("evil", lambda s: s.state == "ready")
            tracemalloc.start()
            try:
                result = await m.call("mcp__evil__attack", {})
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert result.is_error and reason in result.text, result.text
            assert peak < 8 * _CAP, f"{peak:,} bytes allocated while reading the answer"
            assert server.sent < _ANSWER // 4  # the reading stopped; the rest was never asked for
            status = await m.until("evil", lambda s: s.restarts >= 1 and s.state == "ready")
            assert reason in status.last_error
            assert (await m.call("mcp__evil__add", {})).text == "ok"


async def test_an_event_stream_is_bounded_by_event_not_by_its_length(run_mcp: RunMcp) -> None:
    """Many events, each under the cap, together far over it: all read, the call answered."""
    async with serve_hostile("json", _ANSWER) as server:
        table = {"max_message_bytes": _CAP, "servers": {"chatty": {"url": server.url}}}
        async with run_mcp(table) as m:
            await m.until("chatty", lambda s: s.state == "ready")
            assert CHATTY_EVENTS * 65_536 > 4 * _CAP
            assert (await m.call("mcp__chatty__chatty", {})).text == "chatty done"
            assert (await m.status("chatty")).restarts == 0


async def test_an_endless_event_on_the_servers_own_stream_ends_the_connection(run_mcp: RunMcp) -> None:
    """The stream a client listens on (GET) is counted too, though no call waits on it."""
    async with serve_hostile("listen", _ANSWER) as server:
        table = {"max_message_bytes": _CAP, "servers": {"evil": {"url": server.url}}}
        async with run_mcp(table) as m:
            status = await m.until("evil", lambda s: s.restarts >= 1)
            assert _TOO_LARGE in status.last_error
