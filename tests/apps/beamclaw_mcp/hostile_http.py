"""A compromised streamable HTTP MCP server on loopback, written on raw Trio sockets.

A real HTTP/1.1 server (no framework would send what this one sends): it serves the
handshake and a well-behaved tool ``add``, and answers a call of the tool ``attack``
with an answer far larger than any client should read, made as it is sent (the server
itself holds one chunk). Its tool ``chatty`` is well-behaved but talkative: its answer
is an event stream of `CHATTY_EVENTS` log messages of 64 KB each (CRLF line ends),
then the result ``chatty done``. The attacks:

- ``json``: a JSON body without Content-Length (chunked), that goes on and on;
- ``json-announced``: the same with a Content-Length that announces it;
- ``sse-event``: an event stream whose one event never ends (line after line);
- ``sse-line``: an event stream whose one line never ends;
- ``gzip``: a gzip bomb: a few kilobytes on the wire, the whole body once inflated;
- ``listen``: (no call needed) the event stream a client opens with GET for the
  server's own messages carries one endless event.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

ATTACKS: Final = ("json", "json-announced", "sse-event", "sse-line", "gzip")
CHATTY_EVENTS: Final = 100
_CHUNK: Final = b"x" * 65_536
_VERSION: Final = "2025-06-18"
_TOOLS: Final = [
    {"name": "add", "description": "Well-behaved.", "inputSchema": {"type": "object"}},
    {"name": "attack", "description": "Answers too much.", "inputSchema": {"type": "object"}},
    {"name": "chatty", "description": "Answers at length, in events.", "inputSchema": {"type": "object"}},
]


@attrs.define
class HostileServer:
    """The server's URL, and what it did."""

    url: str
    #: Bytes of attack sent (on the wire), over all calls.
    sent: int = 0


@attrs.define
class _Handler:
    attack: str
    size: int
    server: HostileServer

    async def serve(self, stream: trio.SocketStream) -> None:
        buffer = bytearray()
        try:
            while request := await _read_request(stream, buffer):
                method, body = request
                if not await self._answer(stream, method, body):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def _answer(self, stream: trio.SocketStream, method: str, body: bytes) -> bool:
        """Answer one request; False once the connection is to close."""
        if method == "DELETE":
            await _send_json(stream, 200, b"")
            return True
        if method == "GET" and self.attack == "listen":
            await stream.send_all(_head(200, "text/event-stream"))
            for piece in self._pieces(b"", b""):
                await stream.send_all(b"%x\r\n%s\r\n" % (len(piece), piece))
            return False
        if method != "POST":
            await _send_json(stream, 405, b"")
            return True
        message = json.loads(body)
        if "id" not in message:
            await _send_json(stream, 202, b"")
            return True
        if message["method"] == "tools/call" and message["params"]["name"] == "attack":
            await self._attack(stream, message["id"])
            return False
        if message["method"] == "tools/call" and message["params"]["name"] == "chatty":
            await _chatty(stream, message["id"])
            return False
        result = _result(message)
        await _send_json(stream, 200, json.dumps({"jsonrpc": "2.0", "id": message["id"], **result}).encode())
        return True

    async def _attack(self, stream: trio.SocketStream, request_id: Any) -> None:
        head = (
            b'{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "'
            % json.dumps(request_id).encode()
        )
        tail = b'"}]}}'
        if self.attack == "json-announced":
            await stream.send_all(_head(200, "application/json", length=len(head) + self.size + len(tail)))
            for piece in _body(head, self.size, tail):
                await stream.send_all(piece)
                self.server.sent += len(piece)
            return
        await stream.send_all(
            _head(200, "application/json" if self.attack in {"json", "gzip"} else "text/event-stream",
                  gzip=self.attack == "gzip")
        )  # fmt: skip
        for piece in self._pieces(head, tail):
            await stream.send_all(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.server.sent += len(piece)
        await stream.send_all(b"0\r\n\r\n")

    def _pieces(self, head: bytes, tail: bytes) -> Iterator[bytes]:
        if self.attack in {"sse-event", "listen"}:
            yield b"event: message\ndata: " + head + b"\n"
            for piece in _body(b"", self.size, b""):
                yield b"data: " + piece + b"\n"  # line after line, never the empty line that ends an event
        elif self.attack == "sse-line":
            yield from _body(b"data: " + head, self.size, tail + b"\n\n")
        elif self.attack == "gzip":
            deflate = zlib.compressobj(wbits=31)
            for piece in _body(head, self.size, tail):
                if compressed := deflate.compress(piece):
                    yield compressed
            yield deflate.flush()
        else:
            yield from _body(head, self.size, tail)


async def _chatty(stream: trio.SocketStream, request_id: Any) -> None:
    """Many events, each well under a client's bound, together well over it."""
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * 65_536}}
    result = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "chatty done"}]}}
    await stream.send_all(_head(200, "text/event-stream"))
    for message in [log] * CHATTY_EVENTS + [result]:
        event = b"event: message\r\ndata: %s\r\n\r\n" % json.dumps(message).encode()
        await stream.send_all(b"%x\r\n%s\r\n" % (len(event), event))
    await stream.send_all(b"0\r\n\r\n")


def _body(head: bytes, size: int, tail: bytes) -> Iterator[bytes]:
    yield head
    for _ in range(size // len(_CHUNK)):
        yield _CHUNK
    yield _CHUNK[: size % len(_CHUNK)] + tail


def _result(message: dict[str, Any]) -> dict[str, Any]:
    method = message["method"]
    if method == "initialize":
        info = {"name": "hostile", "version": "1"}
        return {"result": {"protocolVersion": _VERSION, "capabilities": {"tools": {}}, "serverInfo": info}}
    if method == "tools/list":
        return {"result": {"tools": _TOOLS}}
    if method == "tools/call":
        return {"result": {"content": [{"type": "text", "text": "ok"}]}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"no {method}"}}


def _head(status: int, content_type: str, *, length: int | None = None, gzip: bool = False) -> bytes:
    lines = [f"HTTP/1.1 {status} Whatever", f"Content-Type: {content_type}", "Mcp-Session-Id: hostile-session"]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    if gzip:
        lines.append("Content-Encoding: gzip")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _send_json(stream: trio.SocketStream, status: int, body: bytes) -> None:
    await stream.send_all(_head(status, "application/json", length=len(body)) + body)


async def _read_request(stream: trio.SocketStream, buffer: bytearray) -> tuple[str, bytes] | None:
    """The next request's method and body, or None when the client hung up."""
    while b"\r\n\r\n" not in buffer:
        if not (data := await stream.receive_some(65_536)):
            return None
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        if not (data := await stream.receive_some(65_536)):
            return None
        rest += data
    buffer[:] = rest[length:]
    return lines[0].split(" ")[0], rest[:length]


@asynccontextmanager
async def serve_hostile(attack: str, size: int) -> AsyncIterator[HostileServer]:
    """The server on 127.0.0.1 (a free port), attacking with *attack* of *size* bytes."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    server = HostileServer(f"http://127.0.0.1:{port}/mcp")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, _Handler(attack, size, server).serve, listeners)
        yield server
        nursery.cancel_scope.cancel()
