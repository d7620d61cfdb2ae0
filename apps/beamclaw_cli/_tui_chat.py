"""The TUI's conversation with the daemon: lines sent, replies streamed, /commands.

Replies stream above the input line: each finished line is printed for good, the line
being written shows just above the prompt (`Screen.partial`). Approval questions can be
answered (/yes, /no, /always) while their turn waits: they go to the daemon as text.
Everything goes through the daemon's API on its socket (`_api_client`): the chat route's
events, and the routes of the conversation the TUI opened.

A daemon that stops under the TUI is said in one line (`DaemonLink`); the TUI polls the
socket with a short back-off until one answers again, then says "reconnected".
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import quote

import attrs
import trio
from rich.console import Console
from rich.text import Text

from . import _api_client as api
from ._api_client import ApiError, NoDaemon, running
from ._identity import user_id
from ._session_commands import forget, open_session, session_path, stop
from ._terminal_bridge import Screen
from ._terminal_safe import as_text

APPROVALS: Final = frozenset({"/yes", "/no", "/always", "/y", "/n"})
#: The /commands, with what each does (Tab completes them; /help lists them).
COMMANDS: Final = {
    "/new": "start a new conversation",
    "/context": "how full the context window is",
    "/stop": "stop the reply being written (Ctrl-C does too)",
    "/yes": "approve the tool call asked about",
    "/no": "refuse it",
    "/always": "approve this tool for the rest of the conversation",
    "/help": "this list",
    "/quit": "leave (Ctrl-D does too)",
}
HELP: Final = (
    "Commands: " + ", ".join(COMMANDS) + ". Up/Down recall lines, Tab completes, Ctrl-C stops a reply, "
    "Ctrl-C twice or Ctrl-D leaves."
)
#: While the daemon answers, it is pinged this often; while it does not, the polls
#: start at the first delay and double up to the second.
_HEARTBEAT: Final = 1.0
_RETRY: Final = (0.1, 2.0)


def context_bar(used: int, window: int, width: int = 30) -> str:
    share = min(1.0, used / window) if window else 0.0
    filled = round(share * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {used:,} / {window:,} tokens ({share:.0%})"


@attrs.define
class DaemonLink:
    """Whether the daemon answers, watched by polling its socket.

    A failed request calls `lost`; `watch` pings while the daemon is up, polls with a
    back-off while it is down, and says each change in one line.
    """

    console: Console
    screen: Screen
    up: bool = True
    _wake: trio.Event = attrs.field(factory=trio.Event)

    def lost(self) -> None:
        if self.up:
            self.up = False
            self.screen.status = "daemon down: reconnecting..."
            self.screen.refresh()
            self.console.print("[yellow]The daemon stopped; reconnecting when it is back...[/]")
            self._wake.set()

    async def watch(self, reconnected: Callable[[], Awaitable[None]]) -> None:
        delay = _RETRY[0]
        while True:
            if self.up:
                with trio.move_on_after(_HEARTBEAT):
                    await self._wake.wait()
                self._wake = trio.Event()
                if self.up and not await running():
                    self.lost()
                continue
            await trio.sleep(delay)
            if await running():
                self.up, delay = True, _RETRY[0]
                self.screen.status = "connected"
                self.console.print("[green]reconnected[/]")
                await reconnected()
            else:
                delay = min(delay * 2, _RETRY[1])


@attrs.define
class _Reply:
    """One reply on the screen: finished lines printed for good, the last one shown as it grows."""

    console: Console
    screen: Screen
    printed: str = ""  # what of the reply is printed for good (whole lines)
    shown: str = ""  # the whole reply so far

    def update(self, text: str) -> None:
        if not text.startswith(self.shown):  # rewritten from the start: go on below what was printed
            self.flush()
            self.printed = self.shown = ""
        self.shown = text
        done = text.rfind("\n") + 1
        if done > len(self.printed):
            self._print(text[len(self.printed) : done - 1])
            self.printed = text[:done]
        self.screen.partial = text[len(self.printed) :]
        self.screen.refresh()

    def flush(self) -> None:
        """The rest of the reply, printed for good."""
        if len(self.shown) > len(self.printed):
            self._print(self.shown[len(self.printed) :])
        self.printed = self.shown
        self.screen.partial = ""
        self.screen.refresh()

    def _print(self, lines: str) -> None:
        # One write, ending in a newline: the patched stdout prints a partial line at
        # once, and the prompt drawn after it would then cover it.
        prefix = "" if self.printed else f"{self.screen.agent}> "
        self.console.print(Text.assemble((prefix, "bold green"), lines), highlight=False)


class Chat:
    def __init__(self, args: argparse.Namespace, console: Console, screen: Screen, link: DaemonLink) -> None:
        self.console = console
        self.screen = screen
        self.link = link
        self.who = {"user": user_id(args), "agent": args.agent}
        self.busy = 0

    @property
    def session(self) -> str:
        """The conversation's id (`open` finds it)."""
        return self.screen.session

    def _unreachable(self, exc: Exception) -> None:
        if isinstance(exc, NoDaemon):
            self.link.lost()
        else:
            self.console.print(as_text(f"beamclaw: {exc}", style="red"))

    async def open(self) -> None:
        """The conversation's id and context, for the toolbar (and the agent checked)."""
        self.screen.session = str((await open_session(self.who))["id"])
        await self.measure()

    async def measure(self) -> None:
        try:
            context = (await api.call("GET", session_path(self.session)))["context"]
        except (NoDaemon, ApiError):
            return
        share = context["used"] / context["window"] if context["window"] else 0.0
        self.screen.context = f"context {share:.0%} of {context['window']:,}"
        self.screen.refresh()

    async def send(self, text: str) -> None:
        if not self.link.up:
            self.console.print("[yellow]Not sent: the daemon is not running (waiting for it to come back).[/]")
            return
        self.busy += 1
        self.screen.replying = True
        self.screen.refresh()
        reply = _Reply(self.console, self.screen)
        try:
            await self._stream(text, reply)
        except (NoDaemon, ApiError) as exc:
            reply.flush()
            self._unreachable(exc)
        finally:
            self.busy -= 1
            self.screen.replying = self.busy > 0
            self.screen.status = "connected" if self.link.up else self.screen.status
            self.screen.refresh()
        await self.measure()

    async def _stream(self, text: str, reply: _Reply) -> None:
        async for kind, data in api.events("POST", "/v1/chat", json={**self.who, "text": text}):
            if kind == "progress":
                self.screen.status = f"waiting: {data['text']}"
                self.screen.refresh()
            elif kind in {"draft", "final"}:
                reply.update(str(data["text"]))
            elif kind in {"message", "approval"}:  # an approval question, an error: a line of its own
                reply.flush()
                reply = _Reply(self.console, self.screen)
                self.console.print(as_text(data["question"] if kind == "approval" else data["text"]))
            elif kind == "reply":
                if not reply.shown and not reply.printed:
                    reply.update(str(data["text"]))
                reply.flush()
                return

    async def interrupt(self) -> None:
        try:
            stopped = await stop(self.session)
        except (NoDaemon, ApiError) as exc:
            self._unreachable(exc)
            return
        if not stopped:
            self.console.print("[dim]nothing to stop[/]")

    async def command(self, text: str) -> bool:
        """Handle a /command; return False to quit."""
        word = text.split(maxsplit=1)[0].lower()
        if word in {"/quit", "/exit"}:
            return False
        try:
            if word == "/new":
                dropped = await forget(self.session)
                self.console.print(f"[dim]new conversation ({dropped} messages forgotten)[/]")
                await self.measure()
            elif word == "/context":
                context = (await api.call("GET", session_path(self.session)))["context"]
                bar = context_bar(context["used"], context["window"])
                self.console.print(f"context {bar}, {context['messages']} messages", markup=False)
            elif word == "/stop":
                await self.interrupt()
            else:
                self.console.print(HELP, markup=False)
        except (NoDaemon, ApiError) as exc:
            self._unreachable(exc)
        return True


async def follow_deliveries(user: str, console: Console) -> None:
    """Print what is delivered to *user* without a message of theirs (a scheduled job's
    reply), for as long as the TUI runs; the daemon being away is waited out."""
    while True:
        with contextlib.suppress(NoDaemon, ApiError, OSError):
            async for kind, data in api.events("GET", f"/v1/users/{quote(user, safe='')}/deliveries"):
                if kind == "message":
                    console.print(Text.assemble(("scheduled> ", "bold magenta"), str(data["text"])))
        await trio.sleep(_RETRY[1])
