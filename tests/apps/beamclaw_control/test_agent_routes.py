"""The agents, their skills and the usage report over the management API: what the
model calls cost per agent and day, prompt and completion apart, against the budget."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from beamclaw_base import StoreConfig
from tests.support.model_server import Reply

from .session_api import ALICE, VIEWER, serving, tokens  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("tokens")


async def test_usage_counts_each_agents_tokens_of_the_day_against_its_budget(
    tmp_path: Path, store_config: StoreConfig
) -> None:
    steps = (
        Reply("one", prompt_tokens=120, completion_tokens=30),
        Reply("two", prompt_tokens=200, completion_tokens=7),
    )
    async with serving(tmp_path, *steps, store=store_config, budgets={"default": 50_000}) as api:
        await api.chat(ALICE, text="first")
        await api.chat(ALICE, text="second", user="other")
        async with api.client(VIEWER) as viewer:
            report = (await viewer.get("/v1/usage?days=3")).json()
            assert (await viewer.get("/v1/usage?days=0")).status_code == 400
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    assert report["days"] == [
        {"day": today, "agent": "default", "prompt_tokens": 320, "completion_tokens": 37, "total_tokens": 357}
    ]
    assert report["budgets"] == [{"agent": "default", "daily_tokens": 50_000, "used_today": 357}]


async def test_without_a_budget_the_days_tokens_are_still_recorded(tmp_path: Path) -> None:
    async with serving(tmp_path, Reply("hi")) as api:
        await api.chat(ALICE, text="hello")
        async with api.client(VIEWER) as viewer:
            report = (await viewer.get("/v1/usage")).json()
    assert [(d["agent"], d["total_tokens"]) for d in report["days"]] == [("default", 15)]
    assert report["budgets"] == [{"agent": "default", "daily_tokens": None, "used_today": 15}]


async def test_a_viewer_lists_the_agents_and_their_skills(tmp_path: Path) -> None:
    skill = tmp_path / "agents" / "writer" / "skills" / "haiku" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: haiku\ndescription: Write a haiku.\n---\nFive, seven, five.\n")
    async with serving(tmp_path) as api, api.client(VIEWER) as viewer:
        agents = (await viewer.get("/v1/agents")).json()["agents"]
        assert agents == [{"name": "default", "default": True}, {"name": "writer", "default": False}]
        skills = (await viewer.get("/v1/skills")).json()["skills"]
        assert {"name": "haiku", "description": "Write a haiku.", "agent": "writer", "eligible": True} in skills
        assert not any(s["name"] == "haiku" and s["agent"] == "default" for s in skills)
