"""`beamclaw tui`: chat with an agent in the terminal, through the daemon.

If no daemon is running, one is started inside this process for as long as the TUI
runs (its logs go only to the log file, so the terminal stays the conversation's).
Lines are read while a reply streams, so an approval question can be answered
(/yes, /no, /always) while the turn waits for it.

A daemon that stops under the TUI is said in one line, and the TUI polls the control
socket (with a short back-off) until one answers again, then says "reconnected".
Ctrl-C leaves as /quit does, with status 130.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from loguru import logger
from rich.console import Console

import beamclaw
import supervision as sv

from ._control_client import ControlError, NoDaemon, ask, running
from ._daemon_commands import stream_reply
from ._who import user_id

APPROVALS = frozenset({"/yes", "/no", "/always", "/y", "/n"})
HELP = "/new starts over, /context shows how full the context window is, /quit leaves. Approvals: /yes /no /always."

#: While the daemon answers, it is pinged this often; while it does not, the polls
#: start at the first delay and double up to the second.
_HEARTBEAT: Final = 1.0
_RETRY: Final = (0.1, 2.0)


def context_bar(used: int, window: int, width: int = 30) -> str:
    share = min(1.0, used / window) if window else 0.0
    filled = round(share * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {used:,} / {window:,} tokens ({share:.0%})"


@attrs.define
class _Link:
    """Whether the daemon answers, watched by polling its control socket.

    A failed request calls `lost`; `watch` pings while the daemon is up, polls with a
    back-off while it is down, and says each change in one line.
    """

    console: Console
    up: bool = True
    _wake: trio.Event = attrs.field(factory=trio.Event)

    def lost(self) -> None:
        if self.up:
            self.up = False
            self.console.print("\n[yellow]The daemon stopped; reconnecting when it is back...[/]")
            self._wake.set()

    async def watch(self) -> None:
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
                self.console.print("[green]reconnected[/]")
            else:
                delay = min(delay * 2, _RETRY[1])


async def _in_process_daemon(
    tree: sv.Supervisor, cancel: trio.CancelScope, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """The daemon inside the TUI; if its tree cannot start or gives up, the TUI says why in
    one line and leaves (`cancel`) with status 1, as `beamclaw run` would."""
    logger.remove()  # the log file (obs) keeps everything; the terminal is the conversation's
    try:
        async with sv.open_supervisor(tree):
            task_status.started()
            await trio.sleep_forever()
    except sv.StartError as exc:
        where, reason = [str(exc.child_id)], exc.reason
        while isinstance(reason, sv.StartError):  # the innermost child says what went wrong
            where.append(str(reason.child_id))
            reason = reason.reason
        why = f"could not start {'/'.join(where)}: {reason}"
    except sv.MaxIntensity as exc:
        why = f"the daemon in this TUI gave up: {exc}"
    print(f"beamclaw: {why}", file=sys.stderr)  # one line: rich would wrap it at the terminal's width
    cancel.cancel()
    raise _DaemonGaveUp


class _DaemonGaveUp(Exception):
    """The in-process daemon stopped for good; the TUI exits with status 1."""


async def _lines() -> AsyncGenerator[str, None]:
    stream = trio.lowlevel.FdStream(os.dup(0))
    buffer = b""
    async with stream:
        while True:
            chunk = await stream.receive_some(4096)
            if not chunk:
                if buffer:
                    yield buffer.decode(errors="replace")
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                yield line.decode(errors="replace")


class _Chat:
    def __init__(self, args: argparse.Namespace, console: Console, link: _Link) -> None:
        self.console = console
        self.link = link
        self.who = {"user": user_id(args), "agent": args.agent}
        self.busy = 0

    def _unreachable(self, exc: Exception) -> None:
        if isinstance(exc, NoDaemon):
            self.link.lost()
        else:
            self.console.print(f"beamclaw: {exc}", style="red", markup=False)

    def prompt(self) -> None:
        if not self.busy:
            self.console.print("[bold blue]you>[/] ", end="")

    async def send(self, text: str) -> None:
        if not self.link.up:
            self.console.print("[yellow]Not sent: the daemon is not running (waiting for it to come back).[/]")
            self.prompt()
            return
        self.busy += 1
        try:
            self.console.print(f"[bold green]{self.who['agent']}>[/] ", end="")
            await stream_reply({"cmd": "chat", **self.who, "text": text}, self.console)
        except (NoDaemon, ControlError) as exc:
            self._unreachable(exc)
        finally:
            self.busy -= 1
            self.prompt()

    async def command(self, text: str) -> bool:
        """Handle a /command; return False to quit."""
        word = text.split(maxsplit=1)[0].lower()
        if word in {"/quit", "/exit"}:
            return False
        try:
            if word == "/new":
                answer = await ask({"cmd": "reset", **self.who})
                self.console.print(f"[dim]new conversation ({answer['dropped']} messages forgotten)[/]")
            elif word == "/context":
                answer = await ask({"cmd": "context", **self.who})
                bar = context_bar(answer["used"], answer["window"])
                self.console.print(f"context {bar}, {answer['messages']} messages", markup=False)
            else:
                self.console.print(HELP, markup=False)
        except (NoDaemon, ControlError) as exc:
            self._unreachable(exc)
        self.prompt()
        return True


async def _interrupted(received: Any, cancel: trio.CancelScope, outcome: list[int]) -> None:
    """Ctrl-C: leave as /quit does, with status 130 (no KeyboardInterrupt through the nursery)."""
    async for _ in received:
        outcome.append(130)
        cancel.cancel()
        return


async def tui(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    link = _Link(console)
    chat = _Chat(args, console, link)
    outcome: list[int] = []
    tree = None
    if not await running():
        # Outside the nursery, so that a bad configuration or data dir is one plain error.
        config = beamclaw.load_config(args.config)
        try:
            path = Path(args.config).absolute() if args.config else None
            tree = beamclaw.build_tree(config, beamclaw.data_dir(create=True), path)
        except ValueError as exc:  # an app's table, as `beamclaw run` reports it
            raise beamclaw.ConfigError(str(exc)) from None
    with trio.open_signal_receiver(signal.SIGINT) as interrupts:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_interrupted, interrupts, nursery.cancel_scope, outcome)
                if tree is not None:
                    console.print("[dim]No daemon is running: starting one in this process until you quit.[/]")
                    await nursery.start(_in_process_daemon, tree, nursery.cancel_scope)
                else:
                    nursery.start_soon(link.watch)
                console.print(f"[bold]BeamClaw[/] — talking to [green]{args.agent}[/] as {chat.who['user']}. {HELP}")
                chat.prompt()
                async with contextlib.aclosing(_lines()) as lines:
                    async for line in lines:
                        text = line.strip()
                        if not text:
                            chat.prompt()
                        elif text.startswith("/") and text.split()[0].lower() not in APPROVALS:
                            if not await chat.command(text):
                                break
                        else:
                            nursery.start_soon(chat.send, text)
                nursery.cancel_scope.cancel()
        except* _DaemonGaveUp:
            outcome.append(1)
    console.print("\n[dim]bye[/]" if outcome else "[dim]bye[/]")
    return outcome[0] if outcome else 0
