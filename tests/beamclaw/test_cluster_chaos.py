"""Chaos across a cluster: three real daemons on one PostgreSQL, a node killed with SIGKILL
every few seconds under load, and no acknowledged message is lost or taken twice.

Several clients each talk about a conversation of their own, every message a tool turn
(the model calls `bash`, then answers), each request through a node picked at random.
A client sends its next numbered message only once the previous one was answered (a
200), and retries everything else under the message's ``Idempotency-Key``: a 503 after
its Retry-After, a refused connection (the node is down) and a request cut under way
(its node was killed) on another node, as a client behind a load balancer would. A
200 that is not the agent's answer tells that the message's turn was cut before the
agent answered: the message is sent again under a new key.
Meanwhile the chaos task kills a random node and starts it again on the same data dir
and port, one node always up.

Afterwards every conversation gets one more message (a strict model refuses a history
with an unanswered tool call, so this also has every conversation's history restored and
repaired by its owner), and the histories are read from the database: every acknowledged
message is answered there exactly once, in the order it was sent (one whose turn was
cut and which was sent again is there once more, unanswered), and every tool call is
answered. The figures are printed, timing is never asserted. Seeded
(``BEAMCLAW_CHAOS_SEED``) and bounded (``BEAMCLAW_CHAOS_SECONDS``, default 60): a failure
names its seed, and each start of a node leaves its stderr in the test's directory.
"""

from __future__ import annotations

import os
import random
import signal
import uuid
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path

import attrs
import httpx
import pytest
import trio

import beamclaw_core as core
from beamclaw_base import StoreConfig
from tests.support.model_server import Agentic, Call, ScriptedModel, invalid_tool_history, scripted_model
from tests.support.postgres import DSN_VARIABLE
from tests.support.stores import sql

from .daemon import free_port, start_daemon

pytestmark = pytest.mark.postgres

SECONDS = float(os.environ.get("BEAMCLAW_CHAOS_SECONDS", "60"))
SEED = int(os.environ.get("BEAMCLAW_CHAOS_SEED", "20261127"))
NODES = ("node-a", "node-b", "node-c")
CONVERSATIONS = 6
#: Seconds between two kills (drawn from this range).
KILL_EVERY = (3.0, 6.0)
LEASE_SECONDS = 3.0
_SECRET_VARIABLE = "BEAMCLAW_CLUSTER_SECRET"
#: Only to stop a hang: a start is mostly imports, slow on a busy 2-core machine.
_START_SECONDS = 120.0
_ANSWER = "all done"


@attrs.define
class _Node:
    name: str
    port: int
    config: Path
    home: Path
    process: trio.Process | None = None
    starts: int = 0
    #: Running and answering (False from its kill until its restart has answered).
    up: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, logs: Path) -> None:
        self.starts += 1
        log = logs / f"{self.name}-{self.starts}.log"
        self.process = await start_daemon(self.config, self.home, log, timeout=_START_SECONDS)
        self.up = True

    async def kill(self) -> None:
        assert self.process is not None
        self.up = False
        os.kill(self.process.pid, signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            await self.process.wait()


@attrs.define
class _Figures:
    #: Per conversation, the messages answered with a 200, in the order sent.
    acked: dict[str, list[str]] = attrs.field(factory=dict)
    #: 200s telling that a message's turn was cut before the agent answered (sent again).
    interrupted: int = 0
    statuses: Counter[int] = attrs.field(factory=Counter)
    #: Requests cut under way by a kill (their fate unknown; not acknowledged).
    cut: int = 0
    #: Connections refused (the node was down; retried elsewhere).
    refused: int = 0
    kills: int = 0
    #: The longest a conversation went from a failed attempt to its next 200, in seconds.
    longest_unanswered: float = 0.0


def _config(tmp_path: Path, name: str, port: int, model: ScriptedModel) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n'
        f'[cluster]\nenabled = true\nnode_id = "{name}"\nadvertise_url = "http://127.0.0.1:{port}"\n'
        f'lease_seconds = {LEASE_SECONDS}\nsecret = {{ env = "{_SECRET_VARIABLE}" }}\n'
        f'[core]\ndefault_provider = "scripted"\nautonomy_level = "full"\n'
        f'[core.providers.scripted]\nbase_url = "{model.base_url}"\nmodel = "scripted-model"\n'
        f"[gateway.http]\nport = {port}\n[gateway.rate_limit]\nrequests = 1000000\n",
        encoding="utf-8",
    )
    return path


async def _send(
    http: httpx.AsyncClient, nodes: list[_Node], rng: random.Random, figures: _Figures, *, user: str, text: str
) -> None:
    """Send *text* through random nodes until the agent answers it: a failure is retried
    (after its Retry-After) under the same ``Idempotency-Key``, so a message whose request
    was cut, or whose owner died under it, is still one turn. A 200 that is not the
    agent's answer says the turn was cut before the agent answered: the message is sent
    again under a new key, as that answer asks."""
    body = {"model": "default", "user": user, "messages": [{"role": "user", "content": text}]}
    failed_at: float | None = None
    key = uuid.uuid4().hex
    while True:
        node = rng.choice(nodes)
        try:
            response = await http.post(f"{node.url}/v1/chat/completions", json=body, headers={"Idempotency-Key": key})
        except httpx.TransportError as exc:  # the node is down, or was killed under the request
            if isinstance(exc, httpx.ConnectError):
                figures.refused += 1
            else:
                figures.cut += 1
            failed_at = trio.current_time() if failed_at is None else failed_at
            await trio.sleep(0.2)
            continue
        figures.statuses[response.status_code] += 1
        if response.status_code == 200:
            answer = response.json()["choices"][0]["message"]["content"]
            if answer != _ANSWER:
                figures.interrupted += 1
                key = uuid.uuid4().hex
                continue
            if failed_at is not None:
                figures.longest_unanswered = max(figures.longest_unanswered, trio.current_time() - failed_at)
            return
        failed_at = trio.current_time() if failed_at is None else failed_at
        await trio.sleep(float(response.headers.get("Retry-After", "1")))


