"""The TUI's conversation with the daemon: lines sent, replies streamed, /commands.

Replies stream above the input line: each finished line is printed for good, the line
being written shows just above the prompt (`Screen.partial`). Approval questions can be
answered (/yes, /no, /always) while their turn waits: they go to the daemon as text.

A daemon that stops under the TUI is said in one line (`DaemonLink`); the TUI polls the
control socket with a short back-off until one answers again, then says "reconnected".
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import trio
from rich.console import Console
from rich.text import Text

from ._control_client import ControlError, NoDaemon, ask, request, running
from ._identity import user_id
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
    """Whether the daemon answers, watched by polling its control socket.

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

    def _unreachable(self, exc: Exception) -> None:
        if isinstance(exc, NoDaemon):
            self.link.lost()
        else:
            self.console.print(as_text(f"beamclaw: {exc}", style="red"))

    async def open(self) -> None:
        """The conversation's id and context, for the toolbar (and the agent checked)."""
        answer = await ask({"cmd": "open", **self.who})
        self.screen.session = str(answer["session"]["id"])
        await self.measure()

    async def measure(self) -> None:
        try:
            answer = await ask({"cmd": "context", **self.who})
        except (NoDaemon, ControlError):
            return
        share = answer["used"] / answer["window"] if answer["window"] else 0.0
        self.screen.context = f"context {share:.0%} of {answer['window']:,}"
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
        except (NoDaemon, ControlError) as exc:
            reply.flush()
            self._unreachable(exc)
        finally:
            self.busy -= 1
            self.screen.replying = self.busy > 0
            self.screen.status = "connected" if self.link.up else self.screen.status
            self.screen.refresh()
        await self.measure()

    async def _stream(self, text: str, reply: _Reply) -> None:
        async for message in request({"cmd": "chat", **self.who, "text": text}):
            kind = message.get("type")
            if kind == "progress":
                self.screen.status = f"waiting: {message['text']}"
                self.screen.refresh()
            elif kind in {"draft", "final"}:
                reply.update(str(message["text"]))
            elif kind == "message":  # an approval question, an error: a line of its own
                reply.flush()
                reply = _Reply(self.console, self.screen)
                self.console.print(as_text(message["text"]))
            elif kind == "reply":
                if not reply.shown and not reply.printed:
                    reply.update(str(message["text"]))
                reply.flush()
                return
            elif kind == "error":
                reply.flush()
                self.console.print(as_text(f"beamclaw: {message['error']}", style="red"))
                return

    async def interrupt(self) -> None:
        try:
            answer = await ask({"cmd": "interrupt", **self.who})
        except (NoDaemon, ControlError) as exc:
            self._unreachable(exc)
            return
        if not answer["stopped"]:
            self.console.print("[dim]nothing to stop[/]")

    async def command(self, text: str) -> bool:
        """Handle a /command; return False to quit."""
        word = text.split(maxsplit=1)[0].lower()
        if word in {"/quit", "/exit"}:
            return False
        try:
            if word == "/new":
                answer = await ask({"cmd": "reset", **self.who})
                self.console.print(f"[dim]new conversation ({answer['dropped']} messages forgotten)[/]")
                await self.measure()
            elif word == "/context":
                answer = await ask({"cmd": "context", **self.who})
                bar = context_bar(answer["used"], answer["window"])
                self.console.print(f"context {bar}, {answer['messages']} messages", markup=False)
            elif word == "/stop":
                await self.interrupt()
            else:
                self.console.print(HELP, markup=False)
        except (NoDaemon, ControlError) as exc:
            self._unreachable(exc)
        return True


async def follow_deliveries(user: str, console: Console) -> None:
    """Print what is delivered to *user* without a message of theirs (a scheduled job's
    reply), for as long as the TUI runs; the daemon being away is waited out."""
    while True:
        with contextlib.suppress(NoDaemon, OSError):
            async for message in request({"cmd": "follow", "user": user}):
                if message.get("type") == "message":
                    console.print(Text.assemble(("scheduled> ", "bold magenta"), str(message["text"])))
        await trio.sleep(_RETRY[1])
