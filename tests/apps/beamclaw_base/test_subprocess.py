"""run_captured and Unjailed, through real processes: exactly the environment given, the
output capped, the process group killed when the command ends or runs out of time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from beamclaw_base import SYSTEM_PATH, Unjailed, run_captured

#: A killed process is gone within this long on any machine (only a process that was never
#: killed reaches it).
_EXIT_BOUND = 30.0


async def test_the_command_gets_exactly_its_environment_directory_and_no_stdin(tmp_path: Path) -> None:
    script = 'echo "$FOO"; pwd; env | wc -l; read line || echo no-stdin; exit 3'
    result = await run_captured(
        ["/bin/sh", "-c", script], env={"FOO": "bar", "PATH": SYSTEM_PATH}, cwd=tmp_path, timeout=30, output_limit=4096
    )
    assert result.exit_code == 3 and not result.timed_out and not result.truncated
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "bar" and lines[1] == str(tmp_path) and lines[3] == "no-stdin"
    assert int(lines[2]) <= 4  # FOO, PATH, and what sh sets itself (PWD, SHLVL)


async def test_output_past_the_limit_is_cut_and_said(tmp_path: Path) -> None:
    result = await run_captured(
        ["/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a"],
        env={"PATH": SYSTEM_PATH},
        cwd=tmp_path,
        timeout=30,
        output_limit=1000,
    )
    assert result.exit_code == 0 and result.truncated
    assert len(result.stdout) < 2000 and result.stdout.startswith(b"a") and result.stdout.endswith(b"a")


async def _gone(pid: int) -> bool:
    """Whether *pid* exits (is killed) within a generous bound.

    SIGKILL sent to a process group is delivered asynchronously: the sleeper may still be
    running for a moment after `run_captured` returns, so the test waits for its exit
    through a pidfd rather than look at it once.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # already exited and reaped
    try:
        with trio.move_on_after(_EXIT_BOUND):
            await trio.lowlevel.wait_readable(pidfd)
            return True
        return False
    finally:
        trio.lowlevel.notify_closing(pidfd)
        os.close(pidfd)


async def test_what_the_command_leaves_running_is_killed_when_it_ends(tmp_path: Path) -> None:
    result = await run_captured(
        ["/bin/sh", "-c", "sleep 300 & echo $!"], env={"PATH": SYSTEM_PATH}, cwd=tmp_path, timeout=30, output_limit=4096
    )
    assert result.exit_code == 0
    assert await _gone(int(result.stdout))


async def test_a_command_out_of_time_is_killed_with_its_group(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    result = await run_captured(
        ["/bin/sh", "-c", f"sleep 300 & echo $! > {marker}; sleep 300"],
        env={"PATH": SYSTEM_PATH},
        cwd=tmp_path,
        timeout=1,
        output_limit=4096,
    )
    assert result.timed_out and result.exit_code is None
    assert await _gone(int(marker.read_text()))


@pytest.mark.parametrize(("timeout", "limit"), [(0, 10), (-1, 10), (1, 0)])
async def test_a_bad_timeout_or_limit_is_refused(tmp_path: Path, timeout: float, limit: int) -> None:
    with pytest.raises(ValueError):
        await run_captured(["true"], env={}, cwd=tmp_path, timeout=timeout, output_limit=limit)


async def test_unjailed_keeps_the_daemons_secrets_out_and_its_home_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", "daemon-secret-value-123")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-daemon-secret")
    result = await Unjailed().run(["/bin/sh", "-c", "env"], workspace=tmp_path, timeout=30, output_limit=65536)
    env = dict(line.split("=", 1) for line in result.stdout.decode().splitlines() if "=" in line)
    assert "BEAMCLAW_GATEWAY_TOKEN" not in env and "OPENROUTER_API_KEY" not in env
    assert env["HOME"] == str(tmp_path)
    assert os.environ["OPENROUTER_API_KEY"] not in result.stdout.decode()


async def test_unjailed_refuses_a_directory_outside_the_workspace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not inside the workspace"):
        await Unjailed().run(["true"], workspace=tmp_path / "w", cwd=tmp_path, timeout=30, output_limit=10)
