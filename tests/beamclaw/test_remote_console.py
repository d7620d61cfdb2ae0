"""`beamclaw remote_console`: an operator's console in the running daemon, driven as a script would (stdin a pipe)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from tests.support.model_server import Reply, scripted_model

from .daemon import cli, environment, running_daemon, write_config

_SCRIPT = """\
names
ps
info beamclaw_core.sessions
info core/sessions_sup
info <0.99999.0>
send beamclaw_obs.metrics {"from": "the console"}
send nobody hello
launch
quit
status
"""


async def _console(home: Path, script: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "beamclaw", "remote_console"], env=environment(home), stdin=script.encode(),
        capture_stdout=True, capture_stderr=True, check=False,
    )  # fmt: skip


async def test_the_console_inspects_processes_and_sends_to_a_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model, running_daemon(write_config(tmp_path, model), home):
        done = await _console(home, _SCRIPT)
        assert done.returncode == 0, done.stderr.decode()
        out = done.stdout.decode()
        rows = [line.split() for line in out.splitlines()]
        assert out.startswith("attached to BeamClaw ")
        sessions_pid = next(row[1] for row in rows if row[:1] == ["beamclaw_core.sessions"])
        assert ["beamclaw_core.sessions", sessions_pid, "gen_server", "0"] in rows  # names
        assert ["core/sessions", sessions_pid, "beamclaw_core.sessions", "gen_server", "running", "0", "0"] in rows
        assert f"pid       {sessions_pid}\nname      beamclaw_core.sessions\nkind      gen_server\n" in out
        assert "name      beamclaw_core.sessions_sup\nkind      supervisor\n" in out  # by its path
        assert "! no live process <0.99999.0>" in out
        assert "sent to beamclaw_obs.metrics" in out
        assert "! no process is registered as 'nobody' (`names` lists them)" in out
        assert "! unknown command 'launch': `help` lists them" in out
        assert "status" not in out.split("unknown command 'launch'")[1]  # nothing after quit
        log = (home / "logs" / "beamclaw.log").read_text()
        assert "the remote console sent" in log and "the console" in log.split("the remote console sent")[1]
        assert (await cli(home, "status")).returncode == 0  # the daemon goes on, the metrics server too
        assert "restarts=0" in (await cli(home, "tree")).stdout.decode().split("metrics")[1].splitlines()[0]
    gone = await _console(home, "ps\n")
    assert gone.returncode == 3 and b"no BeamClaw daemon is running" in gone.stderr
