"""Sandbox skills: saving a script that worked in ``exec`` and reading it back, without Docker
(the run itself is in test_docker.py); the saved skill is one the skill system reads."""

from __future__ import annotations

from pathlib import Path

import pytest

import beamclaw_core as core
from beamclaw_sandbox import ExecTool, parse_sandbox_config
from beamclaw_sandbox._skill_save import SkillNotSaved, load_skill, save_skill
from beamclaw_tools import ToolContext, ToolSession, approval_reason, refusal_reason, run_tool

CODE = "import sys\nprint('sum', sum(int(a) for a in sys.argv[1:]) if len(sys.argv) > 1 else 45)\n"


def test_a_saved_script_is_a_sandbox_script_skill(tmp_path: Path) -> None:
    assert save_skill(tmp_path, "sum-up", "Adds   numbers\nup", "python", CODE) == "skills/sum-up"
    skill = core.parse_skill(tmp_path / "skills" / "sum-up" / "SKILL.md", "agent")
    assert (skill.type, skill.script, skill.language) == ("sandbox_script", "script.py", "python")
    assert skill.description == "Adds numbers up" and "run_skill" in skill.body
    assert load_skill(tmp_path, "sum-up") == ("python", CODE)
    with pytest.raises(SkillNotSaved, match="already a skill folder skills/sum-up"):
        save_skill(tmp_path, "sum-up", "again", "shell", "echo replaced")
    assert load_skill(tmp_path, "sum-up") == ("python", CODE)  # nothing stored was lost
    with pytest.raises(SkillNotSaved, match="no saved skill 'nope'"):
        load_skill(tmp_path, "nope")
    (tmp_path / "skills" / "plain").mkdir()
    (tmp_path / "skills" / "plain" / "SKILL.md").write_text("---\nname: plain\ndescription: d\n---\nText.\n")
    with pytest.raises(SkillNotSaved, match="not a saved sandbox script"):
        load_skill(tmp_path, "plain")


async def test_saving_asks_and_a_shared_agent_refuses_it(tmp_path: Path) -> None:
    tool = ExecTool(parse_sandbox_config({"enabled": True}))
    save = {"code": CODE, "save_as": {"name": "sum-up", "description": "Adds numbers"}}
    assert approval_reason(tool, save) is not None and approval_reason(tool, {"code": CODE}) is None
    shared = ToolContext(workspace=tmp_path / "ws", data_dir=tmp_path)
    assert "serves several users" in str(refusal_reason(tool, save, shared))
    assert refusal_reason(tool, save, ToolContext(tmp_path / "ws", tmp_path, single_user=True)) is None
    session = ToolSession("s", "ada", "u")
    refused = await run_tool(tool, save, session, shared)  # refused before any container is asked for
    assert refused.is_error and "serves several users" in refused.text and not (tmp_path / "ws").exists()
    both = await run_tool(tool, {"code": CODE, "skill": "sum-up"}, session, shared)
    assert both.is_error and "either 'code'" in both.text
    missing = await run_tool(tool, {"skill": "sum-up"}, session, shared)
    assert missing.is_error and "no saved skill 'sum-up'" in missing.text
