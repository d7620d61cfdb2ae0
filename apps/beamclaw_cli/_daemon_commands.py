"""Commands that talk to the running daemon: chat, history, tree, status, kill, approve."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import attrs
import trio
from rich.console import Console
from rich.live import Live
from rich.status import Status

from . import _api_client as api
from ._cluster_commands import cluster_tree
from ._control_client import ask, request
from ._identity import user_id
from ._listing import Column, print_json, print_table
from ._terminal_safe import as_text, console
from ._tree_view import render


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


async def stream_reply(payload: dict[str, object], out: Console) -> bool:
    """Print a chat reply as it grows; approval questions go on their own lines. Return whether it was ok."""
    shown = ""
    waiting = _Waiting(out)
    waiting.start()
    try:
        async for message in request(payload):
            kind = message.get("type")
            if kind == "progress":
                waiting.note(str(message["text"]))
                continue
            waiting.stop()
            if kind in {"draft", "final"}:
                text = str(message["text"])
                if not text.startswith(shown):
                    out.print()
                    shown = ""
                out.print(as_text(text[len(shown) :]), end="")
                shown = text
            elif kind == "message":
                out.print(as_text(("\n" if shown else "") + str(message["text"])))
                shown = ""
            elif kind == "reply":
                if not shown:
                    out.print(as_text(message["text"]), end="")
                out.print()
                return bool(message["ok"])
            elif kind == "error":
                out.print(as_text(f"beamclaw: {message['error']}", style="red"))
                return False
    finally:
        waiting.stop()
    return False


async def chat(args: argparse.Namespace) -> int:
    """One message; ``/new`` and ``/stop`` act on the conversation, as in the TUI and Telegram."""
    who = {"user": user_id(args), "agent": args.agent}
    command = args.message.strip().lower()
    if command == "/new":
        answer = await ask({"cmd": "reset", **who})
        print(f"new conversation ({answer['dropped']} messages forgotten)")
        return 0
    if command == "/stop":
        stopped = (await ask({"cmd": "interrupt", **who}))["stopped"]
        print("stopped the turn being worked on" if stopped else "nothing to stop")
        return 0
    payload = {"cmd": "chat", **who, "text": args.message}
    return 0 if await stream_reply(payload, console()) else 1


async def history(args: argparse.Namespace) -> int:
    who = {"session": args.session} if args.session else {"user": user_id(args), "agent": args.agent}
    answer = await ask({"cmd": "history", **who})
    session, messages = answer["session"], answer.get("messages", [])
    print(f"session {session['id'][:12]}  {session['user_id']} → {session['agent_id']}")
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
    answer = await ask({"cmd": "sessions", "limit": 1_000_000 if args.all else 20}, raw=args.json)
    rows, total = answer["sessions"], answer["total"]
    if args.json:
        print_json(answer["sessions"])
        return 0
    if not rows:
        print('no conversations yet: `beamclaw chat "hi"` or `beamclaw tui` starts one')
        return 0
    shown = 12 if sys.stdout.isatty() else None
    now = time.time()
    print_table(
        [Column("ID", whole=True), Column("USER", whole=True), Column("AGENT", whole=True), Column("CHANNEL"),
         Column("MESSAGES", right=True), Column("LAST ACTIVITY"), Column("STATE")],
        [(row["id"][:shown], row["user_id"], row["agent_id"], row["channel"] or "-", row["messages"],
          _ago(now - row["updated_at"]), "running" if row["running"] else "sleeping") for row in rows],
    )  # fmt: skip
    if total > len(rows):
        print(f"... and {total - len(rows)} more (--all lists every one)")
    return 0


async def tree(args: argparse.Namespace) -> int:
    if args.cluster:
        return await cluster_tree(args)
    if args.json:
        print(json.dumps(await api.call("GET", "/v1/supervision/tree"), indent=2))
        return 0
    out = console()
    if not args.watch:
        out.print(render(await api.call("GET", "/v1/supervision/tree")))
        return 0
    with Live(console=out, refresh_per_second=4, screen=False) as live:
        while True:
            live.update(render(await api.call("GET", "/v1/supervision/tree")))
            await trio.sleep(args.interval)


async def status(args: argparse.Namespace) -> int:
    answer = await api.call("GET", "/v1/status")
    print(f"BeamClaw {answer['version']} running, pid {answer['pid']}, up {_duration(answer['uptime'])}")
    print(f"configuration: {answer['config']}")
    print(f"model: {answer['model']}")
    if answer.get("gateway"):
        print(f"gateway: {answer['gateway']}")
    print(f"control socket: {api.socket_path()}")
    print(f"sessions running: {answer['sessions']}")
    for app in answer["apps"]:
        print(f"  {app['id']:<10} {app['state']:<10} restarts {app['restarts']}")
    return 0


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min {seconds % 60:02.0f} s"


async def kill(args: argparse.Namespace) -> int:
    answer = await api.call("POST", "/v1/supervision/kill", json={"path": args.path})
    print(f"killed {answer['path']} ({answer['pid']}); its supervisor restarts it: see `beamclaw tree`")
    return 0


async def approve(args: argparse.Namespace) -> int:
    answer = await ask({"cmd": "approve", "session": args.session, "answer": args.answer})
    if answer["answer"] == "none":
        print("beamclaw: that conversation is not waiting for an approval", file=sys.stderr)
        return 1
    print(f"answered {answer['answer']}")
    return 0


async def reload(args: argparse.Namespace) -> int:
    """Reload, sending the values this shell has for the variables the configuration names."""
    names = (await api.call("GET", "/v1/env-names", raw=True))["names"]
    env = {name: os.environ[name] for name in names if os.environ.get(name)}
    answer = await api.call("POST", "/v1/reload", json={"env": env})
    print(f"reloaded {answer['config_path']}")
    if answer["applied"]:
        print(f"  applied in place (conversations go on): {', '.join(answer['applied'])}")
    if answer["restarted"]:
        print(f"  restarted with their new settings: {', '.join(answer['restarted'])}")
    if not answer["applied"] and not answer["restarted"]:
        print("  no app's settings changed")
    if answer["from_client"]:
        print(f"  taken from this shell: {', '.join(answer['from_client'])}")
    return 0
