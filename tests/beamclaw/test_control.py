"""The daemon as a user runs it: `beamclaw chat` over the control socket, and SIGKILL survived."""

from __future__ import annotations

import json
import signal
import socket
import sys
from pathlib import Path

import trio

from tests.support.model_server import Call, Hold, Reply, scripted_model

from .daemon import cli, environment, start_daemon, write_config


async def test_a_conversation_survives_sigkill_of_the_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [
        Reply(tool_calls=(Call("write_file", {"path": "name.txt", "content": "Ada"}),)),
        Reply("Nice to meet you, Ada."),
        Reply("You are Ada."),
    ]
    async with scripted_model(*steps) as model:
        config = write_config(tmp_path, model)
        daemon = await start_daemon(config, home)
        first = await cli(home, "chat", "I am Ada, please remember")
        assert first.returncode == 0, first.stderr
        assert first.stdout.decode() == "Nice to meet you, Ada.\n"
        daemon.send_signal(signal.SIGKILL)
        await daemon.wait()

        daemon = await start_daemon(config, home)
        second = await cli(home, "chat", "who am I?")
        assert second.stdout.decode() == "You are Ada.\n"
        sent = [(m["role"], m.get("content")) for m in model.requests[2]["messages"][1:]]
        assert sent[0] == ("user", "I am Ada, please remember")
        assert sent[-3:] == [("tool", "wrote 3 characters to name.txt"), ("assistant", "Nice to meet you, Ada."),
                             ("user", "who am I?")]  # fmt: skip
        shown = await cli(home, "history")
        assert shown.stdout.decode().splitlines()[-1] == "assistant: You are Ada."
        daemon.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0
    assert not (home / "control.sock").exists()
    assert (home / "agents" / "default" / "name.txt").read_text() == "Ada"


async def test_the_cli_says_when_no_daemon_runs(tmp_path: Path) -> None:
    result = await cli(tmp_path / "empty", "chat", "hello")
    assert result.returncode == 3
    assert "no BeamClaw daemon is running" in result.stderr.decode()


async def test_a_bad_control_request_gets_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        assert (home / "control.sock").stat().st_mode & 0o777 == 0o600
        for raw, error in [
            (b"not json\n", "request is not JSON"),
            (b'{"cmd": "fly"}\n', "unknown command 'fly'"),
            (b'{"cmd": "chat", "user": "u", "agent": "default"}\n', '"text" must be a non-empty string'),
            (b'{"cmd": "chat", "user": "u", "agent": "a", "text": "hi"}\n', "there is no agent 'a' (agents: default)"),
            (b'{"cmd": "history", "session": "zz"}\n', "'zz' is not a session id"),
            (b'{"cmd": "sessions", "limit": true}\n', '"limit" must be a whole number'),
            (b'{"cmd": "kill", "path": "core/sessions_sup/"}\n', "ends with '/': name one process below it"),
        ]:
            sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            with sock:
                await sock.connect(str(home / "control.sock"))
                await sock.send(raw)
                answer = json.loads(await sock.recv(4096))
            assert answer["type"] == "error" and error in answer["error"] and answer["done"]
        daemon.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0


async def test_a_second_daemon_refuses_to_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        config = write_config(tmp_path, model)
        first = await start_daemon(config, home)
        second = await trio.run_process(
            [sys.executable, "-m", "beamclaw", "run", "--config", str(config)],
            env=environment(home),
            capture_stderr=True,
            check=False,
        )
        assert second.returncode == 1
        message = second.stderr.decode()
        # Refused before anything started (not at the gateway's port or the control socket).
        assert message == (
            f"beamclaw: another BeamClaw daemon (pid {first.pid}) is running on the data dir {home}; stop it first "
            "(`beamclaw stop`), or give this one its own BEAMCLAW_HOME\n"
        )
        assert (await cli(home, "status")).returncode == 0  # the first one still serves
        first.send_signal(signal.SIGTERM)
        assert await first.wait() == 0


async def test_a_turn_stopped_while_its_reply_streams_leaves_the_control_socket_up(tmp_path: Path) -> None:
    """Found by the TUI test: "Stopped." sent by the session while the chat's answer was
    written crashed the control server (two writers on one connection)."""
    home = tmp_path / "home"
    held = Hold(then=Reply("too late"))
    async with scripted_model(held, Reply("next")) as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        try:
            async with trio.open_nursery() as nursery:
                chat: list[bytes] = []

                async def talk() -> None:
                    chat.append((await cli(home, "chat", "take your time")).stdout)

                nursery.start_soon(talk)
                with trio.fail_after(120):
                    await held.reached.wait()
                stopped = await cli(home, "chat", "/stop")
                assert stopped.stdout == b"stopped the turn being worked on\n"
            assert chat == [b"Stopped.\n"]
            tree = json.loads((await cli(home, "tree", "--json")).stdout)
            (control,) = [c for c in tree["children"] if c["id"] == "control"]
            assert [c["restarts"] for c in control["children"]] == [0, 0]
            assert (await cli(home, "chat", "and now?")).stdout == b"next\n"
        finally:
            daemon.send_signal(signal.SIGTERM)
            await daemon.wait()
