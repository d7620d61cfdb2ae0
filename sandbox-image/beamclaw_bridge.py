"""BeamClaw's tools, from inside the sandbox (standard library only).

In a Python script run by ``exec`` these names are already defined::

    tools = search_tools("weather")          # [{"name": ..., "description": ...}]
    schema = get_tool("read_file")           # {"name", "description", "parameters"}
    text = call_tool("read_file", path="notes.md")

From a shell script::

    python3 -m beamclaw_bridge search weather
    python3 -m beamclaw_bridge get read_file
    python3 -m beamclaw_bridge call read_file '{"path": "notes.md"}'

The discovery tree is also on disk: ``/tools/index.txt`` (one ``name: summary`` a line),
``/tools/<name>/description.txt`` and ``/tools/<name>/schema.json``.

Each call is a JSON-RPC 2.0 request on the Unix socket ``$BEAMCLAW_BRIDGE_SOCKET``; the
host checks it against the sandbox's tool policy before anything runs. Personal data
in results arrives as tokens (``PII_EMAIL_..._1``); pass a token on to another tool and
the tool gets the real value.
"""

from __future__ import annotations

import os
import sys
import threading

# json and socket are imported at the first call: most scripts never call a tool, and
# every millisecond of start-up is paid on each exec.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any

SOCKET_PATH = os.environ.get("BEAMCLAW_BRIDGE_SOCKET", "/run/beamclaw/bridge.sock")

__all__ = ["BridgeError", "ToolCallError", "call_tool", "close", "get_tool", "search_tools"]


class BridgeError(Exception):
    """The bridge refused the request: ``code`` is the JSON-RPC error code (-32001: denied by policy)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (error {code})")
        self.code = code
        self.message = message


class ToolCallError(Exception):
    """The tool ran and reported a failure; the message is its error text."""


_lock = threading.Lock()
_last_id = 0
_connection: tuple[socket.socket, Any] | None = None


def _connect() -> tuple[socket.socket, Any]:
    global _connection
    if _connection is None:
        import socket  # noqa: PLC0415

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(SOCKET_PATH)
        except OSError as exc:
            sock.close()
            raise BridgeError(-32003, f"the tool bridge is not reachable at {SOCKET_PATH}: {exc}") from None
        _connection = (sock, sock.makefile("rb"))
    return _connection


def _request(method: str, params: dict[str, Any]) -> Any:
    global _connection, _last_id
    import json  # noqa: PLC0415

    with _lock:
        sock, reader = _connect()
        _last_id += 1
        request_id = _last_id
        payload = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            sock.sendall(json.dumps(payload).encode() + b"\n")
            line = reader.readline()
        except OSError as exc:
            _connection = None
            raise BridgeError(-32003, f"the tool bridge closed: {exc}") from None
        if not line:
            _connection = None
            raise BridgeError(-32003, "the tool bridge closed the connection")
    response = json.loads(line)
    if "error" in response:
        error = response["error"]
        raise BridgeError(int(error.get("code", -32603)), str(error.get("message", "error")))
    return response["result"]


def close() -> None:
    """Close the connection to the bridge (the next call opens a new one)."""
    global _connection
    with _lock:
        if _connection is not None:
            sock, reader = _connection
            _connection = None
            reader.close()
            sock.close()


def search_tools(query: str = "", limit: int = 20) -> list[dict[str, str]]:
    """The tools whose name or description matches *query* (all of them for ""), best first."""
    found: list[dict[str, str]] = _request("search_tools", {"query": query, "limit": limit})
    return found


def get_tool(name: str) -> dict[str, Any]:
    """The tool's name, description and JSON-schema parameters."""
    tool: dict[str, Any] = _request("get_tool", {"name": name})
    return tool


def call_tool(name: str, /, **arguments: Any) -> str:
    """Run the tool *name* with *arguments*; its result text. Raises `ToolCallError` if it
    failed and `BridgeError` if the policy refused it."""
    result = _request("call_tool", {"name": name, "arguments": arguments})
    if result.get("is_error"):
        raise ToolCallError(result.get("text", ""))
    return str(result.get("text", ""))


def _run_script(path: str) -> None:
    """Run the script at *path* as ``__main__`` with the bridge's names defined (not
    through runpy, whose imports would cost every exec 10 ms)."""
    sys.argv = [path]
    with open(path, encoding="utf-8") as file:
        code = compile(file.read(), path, "exec")
    namespace = {
        "__name__": "__main__", "__file__": path, "__builtins__": __builtins__,
        "search_tools": search_tools, "get_tool": get_tool, "call_tool": call_tool,
        "BridgeError": BridgeError, "ToolCallError": ToolCallError,
    }  # fmt: skip
    exec(code, namespace)


def main(argv: list[str]) -> int:
    usage = "usage: python3 -m beamclaw_bridge run SCRIPT | search [QUERY] | get NAME | call NAME [JSON]"
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    try:
        if command == "run" and len(args) == 1:
            _run_script(args[0])
            return 0
        if command == "search":
            for tool in search_tools(" ".join(args)):
                print(f"{tool['name']}: {tool['description'].splitlines()[0] if tool['description'] else ''}")
            return 0
        if command == "get" and len(args) == 1:
            import json  # noqa: PLC0415

            print(json.dumps(get_tool(args[0]), indent=2))
            return 0
        if command == "call" and len(args) in (1, 2):
            import json  # noqa: PLC0415

            arguments = json.loads(args[1]) if len(args) == 2 else {}
            if not isinstance(arguments, dict):
                print("the arguments must be a JSON object", file=sys.stderr)
                return 2
            print(call_tool(args[0], **arguments))
            return 0
    except (BridgeError, ToolCallError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
