"""Serve an ASGI app on 127.0.0.1 with hypercorn's Trio worker, for tests and benchmarks."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def with_lifespan(app: ASGIApp) -> ASGIApp:
    """Answer hypercorn's lifespan messages, so *app* only needs to handle http."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            kind = message["type"].removeprefix("lifespan.")
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return

    return wrapped


@asynccontextmanager
async def serve_asgi(app: ASGIApp, *, port: int = 0, lifespan: bool = False) -> AsyncIterator[str]:
    """Run *app* on loopback (a free port, or *port*); yield its base URL (``http://127.0.0.1:PORT``).

    With *lifespan*, the app answers hypercorn's lifespan messages itself (an app that
    starts something there, as the MCP SDK's does); otherwise they are answered for it.
    """
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.5
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(
                serve, app if lifespan else with_lifespan(app), config, shutdown_trigger=shutdown.wait, mode="asgi"
            )
        )
        try:
            yield binds[0]
        finally:
            shutdown.set()


async def read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def respond(
    send: Send, status: int, body: bytes | str | dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    """Send a whole response; a dict is sent as JSON."""
    if isinstance(body, dict):
        body = json.dumps(body)
        headers = {"content-type": "application/json", **(headers or {})}
    data = body.encode() if isinstance(body, str) else body
    raw_headers = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": data})
