"""``beamclaw`` commands. Each command is one small function; `main` dispatches."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from loguru import logger

import beamclaw

from ._control_client import NoDaemon, request


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beamclaw",
        description="A fault-tolerant, security-conscious AI agent gateway and MCP host.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="start the daemon and serve until Ctrl-C")
    run.add_argument("--config", metavar="PATH", help="configuration file (default: the project's config.toml)")
    chat = commands.add_parser("chat", help="send one message to an agent of the running daemon")
    chat.add_argument("message", help="what to say")
    _who(chat)
    history = commands.add_parser("history", help="print a conversation of the running daemon")
    _who(history)
    commands.add_parser("version", help="print the version")
    commands.add_parser("help", help="show this help")
    return parser


def _who(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default="default", help="the agent (default: default)")
    parser.add_argument("--user", default=None, help="the user id (default: local:$BEAMCLAW_USER or local:$USER)")


def _user(args: argparse.Namespace) -> str:
    if args.user:
        return str(args.user)
    return "local:" + (os.environ.get("BEAMCLAW_USER") or os.environ.get("USER") or "user")


def _chat(args: argparse.Namespace) -> int:
    """Stream the reply as it grows; approval questions and errors go on their own lines."""
    shown = ""
    for message in request({"cmd": "chat", "user": _user(args), "agent": args.agent, "text": args.message}):
        kind = message.get("type")
        if kind in {"draft", "final"}:
            text = message["text"]
            if not text.startswith(shown):
                print()
                shown = ""
            print(text[len(shown) :], end="", flush=True)
            shown = text
        elif kind == "message":
            print(("\n" if shown else "") + message["text"], flush=True)
            shown = ""
        elif kind == "reply":
            if not shown:
                print(message["text"], end="")
            print()
            return 0 if message["ok"] else 1
        elif kind == "error":
            print(f"beamclaw: {message['error']}", file=sys.stderr)
            return 1
    return 1


def _history(args: argparse.Namespace) -> int:
    for message in request({"cmd": "history", "user": _user(args), "agent": args.agent}):
        if message.get("type") == "error":
            print(f"beamclaw: {message['error']}", file=sys.stderr)
            return 1
        for item in message.get("messages", []):
            if item.get("content"):
                print(f"{item['role']}: {item['content']}")
            for call in item.get("tool_calls") or []:
                print(f"{item['role']}: [calls {call['function']['name']} {call['function']['arguments']}]")
    return 0


def _run(args: argparse.Namespace) -> int:
    logger.remove()
    logger.add(sys.stderr, level=os.environ.get("BEAMCLAW_LOG_LEVEL", "INFO"))
    try:
        config = beamclaw.load_config(args.config)
        beamclaw.run_daemon(config)
    except (beamclaw.ConfigError, ValueError) as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    try:
        if args.command == "chat":
            return _chat(args)
        if args.command == "history":
            return _history(args)
    except NoDaemon as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 3
    if args.command == "version":
        print(f"beamclaw {beamclaw.__version__}")
        return 0
    parser.print_help()
    return 0 if args.command == "help" else 2
