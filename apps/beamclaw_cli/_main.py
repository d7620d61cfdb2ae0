"""``beamclaw`` commands. Each command is one small function; `main` dispatches."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import beamclaw

from . import (
    _agents,
    _background,
    _cluster_commands,
    _daemon_commands,
    _mcp_commands,
    _memory_commands,
    _pairing_commands,
    _sandbox_commands,
    _scheduler_commands,
    _session_commands,
    _skills_commands,
)
from ._api_client import ApiError, NoDaemon
from ._doctor import doctor
from ._help import add_command
from ._identity import InvalidUser, add_identity_options
from ._listing import add_json_option

if TYPE_CHECKING:
    pass


async def _tui(args: argparse.Namespace) -> int:
    """`beamclaw tui`, with prompt_toolkit (and the in-process daemon's apps) imported for it alone."""
    from ._tui import tui

    return await tui(args)


_DAEMON_COMMANDS: dict[str, Callable[[argparse.Namespace], Awaitable[int]]] = {
    "chat": _session_commands.chat,
    "history": _session_commands.history,
    "tree": _daemon_commands.tree,
    "kill": _daemon_commands.kill,
    "sessions": _session_commands.sessions,
    "reload": _daemon_commands.reload,
    "approve": _session_commands.approve,
    "tui": _tui,
}


def _remote_console(args: argparse.Namespace) -> int:
    """`beamclaw remote_console`, with prompt_toolkit imported for it alone."""
    from ._remote_console import remote_console

    return remote_console(args)


#: Commands that run no event loop of their own here (`status` asks with a blocking client),
#: or run one themselves.
_SYNC_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "start": _background.start,
    "stop": _background.stop,
    "restart": _background.restart,
    "version": _background.version,
    "status": _daemon_commands.status,
    "remote_console": _remote_console,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beamclaw",
        description="A fault-tolerant, security-conscious AI agent gateway and MCP host.",
        epilog="`beamclaw help COMMAND` (or `beamclaw COMMAND --help`) tells more about each.",
    )
    parser.add_argument("--version", action="version", version=f"beamclaw {beamclaw.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = add_command(
        commands,
        "run",
        "start the daemon and serve until Ctrl-C",
        "Start every enabled app under one supervisor and serve until Ctrl-C, SIGTERM or "
        "`beamclaw stop`. SIGHUP (or `beamclaw reload`) re-reads the configuration.",
        ["python -m beamclaw run", "python -m beamclaw run --config my.toml"],
    )
    run.add_argument("--config", metavar="PATH", help="configuration file (default: the project's config.toml)")
    tui_parser = add_command(
        commands,
        "tui",
        "chat in the terminal (starts a daemon in-process if none runs)",
        "Chat with an agent: arrow keys edit, Up and Down recall earlier lines, Tab completes "
        "/commands. Ctrl-C stops the reply being written; Ctrl-C twice, or Ctrl-D, leaves.",
        ["beamclaw tui", "beamclaw tui --agent ops", "beamclaw tui --config my.toml   # no daemon running"],
    )
    add_identity_options(tui_parser)
    tui_parser.add_argument("--config", metavar="PATH", help="configuration for an in-process daemon")
    chat = add_command(
        commands,
        "chat",
        "send one message to an agent of the running daemon",
        "Send one message and print the reply as it is written. `/yes`, `/no` and "
        "`/always` answer a tool approval the agent is waiting for.",
        ['beamclaw chat "what is in my notes?"', "beamclaw chat /yes", 'beamclaw chat --agent ops "status?"'],
    )
    chat.add_argument("message", help="what to say")
    add_identity_options(chat)
    history = add_command(
        commands,
        "history",
        "print a conversation of the running daemon",
        "Print your conversation with an agent, or any conversation `beamclaw sessions` lists.",
        ["beamclaw history", "beamclaw history --agent ops", "beamclaw history 3f9a1c2b"],
    )
    history.add_argument("session", nargs="?", help="a session id (or its first characters) from `beamclaw sessions`")
    add_identity_options(history)
    sessions = add_command(
        commands,
        "sessions",
        "list the conversations: id, user, agent, channel, messages, last activity",
        "List the stored conversations, the ones used last first. The id (its first characters "
        "will do) is what `history` and `kill` take.",
        ["beamclaw sessions", "beamclaw sessions --all", "beamclaw history 3f9a1c2b"],
    )
    sessions.add_argument("--all", action="store_true", help="every conversation, not only the last 20")
    add_json_option(sessions)
    tree = add_command(
        commands,
        "tree",
        "draw the running daemon's supervision tree",
        "Draw every process of the running daemon: id, pid, kind, restart type, state, "
        "restarts, uptime and mailbox; conversations show their user, agent and channel.",
        ["beamclaw tree", "beamclaw tree --watch", "beamclaw tree --json | jq '.children[].id'",
         "beamclaw tree --cluster"],
    )  # fmt: skip
    tree.add_argument("--watch", action="store_true", help="redraw it live until Ctrl-C")
    tree.add_argument(
        "--cluster", action="store_true", help="every node's tree: the nodes from the database, each asked over HTTP"
    )
    tree.add_argument("--config", metavar="PATH", help="configuration file (with --cluster)")
    tree.add_argument("--json", action="store_true", help="print it as JSON")
    tree.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    add_command(
        commands,
        "status",
        "is the daemon running, and how are its apps",
        "Say whether a daemon runs, since when, with which configuration, and the state of each app.",
        ["beamclaw status"],
    )
    add_command(
        commands,
        "reload",
        "re-read the configuration and secrets, keeping every conversation",
        "Make the running daemon re-read its configuration file, with the values of the "
        "environment variables it names taken from this shell (so `export KEY=...` then "
        "`beamclaw reload` is enough). Conversations go on; an app whose table changed restarts.",
        ["export OPENROUTER_API_KEY=sk-or-...; beamclaw reload", "kill -HUP $(pgrep -f 'beamclaw run')"],
    )
    kill = add_command(
        commands,
        "kill",
        "crash one process on purpose, to watch it restart",
        "Crash one process of the running daemon with an error, as a bug would, and let its "
        "supervisor restart it. The path is child ids from the root (prefixes do), or a session "
        "id from `beamclaw sessions` followed by /loop or /session.",
        ["beamclaw kill 3f9a1c2b/loop", "beamclaw kill core/sessions_sup/3f9a1c2b/loop", "beamclaw kill gateway/http"],
    )
    kill.add_argument("path", help="child ids from the root, or SESSION/loop (prefixes do)")
    approve = add_command(
        commands,
        "approve",
        "answer a tool approval a conversation waits for, whichever channel asked",
        "Answer, as the owner, the approval a conversation is waiting for, whichever channel "
        "asked (Telegram, the HTTP API, an MCP host). A `/yes` sent as a message approves only "
        "through the channel that asked; this is the owner's explicit answer.",
        ["beamclaw approve 3f9a1c2b yes", "beamclaw approve 3f9a1c2b no"],
    )
    approve.add_argument("session", help="a session id (or its first characters) from `beamclaw sessions`")
    approve.add_argument("answer", choices=["yes", "no", "always"], help="the answer")
    _background.add_parsers(commands)
    add_command(
        commands,
        "remote_console",
        "an operator's console in the running daemon: processes, mailboxes, send",
        "Attach a console to the running daemon, as Erlang's remote shell: list its processes "
        "(ps, tree, names), look into one (its state and queued messages: info), send a message "
        "to a registered name (send). The daemon goes on when you leave. It reads commands from "
        "stdin when that is not a terminal.",
        ["beamclaw remote_console", "echo 'info beamclaw_core.sessions' | beamclaw remote_console"],
    )
    _agents.add_parser(commands)
    _skills_commands.add_parser(commands)
    _pairing_commands.add_parser(commands)
    _sandbox_commands.add_parser(commands)
    _mcp_commands.add_parser(commands)
    _scheduler_commands.add_parser(commands)
    _memory_commands.add_parser(commands)
    _cluster_commands.add_parser(commands)
    doctor_parser = add_command(
        commands,
        "doctor",
        "check what will run: configuration, model, channels, port, jail, Docker, embedder",
        "Check what the daemon will actually use (the running daemon's configuration when one "
        "runs): the configuration, the data dir, the model answering, each enabled channel, the "
        "port, the jail, Docker when used, and the memory's embedder. Each problem comes with its fix.",
        ["beamclaw doctor", "beamclaw doctor --config my.toml"],
    )
    doctor_parser.add_argument("--config", metavar="PATH", help="configuration file (default: the daemon's)")
    help_parser = add_command(
        commands,
        "help",
        "show the help of BeamClaw or of one command",
        "Show the list of commands, or what one command does.",
        ["beamclaw help", "beamclaw help tree", "beamclaw help agent create"],
    )
    help_parser.add_argument("topic", nargs="*", help="a command (and action)")
    return parser  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    """`beamclaw run`: the daemon, the one command that imports every app."""
    import beamclaw_core as core
    import supervision as sv

    from ._stderr_log import log_to_stderr

    try:
        log_to_stderr(os.environ.get("BEAMCLAW_LOG_LEVEL", "INFO"))
        config = beamclaw.load_config(args.config)
        core.canonical_user()  # a bad BEAMCLAW_USER fails here, not at a paired user's message
        beamclaw.run_daemon(config, Path(args.config).absolute() if args.config else None)
    except (beamclaw.ConfigError, ValueError) as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 2
    except beamclaw.AlreadyRunning as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 1
    except (sv.StartError, sv.MaxIntensity) as exc:
        # run_daemon notes which app and child, and why; the traceback is in the log file.
        notes = getattr(exc, "__notes__", None)
        print(f"beamclaw: {notes[-1] if notes else exc}", file=sys.stderr)
        return 1
    return 0


