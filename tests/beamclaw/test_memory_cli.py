"""`beamclaw memory search | reindex | status` against a running daemon: a fact written
into an agent's MEMORY.md is found with its file and lines, an edit by hand is found once
the watcher has seen it, and bad agents, users and limits are refused saying why."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from beamclaw_cli._main import main
from tests.support.model_server import Reply, scripted_model

from .daemon import api, api_client, cli, running_daemon, write_config

#: Keyword search only (no embedder to wait for), small chunks so that each paragraph
#: is one, and a watcher that looks often.
MEMORY = (
    "[memory]\nwatch_interval_seconds = 0.2\n"
    '[memory.embedding]\nprovider = "none"\n'
    "[memory.search]\nchunk_size = 16\nchunk_overlap = 0\ndefault_limit = 1\n"
)
FACTS = "# Memory\n\nThe backup key lives in the blue drawer.\n\n## Travel\n\nAda flies to Lisbon in March.\n"
_HIT = re.compile(r"^(\d+)\. (\S+) lines (\d+)-(\d+) \(score [\d.]+, (\w+)\)$", re.MULTILINE)


def _write(home: Path, agent: str, name: str, text: str) -> Path:
    path = home / "agents" / agent / name
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _hits(result: subprocess.CompletedProcess[bytes]) -> list[tuple[str, int, int, str]]:
    """(path, first line, last line, kind) of each hit printed."""
    assert result.returncode == 0, result.stderr
    return [(m[2], int(m[3]), int(m[4]), m[5]) for m in _HIT.finditer(result.stdout.decode())]


async def _search(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return await cli(home, "memory", "search", *args)


async def test_search_finds_a_fact_with_its_lines_and_a_hand_edit_once_the_watcher_saw_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("ok")) as model,
        running_daemon(write_config(tmp_path, model, extra=MEMORY), home),
    ):
        memory_file = _write(home, "default", "MEMORY.md", FACTS)

        found = await _search(home, "where is the backup key?")
        (hit,) = _hits(found)
        path, first, last, kind = hit
        assert (path, kind) == ("MEMORY.md", "file")
        assert first <= 3 <= last < 7  # the drawer's line, not the trip's
        out = found.stdout.decode()
        assert "The backup key lives in the blue drawer." in out and "Lisbon" not in out
        # No embedder: the search says it went by keywords alone.
        assert out.startswith('note: keyword search only: memory.embedding.provider is "none"\n')

        (trip,) = _hits(await _search(home, "Lisbon"))
        assert trip[0] == "MEMORY.md" and trip[1] <= 7 <= trip[2] and trip[1] > 3

        nothing = await _search(home, "xylophone")
        assert nothing.returncode == 0 and _hits(nothing) == []
        assert "no memory matched 'xylophone' in the files of agent default" in nothing.stdout.decode()

        # An edit by hand (a new paragraph at the end) is found once the watcher has looked.
        with memory_file.open("a") as file:
            file.write("\n## Plants\n\nThe fern is watered on Sundays.\n")
        with trio.fail_after(30):
            while not (watered := _hits(await _search(home, "fern watered"))):
                await trio.sleep(0.2)
        (edited,) = watered
        assert edited[0] == "MEMORY.md" and 3 < edited[1] <= 11 <= edited[2]  # the fern's line, not the drawer's

        # default_limit = 1 in the configuration; --limit asks for more.
        _write(home, "default", "USER.md", "Ada keeps a spare backup key at the office.\n")
        with trio.fail_after(30):
            while len(both := _hits(await _search(home, "--limit", "5", "backup key"))) < 2:
                await trio.sleep(0.2)
        assert sorted(h[0] for h in both) == ["MEMORY.md", "USER.md"]
        assert len(_hits(await _search(home, "backup key"))) == 1

        # A search for a user covers the agent's files too.
        for_ada = _hits(await _search(home, "--user", "local:ada", "blue drawer"))
        assert [h[0] for h in for_ada] == ["MEMORY.md"]


async def test_reindex_and_status(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("ok")) as model,
        running_daemon(write_config(tmp_path, model, extra=MEMORY), home),
    ):
        _write(home, "default", "MEMORY.md", FACTS)
        _write(home, "ops", "MEMORY.md", "The disk alert fires at 90 percent.\n")
        _write(home, "ops", "memory/2026-01-05.md", "Rotated the logs on the build host.\n")

        reindexed = await cli(home, "memory", "reindex", "--agent", "ops")
        assert reindexed.returncode == 0, reindexed.stderr
        assert reindexed.stdout.decode().startswith("reindexed agent ops: 2 documents, 2 chunks (0 with a vector")
        answer = (await api(home, "POST", "/v1/memory/reindex", {"agent": None})).json()
        assert answer["status"]["agent"] == "default"
        assert answer["status"]["documents"] == 1 and answer["status"]["chunks"] == 2

        # The daily log of ops is found in ops's memory, and not in default's.
        (log,) = _hits(await _search(home, "--agent", "ops", "rotated logs"))
        assert log == ("memory/2026-01-05.md", 1, 1, "daily")
        assert _hits(await _search(home, "rotated logs")) == []

        status = await cli(home, "memory", "status")
        assert status.returncode == 0, status.stderr
        lines = status.stdout.decode().splitlines()
        assert lines[0].split() == ["AGENT", "DOCUMENTS", "CHUNKS", "EMBEDDED", "VECTOR", "MODEL", "EMBEDDER", "ERROR"]
        rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
        assert rows == {"default": ["1", "2", "0", "-", "-"], "ops": ["2", "2", "0", "-", "-"]}
        # Without an action, `memory` shows the status.
        assert (await cli(home, "memory")).stdout == status.stdout


async def test_bad_agents_users_and_limits_are_refused_saying_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("ok")) as model,
        running_daemon(write_config(tmp_path, model, extra=MEMORY), home),
    ):
        _write(home, "default", "MEMORY.md", FACTS)
        for args, why in [
            (["search", "--agent", "nosuch", "key"], "there is no agent 'nosuch' (agents: default); create it with "
             "`beamclaw agent create nosuch`"),
            (["reindex", "--agent", "nosuch"], "there is no agent 'nosuch'"),
            (["search", "--agent", "../default", "key"], "invalid agent name '../default'"),
            (["search", "--user", "local:ada\x1b]0;owned\x07", "key"], "a user id must be printable"),
            (["search", "--user", "api_key=hunter2hunter2", "key"], "a user id looks like a credential"),
            (["search", "--user", "", "key"], '"user" must be a non-empty string'),
            (["search", "x" * 1001], "a memory query is at most 1000 characters"),
        ]:  # fmt: skip
            refused = await cli(home, "memory", *args)
            assert refused.returncode == 1, (args, refused)
            assert why in refused.stderr.decode() and "Traceback" not in refused.stderr.decode(), (args, refused.stderr)
        # What the CLI checks, the daemon checks too.
        bad: list[tuple[dict[str, Any], str]] = [
            ({"limit": 51}, '"limit" must be a whole number from 1 to 50'),
            ({"limit": "yes"}, '"limit" must be a whole number from 1 to 50'),
            ({"user": ""}, '"user" must be a non-empty string'),
            ({"q": ""}, '"q" must say what to look for'),
        ]
        for params, why in bad:
            async with api_client(home) as client:
                answer = await client.get("/v1/memory/search", params={"q": "key", **params})
            assert answer.status_code == 400 and why in answer.json()["error"]["message"], (params, answer.text)
        reindex = await api(home, "POST", "/v1/memory/reindex", {"agent": 7})
        assert reindex.status_code == 400
        assert '"agent" must be the name of an agent' in reindex.json()["error"]["message"]
        # The daemon still answers after all that.
        assert _hits(await _search(home, "blue drawer"))


@pytest.mark.parametrize("limit", ["0", "51", "many"])
def test_a_limit_out_of_range_is_refused_before_asking_the_daemon(
    limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["memory", "search", "--limit", limit, "key"])
    assert exit_.value.code == 2 and "argument --limit:" in capsys.readouterr().err


async def test_with_memory_disabled_a_search_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model, extra="[memory]\nenabled = false\n")
        async with running_daemon(config, home):
            for args in (["search", "key"], ["status"], ["reindex"]):
                refused = await cli(home, "memory", *args)
                assert refused.returncode == 1
                assert "the memory app is not running" in refused.stderr.decode(), (args, refused.stderr)


async def test_a_conversation_is_found_by_its_own_user_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(Reply("Noted: the locker code is 4417."), repeat=Reply("ok")) as model,
        running_daemon(write_config(tmp_path, model, extra=MEMORY), home),
    ):
        chatted = await cli(home, "chat", "my locker code is 4417")  # as local:ada (BEAMCLAW_USER)
        assert chatted.returncode == 0, chatted.stderr
        with trio.fail_after(30):  # the exchange reaches the memory app after the reply
            while not (mine := _hits(await _search(home, "--user", "local:ada", "locker code"))):
                await trio.sleep(0.2)
        ((path, _, _, kind),) = mine
        assert path.startswith("conversations/") and kind == "conversation"
        for others in (("--user", "local:bob"), ()):
            out = (await _search(home, *others, "locker code")).stdout.decode()
            assert "4417" not in out and _HIT.search(out) is None
