"""`beamclaw tui`: chat with an agent in the terminal, through the daemon.

The input line is prompt_toolkit's: arrow keys, Home/End and Ctrl-W edit it; Up and
Down (and Ctrl-R) recall earlier lines, kept across runs in ``tui_history`` in the
data dir (scrubbed, mode 0600); Tab completes the /commands. A bottom toolbar shows
the agent, the session, how full the context window is, and what is going on (a
model being retried, the daemon down and being waited for).

Replies stream above the input line: each finished line is printed for good, the
line being written shows just above the prompt. Ctrl-C stops the reply being written
(the daemon stops the turn); with nothing being written it clears the line, and a
second Ctrl-C within three seconds leaves (status 130), as Ctrl-D on an empty line
does (0).
Approval questions can be answered (/yes, /no, /always) while their turn waits.

If no daemon is running, one is started inside this process for as long as the TUI
runs (its logs go only to the log file). A daemon that stops under the TUI is said in
one line; the TUI polls the control socket with a short back-off until one answers
again, then says "reconnected".

Threads: prompt_toolkit runs on asyncio and BeamClaw on Trio, so the prompt runs in a
worker thread with an asyncio loop of its own. Lines and keys come to Trio over a
memory channel; Trio changes what the screen shows through `_Screen`, whose redraw
(`Application.invalidate`) is thread-safe, and prints through prompt_toolkit's
patched stdout, which writes above the prompt.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from loguru import logger
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from rich.console import Console
from rich.text import Text

import beamclaw
import beamclaw_obs as obs
import supervision as sv

from ._control_client import ControlError, NoDaemon, ask, request, running
from ._visible import as_text
from ._who import user_id

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
HISTORY_FILE: Final = "tui_history"

#: While the daemon answers, it is pinged this often; while it does not, the polls
#: start at the first delay and double up to the second.
_HEARTBEAT: Final = 1.0
_RETRY: Final = (0.1, 2.0)
#: The most of the line being written shown above the prompt (its end).
_PARTIAL: Final = 400


def context_bar(used: int, window: int, width: int = 30) -> str:
    share = min(1.0, used / window) if window else 0.0
    filled = round(share * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {used:,} / {window:,} tokens ({share:.0%})"


@attrs.define
class _Screen:
    """What the prompt shows besides the input: the reply line being written, and the toolbar.

    Trio sets the fields; the prompt thread reads them when it redraws.
    """

    agent: str
    session: str = ""
    context: str = ""
    status: str = "connected"
    partial: str = ""
    replying: bool = False
    hint: str = ""
    app: Any = None
    #: Set when the TUI ends for a reason of its own: the prompt leaves at once.
    closing: bool = False
    #: Set by the prompt thread when it has left (and given the terminal back).
    left: threading.Event = attrs.field(factory=threading.Event)

    def refresh(self) -> None:
        app = self.app
        if app is not None:
            app.invalidate()

    def message(self) -> FormattedText:
        parts: list[tuple[str, str]] = []
        if self.partial:
            parts += [("bold fg:ansigreen", f"{self.agent}> "), ("", self.partial[-_PARTIAL:] + "\n")]
        elif self.replying:
            parts += [("fg:ansigray", f"{self.agent} is writing...\n")]
        return FormattedText([*parts, ("bold fg:ansiblue", "you> ")])

    def toolbar(self) -> FormattedText:
        bits = [f" {self.agent}", f"session {self.session[:12]}" if self.session else "", self.context, self.status]
        text = "  ·  ".join(bit for bit in bits if bit)
        if self.hint:
            text += f"  ·  {self.hint}"
        return FormattedText([("", text)])


class _Commands(Completer):
    """Tab completion of the /commands, on a line that starts with ``/``."""

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        for command, meaning in COMMANDS.items():
            if command.startswith(text):
                yield Completion(command, start_position=-len(text), display_meta=meaning)


class _ScrubbedHistory(FileHistory):
    """The lines typed, kept across runs: scrubbed first (a pasted key is not kept), in a 0600 file."""

    def __init__(self, path: Path) -> None:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
        super().__init__(str(path))

    def store_string(self, string: str) -> None:
        super().store_string(obs.scrub(string))


#: How long after a Ctrl-C a second one leaves (later, it counts as a first again).
_ARMED_SECONDS: Final = 3.0


@attrs.define
class _Keys:
    """Ctrl-C: stop the reply being written; else clear the line; twice within a few
    seconds, on an empty line, leave."""

    screen: _Screen
    post: Any  # (event, *args) -> None, into the Trio side
    _armed_at: float | None = None

    def bindings(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("c-c")
        def _(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            armed = self._armed_at is not None and time.monotonic() - self._armed_at < _ARMED_SECONDS
            if armed and not buffer.text:
                event.app.exit(result=_LEAVE)
                return
            if self.screen.replying:
                self.post("interrupt")
            elif buffer.text:
                buffer.reset()
            self._armed_at = time.monotonic()
            self.screen.hint = "Ctrl-C again (or Ctrl-D) leaves"
            self.screen.refresh()
            app = event.app
            if app.loop is not None:
                app.loop.call_later(_ARMED_SECONDS, self._expire, app)

        return keys

    def _expire(self, app: Any) -> None:
        if self._armed_at is not None and time.monotonic() - self._armed_at >= _ARMED_SECONDS - 0.05:
            self.disarm()
            app.invalidate()

    def disarm(self) -> None:
        if self._armed_at is not None:
            self._armed_at = None
            self.screen.hint = ""


_LEAVE: Final = object()


def _prompt_thread(screen: _Screen, post: Any, history: Path | None) -> None:
    """Read lines until the user leaves; each goes to Trio as ``("line", text)``.

    Runs in a worker thread (prompt_toolkit makes an asyncio loop of its own there).
    """
    keys = _Keys(screen, post)
    session: PromptSession[Any] = PromptSession(
        screen.message,
        bottom_toolbar=screen.toolbar,
        completer=_Commands(),
        complete_while_typing=False,
        history=_ScrubbedHistory(history) if history is not None else None,
        key_bindings=keys.bindings(),
        refresh_interval=0.5,
    )
    screen.app = session.app
    session.default_buffer.on_text_changed += lambda _: keys.disarm()

    def leave_if_closing() -> None:
        if screen.closing:
            session.app.exit(result=_LEAVE)

    try:
        with patch_stdout(raw=True):
            while not screen.closing:
                try:
                    line = session.prompt(handle_sigint=False, pre_run=leave_if_closing)
                except EOFError:  # Ctrl-D on an empty line
                    post("leave", 0)
                    return
                keys.disarm()
                if line is _LEAVE:
                    post("leave", 130)
                    return
                post("line", line)
    finally:
        screen.left.set()


@attrs.define
class _Link:
    """Whether the daemon answers, watched by polling its control socket.

    A failed request calls `lost`; `watch` pings while the daemon is up, polls with a
    back-off while it is down, and says each change in one line.
    """

    console: Console
    screen: _Screen
    up: bool = True
    _wake: trio.Event = attrs.field(factory=trio.Event)

    def lost(self) -> None:
        if self.up:
            self.up = False
            self.screen.status = "daemon down: reconnecting..."
            self.screen.refresh()
            self.console.print("[yellow]The daemon stopped; reconnecting when it is back...[/]")
            self._wake.set()

    async def watch(self, reconnected: Any) -> None:
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
    screen: _Screen
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


class _Chat:
    def __init__(self, args: argparse.Namespace, console: Console, screen: _Screen, link: _Link) -> None:
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


def _in_process_tree(args: argparse.Namespace) -> sv.Supervisor:
    """The tree of a daemon for this TUI (outside the nursery: a bad configuration is one plain error)."""
    config = beamclaw.load_config(args.config)
    path = Path(args.config).absolute() if args.config else None
    try:
        return beamclaw.build_tree(config, beamclaw.data_dir(create=True), path)
    except ValueError as exc:  # an app's table, as `beamclaw run` reports it
        raise beamclaw.ConfigError(str(exc)) from None


async def tui(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    screen = _Screen(args.agent)
    link = _Link(console, screen)
    chat = _Chat(args, console, screen, link)
    tree = None if await running() else _in_process_tree(args)
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
                    await nursery.start(_in_process_daemon, tree, nursery.cancel_scope)
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
                nursery.start_soon(_follow, chat.who["user"], console)
                nursery.start_soon(
                    lambda: trio.to_thread.run_sync(_prompt_thread, screen, post, history, abandon_on_cancel=True)
                )
                outcome.append(await _serve(events, chat, nursery))
                nursery.cancel_scope.cancel()
        except* _DaemonGaveUp:
            outcome.append(1)
        finally:
            await _leave_prompt(screen)
    console.print("[dim]bye[/]")
    return outcome[0] if outcome else 0


async def _follow(user: str, console: Console) -> None:
    """Print what is delivered to *user* without a message of theirs (a scheduled job's
    reply), for as long as the TUI runs; the daemon being away is waited out."""
    while True:
        with contextlib.suppress(NoDaemon, OSError):
            async for message in request({"cmd": "follow", "user": user}):
                if message.get("type") == "message":
                    console.print(Text.assemble(("scheduled> ", "bold magenta"), str(message["text"])))
        await trio.sleep(_RETRY[1])


async def _signals(interrupts: Any, send: trio.MemorySendChannel[tuple[Any, ...]]) -> None:
    """A SIGINT (Ctrl-C while the prompt is not reading keys) counts as the Ctrl-C key."""
    async with send:
        async for _ in interrupts:
            await send.send(("interrupt",))


async def _serve(events: trio.MemoryReceiveChannel[tuple[Any, ...]], chat: _Chat, nursery: trio.Nursery) -> int:
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


async def _leave_prompt(screen: _Screen) -> None:
    """Make the prompt leave (the TUI may be ending for another reason) and wait, shortly,
    until it has: it gives the terminal back as it goes."""
    screen.closing = True
    app = screen.app
    if app is not None and app.loop is not None and not app.loop.is_closed():
        app.loop.call_soon_threadsafe(lambda: app.exit(result=_LEAVE) if app.is_running else None)
    if screen.app is not None:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(screen.left.wait, 5.0)
