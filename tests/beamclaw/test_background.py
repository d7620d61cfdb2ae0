"""`beamclaw start | stop | restart | version`: the daemon as a background service, through the real CLI."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import trio

import beamclaw
from tests.support.model_server import Reply, scripted_model

from .daemon import cli, write_config


@contextmanager
def _killed_after(home: Path) -> Iterator[None]:
    """A daemon `beamclaw start` left running (the test failed before `stop`) is killed."""
    try:
        yield
    finally:
        pid = beamclaw.daemon_pid(home)
        if pid:
            os.kill(pid, signal.SIGKILL)


def _port(config: Path) -> int:
    return int(config.read_text().split("port = ")[1].split()[0])


async def test_start_returns_once_health_answers_and_stop_ends_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (home / "beamclaw.pid").write_text(f"{gone.pid}\n")  # left by a daemon killed with SIGKILL
    async with scripted_model(repeat=Reply("hello")) as model:
        config = write_config(tmp_path, model)
        with _killed_after(home):
            started = await cli(home, "start", "--config", str(config))
            out = started.stdout.decode()
            assert started.returncode == 0, started.stderr.decode() + out
            assert f"removed a stale pid file ({home / 'beamclaw.pid'}: pid {gone.pid}" in out
            pid = beamclaw.daemon_pid(home)
            assert pid is not None and f"pid {pid}" in out
            assert (home / "beamclaw.pid").read_text() == f"{pid}\n"
            health = await trio.to_thread.run_sync(httpx.get, f"http://127.0.0.1:{_port(config)}/health")
            assert health.status_code == 200  # it answered before `start` returned
            assert "BeamClaw starting with" in (home / "logs" / "daemon.log").read_text()

            again = await cli(home, "start", "--config", str(config))
            assert again.returncode == 1 and f"already running (pid {pid})" in again.stderr.decode()
            version = (await cli(home, "version")).stdout.decode()
            assert (
                version
                == f"beamclaw {beamclaw.__version__}\nrunning daemon: beamclaw {beamclaw.__version__}, pid {pid}\n"
            )
            assert (await cli(home, "chat", "hi")).stdout == b"hello\n"

            restarted = await cli(home, "restart")
            assert restarted.returncode == 0, restarted.stderr.decode()
            new_pid = beamclaw.daemon_pid(home)
            assert new_pid not in (None, pid) and f"pid {new_pid}" in restarted.stdout.decode()
            history = (await cli(home, "history")).stdout.decode()
            assert "user: hi" in history and "assistant: hello" in history  # same config, same data

            stopped = await cli(home, "stop")
            assert stopped.returncode == 0 and stopped.stdout == b"BeamClaw stopped\n"
            assert beamclaw.daemon_pid(home) is None and not (home / "beamclaw.pid").exists()
    again = await cli(home, "stop")
    assert again.returncode == 3 and b"no BeamClaw daemon is running" in again.stderr
    assert (await cli(home, "version")).stdout == f"beamclaw {beamclaw.__version__}\n".encode()


async def test_start_shows_why_the_daemon_could_not_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model:
        config = write_config(tmp_path, model)
        with socket.socket() as taken, _killed_after(home):
            taken.bind(("127.0.0.1", _port(config)))
            taken.listen()
            started = await cli(home, "start", "--config", str(config))
        assert started.returncode == 1
        out = started.stdout.decode()
        assert "the daemon exited during start-up" in out and f"{_port(config)}" in out.split("the end of", 1)[1]
        assert not (home / "beamclaw.pid").exists() and beamclaw.daemon_pid(home) is None
    bad = tmp_path / "bad.toml"
    bad.write_text("[core\n")
    refused = await cli(home, "start", "--config", str(bad))
    assert refused.returncode == 2 and str(bad) in refused.stderr.decode()


_STUBBORN = """
import fcntl, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, str(os.getpid()).encode(), 0)
print("locked", flush=True)
time.sleep(600)
"""


async def test_stop_kills_a_daemon_that_does_not_stop_in_time(tmp_path: Path) -> None:
    """A daemon that neither answers its control socket nor obeys SIGTERM (hung) is killed after --timeout."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with subprocess.Popen(
        [sys.executable, "-c", _STUBBORN, str(home / "daemon.lock")], stdout=subprocess.PIPE, text=True
    ) as hung:
        try:
            assert hung.stdout is not None and hung.stdout.readline() == "locked\n"
            stopped = await cli(home, "stop", "--timeout", "0.5")
            assert stopped.returncode == 1
            assert f"the daemon (pid {hung.pid}) had not stopped after 0.5 s: killed it (SIGKILL)" in (
                stopped.stderr.decode()
            )
            assert hung.wait() == -signal.SIGKILL
        finally:
            hung.kill()
