"""A daemon on PostgreSQL rides through the database restarting under load: clients
get answers or 503s with Retry-After, never a 500, and nothing acknowledged is lost."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio

import beamclaw_core as core
from beamclaw_base import StoreConfig
from tests.support.model_server import Echo, scripted_model
from tests.support.postgres import DSN_VARIABLE, PostgresServer
from tests.support.stores import sql

from .daemon import running_daemon, write_config

pytestmark = pytest.mark.postgres

_CLIENTS = 4
_UNLIMITED = "[gateway.rate_limit]\nrequests = 1000000\nrequests_per_address = 1000000\n"


async def _client(url: str, user: str, stop: trio.Event, acked: list[str], statuses: list[int]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        n = 0
        while not stop.is_set():
            text = f"{user} message {n}"
            body = {"model": "default", "user": user, "messages": [{"role": "user", "content": text}]}
            response = await http.post("/v1/chat/completions", json=body)
            statuses.append(response.status_code)
            if response.status_code == 200:
                acked.append(text)
                n += 1
            else:
                assert response.status_code == 503 and "Retry-After" in response.headers, response.text
                await trio.sleep(0.2)


async def test_postgresql_restarted_under_load_loses_nothing_acknowledged(
    tmp_path: Path, postgres_store_config: StoreConfig, postgres_server: PostgresServer
) -> None:
    acked: list[str] = []
    statuses: list[int] = []
    store = f'[store]\nbackend = "postgres"\ndsn = {{ env = "{DSN_VARIABLE}" }}\n'
    async with scripted_model(repeat=Echo()) as model:
        config = write_config(tmp_path, model, extra=_UNLIMITED)
        config.write_text(store + config.read_text(), encoding="utf-8")
        url = f"http://127.0.0.1:{config.read_text().split('port = ')[1].split()[0]}"
        async with running_daemon(config, tmp_path / "home"):
            stop = trio.Event()
            async with trio.open_nursery() as nursery:
                for i in range(_CLIENTS):
                    nursery.start_soon(_client, url, f"user{i}", stop, acked, statuses)
                for mode in ("fast", "immediate"):
                    await trio.sleep(1.5)
                    await trio.to_thread.run_sync(postgres_server.restart, mode)
                await trio.sleep(1.5)
                before = len(acked)
                with trio.fail_after(60):  # the daemon answers again after the restarts
                    while len(acked) < before + _CLIENTS:
                        await trio.sleep(0.1)
                stop.set()
    print(f"answered {statuses.count(200)}, 503 {statuses.count(503)}")
    db = core.open_session_store(postgres_store_config, tmp_path)
    try:
        said = {core.Message.from_record(text).content for (text,) in sql(db, "SELECT message FROM messages")}
    finally:
        db.close()
    assert [text for text in acked if text not in said] == []
