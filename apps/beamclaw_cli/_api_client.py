"""Talking to the running daemon: HTTP over the owner-only Unix socket in the data dir.

The daemon serves its management API there (every request is the owner, an admin);
this is its client, with httpx (and httpx-sse for the streams). What the daemon answers
is text from outside (a model's replies, user ids, an MCP server's stderr) and is
printed to a terminal: each string in an answer is made `visible` as it arrives, so no
print site can forget it.

Kept light to import (no web framework, no app): every CLI command starts with it. httpx
is imported by the first `call` or `events`; `call_blocking`, for a command that asks one
thing (`status`), speaks HTTP/1.1 with the standard library and imports neither httpx
nor the async stack under it (httpcore imports Trio and anyio).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._terminal_safe import visible

if TYPE_CHECKING:
    import httpx

#: The socket's name in the data dir (`beamclaw_control.SOCKET_NAME`, not imported: it
#: would bring the daemon's web framework into every command).
SOCKET_NAME: Final = "control.sock"
#: The socket is a private file, not a network address; httpx needs a URL all the same.
_BASE_URL: Final = "http://beamclaw"
#: Connecting is quick or nothing is there; an answer (a reload, a streamed turn) takes what it takes.
_CONNECT_SECONDS: Final = 10.0


class NoDaemon(Exception):
    """No daemon answers on the socket, or it went away mid-answer; the message says so."""


class ApiError(Exception):
    """The daemon refused a request; the message is its explanation."""

    def __init__(self, message: str, status: int, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def socket_path() -> Path:
    """``$BEAMCLAW_HOME/control.sock``, else ``~/.beamclaw/control.sock`` (as `beamclaw.data_dir`)."""
    variable = os.environ.get("BEAMCLAW_HOME")
    home = Path(variable).expanduser() if variable else Path.home() / ".beamclaw"
    return home / SOCKET_NAME


def _visible_strings(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {key: _visible_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_visible_strings(item) for item in value]
    return value


def _client(path: Path) -> httpx.AsyncClient:
    import httpx

    transport = httpx.AsyncHTTPTransport(uds=str(path))
    return httpx.AsyncClient(
        transport=transport, base_url=_BASE_URL, timeout=httpx.Timeout(_CONNECT_SECONDS, read=None)
    )


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 to the daemon's socket: the standard library's client, connected to a Unix
    socket instead of a TCP address."""

    def __init__(self, path: Path) -> None:
        super().__init__("beamclaw", timeout=_CONNECT_SECONDS)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(_CONNECT_SECONDS)
            sock.connect(str(self._path))
            sock.settimeout(None)  # the answer takes what it takes
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _no_daemon(path: Path) -> NoDaemon:
    return NoDaemon(
        f"no BeamClaw daemon is running (nothing answers at {path}); start one with `python -m beamclaw run`"
    )


_GONE: Final = "the daemon closed the connection before answering (it stopped or restarted)"


def _api_error(status: int, body: bytes) -> ApiError:
    """The error the daemon answered (the gateway's shape), or one saying what came instead."""
    try:
        found = json.loads(body)["error"]
        return ApiError(visible(str(found["message"])), status, str(found.get("code") or ""))
    except (ValueError, KeyError, TypeError):
        return ApiError(f"the daemon answered HTTP {status}", status, "")


async def call(
    method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None, raw: bool = False
) -> Any:
    """The daemon's JSON answer to one request, its strings made `visible` unless *raw* (for a
    program, not a terminal: what `beamclaw mcp serve` hands its host). An error answer
    raises `ApiError`; a daemon that is not there, or goes away mid-answer, `NoDaemon`."""
    import httpx

    where = socket_path()
    try:
        async with _client(where) as client:
            response = await client.request(method, path, json=json, params=params)
    except httpx.ConnectError:
        raise _no_daemon(where) from None
    except (httpx.RemoteProtocolError, httpx.ReadError):
        raise NoDaemon(_GONE) from None
    return _answer(response, raw)


def call_blocking(
    method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None, raw: bool = False
) -> Any:
    """`call`, without an event loop or httpx: for a command that asks one thing and prints
    the answer (`status`). The same answers and errors as `call`."""
    where = socket_path()
    connection = _UnixConnection(where)
    try:
        try:
            connection.connect()
        except OSError:
            raise _no_daemon(where) from None
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        body, headers = _json_body(json)
        try:
            connection.request(method, path + query, body=body, headers=headers)
            response = connection.getresponse()
            status, content = response.status, response.read()
        except (http.client.HTTPException, OSError):
            raise NoDaemon(_GONE) from None
    finally:
        connection.close()
    if status >= 400:
        raise _api_error(status, content)
    return _decoded(content, raw)


def _json_body(value: Any) -> tuple[bytes | None, dict[str, str]]:
    if value is None:
        return None, {}
    return json.dumps(value).encode(), {"Content-Type": "application/json"}


def _decoded(content: bytes, raw: bool) -> Any:
    value = json.loads(content)
    return value if raw else _visible_strings(value)


def _answer(response: httpx.Response, raw: bool) -> Any:
    if response.status_code >= 400:
        raise _api_error(response.status_code, response.content)
    return _decoded(response.content, raw)


async def events(
    method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None, raw: bool = False
) -> AsyncIterator[tuple[str, Any]]:
    """The server-sent events the daemon streams for one request: each one's name and data
    (parsed; strings made `visible` unless *raw*), until the daemon ends the stream.
    Errors as `call`'s; a stream the daemon breaks off raises `NoDaemon`.

    One generator, with no context manager of another generator inside: a caller that
    stops reading (a closed pipe) leaves it to Trio's finalizer, which must be able to
    close it whatever it finalizes first."""
    import httpx
    import httpx_sse

    where = socket_path()
    client = _client(where)
    try:
        request = client.build_request(method, path, json=json, params=params)
        response = await client.send(request, stream=True)
        try:
            if response.status_code >= 400:
                raise _api_error(response.status_code, await response.aread())
            async for event in httpx_sse.EventSource(response).aiter_sse():
                data = event.json() if event.data else None
                yield event.event, data if raw else _visible_strings(data)
        finally:
            await response.aclose()
    except httpx.ConnectError:
        raise _no_daemon(where) from None
    except (httpx.RemoteProtocolError, httpx.ReadError):
        raise NoDaemon(_GONE) from None
    finally:
        await client.aclose()


async def running() -> bool:
    """Whether a daemon answers on the socket (any failure to connect or to answer is a no)."""
    try:
        await call("GET", "/v1/status")
    except (NoDaemon, ApiError, OSError, ValueError):
        return False
    return True
