"""Commands that talk to the running daemon: chat, history, tree, status, stop, kill."""

from __future__ import annotations

import argparse
import json

import trio
from rich.console import Console
from rich.live import Live

from ._control_client import ask, request, socket_path
from ._tree_view import render
from ._who import user_id


async def stream_reply(payload: dict[str, object], out: Console) -> bool:
    """Print a chat reply as it grows; approval questions go on their own lines. Return whether it was ok."""
    shown = ""
    async for message in request(payload):
        kind = message.get("type")
        if kind in {"draft", "final"}:
            text = str(message["text"])
            if not text.startswith(shown):
                out.print()
                shown = ""
            out.print(text[len(shown) :], end="", markup=False, highlight=False)
            shown = text
        elif kind == "message":
            out.print(("\n" if shown else "") + str(message["text"]), markup=False, highlight=False)
            shown = ""
        elif kind == "reply":
            if not shown:
                out.print(str(message["text"]), end="", markup=False, highlight=False)
            out.print()
            return bool(message["ok"])
        elif kind == "error":
            out.print(f"beamclaw: {message['error']}", style="red", markup=False)
            return False
    return False


async def chat(args: argparse.Namespace) -> int:
    payload = {"cmd": "chat", "user": user_id(args), "agent": args.agent, "text": args.message}
    return 0 if await stream_reply(payload, Console(highlight=False)) else 1


async def history(args: argparse.Namespace) -> int:
    answer = await ask({"cmd": "history", "user": user_id(args), "agent": args.agent})
    for item in answer.get("messages", []):
        if item.get("content"):
            print(f"{item['role']}: {item['content']}")
        for call in item.get("tool_calls") or []:
            print(f"{item['role']}: [calls {call['function']['name']} {call['function']['arguments']}]")
    return 0


async def tree(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps((await ask({"cmd": "tree"}))["tree"], indent=2))
        return 0
    console = Console()
    if not args.watch:
        console.print(render((await ask({"cmd": "tree"}))["tree"]))
        return 0
    with Live(console=console, refresh_per_second=4, screen=False) as live:
        while True:
            live.update(render((await ask({"cmd": "tree"}))["tree"]))
            await trio.sleep(args.interval)


async def status(args: argparse.Namespace) -> int:
    answer = await ask({"cmd": "status"})
    print(f"BeamClaw {answer['version']} running, pid {answer['pid']}, up {answer['uptime']:.0f} s")
    print(f"control socket: {socket_path()}")
    print(f"sessions running: {answer['sessions']}")
    for app in answer["apps"]:
        print(f"  {app['id']:<10} {app['state']:<10} restarts {app['restarts']}")
    return 0


async def stop(args: argparse.Namespace) -> int:
    await ask({"cmd": "stop"})
    with trio.move_on_after(60):
        while socket_path().exists():
            await trio.sleep(0.1)
        print("BeamClaw stopped")
        return 0
    print("beamclaw: the daemon is still stopping after 60 s")
    return 1


async def kill(args: argparse.Namespace) -> int:
    answer = await ask({"cmd": "kill", "path": args.path})
    print(f"killed {answer['path']} ({answer['pid']}); its supervisor restarts it: see `beamclaw tree`")
    return 0
