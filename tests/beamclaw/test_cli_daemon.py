"""`beamclaw tree`, `status`, `kill` and `stop` against a running daemon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from tests.support.model_server import Reply, scripted_model

from .daemon import api, cli, environment, history, start_daemon, write_config


def _find(node: dict[str, Any], *path: str) -> dict[str, Any]:
    for part in path:
        (node,) = [c for c in node["children"] if str(c["id"]).startswith(part)]
    return node


async def test_tree_shows_the_restart_count_go_up_after_kill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        assert (await cli(home, "chat", "hi")).returncode == 0
        tree = json.loads((await cli(home, "tree", "--json")).stdout)
        (session,) = _find(tree, "core", "sessions_sup")["children"]
        assert _find(session, "loop")["state"] == "running" and _find(session, "loop")["restarts"] == 0
        loop_pid = _find(session, "loop")["pid"]

        killed = await cli(home, "kill", f"core/sessions_sup/{session['id'][:8]}/loop")
        assert killed.returncode == 0 and b"its supervisor restarts it" in killed.stdout
        # A bound on the wait, not on speed: each `beamclaw tree` is a fresh Python process,
        # which takes seconds on a loaded machine.
        with trio.fail_after(120):
            while True:
                tree = json.loads((await cli(home, "tree", "--json")).stdout)
                session = _find(tree, "core", "sessions_sup", session["id"])
                loop = _find(session, "loop")
                if loop["restarts"] == 1 and loop["pid"] != loop_pid:
                    break
        assert (await cli(home, "chat", "still there?")).stdout == b"hello\n"

        drawn = (await cli(home, "tree")).stdout.decode()
        assert "loop" in drawn and "state_machine" in drawn and "restarts=1" in drawn
        status = (await cli(home, "status")).stdout.decode()
        assert "sessions running: 1" in status and "core       running" in status
        bad = await cli(home, "kill", "core/nope")
        assert bad.returncode == 1 and b"core/nope matches no child" in bad.stderr

        stopped = await cli(home, "stop")
        assert stopped.returncode == 0 and stopped.stdout == b"BeamClaw stopped\n"
        assert await daemon.wait() == 0
    gone = await cli(home, "status")
    assert gone.returncode == 3 and b"no BeamClaw daemon is running" in gone.stderr


async def test_sigterm_stops_cleanly_with_the_history_saved(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(Reply("noted"), Reply("you said remember this")) as model:
        config = write_config(tmp_path, model)
        daemon = await start_daemon(config, home)
        await cli(home, "chat", "remember this")
        daemon.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0
        assert not (home / "control.sock").exists()
        daemon = await start_daemon(config, home)
        answer = await history(home, "local:ada")
        assert [m["content"] for m in answer["messages"]] == ["remember this", "noted"]
        session = answer["session"]["id"]
        context = (await api(home, "GET", f"/v1/sessions/{session}")).json()["context"]
        assert context["messages"] == 2 and 0 < context["used"] < context["window"] == 32_768
        reset = (await api(home, "DELETE", f"/v1/sessions/{session}", {})).json()
        assert reset["dropped"] == 2
        daemon.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0


async def _into_a_closed_pipe(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``beamclaw ARGS | head -1`` at its worst: the reader has gone before the first write."""
    read, write = os.pipe()
    os.close(read)
    try:
        return await trio.run_process(
            [sys.executable, "-m", "beamclaw", *args], env=environment(home), stdout=write, capture_stderr=True,
            check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        os.close(write)


async def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        assert (await cli(home, "chat", "hi")).returncode == 0
        for args in [("status",), ("tree",), ("tree", "--json"), ("history",), ("chat", "again"), ("version",)]:
            done = await _into_a_closed_pipe(home, *args)
            assert (done.returncode, done.stderr) == (1, b""), args
        daemon.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0