def _only(group: BaseExceptionGroup[Any], kind: type[BaseException]) -> bool:
    """Whether every exception in *group* is a *kind* (Trio wraps what crosses a nursery)."""
    return group.split(kind)[1] is None


def _in_trio(command: Callable[[argparse.Namespace], Awaitable[int]], args: argparse.Namespace) -> int:
    import trio

    return trio.run(command, args)


def _daemon_command(args: argparse.Namespace, run: Callable[[argparse.Namespace], int] | None = None) -> int:
    """A command that talks to the daemon; its failures to reach it are one line each."""
    beamclaw.data_dir()  # one that cannot be the data dir is said as such, not as "no daemon"
    try:
        return run(args) if run is not None else _in_trio(_DAEMON_COMMANDS[args.command], args)
    except NoDaemon as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 3
    except beamclaw.AlreadyRunning as exc:  # the TUI's own daemon, beside one starting up
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 1
    except (ApiError, InvalidUser) as exc:
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
        case "cluster":
            return _cluster_commands.run(args)
        case "mcp":
            return _daemon_command(args, _mcp_commands.run_command)
        case "scheduler":
            return _daemon_command(args, _scheduler_commands.run_command)
        case "memory":
            return _daemon_command(args, _memory_commands.run_command)
        case "doctor":
            return doctor(args)
        case "start" | "stop" | "restart" | "version" | "status" | "remote_console":
            return _daemon_command(args, _SYNC_COMMANDS[args.command])
        case "help" if args.topic:
            try:
                return _dispatch([*args.topic, "--help"])
            except SystemExit as exc:  # argparse exits once it has printed the help (or an error)
                return int(exc.code or 0)
    parser.print_help()
    return 0 if args.command == "help" else 2
