"""The issue's attacks, replayed against the real daemon: a hostile model with `bash` at
autonomy full gets none of what it got before the jail.

Before: ``base64 -w0 /proc/$PPID/environ`` showed every secret of the daemon,
``sqlite3 ../../sessions.db .dump`` and a client of ``../../control.sock`` returned
another user's conversation, and ``kill -TERM $PPID`` stopped the daemon. The model
writes each attack to a file with ``write_file`` and runs it with ``bash attack.sh``
(the deny list, a separate layer, never reads the files a command runs), so these tests
try the jail. The last test runs the same attacks with ``isolation = "none"`` to show
that they do work against an unjailed daemon, so each test here would fail without it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from tests.beamclaw.daemon import chat, history, ping, start_daemon, write_config
from tests.support.bubblewrap import requires_bubblewrap
from tests.support.model_server import Call, Reply, ScriptedModel, scripted_model

pytestmark = requires_bubblewrap()

PLANTED = "planted-daemon-secret-3f9a1c"
ALICE_SAID = "alice-tells-her-agent-the-vault-code-4417"

ENVIRON = "base64 -w0 /proc/$PPID/environ; echo; base64 -w0 /proc/1/environ; echo\n"
DUMP = "sqlite3 ../../sessions.db .dump 2>&1; echo sqlite=$?\n"
CONTROL = (
    "python3 - <<'EOF'\n"
    "import json, socket\n"
    "def ask(method, path, body=b''):\n"
    "    s = socket.socket(socket.AF_UNIX); s.connect('../../control.sock')\n"
    "    s.sendall(f'{method} {path} HTTP/1.1\\r\\nHost: beamclaw\\r\\nConnection: close\\r\\n'\n"
    "              f'Content-Type: application/json\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n'.encode() + body)\n"
    "    out = b''\n"
    "    while chunk := s.recv(65536):\n"
    "        out += chunk\n"
    "    return out.decode().split('\\r\\n\\r\\n', 1)[-1]\n"
    "try:\n"
    "    opened = ask('POST', '/v1/sessions', json.dumps({'user': 'api:alice', 'agent': 'default'}).encode())\n"
    "    print(ask('GET', '/v1/sessions/' + json.loads(opened)['session']['id'] + '/history'))\n"
    "except OSError as exc:\n"
    "    print('refused', type(exc).__name__)\n"
    "EOF\n"
)
KILL = "kill -TERM $PPID; echo kill=$?; kill -TERM {pid}; echo kill_daemon=$?\n"


def _turn(script: str) -> list[Reply]:
    """The model writes *script* to attack.sh, runs it with bash, then says it is done."""
    calls = (Call("write_file", {"path": "attack.sh", "content": script}, id="w"),)
    return [Reply(tool_calls=(*calls, Call("bash", {"command": "bash attack.sh"}, id="b"))), Reply("done")]


@attrs.frozen
class Daemon:
    home: Path
    process: trio.Process
    model: ScriptedModel

    async def alice_says(self, text: str) -> None:
        self.model.add(Reply("noted"))
        await chat(self.home, "api:alice", text)

    async def send(self, script: str) -> None:
        """Mallory's model runs *script*."""
        self.model.add(*_turn(script))
        await chat(self.home, "api:mallory", "go")

    async def attack(self, script: str) -> str:
        """What the bash call returned to the model (as stored in mallory's history)."""
        await self.send(script)
        messages = (await history(self.home, "api:mallory"))["messages"]
        tools: list[dict[str, Any]] = [m for m in messages if m["role"] == "tool"]
        return str(tools[-1]["content"])


@asynccontextmanager
async def running_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str) -> AsyncIterator[Daemon]:
    monkeypatch.setenv("BEAMCLAW_TEST_PLANTED", PLANTED)  # in the daemon's own environment block
    home = tmp_path / "home"
    async with scripted_model() as model:
        extra = f'[tools.bash]\nisolation = "{isolation}"\n'
        daemon = await start_daemon(write_config(tmp_path, model, extra=extra), home)
        try:
            yield Daemon(home, daemon, model)
        finally:
            daemon.terminate()
            with trio.move_on_after(15):
                await daemon.wait()
            if daemon.poll() is None:
                daemon.kill()
                await daemon.wait()


def _decoded(text: str) -> str:
    out = []
    for line in text.splitlines():
        try:
            out.append(base64.b64decode(line.strip(), validate=True).decode(errors="replace"))
        except (binascii.Error, ValueError):
            out.append(line)
    return "\n".join(out)


async def test_the_daemons_environment_is_out_of_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_daemon(tmp_path, monkeypatch, "bubblewrap") as d:
        seen = _decoded(await d.attack(ENVIRON))
        assert PLANTED not in seen and "BEAMCLAW_HOME" not in seen
        assert seen.startswith("exit code: 0")


async def test_another_users_conversation_is_out_of_reach_in_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch, "bubblewrap") as d:
        await d.alice_says(ALICE_SAID)
        seen = await d.attack(DUMP)
        assert ALICE_SAID not in seen


async def test_the_control_socket_is_out_of_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_daemon(tmp_path, monkeypatch, "bubblewrap") as d:
        await d.alice_says(ALICE_SAID)
        seen = await d.attack(CONTROL)
        assert seen == "exit code: 0\nrefused FileNotFoundError"


async def test_the_daemon_cannot_be_killed_from_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_daemon(tmp_path, monkeypatch, "bubblewrap") as d:
        seen = await d.attack(KILL.format(pid=d.process.pid))
        assert "kill_daemon=1" in seen and "No such process" in seen
        await trio.sleep(0.5)
        assert d.process.poll() is None and await ping(d.home)
        assert await d.attack("echo still here\n") == "exit code: 0\nstill here"


async def test_unjailed_the_same_attacks_succeed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: with isolation = "none" each attack above reaches what it aims at."""
    async with running_daemon(tmp_path, monkeypatch, "none") as d:
        await d.alice_says(ALICE_SAID)
        assert PLANTED in _decoded(await d.attack(ENVIRON))
        assert ALICE_SAID in await d.attack(DUMP)
        assert ALICE_SAID in await d.attack(CONTROL)
        with contextlib.suppress(OSError, ValueError, httpx.TransportError):  # the daemon may go before it answers
            await d.send(KILL.format(pid=d.process.pid))
        with trio.fail_after(15):
            await d.process.wait()  # the daemon stopped: SIGTERM from its own agent
