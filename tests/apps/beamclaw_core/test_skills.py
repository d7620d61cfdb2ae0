"""Skills: precedence, eligibility, {baseDir}, prompt summaries or search, hot reload, the tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trio

import beamclaw_core as core
import supervision as sv
from beamclaw_core._skill_catalog import SKILLS, agent_skills
from beamclaw_core._skill_index import SkillIndex
from beamclaw_core._skills import Skill, discover, parse_skill, prompt_block
from beamclaw_tools import ToolContext, ToolSession, lookup_tool, run_tool
from tests.support.model_server import Reply

from .conftest import RunCore

BUNDLED = Path(__file__).resolve().parents[3] / "skills"


def write_skill(folder: Path, name: str, description: str, requires: str = "", body: str = "Body.") -> Path:
    (folder / name).mkdir(parents=True, exist_ok=True)
    path = folder / name / "SKILL.md"
    meta = f"metadata:\n  requires:\n{requires}" if requires else ""
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{meta}---\n{body}\n")
    return path


def test_later_places_win(tmp_path: Path) -> None:
    for place in ("bundled", "home", "agent"):
        write_skill(tmp_path / place, "shared", f"from {place}")
    write_skill(tmp_path / "bundled", "only-bundled", "b")
    skills, problems = discover([(p, tmp_path / p) for p in ("bundled", "home", "agent")])
    assert problems == []
    assert skills["shared"].description == "from agent" and skills["shared"].source == "agent"
    assert skills["only-bundled"].source == "bundled"


def test_eligibility_names_what_is_missing(tmp_path: Path, monkeypatch: object) -> None:
    write_skill(tmp_path, "needs-bin", "x", "    bins: [surely-not-installed-xyz]\n")
    write_skill(tmp_path, "needs-env", "x", "    env: [SKILL_TEST_TOKEN_UNSET]\n")
    write_skill(tmp_path, "needs-os", "x", "    os: [darwin]\n")
    write_skill(tmp_path, "fine", "usable", "    bins: [sh]\n    os: [linux]\n")
    skills, _ = discover([("home", tmp_path)])
    assert skills["needs-bin"].missing == ["needs the program 'surely-not-installed-xyz', which is not on PATH"]
    assert skills["needs-env"].missing == ["needs the environment variable SKILL_TEST_TOKEN_UNSET"]
    assert skills["needs-os"].missing == ["runs on darwin, not linux"]
    assert skills["fine"].eligible
    block = prompt_block(skills.values())
    assert "- fine: usable" in block and "needs-" not in block


def test_base_dir_and_bad_files(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "tool", "t", body="Run {baseDir}/run.sh now.")
    assert parse_skill(path, "home").body == f"Run {tmp_path / 'tool'}/run.sh now."
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("no front matter here")
    (tmp_path / "badyaml").mkdir()
    (tmp_path / "badyaml" / "SKILL.md").write_text("---\nname: [unclosed\n---\nx")
    (tmp_path / "noname").mkdir()
    (tmp_path / "noname" / "SKILL.md").write_text("---\ndescription: x\n---\nx")
    skills, problems = discover([("home", tmp_path)])
    assert list(skills) == ["tool"]
    assert len(problems) == 3
    assert any("broken/SKILL.md: no front matter" in p for p in problems)
    assert any("badyaml/SKILL.md: front matter is not valid YAML" in p for p in problems)
    assert any("noname/SKILL.md: 'name' must be" in p for p in problems)


def test_many_skills_point_at_search_which_ranks_by_bm25(tmp_path: Path) -> None:
    for i in range(24):
        write_skill(tmp_path, f"skill-{i}", f"filler number {i}")
    write_skill(tmp_path, "weather", "Forecast the weather and rain for a city")
    skills, _ = discover([("home", tmp_path)])
    block = prompt_block(skills.values())
    assert "You have 25 skills" in block and "skill_search" in block and "- weather" not in block
    hits = SkillIndex(skills.values()).search("will it rain in Paris", 3)
    assert hits[0][0] == "weather"


def test_the_bundled_skills_are_valid_and_documented() -> None:
    skills, problems = discover([("bundled", BUNDLED)])
    assert problems == []
    assert {"git-digest", "system-health", "html-to-text"} <= set(skills)
    for skill in skills.values():
        assert str(skill.path) in skill.body  # {baseDir} pointed at its scripts
        scripts = [p for p in skill.path.iterdir() if p.name != "SKILL.md"]
        assert scripts and all(p.name in skill.body for p in scripts)


async def test_changes_are_picked_up_without_a_restart(run_core: RunCore) -> None:
    async with run_core(Reply("ok"), skills_watch_debounce_ms=50) as r:
        await r.open(agent="ada")
        assert "fresh" not in (await agent_skills("ada"))[0]
        write_skill(r.home / "skills", "fresh", "A brand new skill")
        assert await _eventually(lambda skills: "fresh" in skills)
        write_skill(r.home / "agents" / "ada" / "skills", "fresh", "The agent's own version")
        assert await _eventually(lambda skills: skills["fresh"].description == "The agent's own version")
        assert sv.whereis(SKILLS) is not None


async def _eventually(check: Callable[[dict[str, Skill]], bool]) -> bool:
    """Whether *check* holds for the agent's skills within five seconds (the watcher is real)."""
    with trio.move_on_after(5):
        while not check((await agent_skills("ada"))[0]):
            await trio.sleep(0.05)
        return True
    return False


async def test_the_skill_tools(run_core: RunCore) -> None:
    async with run_core(bundled_skills_dir=str(BUNDLED)) as r:
        await r.open(agent="ada")
        session = ToolSession("s", "ada", "u")
        context = ToolContext(r.home / "agents" / "ada", r.home)
        search, read = await lookup_tool("skill_search"), await lookup_tool("read_skill")
        assert search is not None and read is not None
        found = await run_tool(search, {"query": "git commits repository"}, session, context)
        assert found.text.splitlines()[0].startswith("- 📜 git-digest:")
        body = await run_tool(read, {"name": "git-digest"}, session, context)
        assert body.text.startswith(f"# git-digest (folder {BUNDLED / 'git-digest'})") and "digest.sh" in body.text
        missing = await run_tool(read, {"name": "nope"}, session, context)
        assert missing.is_error and "no skill called 'nope'" in missing.text


async def test_eligible_skills_are_in_the_system_prompt(run_core: RunCore) -> None:
    async with run_core(Reply("ok"), bundled_skills_dir=str(BUNDLED)) as r:
        await core.send_message(await r.open(), "hi", core.CollectingChannel())
        system = r.model.requests[0]["messages"][0]["content"]
        assert "<skills>" in system and "git-digest" in system and "read_skill" in system
