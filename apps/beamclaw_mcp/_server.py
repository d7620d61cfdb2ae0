"""The process that owns one MCP server's connection.

It reports itself started at once (a slow server never holds up the daemon), then
connects, runs the handshake (``initialize``, ``notifications/initialized``,
``tools/list``) within ``init_timeout_seconds``, registers the server's tools with the
tool registry (again after the registry restarts, and again after
``notifications/tools/list_changed``: at most one listing at a time, at most one each
``relist_interval_seconds``, however many notifications come, so a flood of them holds
no core) and attaches the session to the server's `Link`.
Then it waits for the connection to end: a stdio server's stdout closing (it died), a
transport error, an HTTP session lost (seen by a call), or, over HTTP, a ping not
answered, or an HTTP answer refused (too large, see `_http`). Each is a crash, with
the server's last stderr lines: its supervisor
restarts it with backoff. Meanwhile its tools stay registered and fail at once ("not
connected, restarting"), so a model never meets "no such tool" for a server coming
back; they are unregistered when the server stops for good (the daemon stopping, a
restart asked for, or its supervisor giving up, which the registry sees).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import Any, Final

import anyio
import attrs
import trio
from loguru import logger
from mcp import ClientSession, types
from mcp.shared.message import SessionMessage

import supervision as sv
from beamclaw_obs import emit, scrub
from beamclaw_tools import REGISTRY, ToolDefinition, list_tools, register_tool, unregister_tool

from ._config import ServerConfig
from ._listing import Listings, listed
from ._names import remote_server, tool_names
from ._reports import Connecting, Lost, Ready, ServerReport
from ._tool import Link, McpTool
from ._transport import StderrTail, connect

_CLIENT: Final = types.Implementation(name="beamclaw", version="0.1.0")
#: How long leaving a connection may take (ending the HTTP session, stopping the server).
_CLOSE_SECONDS: Final = 5.0


class ConnectionLost(Exception):
    """The MCP server's connection ended; the message says how, with its last stderr lines."""


@attrs.define
class _Watch:
    """What ends the wait: the stream closing or failing, or the tool list changing."""

    ended: trio.Event = attrs.field(factory=trio.Event)
    changed: trio.Event = attrs.field(factory=trio.Event)
    why: str = ""

    def end(self, why: str) -> None:
        if not self.ended.is_set():
            self.why = why
            self.ended.set()


def _tools_changed(item: SessionMessage | Exception) -> bool:
    """Whether *item* is ``notifications/tools/list_changed``."""
    message = getattr(item, "message", None)
    return isinstance(message, types.JSONRPCNotification) and message.method == "notifications/tools/list_changed"


async def _relay(source: Any, sink: Any, watch: _Watch, listings: Listings) -> None:
    """Pass the server's messages on to the session, its tool listings checked; note when
    the tool list changed (the notification goes no further: a flood of them costs the
    session nothing), and when the stream ends or fails."""
    async with sink:
        try:
            async for item in source:
                if _tools_changed(item):
                    watch.changed.set()
                    continue
                if isinstance(item, Exception):
                    watch.end(f"the transport failed: {type(item).__name__}: {item}")
                await sink.send(item if isinstance(item, Exception) else await listings.received(item))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            pass
    watch.end("the server closed the connection")


async def _forward(source: Any, sink: Any, listings: Listings) -> None:
    """Pass the session's messages on to the server, noting its requests for tool listings."""
    async with source, sink:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for message in source:
                listings.sent(message)
                await sink.send(message)


def mcp_tools(name: str, server: ServerConfig, link: Link, listed: list[types.Tool]) -> list[McpTool]:
    """*server*'s checked tools (see `_listing`) as BeamClaw tools."""
    local = tool_names(name, [tool.name for tool in listed])
    made = []
    for tool in listed:
        hints = tool.annotations
        made.append(McpTool(
            ToolDefinition(local[tool.name], f"[MCP server {name}] {tool.description}", dict(tool.input_schema)),
            tool.name, link, server.trust,
            read_only=bool(hints and hints.read_only_hint), idempotent=bool(hints and hints.idempotent_hint),
        ))  # fmt: skip
    return made


