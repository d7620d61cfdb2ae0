"""Chaos: random kills of any process of the real daemon under load, and nothing breaks.

Five HTTP clients keep chatting (every message a tool turn: the model calls `bash`,
then answers), while a killer crashes a process picked at random from the live tree
(any supervisor or worker below the root) every half second, through the same
management API as `beamclaw kill`. Afterwards the daemon must still be up with every
app and nothing stuck restarting, no request may have had a 500, every message that
was answered must be in its conversation, every history must be one a strict
OpenAI-compatible API accepts, and every conversation must go on.

Seeded (``BEAMCLAW_CHAOS_SEED``) and bounded (``BEAMCLAW_CHAOS_SECONDS``, default 60):
a failure names its seed, so it can be replayed.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from tests.support.model_server import Agentic, Call, invalid_tool_history, scripted_model

from .daemon import api, history, start_daemon, write_config

SECONDS = float(os.environ.get("BEAMCLAW_CHAOS_SECONDS", "60"))
SEED = int(os.environ.get("BEAMCLAW_CHAOS_SEED", "20261123"))
CLIENTS = 5
KILL_EVERY = 0.5
APPS = {"obs", "cluster", "memory", "tools", "sandbox", "mcp", "core", "scheduler", "a2a", "gateway", "control"}


@attrs.define
class _Load:
    acked: dict[str, list[str]] = attrs.field(factory=dict)
    statuses: Counter[int] = attrs.field(factory=Counter)
    dropped: int = 0
    kills: Counter[str] = attrs.field(factory=Counter)


def _paths(node: dict[str, Any], prefix: str = "") -> list[str]:
    """Every process below *node*, as `beamclaw kill` paths."""
    found = []
    for child in node.get("children", []):
        if child.get("pid") is None:
            continue
        path = f"{prefix}{child['id']}"
        found.append(path)
        found.extend(_paths(child, path + "/"))
    return found


def _not_running(node: dict[str, Any], prefix: str = "") -> list[str]:
    stuck = []
    for child in node.get("children", []):
        path = f"{prefix}{child['id']}"
        if child["state"] != "running" and child["restart"] != "transient":
            stuck.append(f"{path} ({child['state']})")
        stuck.extend(_not_running(child, path + "/"))
    return stuck


async def _client(url: str, user: str, load: _Load, until: float) -> None:
    load.acked[user] = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        n = 0
        while trio.current_time() < until:
            n += 1
            text = f"{user} message {n}"
            body = {"model": "default", "user": user, "messages": [{"role": "user", "content": text}]}
            try:
                response = await http.post("/v1/chat/completions", json=body)
            except httpx.TransportError:
                load.dropped += 1  # the HTTP server itself was killed mid-request
                await trio.sleep(0.2)
                continue
            load.statuses[response.status_code] += 1
            if response.status_code == 200:
                load.acked[user].append(text)
            else:
                await trio.sleep(float(response.headers.get("retry-after", "0.2")))


async def _killer(home: Path, rng: random.Random, load: _Load, until: float) -> None:
    while trio.current_time() < until:
        await trio.sleep(KILL_EVERY)
        try:
            tree = (await api(home, "GET", "/v1/supervision/tree")).json()
            path = rng.choice(sorted(_paths(tree)))
            killed = await api(home, "POST", "/v1/supervision/kill", {"path": path})
        except (OSError, ValueError, KeyError, IndexError, httpx.HTTPError):
            continue  # the API's socket server itself was just killed: it comes back
        if killed.status_code == 200:
            load.kills[path.split("/")[0]] += 1


async def _settled_tree(home: Path) -> dict[str, Any]:
    """The tree once every child is running again (or what is still not, after 20 s)."""
    tree: dict[str, Any] = {}
    with trio.move_on_after(20):
        while True:
            try:
                tree = (await api(home, "GET", "/v1/supervision/tree")).json()
            except (OSError, ValueError, KeyError, httpx.HTTPError):
                await trio.sleep(0.2)
                continue
            if not _not_running(tree):
                break
            await trio.sleep(0.2)
    return tree


async def test_random_kills_under_load_break_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rng = random.Random(SEED)
    replay = f"(replay with BEAMCLAW_CHAOS_SEED={SEED})"
    tool = Call("bash", {"command": "sleep 0.2; echo tool done"})
    async with scripted_model(repeat=Agentic(tool, answer="all done")) as model:
        model.keep_requests = False
        config = write_config(tmp_path, model, extra="[gateway.rate_limit]\nrequests = 1000000\n")
        port = config.read_text().split("port = ")[1].split()[0]
        daemon = await start_daemon(config, home)
        try:
            load = _Load()
            until = trio.current_time() + SECONDS
            async with trio.open_nursery() as nursery:
                for i in range(CLIENTS):
                    nursery.start_soon(_client, f"http://127.0.0.1:{port}", f"chaos{i}", load, until)
                nursery.start_soon(_killer, home, rng, load, until)
            figures = f"{dict(load.statuses)} dropped={load.dropped} kills={dict(load.kills)} {replay}"
            print(f"chaos: {SECONDS:g} s, {sum(load.kills.values())} kills: {figures}")

            assert daemon.poll() is None, f"the daemon exited with {daemon.returncode} {figures}"
            tree = await _settled_tree(home)
            assert {child["id"] for child in tree["children"]} == APPS, figures
            assert _not_running(tree) == [], figures
            assert set(load.statuses) <= {200, 503}, f"a status other than 200 or 503: {figures}"
            assert load.statuses[200] > 0 and sum(load.kills.values()) >= SECONDS / KILL_EVERY / 2, figures
            assert model.refusals == [], f"the model was sent an invalid history: {model.refusals[:1]} {figures}"
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                for user, acked in load.acked.items():
                    messages = (await history(home, f"api:{user}"))["messages"]
                    assert invalid_tool_history(messages) is None, f"{user}: {invalid_tool_history(messages)} {replay}"
                    said = {m["content"] for m in messages if m["role"] == "user"}
                    assert [text for text in acked if text not in said] == [], f"{user}: answered, then lost {replay}"
                    body = {"model": "default", "user": user, "messages": [{"role": "user", "content": "still there?"}]}
                    response = await http.post("/v1/chat/completions", json=body)
                    assert response.status_code == 200, f"{user}: {response.text} {replay}"
        finally:
            if daemon.poll() is None:
                daemon.kill()
            await daemon.wait()
