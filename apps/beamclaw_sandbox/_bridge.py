"""The host side of the tool bridge: JSON-RPC 2.0 on a Unix socket mounted into the container.

A script in the container imports ``beamclaw_bridge`` (sandbox-image/) and calls
``search_tools(query)``, ``get_tool(name)`` and ``call_tool(name, **arguments)``; each
is one newline-delimited JSON-RPC 2.0 request on the socket. Here every request is
answered from what the exec that runs the script was given:

- the tool policy (``[sandbox.policy]``) decides first: a denied tool is not listed,
  not described, and its call is refused with error -32001;
- a call goes through the callback the agent loop put in the tool context, so the
  loop's own rules (autonomy, approvals, the scrubber) apply to it too and this app
  never imports core;
- with PII tokenization on, tokens in the arguments are restored to their values for
  the tool, and values in its result are tokenized before the script sees them.

Batches and notifications are handled as the JSON-RPC 2.0 specification says. The
script is not trusted: a line that is not JSON (or nests deeper than the parser goes),
a line over `MAX_MESSAGE` bytes and an ``id`` that is not a string or a number each get
an error answer, and the connection goes on with the next line; nothing a script sends
ends its sandbox.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import attrs
import trio
from loguru import logger

from beamclaw_base import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from beamclaw_tools import ToolDefinition, ToolResult

from ._config import PolicyConfig
from ._pii import PiiTokenizer

#: What the loop passes in the tool context: run the tool *name* with *arguments*.
ToolCaller = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]

#: The largest request line a script may send (a tool's arguments), in bytes.
MAX_MESSAGE: Final = 4 << 20
#: Tools a script never reaches through the bridge, whatever the policy: exec calling
#: exec would start a sandbox from inside a sandbox.
NEVER_BRIDGED: Final = frozenset({"exec"})

#: The tool policy refuses the tool.
DENIED: Final = -32001
#: No tool of that name (or one the policy hides).
UNKNOWN_TOOL: Final = -32002
#: This exec was given no way to call tools (no callback in the tool context).
UNAVAILABLE: Final = -32003


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@attrs.define
class Bridge:
    """What one exec's script may reach, and the count of what it asked.

    Args:
        policy: which tools are allowed.
        tools: every tool that exists (the registry's definitions), before the policy.
        call_tool: the loop's callback, or None when the exec has none.
        tokenizer: the sandbox's PII tokenizer, or None when PII tokenization is off.
        tokenize_results: whether tool results are tokenized before the script sees them.
    """

    policy: PolicyConfig
    tools: list[ToolDefinition]
    call_tool: ToolCaller | None
    tokenizer: PiiTokenizer | None = None
    tokenize_results: bool = True
    calls: int = 0
    denied: int = 0

    def allowed(self, name: str) -> bool:
        return name not in NEVER_BRIDGED and self.policy.allows(name)

    def visible(self) -> list[ToolDefinition]:
        """The tools a script can see: those the policy allows."""
        return [tool for tool in self.tools if self.allowed(tool.name)]

    async def handle(self, message: Any) -> Any:
        """The response to one decoded JSON-RPC message (a request or a batch), or None
        when nothing is to be sent back (notifications only)."""
        if isinstance(message, list):
            if not message:
                return _error(None, INVALID_REQUEST, "an empty batch")
            responses = [r for r in [await self._one(m) for m in message] if r is not None]
            return responses or None
        return await self._one(message)

    async def _one(self, request: Any) -> dict[str, Any] | None:
        if isinstance(request, dict) and not _valid_id(request.get("id")):
            return _error(None, INVALID_REQUEST, "an id must be a string, a number or null")
        valid = isinstance(request, dict) and request.get("jsonrpc") == "2.0" and isinstance(request.get("method"), str)
        if not valid:
            request_id = request.get("id") if isinstance(request, dict) else None
            return _error(request_id, INVALID_REQUEST, 'expected {"jsonrpc": "2.0", "method": ..., "id": ...}')
        request_id = request.get("id")
        notification = "id" not in request
        params = request.get("params", {})
        try:
            if not isinstance(params, dict):
                raise _RpcError(INVALID_PARAMS, "params must be an object")
            result = await self._dispatch(request["method"], params)
        except _RpcError as exc:
            return None if notification else _error(request_id, exc.code, exc.message)
        except trio.Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing callback is the script's error, not the sandbox's crash
            logger.opt(exception=exc).warning("sandbox bridge: {} failed", request["method"])
            return None if notification else _error(request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        return None if notification else {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        match method:
            case "search_tools":
                query = params.get("query", "")
                limit = params.get("limit", 20)
                if not isinstance(query, str) or isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                    raise _RpcError(INVALID_PARAMS, "search_tools takes a query string and a positive limit")
                return [{"name": t.name, "description": t.description} for t in self._search(query)[:limit]]
            case "get_tool":
                tool = self._tool(params.get("name"))
                return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
            case "call_tool":
                return await self._call(params)
        raise _RpcError(METHOD_NOT_FOUND, f"no method {method!r}; the bridge offers search_tools, get_tool, call_tool")

    def _search(self, query: str) -> list[ToolDefinition]:
        words = query.lower().split()
        found = []
        for tool in self.visible():
            text = f"{tool.name} {tool.description}".lower()
            score = sum(text.count(word) for word in words) + sum(3 for word in words if word in tool.name.lower())
            if score or not words:
                found.append((-score, tool.name, tool))
        return [tool for *_, tool in sorted(found, key=lambda item: item[:2])]

    def _tool(self, name: Any) -> ToolDefinition:
        if not isinstance(name, str) or not name:
            raise _RpcError(INVALID_PARAMS, "name must be a tool's name")
        for tool in self.visible():
            if tool.name == name:
                return tool
        if any(tool.name == name for tool in self.tools):
            self.denied += 1
            raise _RpcError(DENIED, f"tool {name!r} is denied by the sandbox policy")
        raise _RpcError(UNKNOWN_TOOL, f"no tool {name!r}; search_tools() lists the tools a script may call")

    async def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict):
            raise _RpcError(INVALID_PARAMS, "arguments must be an object")
        if isinstance(name, str) and not self.allowed(name):
            # Refused before looking it up, so a denied tool's existence is not probed either way.
            self.denied += 1
            raise _RpcError(DENIED, f"tool {name!r} is denied by the sandbox policy")
        tool = self._tool(name)
        if self.call_tool is None:
            raise _RpcError(UNAVAILABLE, "this exec cannot call tools (no tool dispatcher was given to it)")
        self.calls += 1
        if self.tokenizer is not None:
            arguments = self.tokenizer.restore_data(arguments)
        result = await self.call_tool(tool.name, arguments)
        text = result.text
        if self.tokenizer is not None and self.tokenize_results:
            text = self.tokenizer.tokenize(text)
        return {"text": text, "is_error": result.is_error}

    async def serve(self, listener: trio.SocketListener, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Answer every connection on *listener* until cancelled."""
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._connection, stream)

    async def _connection(self, stream: trio.abc.Stream) -> None:
        async with stream:
            async for line in _lines(stream):
                if line is None:
                    response: Any = _error(None, INVALID_REQUEST, f"a request over {MAX_MESSAGE} bytes")
                elif not line.strip():
                    continue
                else:
                    response = await self._answer(line)
                if response is not None and not await _send(stream, response):
                    return

    async def _answer(self, line: bytes) -> Any:
        """The response to one line, or None for notifications only."""
        try:
            message = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            return _error(None, PARSE_ERROR, f"not JSON: {exc}")
        except RecursionError:
            return _error(None, PARSE_ERROR, "not JSON the bridge reads: nested too deeply")
        return await self.handle(message)