async def _registered(server: str) -> set[str]:
    """The names of *server*'s tools the tool registry holds now."""
    return {t.definition.name for t in await list_tools() if remote_server(t.definition.name) == server}


async def offer_tools(server: str, tools: list[McpTool]) -> None:
    """Register *tools* as *server*'s, and unregister any of its tools no longer listed."""
    await sv.wait_for_name(REGISTRY, timeout=10)
    before = await _registered(server)
    for tool in tools:
        await register_tool(tool)
    for gone in before - {tool.definition.name for tool in tools}:
        await unregister_tool(gone)


async def withdraw_tools(server: str) -> None:
    """Unregister every tool of *server* (it stopped for good), within a bound, shielded."""
    with (
        trio.CancelScope(shield=True),
        trio.move_on_after(5),
        contextlib.suppress(sv.NoProc, sv.ProcessExited, sv.CallTimeout),
    ):
        for name in await _registered(server):
            await unregister_tool(name)


Report = Callable[[ServerReport], None]


@attrs.define
class _Connection:
    """One run of a server's process: one connection, from handshake to its end."""

    name: str
    server: ServerConfig
    link: Link
    report: Report
    tail: StderrTail = attrs.field(factory=StderrTail)
    tools: list[str] = attrs.field(factory=list)
    watch: _Watch = attrs.field(factory=_Watch)
    listings: Listings = attrs.field(factory=Listings)
    #: When the tools may be listed again after ``list_changed`` (`trio.current_time`).
    relist_at: float = -math.inf

    async def run(self) -> None:
        """Connect, serve, and end the connection; a stop (cancellation) still ends it cleanly.

        Leaving a connection is work (an HTTP session's DELETE, a stdio server stopped):
        it runs shielded, within `_CLOSE_SECONDS`, while a stop reaches the serving part.
        """
        serving = trio.CancelScope()
        async with trio.open_nursery() as guard:
            guard.start_soon(_cancel_when_cancelled, serving)
            with trio.CancelScope(shield=True) as connection:
                connection.deadline = trio.current_time() + self.link.config.init_timeout_seconds
                async with connect(self.name, self.server, self.tail, self.link.config, self._refused) as (
                    read,
                    write,
                ):
                    connection.deadline = math.inf
                    with serving:
                        await self._session(read, write)
                    connection.deadline = trio.current_time() + _CLOSE_SECONDS
            guard.cancel_scope.cancel()
        raise ConnectionLost(self.watch.why or "the connection ended")

    def _refused(self, why: str) -> None:
        """The transport refused what the server sent: end the connection, and tell a call
        in flight why it failed."""
        self.link.lose(why)
        self.watch.end(why)

    async def _session(self, read: Any, write: Any) -> None:
        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                self.watch.end(f"the transport failed: {type(message).__name__}: {message}")

        async with trio.open_nursery() as nursery:
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            nursery.start_soon(_relay, read, send, self.watch, self.listings)
            outgoing, forwarded = anyio.create_memory_object_stream[SessionMessage](0)
            nursery.start_soon(_forward, forwarded, write, self.listings)
            try:
                async with ClientSession(receive, outgoing, client_info=_CLIENT, message_handler=on_message) as session:
                    if await self._handshake(session, nursery):
                        self.link.attach(session)
                        emit("mcp_server_ready", server=self.name, tools=len(self.tools))
                        await self._serve(session)
            finally:
                nursery.cancel_scope.cancel()

    async def _handshake(self, session: ClientSession, nursery: trio.Nursery) -> bool:
        """``initialize`` and the first listing; False if the transport failed meanwhile."""
        timeout = self.link.config.init_timeout_seconds
        handshake = trio.CancelScope(deadline=trio.current_time() + timeout)
        nursery.start_soon(_then_cancel, self.watch.ended.wait, handshake)  # the transport failing
        with handshake:
            self.listings.version = (await session.initialize()).protocol_version
            await self._offer(session)
        if self.watch.ended.is_set():
            return False
        if handshake.cancelled_caught:
            raise ConnectionLost(
                f"the handshake (initialize, tools/list) took more than {timeout:g} s (mcp.init_timeout_seconds)"
            )
        return True

    async def _offer(self, session: ClientSession) -> None:
        """List the server's tools and register them."""
        listing, skipped = await listed(session, self.listings, self.server, self.link.config.max_tools_per_server)
        tools = mcp_tools(self.name, self.server, self.link, listing)
        for problem in skipped:
            logger.warning("MCP server {}: tool skipped: {}", self.name, problem)
        await offer_tools(self.name, tools)
        self.relist_at = trio.current_time() + self.link.config.relist_interval_seconds
        self.tools = sorted(tool.definition.name for tool in tools)
        self.report(Ready(self.name, self.tools, skipped))

    async def _serve(self, session: ClientSession) -> None:
        """Until the connection ends: keep the tools registered and current, and (HTTP) ping."""
        registry = sv.monitor(REGISTRY)
        watch, link = self.watch, self.link
        while True:
            with trio.move_on_after(link.config.ping_interval_seconds if self.server.url else math.inf) as idle:
                async with trio.open_nursery() as waiting:
                    for wait in (
                        watch.ended.wait,
                        self._changed_and_due,
                        link.lost.wait,
                        functools.partial(_down, registry),
                    ):
                        waiting.start_soon(_then_cancel, wait, waiting.cancel_scope)
            if watch.ended.is_set():
                return
            if link.lost.is_set():
                watch.end(link.lost_why)
                return
            if idle.cancelled_caught:
                try:
                    with trio.fail_after(link.config.call_timeout_seconds):
                        await session.send_ping()
                except Exception as exc:  # noqa: BLE001 - any failure of a ping is a loss
                    watch.end(f"the server did not answer a ping ({type(exc).__name__})")
                    return
                continue
            if not (watch.changed.is_set() and trio.current_time() >= self.relist_at):
                registry = sv.monitor(REGISTRY)  # the tool registry restarted, empty: register again
            watch.changed = trio.Event()  # the listing below answers every change so far
            with trio.fail_after(link.config.init_timeout_seconds):
                await self._offer(session)

    async def _changed_and_due(self) -> None:
        """Return once the tool list changed and it may be listed again."""
        await self.watch.changed.wait()
        await trio.sleep_until(self.relist_at)


