"""The terminal bridge: prompt_toolkit's input line in a thread, Trio on the other side.

prompt_toolkit runs on asyncio and BeamClaw on Trio, so the prompt runs in a worker
thread with an asyncio loop of its own (`run_prompt`). Lines and keys go to Trio through
*post* (a memory channel's send, called from the thread); Trio changes what the screen
shows through `Screen`, whose redraw (`Application.invalidate`) is thread-safe, and
prints through prompt_toolkit's patched stdout, which writes above the prompt.

The input line: arrow keys, Home/End and Ctrl-W edit it; Up and Down (and Ctrl-R)
recall earlier lines, kept across runs in a scrubbed 0600 file; Tab completes the
/commands. Ctrl-C stops the reply being written; with nothing being written it clears
the line, and a second Ctrl-C within three seconds leaves (status 130), as Ctrl-D on an
empty line does (0).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout

#: What the prompt thread sends to Trio: ``("line", text)``, ``("interrupt",)``,
#: ``("leave", status)``.
Post = Callable[..., None]

#: The most of the line being written shown above the prompt (its end).
_PARTIAL: Final = 400


@attrs.define
class Screen:
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
    """Tab completion of the /commands (each with what it does), on a line that starts with ``/``."""

    def __init__(self, commands: Mapping[str, str]) -> None:
        self._commands = commands

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        for command, meaning in self._commands.items():
            if command.startswith(text):
                yield Completion(command, start_position=-len(text), display_meta=meaning)


class _ScrubbedHistory(FileHistory):
    """The lines typed, kept across runs: scrubbed first (a pasted key is not kept), in a 0600 file."""

    def __init__(self, path: Path) -> None:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
        super().__init__(str(path))

    def store_string(self, string: str) -> None:
        import beamclaw_obs as obs

        super().store_string(obs.scrub(string))


#: How long after a Ctrl-C a second one leaves (later, it counts as a first again).
_ARMED_SECONDS: Final = 3.0


@attrs.define
class _Keys:
    """Ctrl-C: stop the reply being written; else clear the line; twice within a few
    seconds, on an empty line, leave."""

    screen: Screen
    post: Post
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


def run_prompt(screen: Screen, post: Post, history: Path | None, commands: Mapping[str, str]) -> None:
    """Read lines until the user leaves; each goes to Trio as ``("line", text)``.

    Runs in a worker thread (prompt_toolkit makes an asyncio loop of its own there).
    """
    keys = _Keys(screen, post)
    session: PromptSession[Any] = PromptSession(
        screen.message,
        bottom_toolbar=screen.toolbar,
        completer=_Commands(commands),
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


async def leave_prompt(screen: Screen) -> None:
    """Make the prompt leave (the TUI may be ending for another reason) and wait, shortly,
    until it has: it gives the terminal back as it goes."""
    screen.closing = True
    app = screen.app
    if app is not None and app.loop is not None and not app.loop.is_closed():
        app.loop.call_soon_threadsafe(lambda: app.exit(result=_LEAVE) if app.is_running else None)
    if screen.app is not None:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(screen.left.wait, 5.0)
