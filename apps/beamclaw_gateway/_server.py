"""Serving the app with hypercorn's Trio worker, as a supervised child."""

from __future__ import annotations

import errno
import importlib
from pathlib import Path
from typing import Any

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from loguru import logger

import beamclaw_cluster as cluster

from ._app import create_app
from ._config import GatewayConfig, HttpConfig
from ._connections import raise_open_file_limit, websocket_compression_off
from ._mcp_endpoint import MCP_PATH, CoreBackend
from ._mcp_server import Conversations
from ._rate_limit import ClientLimiter


class ListenError(Exception):
    """The gateway cannot listen on its address; the message names it, why, and the key to change.

    Hypercorn binds inside its nurseries, so a port in use would otherwise reach the
    user as "Exceptions from Trio nursery (1 sub-exception)".
    """


def _listen_error(exc: OSError, http: HttpConfig) -> ListenError:
    where = f"cannot listen on {http.host}:{http.port}"
    match exc.errno:
        case errno.EADDRINUSE:
            why = "address already in use (by another BeamClaw daemon or another program)"
            fix = "stop it, or set a free port in gateway.http.port"
        case errno.EACCES:
            why, fix = "permission denied", "ports below 1024 need privileges: set gateway.http.port above 1023"
        case errno.EADDRNOTAVAIL:
            why, fix = "no network interface has this address", "fix gateway.http.host"
        case _:
            why, fix = exc.strerror or str(exc), "check gateway.http.host and gateway.http.port"
    return ListenError(f"{where}: {why}; {fix}")


async def serve_http(
    config: GatewayConfig, data_dir: Path, extra: tuple[Any, ...] = (), task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Bind, report started with the bound addresses, and serve until cancelled."""
    try:
        await _with_mcp(config, data_dir, extra, task_status)
    except BaseExceptionGroup as group:  # the nurseries around the server wrap what it raised
        listen, rest = group.split(ListenError)
        if listen is None or rest is not None:
            raise
        first = _first_leaf(listen)
        raise first from first.__cause__


async def _with_mcp(config: GatewayConfig, data_dir: Path, extra: tuple[Any, ...], task_status: Any) -> None:
    """The app, with the MCP server of the agents at /mcp (built on its first request)."""
    async with trio.open_nursery() as conversations:
        backend = CoreBackend(config, data_dir, conversations)
        mcp_app = _McpOnFirstRequest(config, backend, conversations) if config.mcp_endpoint else None
        member = await cluster.membership()  # in a cluster, the server forwards and takes forwarded requests
        app = create_app(config, data_dir, extra, mcp_app, member)
        await _serve(app, config, task_status)
        conversations.cancel_scope.cancel()


@attrs.define
class _McpOnFirstRequest:
    """ASGI: the MCP SDK's server app, built (and its session manager started) on the first
    request to /mcp. The SDK takes about a second to import: a daemon that nobody asks
    over MCP never pays it, and one that is asked pays it once, in a worker thread."""

    config: GatewayConfig
    backend: CoreBackend
    nursery: trio.Nursery
    _app: Any = None
    _building: trio.Lock = attrs.field(factory=trio.Lock)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._app is None:
            async with self._building:
                if self._app is None:
                    self._app = await self.nursery.start(self._serve_sessions)
        await self._app(scope, receive, send)

    async def _serve_sessions(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Build the app, report it started, and run its session manager until the gateway stops."""
        await trio.to_thread.run_sync(importlib.import_module, "beamclaw_gateway._agents_server")
        from mcp.server.transport_security import TransportSecuritySettings  # noqa: PLC0415

        from ._agents_server import agents_server  # noqa: PLC0415

        server = agents_server(Conversations(self.backend, self.config.default_agent), speaker=self.backend.speaker)
        app = server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            # The gateway checks Host and Origin itself (`BrowserGuard`), for every route.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.config.http.max_body_bytes,
            host=self.config.http.host,
        )
        async with server.session_manager.run():
            task_status.started(app)
            await trio.sleep_forever()


async def _serve(app: Any, config: GatewayConfig, task_status: Any) -> None:
    raise_open_file_limit()
    websocket_compression_off()
    hyper = Config()
    hyper.bind = [f"{config.http.host}:{config.http.port}"]
    hyper.accesslog = None
    hyper.errorlog = None
    hyper.websocket_max_message_size = config.http.max_ws_message_bytes
    hyper.graceful_timeout = 2.0
    listening = False

    class _Started:
        """Hypercorn reports the bound addresses; the supervisor only needs to know it is up."""

        def started(self, binds: list[str]) -> None:
            nonlocal listening
            listening = True
            logger.info("gateway listening on {}", ", ".join(binds))
            task_status.started()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_prune, app.config["RATE_LIMITER"], config.rate_limit.window_seconds)
            await serve(app, hyper, task_status=_Started(), mode="asgi")  # type: ignore[arg-type]
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        bind_failed, rest = group.split(OSError)
        if listening or bind_failed is None or rest is not None:
            raise
        first = _first_leaf(bind_failed)
        raise _listen_error(first, config.http) from first


def _first_leaf(group: BaseExceptionGroup[Any]) -> Any:
    inner = group.exceptions[0]
    return _first_leaf(inner) if isinstance(inner, BaseExceptionGroup) else inner


async def _prune(limiter: ClientLimiter, every: float) -> None:
    """Forget clients that have been quiet for a whole window, so the table does not grow for ever."""
    while True:
        await trio.sleep(every)
        limiter.prune(trio.current_time())
