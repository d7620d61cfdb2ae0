"""A data dir that other local users could read, attacked as one of them would look at it.

The user made ``BEAMCLAW_HOME`` themselves (mode 0755) and starts BeamClaw under the
common umask 022. Before the fix, the session database's WAL, the scheduler's and the
A2A store's databases and the logs were created readable by everyone: conversation
text included. Now nothing in the data dir, while the daemon runs and after it
stops, has a single permission bit for group or others; a data dir of another user is
refused with the way out; and the CLI commands that write into it do the same.
"""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from tests.support.model_server import Call, Reply, scripted_model

from .daemon import api, environment, start_daemon, write_config

#: The umask most systems start sessions with: files 0644, folders 0755.
COMMON_UMASK = 0o022


def _open_to_others(home: Path) -> list[str]:
    """Every file, folder and socket under *home* (itself included) with a group or other bit."""
    found = []
    for path in [home, *home.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077 and not path.is_symlink():
            found.append(f"{path.relative_to(home)} {mode:04o}")
    return found


def _home_made_by_the_user(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    return home


def _steps() -> Iterator[Reply]:
    yield Reply(tool_calls=(Call("write_file", {"path": "plans.md", "content": "the secret plans"}, id="w1"),))
    yield Reply("Written down.")
    yield Reply("Over A2A too.")


async def test_nothing_the_daemon_writes_is_open_to_other_users(tmp_path: Path) -> None:
    home = _home_made_by_the_user(tmp_path)
    async with scripted_model(*_steps(), repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model)
        port = config.read_text().split("port = ")[1].split()[0]
        daemon = await start_daemon(config, home, tmp_path / "stderr", umask=COMMON_UMASK)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                chat = {"model": "default", "messages": [{"role": "user", "content": "note my secret plans"}]}
                answer = await http.post("/v1/chat/completions", json=chat)
                assert answer.status_code == 200, answer.text
                assert "Written down." in answer.text
                message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "and over A2A"}]}
                sent = await http.post(
                    "/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
                )
                assert sent.status_code == 200 and "result" in sent.json(), sent.text
            assert (await api(home, "GET", "/v1/status")).status_code == 200
            while_running = _open_to_others(home)
            names_while_running = {path.name for path in home.rglob("*")}
        finally:
            daemon.send_signal(signal.SIGTERM)
            with trio.fail_after(30):
                await daemon.wait()
    stderr = (tmp_path / "stderr").read_text(errors="replace")
    assert daemon.returncode == 0, stderr
    # What the issue found readable, all there, none of it readable now.
    assert {"sessions.db", "sessions.db-wal", "a2a.db", "scheduler.db", "beamclaw.log", "control.sock"} <= (
        names_while_running
    ), sorted(names_while_running)
    assert any(path.name == "plans.md" for path in home.rglob("*"))  # the tool's own file, too
    assert while_running == []
    assert _open_to_others(home) == []
    assert "was open to other users (mode 0755); it is now 0700" in stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the data dir to another user needs root")
async def test_a_data_dir_of_another_user_is_refused_with_the_way_out(tmp_path: Path) -> None:
    home = _home_made_by_the_user(tmp_path)
    os.chown(home, 65534, 65534)
    async with scripted_model(repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model)
        with trio.fail_after(60):  # a daemon that starts instead of refusing fails here, never hangs
            result = await trio.run_process(
                [sys.executable, "-m", "beamclaw", "run", "--config", str(config)],
                env=environment(home), capture_stdout=True, capture_stderr=True, check=False, umask=COMMON_UMASK,
            )  # fmt: skip
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert f"belongs to {_user(65534)}, not to {_user(0)} who runs BeamClaw" in stderr
    assert f"chown -R 0 {home}" in stderr
    assert list(home.iterdir()) == []  # refused before anything was written


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


async def test_cli_commands_that_write_into_the_data_dir_write_owner_only(tmp_path: Path) -> None:
    home = _home_made_by_the_user(tmp_path)
    for command in (["pair", "list"], ["agent", "create", "ops"]):
        result = await trio.run_process(
            [sys.executable, "-m", "beamclaw", *command], env=environment(home), capture_stdout=True,
            capture_stderr=True, check=False, stdin=subprocess.DEVNULL, umask=COMMON_UMASK,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr.decode()
    assert (home / "sessions.db").is_file() and any(path.name == "ops" for path in home.rglob("*"))
    assert _open_to_others(home) == []
