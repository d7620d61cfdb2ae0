"""The tool bridge over a real Unix socket, driven by the in-container client module,
without a container: JSON-RPC 2.0, the policy on every call, PII both ways."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import trio

from beamclaw_sandbox import Bridge, PiiTokenizer, PolicyConfig, PolicyRule
from beamclaw_sandbox._bridge import MAX_MESSAGE
from beamclaw_sandbox._discovery import write_discovery
from beamclaw_tools import BashTool, ToolDefinition

from .conftest import RealTools, load_bridge_client


def _definitions(real_tools: RealTools) -> list[ToolDefinition]:
    return [t.definition for t in real_tools.tools.values()] + [BashTool().definition]


async def _serve(nursery: trio.Nursery, bridge: Bridge, path: Path) -> None:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(str(path))
    sock.listen(8)
    listener = trio.SocketListener(sock)

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with listener:
            await bridge.serve(listener, task_status=task_status)

    await nursery.start(serve)


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path, real_tools: RealTools) -> tuple[Bridge, Any]:
    policy = PolicyConfig("allow", [PolicyRule("deny", "bash"), PolicyRule("deny", "write_*")])
    bridge = Bridge(policy, _definitions(real_tools), real_tools, PiiTokenizer())
    path = tmp_path / "bridge.sock"
    await _serve(nursery, bridge, path)
    return bridge, load_bridge_client(path)


async def test_a_script_finds_describes_and_calls_allowed_tools(served: tuple[Bridge, Any], real_tools: RealTools):
    bridge, client = served
    (real_tools.context.workspace / "notes.md").write_text("remember the milk\n")
    names = [t["name"] for t in await trio.to_thread.run_sync(client.search_tools, "")]
    assert sorted(names) == ["jq", "read_file"]  # bash and write_file are denied, so not even listed
    assert (await trio.to_thread.run_sync(client.search_tools, "file"))[0]["name"] == "read_file"
    schema = await trio.to_thread.run_sync(client.get_tool, "read_file")
    assert schema["parameters"]["required"] == ["path"]
    text = await trio.to_thread.run_sync(lambda: client.call_tool("read_file", path="notes.md"))
    assert "remember the milk" in text
    assert bridge.calls == 1 and real_tools.seen == [("read_file", {"path": "notes.md"})]


async def test_denied_tools_are_refused_before_anything_runs(served: tuple[Bridge, Any], real_tools: RealTools):
    bridge, client = served
    for name, args in (("bash", {"command": "id"}), ("write_file", {"path": "x", "content": "y"})):
        with pytest.raises(client.BridgeError) as caught:
            await trio.to_thread.run_sync(lambda n=name, a=args: client.call_tool(n, **a))
        assert caught.value.code == -32001 and "denied by the sandbox policy" in caught.value.message
    with pytest.raises(client.BridgeError) as caught:
        await trio.to_thread.run_sync(client.get_tool, "bash")
    assert caught.value.code == -32001
    with pytest.raises(client.BridgeError) as caught:
        await trio.to_thread.run_sync(lambda: client.call_tool("exec", code="print(1)"))
    assert caught.value.code == -32001  # never exec from inside exec, whatever the policy
    assert real_tools.seen == [] and bridge.denied == 4
    assert not (real_tools.context.workspace / "x").exists()


async def test_a_failing_tool_is_a_tool_error_not_a_bridge_error(served: tuple[Bridge, Any]) -> None:
    _, client = served
    with pytest.raises(client.ToolCallError, match="invalid arguments"):
        await trio.to_thread.run_sync(lambda: client.call_tool("read_file", nonsense=1))
    with pytest.raises(client.BridgeError) as caught:
        await trio.to_thread.run_sync(lambda: client.call_tool("no_such_tool"))
    assert caught.value.code == -32002


async def test_pii_tokens_are_restored_for_the_tool_and_values_tokenized_for_the_script(
    served: tuple[Bridge, Any], real_tools: RealTools
) -> None:
    bridge, client = served
    pii = bridge.tokenizer
    assert pii is not None
    (real_tools.context.workspace / "contacts.json").write_text(json.dumps({"ada": "ada@example.com"}))
    text = await trio.to_thread.run_sync(lambda: client.call_tool("read_file", path="contacts.json"))
    assert "ada@example.com" not in text and "PII_EMAIL_" in text  # the script sees a token
    token = json.loads(text)["ada"]
    filtered = await trio.to_thread.run_sync(
        lambda: client.call_tool("jq", input=json.dumps({"to": token, "n": 1}), filter=".to")
    )
    # The tool was given the value; its result (the same value) came back as the same token.
    assert real_tools.seen[-1][1]["input"] == json.dumps({"to": "ada@example.com", "n": 1})
    assert filtered.strip() == json.dumps(token)
    assert pii.restore(filtered) == '"ada@example.com"'


async def test_json_rpc_protocol_errors_batches_and_notifications(served: tuple[Bridge, Any], tmp_path: Path):
    stream = await trio.open_unix_socket(str(tmp_path / "bridge.sock"))

    async def exchange(payload: bytes) -> Any:
        await stream.send_all(payload + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            data += await stream.receive_some(65536)
        return json.loads(data)

    assert (await exchange(b"{not json"))["error"]["code"] == -32700
    assert (await exchange(b'{"jsonrpc": "1.0", "id": 1, "method": "x"}'))["error"]["code"] == -32600
    assert (await exchange(b'{"jsonrpc": "2.0", "id": 2, "method": "rm_rf"}'))["error"]["code"] == -32601
    bad = await exchange(b'{"jsonrpc": "2.0", "id": 3, "method": "get_tool", "params": []}')
    assert bad == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "params must be an object"}}
    batch = [
        {"jsonrpc": "2.0", "id": 4, "method": "get_tool", "params": {"name": "jq"}},
        {"jsonrpc": "2.0", "method": "search_tools"},  # a notification: no answer
        {"jsonrpc": "2.0", "id": 5, "method": "call_tool", "params": {"name": "bash", "arguments": {}}},
    ]
    answers = await exchange(json.dumps(batch).encode())
    assert [a["id"] for a in answers] == [4, 5]
    assert answers[0]["result"]["name"] == "jq" and answers[1]["error"]["code"] == -32001
    await stream.aclose()


async def test_without_a_dispatcher_calls_are_unavailable(nursery: trio.Nursery, tmp_path: Path, real_tools):
    bridge = Bridge(PolicyConfig(), _definitions(real_tools), None)
    await _serve(nursery, bridge, tmp_path / "b.sock")
    client = load_bridge_client(tmp_path / "b.sock")
    assert (await trio.to_thread.run_sync(client.search_tools, "read"))[0]["name"] == "read_file"
    with pytest.raises(client.BridgeError) as caught:
        await trio.to_thread.run_sync(lambda: client.call_tool("read_file", path="x"))
    assert caught.value.code == -32003


def test_the_discovery_tree_lists_only_what_the_policy_allows(tmp_path: Path, real_tools: RealTools) -> None:
    policy = PolicyConfig("allow", [PolicyRule("deny", "bash")])
    bridge = Bridge(policy, _definitions(real_tools), None)
    assert write_discovery(tmp_path / "tools", bridge.visible())
    assert not write_discovery(tmp_path / "tools", bridge.visible())  # unchanged: not rewritten
    index = (tmp_path / "tools" / "index.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in index] == ["jq", "read_file", "write_file"]
    assert json.loads((tmp_path / "tools" / "read_file" / "schema.json").read_text())["required"] == ["path"]
    assert not (tmp_path / "tools" / "bash").exists()


async def _exchange(stream: trio.SocketStream, payload: bytes) -> Any:
    """Send one line, read one answer line."""
    await stream.send_all(payload + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = await stream.receive_some(65536)
        assert chunk, "the bridge closed the connection"
        data += chunk
    return json.loads(data)


async def test_a_script_cannot_crash_the_bridge_with_what_it_cannot_parse(served: tuple[Bridge, Any], tmp_path: Path):
    """Each hostile line gets an error answer on the same connection, which goes on
    answering; so does a new one (before, 200,000 ``[`` raised RecursionError out of
    the bridge and ended its sandbox)."""
    stream = await trio.open_unix_socket(str(tmp_path / "bridge.sock"))
    search = b'{"jsonrpc": "2.0", "id": 7, "method": "search_tools", "params": {"query": "jq"}}'
    nested = await _exchange(stream, b"[" * 200_000)
    assert nested["id"] is None and nested["error"]["code"] == -32700
    assert "nested too deeply" in nested["error"]["message"]
    assert (await _exchange(stream, b"{" * 200_000))["error"]["code"] == -32700
    broken = await _exchange(stream, b'{"jsonrpc": "2.0", "id": 1, "method": "search_tools", "params": {"q": [}')
    assert broken["error"]["code"] == -32700
    assert (await _exchange(stream, b"\xff\xfe not utf-8"))["error"]["code"] == -32700
    assert (await _exchange(stream, b"9" * 5000))["error"]["code"] == -32700  # over Python's digits limit
    deep_id = b'{"jsonrpc": "2.0", "method": "search_tools", "id": ' + b"[" * 900 + b"]" * 900 + b"}"
    assert await _exchange(stream, deep_id) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "an id must be a string, a number or null"},
    }  # fmt: skip
    over = await _exchange(stream, b'{"padding": "' + b"x" * MAX_MESSAGE + b'"}')
    assert over["error"]["code"] == -32600 and f"over {MAX_MESSAGE} bytes" in over["error"]["message"]
    answer = await _exchange(stream, search)
    assert answer["id"] == 7 and [tool["name"] for tool in answer["result"]] == ["jq"]
    await stream.aclose()
    fresh = await trio.open_unix_socket(str(tmp_path / "bridge.sock"))
    assert (await _exchange(fresh, search))["result"][0]["name"] == "jq"
    await fresh.aclose()


async def test_an_over_long_line_sent_slowly_is_dropped_as_it_comes(served: tuple[Bridge, Any], tmp_path: Path):
    """A line past the limit in many small writes, no newline for a long while: one error
    for it, and the line after it is read whole (the connection did not lose its place)."""
    stream = await trio.open_unix_socket(str(tmp_path / "bridge.sock"))
    piece = b"[" * 65536
    for _ in range(MAX_MESSAGE // len(piece) + 3):
        await stream.send_all(piece)
    over = await _exchange(stream, b"]")
    assert over["error"]["code"] == -32600
    answer = await _exchange(
        stream, b'{"jsonrpc": "2.0", "id": "after", "method": "get_tool", "params": {"name": "jq"}}'
    )
    assert answer["id"] == "after" and answer["result"]["name"] == "jq"
    await stream.aclose()
