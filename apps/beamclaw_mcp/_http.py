"""The HTTP transports, streamable HTTP and the legacy HTTP+SSE: the SDK's clients, over
an HTTP client that reads a server's answers as the untrusted input they are.

The SDK reads a JSON answer whole (``response.aread()``, however long it runs), so a
server answering 800 MB of JSON raised the daemon's memory by gigabytes and held its
event loop for seconds. Here every answer is counted as it comes, below the SDK, against
``mcp.max_message_bytes`` (the bound of a stdio server's line):

- a JSON answer longer than that, announced or read, is refused;
- an event stream may run for hours (a server's notifications), so each of its events
  is counted instead: an endless event, or an endless line, is refused;
- a compressed answer is refused (the client asks for none): a few kilobytes of gzip
  inflate to gigabytes before anything could count them.

A refusal stops the reading at once and ends the connection (*on_refused* hears why,
before the SDK sees the error): a crash, restarted with backoff like a stdio server's
line that is too long.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import attrs
import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

#: The HTTP client's limits: an MCP response stream may stay open (SSE), so reads wait long.
_TIMEOUT: Final = httpx2.Timeout(30.0, read=300.0)
#: Where an event of an event stream ends: an empty line (two line ends of any kind in a
#: row; a CR before an LF is one line end, never two).
_EVENT_END: Final = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
#: Bytes of one chunk looked at again with the next, so an event's end split between two is seen.
_CARRY: Final = 3
#: The SDK's own bound of an event, as a second line of defence only: it counts decoded
#: text (a byte that is not UTF-8 counts three), so it is set where ours always acts first.
_SDK_EVENT_FACTOR: Final = 4


class Refused(httpx2.StreamError):
    """What a server sent is not read further: it is too large, or compressed.

    A `httpx2.StreamError`, so the SDK answers the request it belonged to with an error
    (naming the reason) instead of failing its whole transport.
    """


@attrs.frozen
class _Limit:
    max_bytes: int
    on_refused: Callable[[str], None]

    def refuse(self, why: str) -> Refused:
        """Tell the connection's owner why, and the error to stop the reading with."""
        self.on_refused(why)
        return Refused(why)

    @property
    def too_large(self) -> str:
        return f"the server sent a message larger than {self.max_bytes:,} bytes (mcp.max_message_bytes)"


@attrs.define
class _CountedStream(httpx2.AsyncByteStream):
    """One answer's body, refused once it (or, for an event stream, one event) is too large."""

    inner: httpx2.AsyncByteStream
    limit: _Limit
    #: An event stream: each event is counted, not the whole body.
    events: bool
    #: Why the answer is refused before its first byte, if it is.
    refusal: str = ""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.refusal:
            raise self.limit.refuse(self.refusal)
        size, carried = 0, b""
        async for chunk in self.inner:
            if self.events:
                seen = carried + chunk
                ends = [match.end() for match in _EVENT_END.finditer(seen)]
                size = len(seen) - ends[-1] if ends else size + len(chunk)
                carried = seen[-_CARRY:]
            else:
                size += len(chunk)
            if size > self.limit.max_bytes:
                raise self.limit.refuse(self.limit.too_large)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@attrs.frozen
class _CountingTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose answers are read through `_CountedStream`."""

    inner: httpx2.AsyncBaseTransport
    limit: _Limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        headers = response.headers
        events = headers.get("content-type", "").partition(";")[0].strip().lower() == "text/event-stream"
        refusal = ""
        if headers.get("content-encoding", "identity").strip().lower() != "identity":
            refusal = f"the server sent a compressed answer ({headers['content-encoding']}), which was not asked for"
        elif not events and _announced(headers) > self.limit.max_bytes:
            refusal = self.limit.too_large
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=headers,
            stream=_CountedStream(response.stream, self.limit, events, refusal),
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _announced(headers: httpx2.Headers) -> int:
    """The body's length its Content-Length announces (0 when it announces none, or nonsense)."""
    try:
        return int(headers.get("content-length", "0"))
    except ValueError:
        return 0


def _client(headers: dict[str, str], limit: _Limit, timeout: httpx2.Timeout = _TIMEOUT) -> httpx2.AsyncClient:
    """An HTTP client whose answers are counted against *limit*, asking for no compression."""
    asked = httpx2.Headers(headers)
    asked["accept-encoding"] = "identity"
    transport = _CountingTransport(httpx2.AsyncHTTPTransport(), limit)
    return httpx2.AsyncClient(headers=asked, timeout=timeout, transport=transport)


@contextlib.asynccontextmanager
async def http_connection(
    url: str, headers: dict[str, str], *, max_message_bytes: int, on_refused: Callable[[str], None]
) -> AsyncIterator[tuple[Any, Any]]:
    """The server at *url*: its (read, write) streams, for as long as the block runs; its
    session is ended (a DELETE) when the block is left."""
    limit = _Limit(max_message_bytes, on_refused)
    async with (
        _client(headers, limit) as client,
        streamable_http_client(
            url,
            http_client=client,
            terminate_on_close=True,
            max_sse_event_size=max_message_bytes * _SDK_EVENT_FACTOR,
        ) as streams,
    ):
        yield streams


@contextlib.asynccontextmanager
async def sse_connection(
    url: str, headers: dict[str, str], *, max_message_bytes: int, on_refused: Callable[[str], None]
) -> AsyncIterator[tuple[Any, Any]]:
    """The legacy HTTP+SSE server whose event stream is at *url* (``.../sse``): its (read,
    write) streams. The SDK opens the stream, learns from its ``endpoint`` event where to
    POST, and reads every answer as an event, each counted like a streamable server's."""
    limit = _Limit(max_message_bytes, on_refused)

    def client(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return _client(headers or {}, limit, timeout or _TIMEOUT)

    async with sse_client(
        url, headers, timeout=_TIMEOUT.connect or 30.0, sse_read_timeout=_TIMEOUT.read or 300.0,
        httpx_client_factory=client,
    ) as streams:  # fmt: skip
        yield streams
