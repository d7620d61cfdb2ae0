"""The registry process: which MCP servers are configured, and how each is doing.

It starts each enabled server, as a supervisor of its own (so a server that keeps
crashing gives up alone, without taking the app down) under the dynamic `SERVERS`,
and keeps each server's status from what its process reports and from the end of its
supervisor: ``connecting``, ``ready`` (with its tools), ``restarting`` (with the last
error and stderr lines), ``failed`` (restarted too often: left so until `restart`),
``disabled``. `beamclaw mcp list` and the HTTP API read it.
"""

from __future__ import annotations

from typing import Final

import attrs

import supervision as sv
from beamclaw_obs import emit, scrub
from beamclaw_tools import list_tools

from ._config import McpConfig, ServerConfig
from ._names import remote_server
from ._reports import Connecting, Lost, Ready, ServerReport
from ._tool import Link

MCP_REGISTRY: Final = "beamclaw_mcp.registry"
SERVERS: Final = "beamclaw_mcp.servers"
#: A server's first restart waits this long; each next one twice as long, up to the maximum.
_BACKOFF: Final = sv.Backoff(initial=0.2, maximum=5.0)


@attrs.define
class ServerStatus:
    """One server as `beamclaw mcp list` shows it."""

    name: str
    transport: str
    state: str = "connecting"
    tools: list[str] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    restarts: int = 0
    last_error: str = ""
    stderr: str = ""


@attrs.define
class _State:
    config: McpConfig
    statuses: dict[str, ServerStatus] = attrs.field(factory=dict)
    links: dict[str, Link] = attrs.field(factory=dict)
    running: dict[str, sv.Pid] = attrs.field(factory=dict)


@attrs.frozen
class ListServers(sv.Request[list[ServerStatus]]):
    """Every configured server and how it is doing (copies)."""


@attrs.frozen
class RestartServer(sv.Request[None]):
    """Start server *name* again, with a fresh count of restarts (`ValueError`: not one that can be)."""

    name: str


def _report(report: ServerReport) -> None:
    """What a server's process tells the registry (a cast: never blocks, lost if it is restarting)."""
    sv.cast(MCP_REGISTRY, report)


def _describe(server: ServerConfig) -> str:
    return scrub(" ".join(server.command) if server.command else server.url)


def server_tree(name: str, server: ServerConfig, link: Link, config: McpConfig) -> sv.ChildSpec:
    """One server: a supervisor of its own around the process that owns its connection.

    The MCP SDK is imported here, by the first server started: a daemon with none never does."""
    from ._server import serve_server  # noqa: PLC0415

    connection = sv.ChildSpec(
        "connection", serve_server, args=(name, server, link, _report), restart=sv.TRANSIENT, backoff=_BACKOFF
    )
    supervisor = sv.Supervisor(
        [connection], intensity=config.max_restarts, period=config.restart_period_seconds, name=None
    )
    return supervisor.child_spec(name, restart=sv.TEMPORARY, label=f"{server.kind}: {_describe(server)}")


class McpRegistry(sv.GenServer):
    async def init(self, config: McpConfig) -> _State:
        sv.register(MCP_REGISTRY)
        state = _State(config)
        already = {str(c.id): c.pid for c in sv.which_children(SERVERS) if c.pid is not None}
        registered = {t.definition.name for t in await list_tools()} if already else set()
        for name, server in config.servers.items():
            status = state.statuses[name] = ServerStatus(name, server.kind)
            if not server.enabled:
                status.state = "disabled"
            elif name in already:  # this registry restarted; the server did not
                state.running[name] = already[name]
                sv.monitor(already[name])
                status.state = "ready"
                status.tools = sorted(t for t in registered if remote_server(t) == name)
            else:
                await self._start(name, state)
        return state

    async def _start(self, name: str, state: _State) -> None:
        server = state.config.servers[name]
        link = state.links.setdefault(name, Link(name, state.config, remake_after_timeout=bool(server.url)))
        pid = await sv.start_child(SERVERS, server_tree(name, server, link, state.config))
        assert pid is not None
        state.running[name] = pid
        sv.monitor(pid)

    async def handle_call(
        self, request: ListServers | RestartServer, caller: sv.Caller, state: _State
    ) -> sv.Reply | sv.NoReply:
        match request:
            case ListServers():
                return sv.Reply([attrs.evolve(s) for s in state.statuses.values()], state)
            case RestartServer(name):
                problem = self._cannot_restart(name, state)
                if problem is not None:
                    sv.reply_error(caller, ValueError(problem))
                    return sv.NoReply(state)
                pid = state.running.pop(name, None)
                if pid is not None:
                    await sv.terminate_child(SERVERS, pid)
                status = state.statuses[name]
                status.state, status.restarts, status.last_error, status.stderr = "connecting", 0, "", ""
                await self._start(name, state)
                return sv.Reply(None, state)
        raise ValueError(f"unknown MCP registry request {request!r}")

    @staticmethod
    def _cannot_restart(name: str, state: _State) -> str | None:
        if name not in state.statuses:
            return f"no MCP server {name!r} is configured (configured: {', '.join(state.statuses) or 'none'})"
        if not state.config.servers[name].enabled:
            return f"the MCP server {name!r} is disabled in the configuration"
        return None

    def handle_cast(self, report: ServerReport, state: _State) -> sv.NoReply:
        status = state.statuses.get(report.name)
        if status is None or status.state == "failed":
            return sv.NoReply(state)  # not configured, or a last word from a server given up on
        match report:
            case Connecting():
                status.state = "connecting"
            case Ready(_, tools, skipped):
                status.state, status.tools, status.skipped = "ready", tools, skipped
            case Lost(_, error, stderr):
                status.state, status.tools = "restarting", []
                status.restarts += 1
                status.last_error, status.stderr = error, stderr
        return sv.NoReply(state)

    async def handle_info(self, message: object, state: _State) -> sv.NoReply:
        if isinstance(message, sv.Down):
            for name, pid in list(state.running.items()):
                if pid == message.pid:
                    del state.running[name]
                    status = state.statuses[name]
                    if message.reason != sv.SHUTDOWN:
                        status.state, status.tools = "failed", []
                        emit("mcp_server_failed", server=name, restarts=status.restarts, error=status.last_error)
                    from ._server import withdraw_tools  # noqa: PLC0415 - imported by server_tree already

                    await withdraw_tools(name)  # it stopped for good: its tools go with it
        return sv.NoReply(state)


async def server_statuses() -> list[ServerStatus]:
    """Every configured server and how it is doing."""
    return await sv.call(MCP_REGISTRY, ListServers(), restart_wait=2.0)


async def restart_server(name: str) -> None:
    """Start server *name* again (a failed one too), with a fresh count of restarts."""
    await sv.call(MCP_REGISTRY, RestartServer(name), restart_wait=2.0)
