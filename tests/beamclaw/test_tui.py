"""`beamclaw tui` in a real terminal (tmux), against the scripted model: approvals, line
editing, history, completion, Ctrl-C and Ctrl-D, and a daemon that goes and comes back."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
from pathlib import Path

import pytest
import trio

from tests.support.model_server import Call, Hold, Reply, scripted_model

from .daemon import cli, start_daemon, write_config

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


class Terminal:
    """A tmux session on its own server socket, driven by send-keys and read by capture-pane."""

    def __init__(self, name: str) -> None:
        self.base = ["tmux", "-L", name]
        self.name = name

    async def tmux(self, *args: str) -> str:
        done = await trio.run_process([*self.base, *args], capture_stdout=True, capture_stderr=True, check=False)
        return done.stdout.decode()

    async def start_tui(self, home: Path, *options: str, then: str = "sleep 30") -> None:
        """``beamclaw tui OPTIONS`` as ada in a 160x50 terminal, then the shell command *then*."""
        command = (
            f"env BEAMCLAW_HOME={shlex.quote(str(home))} BEAMCLAW_USER=local:ada {shlex.quote(sys.executable)} "
            f"-m beamclaw tui {shlex.join(options)}; {then}"
        )
        await self.tmux("new-session", "-d", "-s", self.name, "-x", "160", "-y", "50", command)

    async def screen(self) -> str:
        return await self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.name)

    async def type(self, text: str) -> None:
        await self.keys(text)
        await self.tmux("send-keys", "-t", self.name, "Enter")

    async def keys(self, text: str = "", *names: str) -> None:
        """Type *text* as it is, then press each key in *names* (``Left``, ``C-c``, ``Tab``...)."""
        if text:
            await self.tmux("send-keys", "-t", self.name, "-l", text)
        for name in names:
            await self.tmux("send-keys", "-t", self.name, name)

    async def wait_for(self, text: str, timeout: float = 20.0) -> str:
        with trio.move_on_after(timeout):
            while text not in (screen := await self.screen()):
                await trio.sleep(0.1)
            return screen
        raise AssertionError(f"{text!r} never appeared; the screen:\n{await self.screen()}")


async def test_a_conversation_with_an_approval_in_the_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [
        Reply("Hello Ada, I am your agent."),
        Reply("Let me check.", tool_calls=(Call("bash", {"command": "command echo from-the-tool"}, id="b"),)),
        Reply("The tool printed from-the-tool."),
    ]
    async with scripted_model(*steps) as model:
        config = write_config(tmp_path, model, autonomy="supervised")
        command = (
            f"env BEAMCLAW_HOME={shlex.quote(str(home))} BEAMCLAW_USER=local:ada "
            f"{shlex.quote(sys.executable)} -m beamclaw tui --config {shlex.quote(str(config))}; sleep 30"
        )
        term = Terminal(f"beamclaw-test-{os.getpid()}")
        await term.tmux("new-session", "-d", "-s", term.name, "-x", "160", "-y", "50", command)
        try:
            await term.wait_for("No daemon is running: starting one in this process")
            await term.wait_for("you> ")
            await term.type("hi")
            await term.wait_for("default> Hello Ada, I am your agent.")
            await term.type("run the tool please")
            await term.wait_for('Approve bash with {"command": "command echo from-the-tool"}? (not in the allow')
            await term.type("/yes")
            await term.wait_for("The tool printed from-the-tool.")
            await term.type("/context")
            screen = await term.wait_for("tokens (")
            assert "context [█" in screen and "/ 32,768 tokens" in screen and "6 messages" in screen
            await term.type("/new")
            await term.wait_for("new conversation (6 messages forgotten)")
            await term.type("/quit")
            await term.wait_for("bye")
        finally:
            await term.tmux("kill-server")
    tool_messages = [m for m in model.requests[2]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "exit code: 0\nfrom-the-tool"
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": "hi"}


async def test_the_tui_outlives_its_daemon_and_leaves_on_ctrl_c(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello there")) as model:
        config = write_config(tmp_path, model)
        daemon = await start_daemon(config, home)
        term = Terminal(f"beamclaw-test-link-{os.getpid()}")
        await term.start_tui(home, then='echo "tui exited with $?"; sleep 30')
        try:
            await term.wait_for("you> ")
            await term.type("hi")
            await term.wait_for("default> hello there")

            daemon.send_signal(signal.SIGTERM)  # the daemon stops under the TUI
            assert await daemon.wait() == 0
            await term.wait_for("The daemon stopped; reconnecting when it is back...")
            await term.type("anyone?")
            await term.wait_for("Not sent: the daemon is not running (waiting for it to come back).")

            daemon = await start_daemon(config, home)
            await term.wait_for("reconnected")
            await term.type("hi again")
            with trio.fail_after(120):
                while (await term.screen()).count("default> hello there") < 2:
                    await trio.sleep(0.1)

            await term.tmux("send-keys", "-t", term.name, "C-c")  # nothing is being written: it arms
            await term.wait_for("Ctrl-C again (or Ctrl-D) leaves")
            await term.tmux("send-keys", "-t", term.name, "C-c")
            screen = await term.wait_for("tui exited with 130")
            assert "Traceback" not in screen and "Exception" not in screen and "bye" in screen
        finally:
            await term.tmux("kill-server")
            daemon.send_signal(signal.SIGTERM)
            await daemon.wait()
    assert [m["messages"][-1]["content"] for m in model.requests] == ["hi", "hi again"]


async def test_editing_history_completion_and_the_keys_that_stop_and_leave(tmp_path: Path) -> None:
    home = tmp_path / "home"
    held = Hold(then=Reply("too late"))
    steps = [Reply("got it"), held, Reply("after the stop")]
    async with scripted_model(*steps) as model:
        config = write_config(tmp_path, model)
        command = (
            f"env BEAMCLAW_HOME={shlex.quote(str(home))} BEAMCLAW_USER=local:ada "
            f"{shlex.quote(sys.executable)} -m beamclaw tui --config {shlex.quote(str(config))}; "
            'echo "tui exited with $?"; sleep 30'
        )
        term = Terminal(f"beamclaw-test-keys-{os.getpid()}")
        await term.tmux("new-session", "-d", "-s", term.name, "-x", "160", "-y", "50", command)
        try:
            await term.wait_for("you> ")
            # Arrow keys edit the line: nothing of them reaches the model.
            await term.keys("helo wrld", "Left", "Left", "Left")
            await term.keys("o", "Home", "Right", "Right", "Right")
            await term.keys("l", "End")
            await term.type(" key=sk-ant-api03-Zq8vT3xLmN4pR7sK2wY9aB6cZq8vT3xLmN4p")
            await term.wait_for("default> got it")
            # The toolbar names the session and the context.
            screen = await term.wait_for("context ")
            assert "session " in screen and "connected" in screen
            # Ctrl-C while a reply is being written stops that turn; the conversation goes on.
            await term.type("take your time")
            with trio.fail_after(120):
                await held.reached.wait()
            await term.wait_for("default is writing...")
            await term.keys("", "C-c")
            await term.wait_for("default> Stopped.")
            # Up recalls the last line; Tab completes a /command.
            await term.keys("", "Up")
            await term.wait_for("you> take your time")
            await term.keys("", "C-u")
            await term.keys("/con", "Tab")
            await term.wait_for("you> /context")
            await term.keys("", "Enter")
            await term.wait_for("tokens (")
            await term.type("still there?")
            await term.wait_for("default> after the stop")
            # Ctrl-D on an empty line leaves with status 0.
            await term.keys("", "C-d")
            screen = await term.wait_for("tui exited with 0")
            assert "Traceback" not in screen and "^[[" not in screen
        finally:
            await term.tmux("kill-server")
    sent = [r["messages"][-1]["content"] for r in model.requests]
    assert sent[0] == "hello world key=[REDACTED]"
    assert sent[1:] == ["take your time", "still there?"]
    history = home / "tui_history"
    assert history.stat().st_mode & 0o777 == 0o600
    kept = history.read_text()
    assert "+take your time" in kept and "sk-ant-api03" not in kept and "[REDACTED]" in kept


async def test_a_scheduled_reply_shows_in_the_open_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("Time to stretch.")) as model:
        config = write_config(tmp_path, model, extra="[scheduler]\nmin_interval_seconds = 1\n")
        daemon = await start_daemon(config, home)
        term = Terminal(f"beamclaw-test-sched-{os.getpid()}")
        await term.start_tui(home, "--config", str(config))
        try:
            await term.wait_for("you> ")
            added = await cli(home, "scheduler", "add", "--every", "3s", "--message", "remind me")
            assert added.stdout.startswith(b"added job ")
            await term.wait_for("scheduled> Time to stretch.")
            await term.type("/quit")
            await term.wait_for("bye")
        finally:
            await term.tmux("kill-server")
            daemon.send_signal(signal.SIGTERM)
            await daemon.wait()
