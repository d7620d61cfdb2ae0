"""`beamclaw tui`: chat with an agent in the terminal, through the daemon.

If no daemon is running, one is started inside this process for as long as the TUI
runs (its logs go only to the log file, so the terminal stays the conversation's).
Lines are read while a reply streams, so an approval question can be answered
(/yes, /no, /always) while the turn waits for it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import AsyncGenerator
from typing import Any

import trio
from loguru import logger
from rich.console import Console

import beamclaw
import supervision as sv

from ._control_client import ask, running
from ._daemon_commands import stream_reply
from ._who import user_id

APPROVALS = frozenset({"/yes", "/no", "/always", "/y", "/n"})
HELP = "/new starts over, /context shows how full the context window is, /quit leaves. Approvals: /yes /no /always."


def context_bar(used: int, window: int, width: int = 30) -> str:
    share = min(1.0, used / window) if window else 0.0
    filled = round(share * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {used:,} / {window:,} tokens ({share:.0%})"


async def _in_process_daemon(config: dict[str, Any], task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    logger.remove()  # the log file (obs) keeps everything; the terminal is the conversation's
    home = beamclaw.data_dir()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    async with sv.open_supervisor(beamclaw.build_tree(config, home)):
        task_status.started()
        await trio.sleep_forever()


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
    def __init__(self, args: argparse.Namespace, console: Console) -> None:
        self.console = console
        self.who = {"user": user_id(args), "agent": args.agent}
        self.busy = 0

    def prompt(self) -> None:
        if not self.busy:
            self.console.print("[bold blue]you>[/] ", end="")

    async def send(self, text: str) -> None:
        self.busy += 1
        try:
            self.console.print(f"[bold green]{self.who['agent']}>[/] ", end="")
            await stream_reply({"cmd": "chat", **self.who, "text": text}, self.console)
        finally:
            self.busy -= 1
            self.prompt()

    async def command(self, text: str) -> bool:
        """Handle a /command; return False to quit."""
        word = text.split(maxsplit=1)[0].lower()
        if word in {"/quit", "/exit"}:
            return False
        if word == "/new":
            answer = await ask({"cmd": "reset", **self.who})
            self.console.print(f"[dim]new conversation ({answer['dropped']} messages forgotten)[/]")
        elif word == "/context":
            answer = await ask({"cmd": "context", **self.who})
            bar = context_bar(answer["used"], answer["window"])
            self.console.print(f"context {bar}, {answer['messages']} messages", markup=False)
        else:
            self.console.print(HELP, markup=False)
        self.prompt()
        return True


async def tui(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    chat = _Chat(args, console)
    async with trio.open_nursery() as nursery:
        if not await running():
            console.print("[dim]No daemon is running: starting one in this process until you quit.[/]")
            await nursery.start(_in_process_daemon, beamclaw.load_config(args.config))
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
    console.print("[dim]bye[/]")
    return 0
