"""``[mcp]`` of config.toml: what it takes, and the error that names what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from beamclaw_mcp import parse_mcp_config


def _server(**table: Any) -> dict[str, Any]:
    return {"servers": {"files": {"command": ["mcp-files"], **table}}}


def test_a_stdio_and_an_http_server_with_their_settings() -> None:
    config = parse_mcp_config({
        "call_timeout_seconds": 5,
        "servers": {
            "files": {"command": ["npx", "server"], "env": {"LEVEL": "warn"}, "tools": ["read_*"]},
            "search": {"url": "https://mcp.example.org/mcp", "headers": {"Authorization": {"env": "SEARCH"}},
                       "trust": "read_only_hints"},
        },
    })  # fmt: skip
    assert config.call_timeout_seconds == 5
    assert config.servers["files"].kind == "stdio" and config.servers["files"].tools == ["read_*"]
    assert config.servers["search"].kind == "http" and config.servers["search"].trust == "read_only_hints"


@pytest.mark.parametrize("name", ["Files", "-files", "files__x", "files_", "f" * 33, "fi les", ""])
def test_a_name_that_would_blur_a_tool_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"a server's name is 1 to 32 lowercase letters"):
        parse_mcp_config({"servers": {name: {"command": ["x"]}}})


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"servers": {"x": {}}}, "give either command"),
        ({"servers": {"x": {"command": ["a"], "url": "http://h/mcp"}}}, "give either command"),
        ({"servers": {"x": {"url": "file:///etc/passwd"}}}, "not an http:// or https:// URL"),
        ({"servers": {"x": {"command": ["a"], "headers": {"A": "b"}}}}, "headers go with url"),
        (_server(transport="sse"), "transport goes with url"),
        ({"servers": {"x": {"url": "http://h/sse", "transport": "websocket"}}}, "transport"),
        ({"servers": {"x": {"url": "http://h/mcp", "cwd": "/"}}}, "cwd goes with command"),
        (_server(trust="maybe"), "trust"),
        (_server(comand=["typo"]), "comand"),
        ({"max_message_bytes": 0}, "mcp.max_message_bytes must be more than 0"),
        ({"max_tools_per_server": -1}, "mcp.max_tools_per_server must be more than 0"),
        ({"relist_interval_seconds": 0}, "mcp.relist_interval_seconds must be more than 0"),
        ({"max_restarts": -1}, "mcp.max_restarts must be 0 or more"),
    ],
)
def test_a_bad_table_names_what_is_wrong(table: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_mcp_config(table)


def test_a_credential_written_in_the_file_is_refused() -> None:
    with pytest.raises(ValueError, match="env"):
        parse_mcp_config(_server(env={"TOKEN": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}))
