"""Talking to the running daemon over its control socket (JSON lines).

What the daemon answers is text from outside (a model's replies, user ids, an MCP
server's stderr) and is printed to a terminal: each string in an answer is made
`visible` as it arrives, so no print site can forget it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import trio

import beamclaw

from ._terminal_safe import visible


class NoDaemon(Exception):
    """No daemon answers on the control socket; the message says how to start one."""


def socket_path() -> Path:
    return beamclaw.data_dir() / beamclaw.CONTROL_SOCKET


async def _lines(stream: trio.SocketStream) -> AsyncGenerator[bytes, None]:
    buffer = b""
    while True:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line


def _visible_strings(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {key: _visible_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_visible_strings(item) for item in value]
    return value


async def request(payload: dict[str, Any], *, raw: bool = False) -> AsyncIterator[dict[str, Any]]:
    """Send one request; yield each JSON line of the answer, the last with ``done``.

    Its strings are made `visible` unless *raw* (for a program, not a terminal: what
    `beamclaw mcp serve` hands its host). A daemon that is not there, or that goes away
    before the last line (stopped, restarted, killed), raises NoDaemon: the caller says
    so in one line.
    """
    path = socket_path()
    try:
        stream = await trio.open_unix_socket(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        raise NoDaemon(
            f"no BeamClaw daemon is running (nothing answers at {path}); start one with `python -m beamclaw run`"
        ) from None
    try:
        async with stream:
            await stream.send_all(json.dumps(payload).encode() + b"\n")
            lines = _lines(stream)
            async for line in lines:
                message: dict[str, Any] = json.loads(line)
                yield message if raw else _visible_strings(message)
                if message.get("done"):
                    await lines.aclose()
                    return
    except (trio.BrokenResourceError, ConnectionError):
        pass  # the daemon went away mid-answer
    raise NoDaemon("the daemon closed the connection before answering (it stopped or restarted)")


async def ask(payload: dict[str, Any], *, raw: bool = False) -> dict[str, Any]:
    """Send one request and return its final answer (*raw* as in `request`); an error answer
    raises `ControlError`."""
    answer: dict[str, Any] = {}
    async for answer in request(payload, raw=raw):  # noqa: B007 - the last one is the answer
        pass
    if answer.get("type") == "error":
        raise ControlError(str(answer.get("error")))
    return answer


async def running() -> bool:
    """Whether a daemon answers a ping (any failure to connect or to answer is a no)."""
    try:
        await ask({"cmd": "ping"})
    except (NoDaemon, OSError, ValueError):
        return False
    return True


class ControlError(Exception):
    """The daemon refused a request; the message is its explanation."""
