"""Every list command, run as a user's script runs it: the real CLI into a pipe.

A table into a pipe never cuts an id or a name (whatever COLUMNS says), and ``--json``
gives a program the whole of each row.
"""

from __future__ import annotations

import json
from pathlib import Path

import beamclaw_core as core
from beamclaw_base import StoreConfig
from tests.support.model_server import Reply, scripted_model

from .daemon import api, cli, running_daemon, write_config

#: A narrow terminal's width, as a shell exports it: a table into a pipe must ignore it.
_NARROW = {"COLUMNS": "20"}
_LONG_AGENT = "an-agent-name-wider-than-twenty"


async def _lines(home: Path, *args: str) -> list[list[str]]:
    done = await cli(home, *args, env=_NARROW)
    assert done.returncode == 0, done.stderr.decode()
    return [line.split() for line in done.stdout.decode().splitlines()]


async def _json(home: Path, *args: str) -> object:
    done = await cli(home, *args, "--json", env=_NARROW)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


async def test_the_daemon_lists_print_whole_ids_into_a_pipe_and_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model:
        config = write_config(tmp_path, model)
        core.Workspace.of(home, _LONG_AGENT).seed()
        async with running_daemon(config, home):
            added = await cli(home, "scheduler", "add", "--agent", _LONG_AGENT, "--every", "1h", "--message", "hi")
            assert added.returncode == 0, added.stderr.decode()
            jobs = await _json(home, "scheduler", "list")
            assert isinstance(jobs, list) and len(jobs) == 1
            job = jobs[0]
            assert job["agent"] == _LONG_AGENT and job["message"] == "hi"
            rows = await _lines(home, "scheduler", "list")
            assert rows[0][:3] == ["ID", "AGENT", "USER"]
            assert rows[1][:3] == [job["id"], _LONG_AGENT, "local:ada"]

            opened = await api(home, "POST", "/v1/sessions", {"user": "local:ada", "agent": _LONG_AGENT})
            session_id = opened.json()["session"]["id"]
            assert len(session_id) > 12  # the terminal's short form would cut it
            sessions = await _json(home, "sessions")
            assert isinstance(sessions, list) and [s["id"] for s in sessions] == [session_id]
            rows = await _lines(home, "sessions")
            assert rows[1][:3] == [session_id, "local:ada", _LONG_AGENT]

            assert await _json(home, "mcp", "list") == []


async def test_the_lists_on_disk_print_whole_names_into_a_pipe_and_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    core.Workspace.of(home, _LONG_AGENT).seed()
    assert await _json(home, "agent", "list") == [{"name": _LONG_AGENT, "ritual_pending": True}]
    assert (await _lines(home, "agent", "list"))[1] == [_LONG_AGENT, "pending"]

    skill = home / "skills" / "a-skill-whose-name-is-wider-than-twenty-columns"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {skill.name}\ndescription: A long skill\n---\nUse it.\n")
    skills = await _json(home, "skills", "list")
    assert isinstance(skills, list)
    assert {"name": skill.name, "eligible": True, "source": "home", "description": "A long skill"}.items() <= next(
        s for s in skills if s["name"] == skill.name
    ).items()
    assert ["✓", skill.name, "home", "A", "long", "skill"] in await _lines(home, "skills", "list")

    db = core.open_session_store(StoreConfig(), home)
    code = db.transact(lambda tx: core.request_code(tx, "telegram", "tg:4242424242424242", "Ada Lovelace-Byron"))
    db.close()
    pairs = await _json(home, "pair")
    assert isinstance(pairs, dict) and pairs["paired"] == []
    assert [(p["code"], p["user_id"], p["display"]) for p in pairs["pending"]] == [
        (code, "tg:4242424242424242", "Ada Lovelace-Byron")
    ]
    assert ["telegram", code, "tg:4242424242424242", "Ada", "Lovelace-Byron", "59", "min"] in await _lines(home, "pair")
