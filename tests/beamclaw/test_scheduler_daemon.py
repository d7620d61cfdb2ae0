"""The scheduler on a real daemon: a job made with the CLI fires and its reply is in the
history and reaches a connected terminal; kills of runner and executor lose no job;
after kill -9 and a restart, no due time runs twice."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import signal
import sqlite3
import zoneinfo
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

import beamclaw_scheduler as scheduler
from tests.support.model_server import Call, Reply, scripted_model

from .daemon import api, cli, history, running_daemon, start_daemon, write_config

FAST = "[scheduler]\nmin_interval_seconds = 1\n[scheduler.heartbeat]\nenabled = false\n"


async def _history(home: Path) -> list[dict[str, str]]:
    messages: list[dict[str, str]] = (await history(home, "local:ada"))["messages"]
    return messages


@asynccontextmanager
async def _deliveries(home: Path, user: str) -> AsyncIterator[trio.SocketStream]:
    """A connection following what is delivered to *user*, as a terminal does
    (``GET /v1/users/USER/deliveries``): by hand, since the stream never ends and an HTTP
    client left reading it would be cut off mid-body."""
    stream = await trio.open_unix_socket(str(home / "control.sock"))
    async with stream:
        await stream.send_all(f"GET /v1/users/{user}/deliveries HTTP/1.1\r\nHost: beamclaw\r\n\r\n".encode())
        head = b""
        while b"event: ready" not in head:  # listening: nothing delivered from now on is missed
            head += await stream.receive_some(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        yield stream


_DELIVERED = re.compile(rb"event: message\r?\ndata: (.*?)\r?\n")


async def _delivered(stream: trio.SocketStream) -> dict[str, str]:
    """The next message delivered on *stream* (keepalive comments pass by)."""
    data = b""
    while (found := _DELIVERED.search(data)) is None:
        data += await stream.receive_some(65536)
    message: dict[str, str] = json.loads(found.group(1))
    return message


async def _job_turns(home: Path) -> list[str]:
    return [m["content"] for m in await _history(home) if m["role"] == "user" and "[Scheduled job" in m["content"]]


async def test_a_job_made_with_the_cli_fires_and_reaches_the_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("the report is ready")) as model,
        running_daemon(write_config(tmp_path, model, extra=FAST), home),
    ):
        # A terminal of ada's follows what is delivered to her.
        async with _deliveries(home, "local:ada") as delivered:
            added = await cli(home, "scheduler", "add", "--every", "2s", "--message", "make the report")
            assert added.returncode == 0, added.stderr
            job_id = added.stdout.decode().split()[2].rstrip(":")
            with trio.fail_after(120):
                assert await _delivered(delivered) == {"text": "the report is ready"}

        turns = await _job_turns(home)
        assert turns and turns[0] == f"[Scheduled job {job_id}, every 2s] make the report"
        assert any(m["content"] == "the report is ready" for m in await _history(home))
        listed = (await cli(home, "scheduler", "list")).stdout.decode()
        assert job_id in listed and "every 2s" in listed and "active" in listed

        # Killing the runner and the executor loses no job: it goes on firing.
        for process in ("scheduler/runner", "scheduler/executor"):
            assert (await cli(home, "kill", process)).returncode == 0
        before = len(await _job_turns(home))
        with trio.fail_after(120):
            while len(await _job_turns(home)) < before + 2:
                await trio.sleep(0.2)
        runs = (await cli(home, "scheduler", "runs", job_id)).stdout.decode()
        assert "try 1  ok  delivered" in runs

        assert (await cli(home, "scheduler", "pause", job_id[:4])).returncode == 0
        paused = len(await _job_turns(home))
        await trio.sleep(3)
        assert len(await _job_turns(home)) == paused
        cancelled = await cli(home, "scheduler", "cancel", job_id)
        assert cancelled.returncode == 0 and f"cancelled job {job_id}" in cancelled.stdout.decode()
        assert "no jobs" in (await cli(home, "scheduler", "list")).stdout.decode()


async def test_bad_jobs_are_refused_saying_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("ok")) as model, running_daemon(write_config(tmp_path, model), home):
        for args, why in [
            (["--every", "10s"], "the shortest interval is 1m"),
            (["--cron", "0 9 * *"], "write five fields"),
            (["--cron", "61 * * * *"], "is not a valid expression"),
            (["--at", "tomorrow"], "is not an ISO time"),
            (["--at", "2020-01-01T09:00"], "is in the past"),
            (["--at", "2026-12-01T09:00", "--tz", "Mars/Olympus"], "is not a time zone"),
            (["--every", "1h", "--agent", "nosuch"], "there is no agent 'nosuch'"),
            (["--random", "17:00-09:00"], "the window must start before it ends"),
            (["--random", "02:30-06:00", "--tz", "Europe/Paris"], "(the clocks change)"),
        ]:
            refused = await cli(home, "scheduler", "add", *args, "--message", "x")
            assert refused.returncode == 1 and why in refused.stderr.decode(), (args, refused.stderr)


async def test_a_random_slot_job_made_with_the_cli_lists_its_drawn_slot(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("ok")) as model, running_daemon(write_config(tmp_path, model), home):
        added = await cli(home, "scheduler", "add", "--random", "09:00-17:00", "--tz", "Europe/Paris",
                          "--message", "stretch")  # fmt: skip
        assert added.returncode == 0, added.stderr
        listed = (await cli(home, "scheduler", "list")).stdout.decode()
    (slot,) = (
        sqlite3.connect(home / "scheduler.db").execute("SELECT next_due FROM jobs WHERE kind = 'random'").fetchone()
    )
    assert "daily at random 09:00-17:00 (Europe/Paris)" in listed
    assert scheduler.describe_time(slot) in listed
    local = dt.datetime.fromtimestamp(slot, zoneinfo.ZoneInfo("Europe/Paris")).time()
    assert dt.time(9, 0) <= local < dt.time(17, 0)


async def test_after_kill_9_no_due_time_runs_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("tick")) as model:
        config = write_config(tmp_path, model, extra=FAST)
        daemon = await start_daemon(config, home)
        added = await cli(home, "scheduler", "add", "--every", "1s", "--message", "tick")
        assert added.returncode == 0, added.stderr
        for delay in (2.3, 1.7, 2.9):
            await trio.sleep(delay)
            daemon.send_signal(signal.SIGKILL)
            await daemon.wait()
            daemon = await start_daemon(config, home)
        await trio.sleep(2)
        # Runs done are read before the turns: a run is marked ok only after its turn is in
        # the history, and the job goes on running until the stop.
        with contextlib.closing(sqlite3.connect(home / "scheduler.db")) as live:
            done = live.execute("SELECT count(*) FROM runs WHERE state = 'ok'").fetchone()[0]
        turns = len(await _job_turns(home))
        daemon.send_signal(signal.SIGTERM)
        await daemon.wait()
    db = sqlite3.connect(home / "scheduler.db")
    rows = db.execute("SELECT due, attempt, state FROM runs").fetchall()
    started = [r for r in rows if r[2] in {"ok", "failed", "interrupted", "running"}]
    firsts = [due for due, attempt, _ in started if attempt == 1]
    assert len(firsts) == len(set(firsts)) and len(firsts) >= 5
    # Every turn in the history is one started run: none ran twice (a kill may leave a run
    # started whose turn never reached the history, never the other way round).
    assert done <= turns <= len(started)
    assert os.path.exists(home / "scheduler.db")


async def test_the_agent_schedules_a_job_with_its_tool_and_supervised_asks_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    create = Call("scheduler", {"action": "create", "every": "1h", "message": "water the plants"})
    steps = [Reply(tool_calls=(create,)), Reply("I will remind you every hour.")]
    async with scripted_model(*steps, repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model, autonomy="supervised", extra=FAST)
        async with running_daemon(config, home), trio.open_nursery() as nursery:
            chats: list[bytes] = []

            async def ask() -> None:
                chats.append((await cli(home, "chat", "remind me to water the plants every hour")).stdout)

            nursery.start_soon(ask)
            with trio.fail_after(120):
                while (await cli(home, "chat", "/yes")).returncode != 0:  # until the question is there
                    await trio.sleep(0.3)
            with trio.fail_after(30):
                while not chats:
                    await trio.sleep(0.1)
            assert "Approve scheduler" in chats[0].decode() and "act later on its own" in chats[0].decode()
            assert "I will remind you every hour." in chats[0].decode()
            listed = (await api(home, "GET", "/v1/scheduler/jobs")).json()["jobs"]
            assert [(j["user"], j["schedule"], j["message"], j["created_by"]) for j in listed] == [
                ("local:ada", "every 1h", "water the plants", "agent")
            ]


async def test_the_heartbeat_delivers_what_matters_once_and_keeps_quiet_otherwise(tmp_path: Path) -> None:
    home = tmp_path / "home"
    beat = (
        "[scheduler]\nmin_interval_seconds = 1\n"
        '[scheduler.heartbeat]\ndefault_interval_seconds = 2\nactive_hours = [0, 0]\ntarget = "last"\n'
    )
    steps = [Reply("hello"), Reply("**HEARTBEAT_OK**"), Reply("Your 10:00 meeting moved to 11:00.")]
    moved = Reply("Your 10:00 meeting moved to 11:00.")
    async with (
        scripted_model(*steps, repeat=moved) as model,
        running_daemon(write_config(tmp_path, model, extra=beat), home),
    ):
        # Only headings and comments (the template): the heartbeat does not run.
        await trio.sleep(3)
        assert model.count == 0
        assert (await cli(home, "chat", "hello")).returncode == 0  # ada is the last one active
        (home / "agents" / "default" / "HEARTBEAT.md").write_text("# Heartbeat\n- Check my calendar.\n")
        async with _deliveries(home, "local:ada") as delivered:
            with trio.fail_after(30):
                assert (await _delivered(delivered))["text"] == "Your 10:00 meeting moved to 11:00."
            with trio.move_on_after(5):  # the same output again within 24 h: not delivered twice
                again = await _delivered(delivered)
                raise AssertionError(f"delivered twice: {again!r}")
        runs = (await api(home, "GET", "/v1/scheduler/jobs/heartbeat-default/runs")).json()["runs"]
        outcomes = [(r["state"], r["detail"]) for r in reversed(runs)]
        assert outcomes[0] == ("skipped", "HEARTBEAT.md has nothing to do")
        ran = [outcome for outcome in outcomes if outcome[0] != "skipped"]
        assert ran[0] == ("suppressed", "HEARTBEAT_OK")
        assert ("ok", "delivered") in outcomes
        assert ("suppressed", "the same output was delivered within 24 h") in outcomes
        prompt = model.requests[1]["messages"][-1]["content"]
        assert prompt.startswith("Heartbeat: a scheduled check") and "- Check my calendar." in prompt