async def _client(nodes: list[_Node], rng: random.Random, user: str, figures: _Figures, until: float) -> None:
    acked = figures.acked.setdefault(user, [])
    async with httpx.AsyncClient(timeout=60, trust_env=False) as http:
        n = 0
        while trio.current_time() < until:
            n += 1
            text = f"{user} message {n}"
            await _send(http, nodes, rng, figures, user=user, text=text)
            acked.append(text)


async def _chaos(nodes: list[_Node], rng: random.Random, logs: Path, figures: _Figures, until: float) -> None:
    """Every few seconds kill a node that is up, and start it again meanwhile (a start
    takes seconds: the next kill does not wait for it, but one node always stays up)."""
    async with trio.open_nursery() as restarts:
        while True:
            await trio.sleep(rng.uniform(*KILL_EVERY))
            if trio.current_time() >= until:
                return
            up = [node for node in nodes if node.up]
            if len(up) < 2:
                continue
            node = rng.choice(up)
            await node.kill()
            figures.kills += 1
            restarts.start_soon(node.start, logs)


def _answered(history: list[core.Message]) -> list[str]:
    """The user messages of *history* the agent answered (an assistant message of text
    follows before the next user message), in order; a message whose turn was cut and
    which was sent again is there once unanswered, once answered."""
    answered = []
    asked: str | None = None
    for message in history:
        if message.role == "user":
            asked = message.content
        elif message.role == "assistant" and message.content and not message.tool_calls and asked is not None:
            answered.append(asked)
            asked = None
    return answered


def _history(store: StoreConfig, tmp_path: Path, user: str) -> list[core.Message]:
    db = core.open_session_store(store, tmp_path)
    try:
        rows = sql(
            db, "SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (core.session_id(user, "default"),)
        )
    finally:
        db.close()
    return [core.Message.from_record(text) for (text,) in rows]


async def test_random_kills_of_nodes_under_load_lose_and_duplicate_nothing(
    tmp_path: Path, postgres_store_config: StoreConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_SECRET_VARIABLE, "cluster-secret-of-the-chaos-test-0123456789")
    rng = random.Random(SEED)
    replay = f"(replay with BEAMCLAW_CHAOS_SEED={SEED})"
    tool = Call("bash", {"command": "echo tool done"})
    async with scripted_model(repeat=Agentic(tool, answer=_ANSWER)) as model, AsyncExitStack() as stack:
        model.keep_requests = False
        nodes = []
        for name in NODES:
            port = free_port()
            nodes.append(_Node(name, port, _config(tmp_path, name, port, model), tmp_path / name))
            stack.push_async_callback(nodes[-1].stop)
        async with trio.open_nursery() as starting:  # a start is mostly imports: side by side
            for node in nodes:
                starting.start_soon(node.start, tmp_path)

        figures = _Figures()
        until = trio.current_time() + SECONDS
        with trio.fail_after(SECONDS + 240):  # only to stop a hang (a message retried for ever)
            async with trio.open_nursery() as nursery:
                for i in range(CONVERSATIONS):
                    nursery.start_soon(_client, nodes, random.Random(rng.random()), f"chaos{i}", figures, until)
                nursery.start_soon(_chaos, nodes, random.Random(rng.random()), tmp_path, figures, until)

        with trio.fail_after(120):  # only to stop a hang: every conversation answers again
            async with httpx.AsyncClient(timeout=60, trust_env=False) as http:
                for user, acked in figures.acked.items():
                    await _send(http, nodes, rng, figures, user=user, text=f"{user} after the chaos")
                    acked.append(f"{user} after the chaos")

        histories = {user: _history(postgres_store_config, tmp_path, f"api:{user}") for user in figures.acked}
        answered = {user: _answered(history) for user, history in histories.items()}
        lost = [text for user, acked in figures.acked.items() for text in acked if text not in answered[user]]
        twice = [text for texts in answered.values() for text, count in Counter(texts).items() if count > 1]
        duplicated = sum(count - 1 for texts in answered.values() for count in Counter(texts).values() if count > 1)
        print(
            f"cluster chaos: {SECONDS:g} s, {len(NODES)} nodes, {figures.kills} kills, {CONVERSATIONS} conversations: "
            f"answered turns {figures.statuses[200]}, 503s {figures.statuses[503]}, statuses {dict(figures.statuses)}, "
            f"cut {figures.cut}, refused {figures.refused}, told interrupted {figures.interrupted}, "
            f"lost {len(lost)}, duplicated {duplicated}, "
            f"longest unanswered {figures.longest_unanswered:.1f} s {replay}"
        )

        assert lost == [], f"answered, then lost {replay}"
        assert duplicated == 0, f"answered twice: {twice} {replay}"
        assert model.refusals == [], f"the model was sent an invalid history: {model.refusals[:1]} {replay}"
        for user, acked in figures.acked.items():
            assert [text for text in answered[user] if text in acked] == acked, f"{user}: out of order {replay}"
            invalid = invalid_tool_history([m.to_openai() for m in histories[user]])
            assert invalid is None, f"{user}: {invalid} {replay}"
