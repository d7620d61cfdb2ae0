"""Commands that talk with the agents through the daemon's API: chat, history, sessions, approve.

Each is a client of the management API's session and chat routes over the owner-only
socket (`_api_client`): a conversation is named by its id (a unique prefix will do), or
by the user and agent it is between (``POST /v1/sessions`` finds its id).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import attrs

from . import _api_client as api
from ._identity import user_id
from ._listing import Column, print_json, print_table
from ._terminal_safe import as_text, console

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status


#: The code the API answers an approval with when the conversation waits for none.
NOTHING_WAITS: Final = "nothing_waits"


def session_path(session: str, *rest: str) -> str:
    """The API path of a conversation (and of what is below it): its id quoted, whatever was typed."""
    return "/".join(["/v1/sessions", quote(session, safe=""), *rest])


async def open_session(who: dict[str, str]) -> dict[str, Any]:
    """The conversation of ``who["user"]`` with ``who["agent"]`` (started if need be)."""
    session: dict[str, Any] = (await api.call("POST", "/v1/sessions", json=who))["session"]
    return session


async def forget(session: str) -> int:
    """Forget the conversation (``/new``): how many messages were dropped."""
    dropped: int = (await api.call("DELETE", session_path(session), json={}))["dropped"]
    return dropped


async def stop(session: str) -> bool:
    """Stop the turn being worked on (``/stop``): whether there was one."""
    stopped: bool = (await api.call("POST", session_path(session, "stop"), json={}))["stopped"]
    return stopped


@attrs.define
class _Waiting:
    """Until the reply starts: a spinner in a terminal, saying why a wait is long (a retry of
    the model); into a pipe, each such note as a line on stderr."""

    console: Console
    _status: Status | None = None

    def start(self) -> None:
        if self.console.is_terminal:
            self._status = self.console.status("waiting for the agent...", spinner="dots")
            self._status.start()

    def note(self, text: str) -> None:
        if self._status is not None:
            self._status.update(as_text(f"waiting for the agent: {text}"))
        else:
            print(f"beamclaw: {text}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


async def stream_reply(body: dict[str, Any], out: Console) -> bool:
    """Print the reply to a ``POST /v1/chat`` of *body* as it grows; approval questions and
    other messages go on their own lines. Return whether it was ok."""
    shown = ""
    waiting = _Waiting(out)
    waiting.start()
    try:
        async for kind, data in api.events("POST", "/v1/chat", json=body):
            if kind == "progress":
                waiting.note(str(data["text"]))
                continue
            if kind in {"typing", "tool_started", "tool_finished"}:
                continue  # the reply tells what the tools did
            waiting.stop()
            if kind in {"draft", "final"}:
                text = str(data["text"])
                if not text.startswith(shown):
                    out.print()
                    shown = ""
                out.print(as_text(text[len(shown) :]), end="")
                shown = text
            elif kind in {"message", "approval"}:
                text = str(data["question"] if kind == "approval" else data["text"])
                out.print(as_text(("\n" if shown else "") + text))
                shown = ""
            elif kind == "reply":
                if not shown:
                    out.print(as_text(data["text"]), end="")
                out.print()
                return bool(data["ok"])
    finally:
        waiting.stop()
    return False


async def chat(args: argparse.Namespace) -> int:
    """One message; ``/new`` and ``/stop`` act on the conversation, as in the TUI and Telegram."""
    who = {"user": user_id(args), "agent": args.agent}
    command = args.message.strip().lower()
    if command == "/new":
        dropped = await forget((await open_session(who))["id"])
        print(f"new conversation ({dropped} messages forgotten)")
        return 0
    if command == "/stop":
        stopped = await stop((await open_session(who))["id"])
        print("stopped the turn being worked on" if stopped else "nothing to stop")
        return 0
    return 0 if await stream_reply({**who, "text": args.message}, console()) else 1


async def history(args: argparse.Namespace) -> int:
    session = args.session or (await open_session({"user": user_id(args), "agent": args.agent}))["id"]
    answer = await api.call("GET", session_path(session, "history"))
    found, messages = answer["session"], answer["messages"]
    print(f"session {found['id'][:12]}  {found['user_id']} → {found['agent_id']}")
    if not messages:
        print("no messages yet: a new conversation (after /new, or never used)")
    for item in messages:
        if item.get("content"):
            print(f"{item['role']}: {item['content']}")
        for call in item.get("tool_calls") or []:
            print(f"{item['role']}: [calls {call['function']['name']} {call['function']['arguments']}]")
    return 0


def _ago(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit} ago"
    raise AssertionError("unreachable")  # pragma: no cover


async def sessions(args: argparse.Namespace) -> int:
    """The conversations; a terminal shows each id's first characters (which every command
    takes), a pipe and ``--json`` the whole id."""
    answer = await api.call("GET", "/v1/sessions", params={"limit": 1_000_000 if args.all else 20}, raw=args.json)
    rows, total = answer["sessions"], answer["total"]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print('no conversations yet: `beamclaw chat "hi"` or `beamclaw tui` starts one')
        return 0
    shown = 12 if sys.stdout.isatty() else None
    now = time.time()
    print_table(
        [Column("ID", whole=True), Column("USER", whole=True), Column("AGENT", whole=True), Column("CHANNEL"),
         Column("MESSAGES", right=True), Column("LAST ACTIVITY"), Column("CONTEXT", right=True), Column("STATE")],
        [(row["id"][:shown], row["user_id"], row["agent_id"], row["channel"] or "-", row["messages"],
          _ago(now - row["last_active"]), _share(row["context_used"], row["context_window"]),
          "running" if row["running"] else "sleeping") for row in rows],
    )  # fmt: skip
    if total > len(rows):
        print(f"... and {total - len(rows)} more (--all lists every one)")
    return 0


def _share(used: int, window: int) -> str:
    return f"{min(1.0, used / window):.0%}" if window else "-"


async def approve(args: argparse.Namespace) -> int:
    try:
        answer = await api.call("POST", session_path(args.session, "approval"), json={"answer": args.answer})
    except api.ApiError as exc:
        if exc.code != NOTHING_WAITS:
            raise
        print("beamclaw: that conversation is not waiting for an approval", file=sys.stderr)
        return 1
    print(f"answered {answer['answer']}")
    return 0
