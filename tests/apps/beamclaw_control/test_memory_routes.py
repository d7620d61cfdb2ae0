"""The memory routes over HTTP: a search answers the lines found, a user's conversations
only to a principal that may act as that user, and reindex for an admin alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

import beamclaw_memory as memory

from .apps_api import ADMIN, ALICE, BOB, VIEWER, Api, running_api

NOTES = "# Notes\n\nThe boat is moored at Quay 7.\nThe spare key is under the blue pot.\n"


async def _with_notes(api: Api) -> None:
    folder = api.home / "agents" / "default"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MEMORY.md").write_text(NOTES)
    await memory.sync("default")


async def test_a_search_answers_the_lines_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        await _with_notes(api)
        found = await api.get(ALICE, "/v1/memory/search", q="where is the boat moored", limit=3)
        assert found.status_code == 200, found.text
        answer = found.json()
        assert (answer["agent"], answer["user"]) == ("default", None)
        hit = answer["hits"][0]
        assert (hit["path"], hit["kind"]) == ("MEMORY.md", "file")
        assert "The boat is moored at Quay 7." in hit["text"]
        lines = NOTES.splitlines()
        assert "The boat is moored at Quay 7." in lines[hit["start_line"] - 1 : hit["end_line"]]
        assert hit["score"] > 0 and len(answer["hits"]) <= 3


async def test_an_operator_searches_only_as_its_own_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        await memory.remember_now("default", "api:bob", "conversations/bob-1", "user: my locker code is 4417")
        bobs = await api.get(BOB, "/v1/memory/search", q="locker code", user="api:bob")
        assert bobs.status_code == 200, bobs.text
        assert bobs.json()["user"] == "api:bob"
        assert any("4417" in hit["text"] for hit in bobs.json()["hits"])
        for user in ("api:bob", "local:ada", "bob"):  # "bob" is alice's own api:alice/bob: nothing of bob's
            searched = await api.get(ALICE, "/v1/memory/search", q="locker code", user=user)
            if user == "bob":
                assert searched.status_code == 200 and searched.json()["user"] == "api:alice/bob"
                assert searched.json()["hits"] == []
            else:
                assert searched.status_code == 403, searched.text
                assert searched.json()["error"]["code"] == "forbidden"
        # Without a user: the agent's files only, never a conversation.
        files_only = await api.get(ALICE, "/v1/memory/search", q="locker code")
        assert files_only.status_code == 200 and files_only.json()["hits"] == []
        # A viewer does not search at all.
        assert (await api.get(VIEWER, "/v1/memory/search", q="locker code")).status_code == 403


async def test_reindex_is_an_admins_and_status_a_viewers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        await _with_notes(api)
        assert (await api.post(ALICE, "/v1/memory/reindex")).status_code == 403
        assert (await api.post(VIEWER, "/v1/memory/reindex")).status_code == 403
        reindexed = await api.post(ADMIN, "/v1/memory/reindex", {"agent": "default"})
        assert reindexed.status_code == 200, reindexed.text
        assert reindexed.json()["status"]["agent"] == "default" and reindexed.json()["status"]["documents"] >= 1
        status = await api.get(VIEWER, "/v1/memory/status")
        assert status.status_code == 200, status.text
        (default,) = [item for item in status.json()["agents"] if item["agent"] == "default"]
        assert default["chunks"] >= 1
        with trio.fail_after(30):  # the reindexed notes are searched again
            while not (await api.get(ALICE, "/v1/memory/search", q="spare key blue pot")).json()["hits"]:
                await trio.sleep(0.05)


@pytest.mark.parametrize(
    ("params", "status", "said"),
    [
        ({}, 400, '"q"'),
        ({"q": "x" * (memory.MAX_QUERY_CHARS + 1)}, 400, "at most"),
        ({"q": "boat", "limit": "0"}, 400, '"limit"'),
        ({"q": "boat", "limit": "many"}, 400, '"limit"'),
        ({"q": "boat", "limit": "\u00b2"}, 400, '"limit"'),
        ({"q": "boat", "agent": "nobody"}, 404, "no agent 'nobody'"),
        ({"q": "boat", "agent": "../etc"}, 400, "agent"),
        ({"q": "boat", "user": "api:\u0000"}, 400, "user"),
    ],
)
async def test_a_bad_search_is_refused_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, params: dict[str, str], status: int, said: str
) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        refused = await api.get(ADMIN, "/v1/memory/search", **params)
        assert refused.status_code == status, refused.text
        assert said in refused.json()["error"]["message"]
