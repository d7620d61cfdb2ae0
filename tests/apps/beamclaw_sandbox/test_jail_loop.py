"""The agent loop hands bash its jail: a model's command runs in it, skill scripts too."""

from __future__ import annotations

from pathlib import Path

import beamclaw_core as core
from tests.apps.beamclaw_core import conftest as core_fixtures
from tests.apps.beamclaw_core.conftest import RunCore
from tests.support.bubblewrap import requires_bubblewrap
from tests.support.model_server import Call, Reply

pytestmark = requires_bubblewrap()
run_core = core_fixtures.run_core  # the core tests' running tree, with the sandbox app in it


async def _tool_output(r: object, handle: core.SessionHandle) -> str:
    history = await core.history(handle)
    return [m.content for m in history if m.role == "tool"][-1]


async def test_the_models_command_runs_in_the_jail(run_core: RunCore) -> None:
    command = "ls -A ../..; echo ppid=$PPID"
    steps = (Reply(tool_calls=(Call("bash", {"command": command}),)), Reply("done"))
    async with run_core(*steps, autonomy_level="full") as r:
        handle = await r.open()
        assert (await core.send_message(handle, "look around", core.CollectingChannel())).text == "done"
        output = await _tool_output(r, handle)
    # Of the data dir only the way to the workspace and the skills (read-only); its own pid namespace.
    assert output == "exit code: 0\nagents\nskills\nppid=1"


async def test_a_skills_script_runs_in_the_jail_read_only(run_core: RunCore, tmp_path: Path) -> None:
    skills = tmp_path / "bundled"
    (skills / "greet").mkdir(parents=True)
    (skills / "greet" / "SKILL.md").write_text("---\nname: greet\ndescription: Greets.\n---\nRun greet.sh\n")
    (skills / "greet" / "greet.sh").write_text('echo hello from greet; touch "$(dirname "$0")/x" || echo ro\n')
    steps = (Reply(tool_calls=(Call("bash", {"command": f"bash {skills}/greet/greet.sh"}),)), Reply("done"))
    async with run_core(*steps, autonomy_level="full", bundled_skills_dir=str(skills)) as r:
        handle = await r.open()
        await core.send_message(handle, "greet me", core.CollectingChannel())
        output = await _tool_output(r, handle)
    assert output.startswith("exit code: 0\nhello from greet\nro")
    assert not (skills / "greet" / "x").exists()
