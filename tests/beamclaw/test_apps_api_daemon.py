"""The pairing routes in the running daemon, over its owner-only socket: in the daemon's
own session store, where `beamclaw pair` and the channels read it."""

from __future__ import annotations

import json
from pathlib import Path

import beamclaw_core as core
from beamclaw_base import StoreConfig
from tests.support.model_server import Reply, scripted_model

from .daemon import api, cli, running_daemon, write_config


async def test_the_owner_pairs_and_revokes_over_the_socket(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("ok")) as model, running_daemon(write_config(tmp_path, model), home):
        db = core.open_session_store(StoreConfig(), home)  # a stranger asked the bot for a code
        code = db.transact(lambda tx: core.request_code(tx, "telegram", "telegram:42", "Ann"))
        db.close()
        listed = (await api(home, "GET", "/v1/pairing")).json()
        assert [(p["code"], p["user_id"]) for p in listed["pending"]] == [(code, "telegram:42")]
        approved = await api(home, "POST", "/v1/pairing/approve", {"channel": "telegram", "code": code})
        assert approved.json() == {"user": "telegram:42", "channel": "telegram", "agent": "default"}
        paired = json.loads((await cli(home, "pair", "--json")).stdout)
        assert [(p["user_id"], p["agent_id"]) for p in paired["paired"]] == [("telegram:42", "default")]
        revoked = await api(home, "POST", "/v1/pairing/revoke", {"channel": "telegram", "user": "telegram:42"})
        assert revoked.status_code == 200
        assert json.loads((await cli(home, "pair", "--json")).stdout)["paired"] == []