async def _lines(stream: trio.abc.Stream) -> AsyncIterator[bytes | None]:
    """The lines *stream* sends, without their newline, until it ends; None in place of a
    line over `MAX_MESSAGE` bytes, which is read and dropped as it comes, never kept."""
    buffer = bytearray()
    skipping = False  # within a line over the limit: dropped up to its newline
    while True:
        newline = buffer.find(b"\n")
        if newline >= 0:
            line, buffer = bytes(buffer[:newline]), buffer[newline + 1 :]
            if skipping or len(line) > MAX_MESSAGE:
                skipping = False
                yield None
            else:
                yield line
            continue
        if len(buffer) > MAX_MESSAGE:
            buffer.clear()
            skipping = True
        try:
            chunk = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            return
        if not chunk:
            return
        buffer += chunk


def _valid_id(request_id: Any) -> bool:
    """JSON-RPC 2.0's ids: a string, a number or null. Anything else is never echoed back,
    so a deeply nested one cannot fail the answer's encoding."""
    return request_id is None or (isinstance(request_id, str | int | float) and not isinstance(request_id, bool))


async def _send(stream: trio.abc.Stream, response: Any) -> bool:
    try:
        await stream.send_all(json.dumps(response, ensure_ascii=False).encode() + b"\n")
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return False
    return True


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
