"""``beamclaw`` commands. Each command is one small function; `main` dispatches."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

import beamclaw
import supervision as sv

from . import _agents, _daemon_commands, _pairing_commands, _sandbox_commands, _skills_commands
from ._control_client import ControlError, NoDaemon
from ._doctor import doctor
from ._stderr_log import log_to_stderr
from ._tui import tui
from ._who import add_who

_DAEMON_COMMANDS: dict[str, Callable[[argparse.Namespace], Awaitable[int]]] = {
    "chat": _daemon_commands.chat,
    "history": _daemon_commands.history,
    "tree": _daemon_commands.tree,
    "status": _daemon_commands.status,
    "stop": _daemon_commands.stop,
    "kill": _daemon_commands.kill,
    "tui": tui,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beamclaw",
        description="A fault-tolerant, security-conscious AI agent gateway and MCP host.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="start the daemon and serve until Ctrl-C")
    run.add_argument("--config", metavar="PATH", help="configuration file (default: the project's config.toml)")
    tui_parser = commands.add_parser("tui", help="chat in the terminal (starts a daemon in-process if none runs)")
    add_who(tui_parser)
    tui_parser.add_argument("--config", metavar="PATH", help="configuration for an in-process daemon")
    chat = commands.add_parser("chat", help="send one message to an agent of the running daemon")
    chat.add_argument("message", help="what to say")
    add_who(chat)
    add_who(commands.add_parser("history", help="print a conversation of the running daemon"))
    tree = commands.add_parser("tree", help="draw the running daemon's supervision tree")
    tree.add_argument("--watch", action="store_true", help="redraw it live until Ctrl-C")
    tree.add_argument("--json", action="store_true", help="print it as JSON")
    tree.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    commands.add_parser("status", help="is the daemon running, and how are its apps")
    commands.add_parser("stop", help="stop the running daemon (as SIGTERM would)")
    kill = commands.add_parser("kill", help="crash one process on purpose, to watch it restart")
    kill.add_argument("path", help="child ids from the root, e.g. core/sessions_sup/<session>/loop (prefixes do)")
    _agents.add_parser(commands)
    _skills_commands.add_parser(commands)
    _pairing_commands.add_parser(commands)
    _sandbox_commands.add_parser(commands)
    doctor_parser = commands.add_parser("doctor", help="check the configuration, data dir, keys and Docker")
    doctor_parser.add_argument("--config", metavar="PATH", help="configuration file")
    commands.add_parser("version", help="print the version")
    commands.add_parser("help", help="show this help")
    return parser


def _run(args: argparse.Namespace) -> int:
    try:
        log_to_stderr(os.environ.get("BEAMCLAW_LOG_LEVEL", "INFO"))
        config = beamclaw.load_config(args.config)
        beamclaw.run_daemon(config)
    except (beamclaw.ConfigError, ValueError) as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 2
    except (sv.StartError, sv.MaxIntensity) as exc:
        # run_daemon notes which app and child, and why; the traceback is in the log file.
        notes = getattr(exc, "__notes__", None)
        print(f"beamclaw: {notes[-1] if notes else exc}", file=sys.stderr)
        return 1
    return 0


def _only(group: BaseExceptionGroup[Any], kind: type[BaseException]) -> bool:
    """Whether every exception in *group* is a *kind* (Trio wraps what crosses a nursery)."""
    return group.split(kind)[1] is None


def _daemon_command(args: argparse.Namespace) -> int:
    try:
        return trio.run(_DAEMON_COMMANDS[args.command], args)
    except NoDaemon as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 3
    except ControlError as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:
        if _only(group, KeyboardInterrupt):
            return 130
        raise


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # stdout is not a file descriptor (captured): nothing will flush to the pipe
    finally:
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit status.

    A reader that stops early (``beamclaw status | head -1``) ends the command quietly
    with status 1, as Python's documentation advises and rich (``tree``) does: Python
    ignores SIGPIPE, so the write raises BrokenPipeError, here or at the last flush.
    SIGPIPE is not restored to its default, because this process may be the daemon,
    which a socket must never kill.
    """
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # inside the try: a reader that has gone is found here, not at exit
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except BaseExceptionGroup as group:
        if not _only(group, BrokenPipeError):
            raise
        _silence_stdout()
        return 1
    except beamclaw.ConfigError as exc:  # the data dir, for any command
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 2
    return code


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    match args.command:
        case "run":
            return _run(args)
        case command if command in _DAEMON_COMMANDS:
            return _daemon_command(args)
        case "agent":
            return _agents.run(args)
        case "skills":
            return _skills_commands.run(args)
        case "pair":
            return _pairing_commands.run(args)
        case "sandbox":
            return _sandbox_commands.run(args)
        case "doctor":
            return doctor(args)
        case "version":
            print(f"beamclaw {beamclaw.__version__}")
            return 0
    parser.print_help()
    return 0 if args.command == "help" else 2
