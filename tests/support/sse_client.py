"""Reading a server-sent-events stream by hand, over any byte stream (a Unix socket, TCP).

By hand, so that leaving a stream that never ends is closing a socket: an HTTP client
library would leave its body generators to the garbage collector, which Trio reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import trio

Event = tuple[str, Any]


class _Reader:
    """Bytes from *stream*, split at what the caller asks for."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = b""

    async def until(self, mark: bytes) -> bytes:
        while mark not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError("the stream ended")
            self.buffer += chunk
        found, self.buffer = self.buffer.split(mark, 1)
        return found

    async def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError("the stream ended")
            self.buffer += chunk
        found, self.buffer = self.buffer[:size], self.buffer[size:]
        return found


async def read_events(
    stream: trio.abc.Stream,
    path: str,
    until: Callable[[Event], bool],
    headers: dict[str, str] | None = None,
    found: list[Event] | None = None,
) -> tuple[int, list[Event]]:
    """GET *path* on *stream*: the status, and the events up to the first *until* accepts
    (each added to *found* as it comes); an error status is returned with no events.
    The stream is closed on the way out."""
    found = [] if found is None else found
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n".encode())
        reader = _Reader(stream)
        head = (await reader.until(b"\r\n\r\n")).decode("latin-1")
        status = int(head.split(" ", 2)[1])
        if status != 200:
            return status, found
        assert "text/event-stream" in head.lower(), head
        text = ""
        while True:
            size = int((await reader.until(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                return status, found
            text += (await reader.exactly(size)).decode()
            await reader.until(b"\r\n")
            while "\n\n" in text:
                block, text = text.split("\n\n", 1)
                lines = [line for line in block.split("\n") if not line.startswith(":")]
                name = next((line[7:] for line in lines if line.startswith("event: ")), "message")
                data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
                if data:
                    found.append((name, json.loads(data)))
                    if until(found[-1]):
                        return status, found
