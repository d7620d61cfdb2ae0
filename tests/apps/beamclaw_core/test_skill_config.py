"""Per-skill configuration (``[core.skills.NAME]``) and ``run_skill``, through the real loop and jail."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import beamclaw_core as core
import beamclaw_obs as obs
from beamclaw_sandbox._skill_save import save_skill
from tests.support.bubblewrap import requires_bubblewrap
from tests.support.model_server import Call, Reply

from .conftest import RunCore

pytestmark = requires_bubblewrap()

TOKEN = "skill-tok-8Qz4mW2xR7vK"
#: Prints what the script sees of SKILL_TOKEN: its digest (which no scrubber hides), then itself.
SHOW = 'printf %s "${SKILL_TOKEN:-unset}" | sha256sum | cut -c1-16; echo "raw ${SKILL_TOKEN:-unset}"\n'


def _skill(home: Path, name: str) -> None:
    folder = home / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: shows its token\n---\nRun show.sh.\n")
    (folder / "show.sh").write_text(SHOW)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def test_a_skills_env_reaches_its_scripts_alone(
    run_core: RunCore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_SKILL_TOKEN", TOKEN)
    home = tmp_path / "home"
    for name in ("greet", "other", "hidden"):
        _skill(home, name)
    skills = {"greet": {"env": {"SKILL_TOKEN": {"env": "TEST_SKILL_TOKEN"}}}, "hidden": {"enabled": False}}
    calls = (
        Call("run_skill", {"name": "greet", "script": "show.sh"}, id="r1"),
        Call("run_skill", {"name": "other", "script": "show.sh"}, id="r2"),
        Call("run_skill", {"name": "hidden", "script": "show.sh"}, id="r3"),
        Call("bash", {"command": f"bash {home / 'skills' / 'greet' / 'show.sh'}"}, id="r4"),
    )
    async with run_core(Reply(tool_calls=calls), Reply("done"), home=home, autonomy_level="full", skills=skills) as r:
        session = await r.open()
        result = await core.send_message(session, "run them", core.CollectingChannel())
        tools = [m["content"] for m in r.model.requests[1]["messages"] if m["role"] == "tool"]
        system = r.model.requests[0]["messages"][0]["content"]

    assert result.text == "done"
    greet, other, hidden, bash = tools
    assert greet.startswith("exit code: 0") and _digest(TOKEN) in greet  # the skill's script saw the value
    assert TOKEN not in greet and "raw [REDACTED" in greet  # ... and the scrubber knows it
    assert TOKEN not in obs.scrub(f"leaked {TOKEN}")
    assert _digest("unset") in other and "raw unset" in other  # another skill's script does not see it
    assert _digest("unset") in bash  # nor does bash running the very same script
    assert "no skill called 'hidden'" in hidden  # enabled = false leaves it out
    assert "greet" in system and "hidden" not in system


def test_a_skill_setting_is_checked_when_the_config_is_read() -> None:
    with pytest.raises(ValueError, match=r"core.skills.greet.enabled"):
        core.parse_core_config({"skills": {"greet": {"enabled": "perhaps"}}})


async def test_a_script_saved_from_exec_runs_again_by_name(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    code = "import sys\nprint('saved script ran with', *sys.argv[1:])\n"
    core.Workspace.of(home, "default").seed()
    save_skill(home / "agents" / "default", "echo-args", "Echoes its arguments", "python", code)
    call = Call("run_skill", {"name": "echo-args", "args": ["a b", "c"]}, id="s1")
    async with run_core(Reply(tool_calls=(call,)), Reply("done"), home=home, autonomy_level="full") as r:
        session = await r.open()
        await core.send_message(session, "run it again", core.CollectingChannel())
        (result,) = [m["content"] for m in r.model.requests[1]["messages"] if m["role"] == "tool"]
        system = r.model.requests[0]["messages"][0]["content"]
    assert result == "exit code: 0\nsaved script ran with a b c"
    assert "echo-args: Echoes its arguments" in system
