"""The pairing routes over HTTP: the owner (an admin) lists, approves and revokes the chat
users who asked for a code, in the session store the channels read."""

from __future__ import annotations

from pathlib import Path

import pytest

import beamclaw_core as core
from beamclaw_base import StoreConfig
from tests.apps.beamclaw_core.conftest import session_store

from .apps_api import ADMIN, ALICE, VIEWER, running_api


async def test_a_code_is_approved_then_revoked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        code = await core.pairing_code("telegram", "telegram:42", "Ann")
        listed = await api.get(ADMIN, "/v1/pairing")
        assert listed.status_code == 200, listed.text
        (pending,) = listed.json()["pending"]
        assert (pending["channel"], pending["code"], pending["user_id"], pending["display"]) == (
            "telegram", code, "telegram:42", "Ann"
        )  # fmt: skip
        assert listed.json()["approved"] == []
        wrong = await api.post(ADMIN, "/v1/pairing/approve", {"channel": "telegram", "code": "AAAAAAAA"})
        assert wrong.status_code == 404 and "no pending telegram pairing code" in wrong.json()["error"]["message"]
        approved = await api.post(ADMIN, "/v1/pairing/approve", {"channel": "telegram", "code": code.lower()})
        assert approved.status_code == 200, approved.text
        assert approved.json() == {"user": "telegram:42", "channel": "telegram", "agent": "default"}
        assert await core.paired_agent("telegram", "telegram:42") == "default"  # what the channel reads
        listed = (await api.get(ADMIN, "/v1/pairing")).json()
        assert listed["pending"] == [] and [u["user_id"] for u in listed["approved"]] == ["telegram:42"]
        revoked = await api.post(ADMIN, "/v1/pairing/revoke", {"channel": "telegram", "user": "telegram:42"})
        assert revoked.status_code == 200 and revoked.json() == {"revoked": "telegram:42", "channel": "telegram"}
        assert await core.paired_agent("telegram", "telegram:42") is None
        again = await api.post(ADMIN, "/v1/pairing/revoke", {"channel": "telegram", "user": "telegram:42"})
        assert again.status_code == 404


async def test_pairing_is_an_admins_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        code = await core.pairing_code("telegram", "telegram:42", "Ann")
        for token in (VIEWER, ALICE):
            assert (await api.get(token, "/v1/pairing")).status_code == 403
            approve = await api.post(token, "/v1/pairing/approve", {"channel": "telegram", "code": code})
            assert approve.status_code == 403, approve.text
        assert await core.paired_agent("telegram", "telegram:42") is None
        with session_store(api.home, StoreConfig()) as db:
            db.transact(lambda tx: core.approve(tx, "telegram", code, "default"))
        for token in (VIEWER, ALICE):
            revoke = await api.post(token, "/v1/pairing/revoke", {"channel": "telegram", "user": "telegram:42"})
            assert revoke.status_code == 403
        assert await core.paired_agent("telegram", "telegram:42") == "default"


@pytest.mark.parametrize(
    ("sent", "status", "said"),
    [
        (("approve", {"channel": "telegram"}), 400, '"code"'),
        (("approve", {"channel": "telegram", "code": "AAAAAAAA", "agent": "nobody"}), 404, "no agent"),
        (("approve", {"channel": "telegram", "code": "AAAAAAAA", "agent": "../x"}), 400, "agent"),
        (("revoke", {"user": "telegram:42"}), 400, '"channel"'),
        (("revoke", [1, 2]), 400, "JSON object"),
    ],
)
async def test_a_bad_pairing_request_is_refused_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sent: tuple[str, object], status: int, said: str
) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        refused = await api.post(ADMIN, f"/v1/pairing/{sent[0]}", sent[1])
        assert refused.status_code == status, refused.text
        assert said in refused.json()["error"]["message"]
