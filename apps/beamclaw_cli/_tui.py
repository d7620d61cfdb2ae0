"""`beamclaw tui`: chat with an agent in the terminal, through the daemon.

Three parts, each a module: the terminal bridge (`_terminal_bridge`: prompt_toolkit's
input line in a thread of its own, the toolbar, the keys), the chat (`_tui_chat`: lines
to the daemon, replies streamed back, /commands, the daemon watched), and the daemon
started inside this process when none is running (`_in_process_daemon`). This module
joins them: it routes what the prompt sends to the chat until the user leaves.

A bottom toolbar shows the agent, the session, how full the context window is, and
what is going on (a model being retried, the daemon down and being waited for).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import Any, Final

import trio
from rich.console import Console
from rich.text import Text

import beamclaw

from ._api_client import running
from ._in_process_daemon import DaemonGaveUp, in_process_tree, run_in_process_daemon
from ._terminal_bridge import Screen, leave_prompt, run_prompt
from ._terminal_safe import as_text
from ._tui_chat import APPROVALS, COMMANDS, HELP, Chat, DaemonLink, follow_deliveries

#: The lines typed, in the data dir (see `_terminal_bridge`).
HISTORY_FILE: Final = "tui_history"


async def tui(args: argparse.Namespace) -> int:
    """Chat in the terminal until the user leaves; the exit status (130 after Ctrl-C twice)."""
    console = Console(highlight=False)
    screen = Screen(args.agent)
    link = DaemonLink(console, screen)
    chat = Chat(args, console, screen, link)
    tree = None if await running() else in_process_tree(args)
    history = beamclaw.data_dir(create=True) / HISTORY_FILE
    send_event, events = trio.open_memory_channel[tuple[Any, ...]](64)
    token = trio.lowlevel.current_trio_token()

    def post(*event: Any) -> None:  # from the prompt thread (or a signal)
        with contextlib.suppress(trio.RunFinishedError, trio.WouldBlock, trio.ClosedResourceError):
            trio.from_thread.run_sync(send_event.send_nowait, event, trio_token=token)

    outcome: list[int] = []
    lock = beamclaw.daemon_lock(beamclaw.data_dir()) if tree is not None else contextlib.nullcontext()
    with lock, trio.open_signal_receiver(signal.SIGINT) as interrupts:
        try:
            async with trio.open_nursery() as nursery:
                if tree is not None:
                    console.print("[dim]No daemon is running: starting one in this process until you quit.[/]")
                    await nursery.start(run_in_process_daemon, tree, nursery.cancel_scope)
                else:
                    nursery.start_soon(link.watch, chat.open)
                if not (sys.stdin.isatty() and sys.stdout.isatty()):
                    print("beamclaw: the TUI needs a terminal; `beamclaw chat MESSAGE` works from scripts",
                          file=sys.stderr)  # fmt: skip
                    outcome.append(2)
                    nursery.cancel_scope.cancel()
                    return 2
                await chat.open()
                console.print(
                    Text.assemble(
                        ("BeamClaw", "bold"), " — talking to ", as_text(args.agent, style="green"),
                        as_text(f" as {chat.who['user']} (session {screen.session[:12]}). {HELP}"),
                    )
                )  # fmt: skip
                nursery.start_soon(_signals, interrupts, send_event.clone())
                nursery.start_soon(follow_deliveries, chat.who["user"], console)
                nursery.start_soon(
                    lambda: trio.to_thread.run_sync(run_prompt, screen, post, history, COMMANDS, abandon_on_cancel=True)
                )
                outcome.append(await _serve(events, chat, nursery))
                nursery.cancel_scope.cancel()
        except* DaemonGaveUp:
            outcome.append(1)
        finally:
            await leave_prompt(screen)
    console.print("[dim]bye[/]")
    return outcome[0] if outcome else 0


async def _signals(interrupts: Any, send: trio.MemorySendChannel[tuple[Any, ...]]) -> None:
    """A SIGINT (Ctrl-C while the prompt is not reading keys) counts as the Ctrl-C key."""
    async with send:
        async for _ in interrupts:
            await send.send(("interrupt",))


async def _serve(events: trio.MemoryReceiveChannel[tuple[Any, ...]], chat: Chat, nursery: trio.Nursery) -> int:
    """Act on what the prompt sends until the user leaves; the exit status."""
    async for event in events:
        match event:
            case ("leave", int() as status):
                return status
            case ("interrupt",):
                if chat.busy:
                    nursery.start_soon(chat.interrupt)
            case ("line", str() as line):
                text = line.strip()
                if text.startswith("/") and text.split()[0].lower() not in APPROVALS:
                    if not await chat.command(text):
                        return 0
                elif text:
                    nursery.start_soon(chat.send, text)
    return 0