async def serve_server(
    name: str, server: ServerConfig, link: Link, report: Report, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Own the connection to *name* until it ends (a crash) or the process is stopped."""
    task_status.started()
    connection = _Connection(name, server, link, report)
    report(Connecting(name))
    try:
        await connection.run()
    except trio.Cancelled:
        await withdraw_tools(name)  # stopped: by the daemon, or by `beamclaw mcp restart`
        raise
    except Exception as exc:
        # Its tools stay registered, failing at once, until it is back (or given up on).
        stderr = connection.tail.text()
        why = connection.watch.why or _describe(exc)  # the cause, before what it made fail
        report(Lost(name, scrub(why), stderr))
        raise ConnectionLost(why + (f"; its stderr ended with:\n{stderr}" if stderr else "")) from exc
    finally:
        link.detach()


def _describe(exc: BaseException) -> str:
    """What went wrong, in one line: the exceptions inside a group (nurseries wrap them), by name."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    if isinstance(exc, ConnectionLost):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _cancel_when_cancelled(scope: trio.CancelScope) -> None:
    """Pass a cancellation of the process on to *scope* (the part of it that is not shielded)."""
    try:
        await trio.sleep_forever()
    finally:
        scope.cancel()


async def _then_cancel(wait: Callable[[], Any], scope: trio.CancelScope) -> None:
    await wait()
    scope.cancel()


async def _down(ref: sv.Ref) -> None:
    await sv.receive(match=lambda m: isinstance(m, sv.Down) and m.ref == ref)
