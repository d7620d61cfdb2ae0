"""kill -9 of the real daemon in the middle of turns, again and again: nothing is lost.

Each cycle starts the daemon on the same data dir, checks what the previous cycles
left (the database intact, every answered message there, every history one a strict
OpenAI-compatible API accepts), has one message answered, then sends another (a tool
turn: the model calls `bash`, then answers) and SIGKILLs the daemon after a seeded
random delay: before, during or after the tool. Seeded (``BEAMCLAW_KILL9_SEED``) and
bounded (``BEAMCLAW_KILL9_CYCLES``, default 10).
"""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import httpx
import trio

from tests.support.model_server import Agentic, Call, ScriptedModel, invalid_tool_history, scripted_model

from .daemon import history, start_daemon, write_config

CYCLES = int(os.environ.get("BEAMCLAW_KILL9_CYCLES", "10"))
SEED = int(os.environ.get("BEAMCLAW_KILL9_SEED", "9"))
USER = "kill9"


async def _check_what_is_left(home: Path, acked: list[str], model: ScriptedModel, replay: str) -> None:
    db = sqlite3.connect(f"file:{home / 'sessions.db'}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",), replay
    finally:
        db.close()
    messages = (await history(home, f"api:{USER}"))["messages"]
    assert invalid_tool_history(messages) is None, f"{invalid_tool_history(messages)} {replay}"
    said = {m["content"] for m in messages if m["role"] == "user"}
    assert [text for text in acked if text not in said] == [], f"answered, then lost {replay}"
    assert model.refusals == [], f"the model was sent an invalid history: {model.refusals[0]} {replay}"


async def _send(http: httpx.AsyncClient, text: str, acked: list[str]) -> None:
    body = {"model": "default", "user": USER, "messages": [{"role": "user", "content": text}]}
    try:
        response = await http.post("/v1/chat/completions", json=body)
    except httpx.TransportError:
        return  # killed before it answered: not acknowledged
    if response.status_code == 200:
        acked.append(text)


async def test_kill_9_in_the_middle_of_turns_loses_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rng = random.Random(SEED)
    replay = f"(replay with BEAMCLAW_KILL9_SEED={SEED})"
    acked: list[str] = []
    tool = Call("bash", {"command": "sleep 0.3; echo tool done"})
    async with scripted_model(repeat=Agentic(tool, answer="all done")) as model:
        config = write_config(tmp_path, model)
        url = f"http://127.0.0.1:{config.read_text().split('port = ')[1].split()[0]}"
        for cycle in range(CYCLES):
            daemon = await start_daemon(config, home)
            try:
                if cycle:
                    await _check_what_is_left(home, acked, model, f"cycle {cycle} {replay}")
                async with httpx.AsyncClient(base_url=url, timeout=30) as http:
                    await _send(http, f"answered {cycle}", acked)
                    assert acked[-1] == f"answered {cycle}", replay
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(_send, http, f"in flight {cycle}", acked)
                        await trio.sleep(rng.uniform(0.0, 0.8))
                        daemon.kill()
            finally:
                if daemon.poll() is None:
                    daemon.kill()
                await daemon.wait()
        daemon = await start_daemon(config, home)
        try:
            await _check_what_is_left(home, acked, model, replay)
            async with httpx.AsyncClient(base_url=url, timeout=30) as http:
                await _send(http, "after it all", acked)
            assert acked[-1] == "after it all", replay
            print(f"kill -9: {CYCLES} cycles, {len(acked)} messages answered, none lost {replay}")
        finally:
            daemon.kill()
            await daemon.wait()
