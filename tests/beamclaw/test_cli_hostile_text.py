"""Every command prints what others wrote as text, through the real daemon: a user id, a
job message, a run's detail, a Telegram stranger's name, an MCP server's tool
description, a model's reply and a remembered line, each holding rich markup (``[/]``
alone made rich raise) and terminal controls (OSC 52 writes the clipboard), print
literally with their controls written out, and every command exits 0. A job stored
before schedules were bounded (due in 1e20 s) does not make `scheduler list` fail."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Final

import httpx
import trio

import beamclaw_core as core
from beamclaw_base import StoreConfig
from tests.support.model_server import Reply, scripted_model

from .daemon import cli, running_daemon, write_config

#: rich markup that raises (a closing tag with nothing open), styles and a link.
MARKUP: Final = "[/][bold]mallory[link=https://evil.example]x[/link]"
#: Terminal controls: OSC 52 (the clipboard), clear screen, CR, backspace, a C1 CSI, a bidi override.
CONTROLS: Final = "\x1b]52;c;aGk=\x07\x1b[2J\r\x08\x9b\u202e"
#: How `CONTROLS` is written out (a carriage return is dropped).
CONTROLS_SHOWN: Final = "\\x1b]52;c;aGk=\\x07\\x1b[2J\\x08\\x9b\\u202e"
HOSTILE: Final = MARKUP + CONTROLS
HOSTILE_SHOWN: Final = MARKUP + CONTROLS_SHOWN
#: A user id must be printable: markup only.
USER: Final = "api:" + MARKUP

_EVIL_MCP: Final = f"""
from mcp.server.mcpserver import MCPServer

server = MCPServer("evil")


@server.tool(description={HOSTILE!r})
def read() -> str:
    return "ok"


server.run()
"""
_CONFIG: Final = (
    "[scheduler.heartbeat]\nenabled = false\n"
    "[memory]\nwatch_interval_seconds = 0.2\n"
    '[memory.embedding]\nprovider = "none"\n'
)


def _printed(result: subprocess.CompletedProcess[bytes], *expected: str) -> str:
    """The output of a command that succeeded, printed no control, and shows each of *expected*."""
    assert result.returncode == 0, result.stderr.decode()
    assert not set(result.stdout) & {0x1B, 0x07, 0x08, 0x0D}, result.stdout
    out = result.stdout.decode()
    assert "\x9b" not in out and "\u202e" not in out, out
    for text in expected:
        assert text in out, (text, out)
    return out


async def test_every_command_prints_hostile_text_as_text(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "evil_mcp.py").write_text(_EVIL_MCP)
    servers = f'[mcp.servers.evil]\ncommand = ["{sys.executable}", "{tmp_path / "evil_mcp.py"}"]\n'
    async with scripted_model(repeat=Reply(HOSTILE)) as model:
        config = write_config(tmp_path, model, extra=_CONFIG + servers)
        port = config.read_text().split("port = ")[1].split()[0]
        async with running_daemon(config, home):
            # A client of the HTTP API names its own user id; the model answers with markup and controls.
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                body = {"model": "default", "user": USER, "messages": [{"role": "user", "content": "hi"}]}
                assert (await http.post("/v1/chat/completions", json=body)).status_code == 200
            _printed(await cli(home, "sessions"), USER)
            _printed(await cli(home, "tree"), USER)
            _printed(await cli(home, "chat", "hello"), HOSTILE_SHOWN)
            _printed(await cli(home, "history"), HOSTILE_SHOWN)

            # A job whose user and message are hostile, and a run whose detail is.
            added = await cli(home, "scheduler", "add", "--user", "local:" + MARKUP, "--every", "1h",
                              "--message", HOSTILE)  # fmt: skip
            job_id = _printed(added).split()[2].rstrip(":")
            _printed(await cli(home, "scheduler", "list"), "local:" + MARKUP, HOSTILE_SHOWN)
            jobs = sqlite3.connect(home / "scheduler.db")
            with jobs:
                jobs.execute(
                    "INSERT INTO runs (job_id, due, attempt, state, detail) VALUES (?, 1.0, 1, 'failed', ?)",
                    (job_id, HOSTILE),
                )
                # A job from before schedules were bounded: due in 1e20 s (time_t overflow).
                jobs.execute("UPDATE jobs SET spec = '1e+20', next_due = 1e20 WHERE id = ?", (job_id,))
            jobs.close()
            _printed(await cli(home, "scheduler", "runs", job_id), HOSTILE_SHOWN)
            _printed(await cli(home, "scheduler", "list"), "never (beyond any date)")

            # A Telegram stranger's name, waiting for the owner's approval.
            pairing = core.open_session_store(StoreConfig(), home)
            code = pairing.transact(lambda tx: core.request_code(tx, "telegram", "tg:666", HOSTILE))
            pairing.close()
            _printed(await cli(home, "pair", "list"), f"{code}  tg:666  {HOSTILE_SHOWN}")

            # An MCP server's tool description.
            with trio.fail_after(120):
                while "ready" not in (await cli(home, "mcp", "list")).stdout.decode():
                    await trio.sleep(0.2)
            _printed(await cli(home, "mcp", "list"), "evil")
            _printed(await cli(home, "mcp", "tools", "evil"), MARKUP)

            # A line of the agent's memory (its files are the model's to write).
            (home / "agents" / "default" / "MEMORY.md").write_text(f"# Memory\n\nxylophone {HOSTILE}\n")
            with trio.fail_after(120):
                while "xylophone" not in (found := await cli(home, "memory", "search", "xylophone")).stdout.decode():
                    await trio.sleep(0.2)
            _printed(found, f"xylophone {MARKUP}\\x1b]52;c;aGk=\\x07")  # the memory reads its CR as a line end
            _printed(await cli(home, "memory", "status"), "default")
