"""A hand-written MCP server over stdio that misbehaves on purpose.

The SDK's server cannot be made to send what a hostile or careless server sends, so this
one writes its JSON-RPC lines itself (``python -m tests.support.raw_mcp_server MODE``):

- ``noise``: a banner and a line that is not UTF-8 on stdout, then serves normally;
- ``huge``: answers ``tools/list`` with one line of 300,000 bytes;
- ``deep``: answers ``tools/list`` with a schema nested 300 levels deep;
- ``bad-tools``: a listing of tools no model can use, around two usable ones: ``ok``,
  and ``redos``, whose schema takes exponential time to check an argument against;
- ``many-tools``: a listing of 100 tools;
- ``fork``: starts a child process (its pid written to the file ``MCP_TEST_MARKS``
  names) that would outlive it, then serves normally.

Every usable tool answers a call with ``called NAME`` and the arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_VERSION = "2025-06-18"


def _tool(name: str, schema: Any = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema if schema is not None else {"type": "object"}, **extra}


#: Listings written as bytes: what json.dumps would not write.
_RAW_LISTINGS = {
    "huge": b'"' + b"x" * 300_000 + b'"',
    "deep": b'{"tools": [{"name": "deep", "inputSchema": '
    + b'{"type": "object", "properties": {"x": ' * 150
    + b"{}"
    + b"}}" * 150
    + b"}]}",
}


def _tools(mode: str) -> list[Any]:
    if mode == "bad-tools":
        return [
            _tool("ok", description="The one usable tool."),
            {"description": "no name"},
            "not even an object",
            _tool("strings", {"type": "string"}),
            _tool("huge_schema", {"type": "object", "description": "d" * 100_000}),
            _tool("n" * 200),
            _tool("bad_description", description=["not", "text"]),
            _tool("ok", description="A second tool of the same name."),
            _tool("redos", {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}),
        ]
    if mode == "many-tools":
        return [_tool(f"tool{i}") for i in range(100)]
    return [_tool("ok", description="The one usable tool.")]


def _answer(request: dict[str, Any], mode: str) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None  # a notification
    if method == "initialize":
        result: Any = {
            "protocolVersion": _VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"raw-{mode}", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": _tools(mode)}
    elif method == "tools/call":
        text = f"called {params.get('name')} {json.dumps(params.get('arguments'), sort_keys=True)}"
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def _write(out: Any, message: dict[str, Any] | bytes) -> None:
    out.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")
    out.flush()


def main() -> None:
    mode = sys.argv[1]
    out = sys.stdout.buffer
    if mode == "noise":
        _write(out, b"raw server 1.0 starting, hello!\n")
        _write(out, b'\xff\xfe{"not utf-8": "\xc3"}\n')
    if mode == "fork":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["MCP_TEST_MARKS"], "a", encoding="utf-8") as marks:
            marks.write(f"{child.pid}\n")
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if mode in _RAW_LISTINGS and request.get("method") == "tools/list":
            _write(out, b'{"jsonrpc": "2.0", "id": %d, "result": %s}\n' % (request["id"], _RAW_LISTINGS[mode]))
            continue
        answer = _answer(request, mode)
        if answer is not None:
            _write(out, answer)


if __name__ == "__main__":
    main()
