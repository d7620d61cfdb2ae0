"""Opening a connection to an MCP server: a stdio subprocess, a streamable HTTP endpoint or
a legacy HTTP+SSE one.

Both give the SDK's stream pair, which a `mcp.ClientSession` runs over. A stdio
server (`_stdio`) starts with the SDK's small inherited environment (``PATH``,
``HOME``...) plus its configured ``env``, never the daemon's secrets; what it writes on
stderr is kept, the last lines only (`StderrTail`), for the reason a server that keeps
failing shows. An HTTP server's answers are counted as they come (`_http`). Leaving the
connection stops a stdio server and its children, and ends an HTTP session with a DELETE.
"""

from __future__ import annotations

import collections
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import attrs
import trio

from beamclaw_base import resolve
from beamclaw_obs import scrub

from ._config import McpConfig, ServerConfig
from ._http import http_connection, sse_connection
from ._stdio import stdio_connection

#: How much of a server's stderr is kept: lines, and characters a line.
_TAIL_LINES: Final = 40
_LINE_CHARS: Final = 400
#: After the server is gone, how long its last stderr lines may take to be read.
_TAIL_GRACE: Final = 0.5


@attrs.define
class StderrTail:
    """The last lines a stdio server wrote on stderr (scrubbed when read)."""

    lines: collections.deque[str] = attrs.field(factory=lambda: collections.deque(maxlen=_TAIL_LINES))

    async def collect(self, fd: int, done: trio.Event) -> None:
        partial = b""
        try:
            async with trio.lowlevel.FdStream(fd) as stream:
                while chunk := await stream.receive_some(65536):
                    *whole, partial = (partial + chunk).split(b"\n")
                    self.lines.extend(line.decode(errors="replace")[:_LINE_CHARS] for line in whole)
                    partial = partial[-_LINE_CHARS * 4 :]
        finally:
            if partial:
                self.lines.append(partial.decode(errors="replace")[:_LINE_CHARS])
            done.set()

    def text(self) -> str:
        return scrub("\n".join(self.lines))


@contextlib.asynccontextmanager
async def connect(
    name: str, server: ServerConfig, tail: StderrTail, config: McpConfig, on_refused: Callable[[str], None]
) -> AsyncIterator[tuple[Any, Any]]:
    """The server's (read, write) streams, for as long as the block runs.

    Over HTTP, *on_refused* hears why an answer was refused (too large...): the
    connection is to end (over stdio, the read stream itself carries the error).
    """
    purpose = f"the MCP server {name!r}"
    if server.url:
        headers = {key: resolve(value, purpose) for key, value in server.headers.items()}
        connection = sse_connection if server.transport == "sse" else http_connection
        async with connection(
            server.url, headers, max_message_bytes=config.max_message_bytes, on_refused=on_refused
        ) as streams:
            yield streams
        return
    env = {key: resolve(value, purpose) for key, value in server.env.items()}
    read_fd, write_fd = os.pipe()
    collected = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tail.collect, read_fd, collected)
        try:
            async with stdio_connection(
                f"MCP server {name}",
                server.command,
                env=env,
                cwd=server.cwd or None,
                stderr_fd=write_fd,
                max_message_bytes=config.max_message_bytes,
            ) as streams:
                os.close(write_fd)  # the server holds its own copy: the tail ends when it exits
                write_fd = -1
                yield streams
        finally:
            if write_fd >= 0:
                os.close(write_fd)
            with trio.CancelScope(shield=True), trio.move_on_after(_TAIL_GRACE):
                await collected.wait()  # the last words of a server that died
            nursery.cancel_scope.cancel()
