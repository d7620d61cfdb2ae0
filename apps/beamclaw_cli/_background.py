"""`beamclaw start | stop | restart | version`: the daemon in the background, as a service.

``start`` runs ``beamclaw run`` detached from the terminal (its own session, stdin
closed), its output appended to ``logs/daemon.log`` in the data dir and its pid in
``beamclaw.pid``, and returns once the daemon answers: ``/health`` on the gateway, or
the control socket when the gateway is off. Whether a daemon runs is told by the data
dir's lock (`beamclaw.daemon_pid`), never by the pid file alone: a pid file left by a
daemon killed with SIGKILL (or by a reboot) names a process that is gone, or another
process that now has its number; such a stale file is replaced, saying so.

``stop`` asks the daemon to stop as SIGTERM would (the apps stop in reverse order,
nothing stored is lost), sends SIGTERM itself when the control socket does not answer,
and after ``--timeout`` seconds kills it with SIGKILL, saying so: an operator's script
must be able to count on the daemon being gone when ``stop`` returns.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

import beamclaw

from ._api_client import ApiError, NoDaemon, call, running
from ._help import Commands, add_command

if TYPE_CHECKING:
    pass


PID_FILE: Final = "beamclaw.pid"
#: What the background daemon writes to its stdout and stderr (the obs app's own log is logs/beamclaw.log).
LOG_FILE: Final = Path("logs") / "daemon.log"
#: How long `start` waits for the daemon to answer, and `stop` for it to go, by default.
_DEFAULT_TIMEOUT: Final = 60.0
#: The lines of the log shown when the daemon fails to start.
_LOG_TAIL: Final = 15


def add_parsers(commands: Commands) -> None:
    start = add_command(
        commands,
        "start",
        "start the daemon in the background; return once it answers",
        "Start the daemon in the background (detached from this terminal): its output goes to "
        "logs/daemon.log in the data dir, its pid to beamclaw.pid. Return once /health answers "
        "(the control socket when the gateway is off); refuse if a daemon already runs.",
        ["beamclaw start", "beamclaw start --config my.toml", "beamclaw start && beamclaw status"],
    )
    restart = add_command(
        commands,
        "restart",
        "stop the running daemon, then start it again in the background",
        "Stop the running daemon (as `stop` does), then start it in the background (as `start` "
        "does) with the same configuration file, or the one --config names.",
        ["beamclaw restart", "beamclaw restart --config my.toml"],
    )
    for parser in (start, restart):
        parser.add_argument("--config", metavar="PATH", help="configuration file (default: the project's config.toml)")
    stop = add_command(
        commands,
        "stop",
        "stop the running daemon gracefully; kill it after --timeout",
        "Stop the running daemon gracefully: the apps stop in reverse order; nothing stored is lost. "
        "If it has not stopped after --timeout seconds, kill it (SIGKILL), saying so.",
        ["beamclaw stop", "beamclaw stop --timeout 10"],
    )
    for parser in (stop, restart):
        parser.add_argument(
            "--timeout", type=float, default=_DEFAULT_TIMEOUT, metavar="SECONDS",
            help=f"how long a graceful stop may take before SIGKILL (default {_DEFAULT_TIMEOUT:.0f})",
        )  # fmt: skip
    start.add_argument(
        "--timeout", type=float, default=_DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"how long to wait for the daemon to answer (default {_DEFAULT_TIMEOUT:.0f})",
    )  # fmt: skip
    add_command(
        commands,
        "version",
        "print the version (and the running daemon's)",
        "Print this BeamClaw's version and, when a daemon runs, its version and pid (after an "
        "upgrade, they differ until `beamclaw restart`).",
        ["beamclaw version"],
    )


def _fail(text: str, code: int = 1) -> int:
    print(f"beamclaw: {text}", file=sys.stderr)
    return code


def _health_url(config: dict[str, object]) -> str | None:
    """Where the gateway answers ``/health`` from this machine (a wildcard bind answers on loopback)."""
    url = beamclaw.describe(config)["gateway"]
    if url is None:
        return None
    for wildcard, loopback in (("//0.0.0.0:", "//127.0.0.1:"), ("//[::]:", "//[::1]:")):
        url = url.replace(wildcard, loopback)
    return f"{url}/health"


def _remove_stale_pid_file(home: Path) -> None:
    pid_file = home / PID_FILE
    if pid_file.exists():
        written = pid_file.read_text(errors="replace").strip()
        pid_file.unlink()
        print(f"beamclaw: removed a stale pid file ({pid_file}: pid {written or '?'} is not a running daemon)")


def start(args: argparse.Namespace) -> int:
    home = beamclaw.data_dir(create=True)
    pid = beamclaw.daemon_pid(home)
    if pid is not None:
        return _fail(f"a BeamClaw daemon is already running (pid {pid}); `beamclaw stop` or `beamclaw restart`")
    _remove_stale_pid_file(home)
    try:
        config = beamclaw.load_config(args.config)  # a bad file is told here, not in the log
    except (beamclaw.ConfigError, ValueError) as exc:
        return _fail(str(exc), 2)
    log = home / LOG_FILE
    log.parent.mkdir(mode=0o700, exist_ok=True)
    command = [sys.executable, "-m", "beamclaw", "run"]
    if args.config:
        command += ["--config", str(Path(args.config).absolute())]
    with log.open("ab") as sink:
        sink.write(f"--- beamclaw start, {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n".encode())
        sink.flush()
        daemon = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    (home / PID_FILE).write_text(f"{daemon.pid}\n")
    health = _health_url(config)
    deadline = time.monotonic() + args.timeout
    while not _answers(health):
        if daemon.poll() is not None:
            (home / PID_FILE).unlink(missing_ok=True)
            print(f"beamclaw: the daemon exited during start-up (status {daemon.returncode}); the end of {log}:")
            print("\n".join(log.read_text(errors="replace").splitlines()[-_LOG_TAIL:]))
            return 1
        if time.monotonic() > deadline:
            return _fail(
                f"the daemon (pid {daemon.pid}) runs but has not answered {health or 'its control socket'} "
                f"after {args.timeout:g} s; see {log}, or `beamclaw stop`"
            )
        time.sleep(0.1)
    print(f"BeamClaw started in the background, pid {daemon.pid}")
    print(f"  {health or 'control socket'} answers; its output goes to {log}")
    return 0


def _answers(health: str | None) -> bool:
    import httpx
    import trio

    if health is None:
        return trio.run(running)
    try:
        return httpx.get(health, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def stop(args: argparse.Namespace) -> int:
    import trio

    home = beamclaw.data_dir()
    pid = beamclaw.daemon_pid(home)
    if pid is None:
        _remove_stale_pid_file(home)
        return _fail(f"no BeamClaw daemon is running on the data dir {home}", 3)
    try:
        trio.run(call, "POST", "/v1/stop")
    except (NoDaemon, ApiError, OSError):  # a daemon that does not answer (hung, or still starting): the signal
        if pid > 0:
            os.kill(pid, signal.SIGTERM)
    if not _gone(home, args.timeout):
        if pid <= 0:
            return _fail(f"the daemon is still stopping after {args.timeout:g} s, and its pid is unknown")
        with contextlib.suppress(ProcessLookupError):  # it may have exited since
            os.kill(pid, signal.SIGKILL)
        _gone(home, _DEFAULT_TIMEOUT)
        (home / PID_FILE).unlink(missing_ok=True)
        return _fail(f"the daemon (pid {pid}) had not stopped after {args.timeout:g} s: killed it (SIGKILL)")
    (home / PID_FILE).unlink(missing_ok=True)
    print("BeamClaw stopped")
    return 0


def _gone(home: Path, timeout: float) -> bool:
    """Wait up to *timeout* seconds for the data dir's lock to be free: whether it is."""
    deadline = time.monotonic() + timeout
    while beamclaw.daemon_pid(home) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def restart(args: argparse.Namespace) -> int:
    import trio

    home = beamclaw.data_dir()
    if beamclaw.daemon_pid(home) is not None:
        if args.config is None:
            with contextlib.suppress(NoDaemon, ApiError, OSError):  # it does not answer: the default configuration
                args.config = trio.run(functools.partial(call, raw=True), "GET", "/v1/status")["config"]
        code = stop(args)
        if code != 0 and beamclaw.daemon_pid(home) is not None:
            return code
    return start(args)


def version(args: argparse.Namespace) -> int:
    import trio

    print(f"beamclaw {beamclaw.__version__}")
    try:
        answer = trio.run(call, "GET", "/v1/status")
    except (NoDaemon, ApiError, OSError):
        return 0
    print(f"running daemon: beamclaw {answer['version']}, pid {answer['pid']}")
    return 0
