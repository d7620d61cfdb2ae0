"""The control socket: a Unix socket in the data dir (mode 0600) speaking JSON lines.

The CLI talks to the running daemon through it. A request is one JSON object on one
line; the answer is one or more JSON lines, the last of which has ``"done": true``.

    {"cmd": "ping"}                                   -> {"type": "pong", "version": ...}
    {"cmd": "chat", "user": U, "agent": A, "text": T} -> drafts and messages, then the reply
    {"cmd": "history", "user": U, "agent": A}         -> {"type": "history", "messages": [...]}
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path
from typing import Any, Final

import attrs
import trio

import beamclaw_core as core
import supervision as sv

from ._version import __version__

MAX_REQUEST: Final = 1_000_000
SOCKET_NAME: Final = "control.sock"


class _BadRequest(Exception):
    pass


@attrs.define
class _StreamChannel:
    """A `beamclaw_core.Channel` that writes each update to the control connection."""

    stream: trio.SocketStream

    async def _write(self, **fields: Any) -> None:
        await self.stream.send_all(json.dumps(fields).encode() + b"\n")

    async def send(self, text: str) -> None:
        await self._write(type="message", text=text)

    async def send_typing(self) -> None:
        await self._write(type="typing")

    async def update_draft(self, text: str) -> None:
        await self._write(type="draft", text=text)

    async def finalize_draft(self, text: str) -> None:
        await self._write(type="final", text=text)


async def _read_request(stream: trio.SocketStream) -> dict[str, Any]:
    data = b""
    while b"\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST:
            raise _BadRequest(f"request larger than {MAX_REQUEST} bytes")
    try:
        request = json.loads(data.split(b"\n", 1)[0])
    except ValueError as exc:
        raise _BadRequest(f"request is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        raise _BadRequest('a request is a JSON object with a "cmd" string')
    return request


def _text_field(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise _BadRequest(f'"{key}" must be a non-empty string')
    return value


async def _answer(stream: trio.SocketStream, request: dict[str, Any]) -> dict[str, Any]:
    match request["cmd"]:
        case "ping":
            return {"type": "pong", "version": __version__}
        case "chat":
            handle = await core.open_session(_text_field(request, "user"), _text_field(request, "agent"), "cli")
            result = await core.send_message(handle, _text_field(request, "text"), _StreamChannel(stream))
            return {"type": "reply", "ok": result.ok, "text": result.text}
        case "history":
            handle = await core.open_session(_text_field(request, "user"), _text_field(request, "agent"), "cli")
            messages = [m.to_openai() for m in await core.history(handle)]
            return {"type": "history", "messages": messages}
    raise _BadRequest(f"unknown command {request['cmd']!r}")


async def _serve_one(stream: trio.SocketStream) -> None:
    async with stream:
        try:
            answer = await _answer(stream, await _read_request(stream))
        except _BadRequest as exc:
            answer = {"type": "error", "error": str(exc)}
        except (sv.NoProc, sv.CallTimeout) as exc:
            answer = {"type": "error", "error": f"the daemon cannot serve this now ({type(exc).__name__})"}
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client went away; its run goes on and is stored
        answer["done"] = True
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(json.dumps(answer).encode() + b"\n")


async def control_server(path: Path, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the control socket at *path* until cancelled; remove it on the way out."""
    if path.exists() or path.is_symlink():
        path.unlink()  # a socket left by a daemon that was killed
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old_umask)
    sock.listen(64)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, _serve_one, [trio.SocketListener(sock)])
            task_status.started()
    finally:
        path.unlink(missing_ok=True)
