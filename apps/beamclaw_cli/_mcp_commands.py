"""`beamclaw mcp list | tools [NAME] | restart NAME | serve`: the MCP servers of the running
daemon, and BeamClaw itself as an MCP server over stdio."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import attrs

import beamclaw

if TYPE_CHECKING:
    import trio

    import beamclaw_gateway as gateway

from ._api_client import ApiError, NoDaemon, call, events
from ._help import Commands, Help, add_group
from ._identity import add_identity_options
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._terminal_safe import as_text, console

_HELP: Final = Help(
    "the MCP servers BeamClaw uses, and BeamClaw as an MCP server",
    "The MCP servers of the running daemon ([mcp.servers.NAME]): their state, tools and last error. "
    "Without an action, list them. `serve` makes BeamClaw's agents an MCP server for other hosts.",
    ["beamclaw mcp", "beamclaw mcp tools files", "beamclaw mcp restart files"],
)
_ACTIONS: Final = {
    "list": Help("each server: state, tools, restarts, last error", "List each configured MCP server: its "
                 "transport, state (connecting, ready, restarting, failed, disabled), how many tools it offers, "
                 "its restarts and its last error, with the end of its stderr when it failed.", ["beamclaw mcp list"]),
    "tools": Help("the MCP tools the agents see", "List the tools MCP servers offer the agents, as the agents see "
                  "them (mcp__SERVER__TOOL), and whether each asks for approval.",
                  ["beamclaw mcp tools", "beamclaw mcp tools files"]),
    "restart": Help("start a server again (a failed one too)", "Stop an MCP server's process and start it again, "
                    "with a fresh count of restarts: for a server left failed after a crash loop, once its "
                    "problem is fixed.", ["beamclaw mcp restart files"]),
    "serve": Help("be an MCP server over stdio for another host", "Serve BeamClaw's agents as MCP tools over stdio, "
                  "for a desktop assistant or an IDE: `chat` (agent, message) talks to an agent of the running "
                  "daemon, `agents` lists them. Put this command in the host's MCP configuration.",
                  ["beamclaw mcp serve", "beamclaw mcp serve --agent ops"]),
}  # fmt: skip


def add_parser(commands: Commands) -> None:
    actions = add_group(commands, "mcp", _HELP, _ACTIONS)
    add_json_option(actions["list"])
    actions["tools"].add_argument("server", nargs="?", help="one server's tools only")
    actions["restart"].add_argument("server", help="the server's name ([mcp.servers.NAME])")
    add_identity_options(actions["serve"], user_default="mcp:local, never $BEAMCLAW_USER")


async def run(args: argparse.Namespace) -> int:
    out = console()
    match args.action or "list":
        case "list":
            servers = (await call("GET", "/v1/mcp/servers", raw=wants_json(args)))["servers"]
            if wants_json(args):
                print_json(servers)
                return 0
            if not servers:
                print("no MCP servers are configured: add [mcp.servers.NAME] to the configuration")
                return 0
            print_table(
                [Column("SERVER", whole=True), Column("TRANSPORT"), Column("STATE"), Column("TOOLS", right=True),
                 Column("RESTARTS", right=True), Column("LAST ERROR")],
                [(server["name"], server["transport"], server["state"], len(server["tools"]), server["restarts"],
                  server["last_error"] or "-") for server in servers],
            )  # fmt: skip
            for server in servers:
                for skipped in server["skipped"]:
                    out.print(as_text(f"{server['name']}: tool skipped: {skipped}"))
                if server["state"] == "failed" and server["stderr"]:
                    out.print(as_text(f"{server['name']}: the end of its stderr:"))
                    out.print(as_text("  " + server["stderr"].replace("\n", "\n  ")))
            return 0
        case "tools":
            params = {"server": args.server} if args.server else None
            found = (await call("GET", "/v1/mcp/tools", params=params))["tools"]
            if not found:
                print("no MCP tools" + (f" from {args.server}" if args.server else "") + " (see `beamclaw mcp list`)")
            for tool in found:
                mark = "asks" if tool["asks"] else "runs"
                out.print(as_text(f"{tool['name']}  [{mark}]  {tool['description']}"))
            return 0
        case "restart":
            await call("POST", f"/v1/mcp/servers/{quote(args.server, safe='')}/restart")
            print(f"restarting {args.server}: `beamclaw mcp list` shows how it goes")
            return 0
    raise AssertionError(f"unknown action {args.action}")  # pragma: no cover - argparse allows only these


#: Said to the host when the daemon goes away in the middle of a turn.
_GONE: Final = "the daemon stopped before answering; send the message again"


def _chat(agent: str, user: str, text: str) -> AsyncIterator[tuple[str, Any]]:
    """The events of one ``POST /v1/chat`` on the "mcp" channel (the host's turns, whose
    ``/yes`` answers only their own questions), raw: they go to a program, not a terminal."""
    body = {"text": text, "user": user, "agent": agent, "channel": "mcp"}
    return events("POST", "/v1/chat", json=body, raw=True)


@attrs.define
class _ApiBackend:
    """The agents of the running daemon, over its management API (see `gateway.Conversations`)."""

    nursery: trio.Nursery

    async def start(self, agent: str, user: str, message: str, pending: gateway.McpPending, origin: str) -> None:
        """Submit the turn; return once the daemon has taken it (a refusal is raised here, a
        `ValueError` said to the host), then tell *pending* what it says, in the background."""
        await self.nursery.start(self._follow, agent, user, message, pending)

    @staticmethod
    async def _follow(agent: str, user: str, message: str, pending: gateway.McpPending, task_status: Any) -> None:
        taken = ended = False
        try:
            async for name, data in _chat(agent, user, message):
                if not taken:
                    taken = True
                    task_status.started()
                match name:
                    case "message":
                        pending.said(str(data["text"]))
                    case "approval":  # the host's user answers it with /yes, /no or /always
                        pending.said(str(data["question"]))
                    case "reply":
                        pending.ended(bool(data["ok"]), str(data["text"]))
                        ended = True
        except ApiError as exc:
            if not taken:
                raise ValueError(str(exc)) from None
        except NoDaemon:
            if not taken:
                raise
        if not taken:
            raise NoDaemon(_GONE)
        if not ended:
            pending.ended(False, _GONE)

    async def answer(self, agent: str, user: str, word: str, origin: str) -> None:
        """The word (``/yes``, ``/no``, ``/always``) as a message of the same channel: only
        an answer from where the question was asked approves it."""
        async for _ in _chat(agent, user, word):
            pass

    async def agents(self) -> list[str]:
        import beamclaw_core as core

        return core.agent_names(beamclaw.data_dir(), core.CoreConfig().default_agent)


async def serve(args: argparse.Namespace) -> int:
    """BeamClaw's agents as an MCP server on stdin/stdout, for as long as the host keeps it."""
    import trio

    import beamclaw_gateway as gateway

    # Never BEAMCLAW_USER by default: the host's model drives this conversation, and must
    # not reach the owner's own (the terminal's, Telegram's) unless --user names it.
    user = args.user or gateway.LOCAL.mcp_user("")

    def speaker(agent: str, name: str, headers: object) -> tuple[str, str]:
        """``--user`` (by default ``mcp:local``); a name the host's model gives, one of the
        owner's own ``mcp:local`` users only. The API's "mcp" channel is the origin."""
        import beamclaw_gateway as gateway

        return (gateway.LOCAL.mcp_user(name) if name else user), "mcp"

    async with trio.open_nursery() as nursery:
        conversations = gateway.McpConversations(_ApiBackend(nursery), args.agent)
        await gateway.agents_server(conversations, speaker=speaker).run_stdio_async()
        nursery.cancel_scope.cancel()
    return 0


def run_command(args: argparse.Namespace) -> int:
    import trio

    if args.action == "serve":
        return trio.run(serve, args)
    return trio.run(run, args)
