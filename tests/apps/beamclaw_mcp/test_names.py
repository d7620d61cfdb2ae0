"""Tool names ``mcp__<server>__<tool>``: valid for every model, distinct, and traced back to their server."""

from __future__ import annotations

import re

from beamclaw_mcp._names import remote_server, tool_names

_VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_names_are_valid_distinct_and_belong_to_their_server() -> None:
    remote = ["read", "files/read", "files.read", "files_read", "é" * 10, "x" * 200, "a b"]
    names = tool_names("docs", remote)
    assert names["read"] == "mcp__docs__read" and names["a b"] == "mcp__docs__a_b"
    assert len(set(names.values())) == len(remote)
    for local in names.values():
        assert _VALID.fullmatch(local) and remote_server(local) == "docs"


def test_a_tool_name_starting_with_an_underscore_stays_with_its_server() -> None:
    (local,) = tool_names("s", ["_x"]).values()
    assert remote_server(local) == "s"
    assert remote_server("write_file") is None and remote_server("mcp__nodelimiter") is None
