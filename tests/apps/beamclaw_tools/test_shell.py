"""`bash` and `terminal` run real commands, in the bubblewrap jail (the default) and unjailed
(``isolation = "none"``): workspace, timeout, output cap, no secrets, and a refusal that
names the fix when no jail can run."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from beamclaw_sandbox import BubblewrapJail, parse_sandbox_config
from beamclaw_tools import (
    BashTool,
    ShellRules,
    TerminalTool,
    ToolContext,
    ToolSession,
    Verdict,
    builtin_tools,
    run_tool,
)
from beamclaw_tools._tree import ToolsConfig
from tests.support.bubblewrap import bubblewrap_problem

ISOLATIONS = [
    pytest.param(
        "bubblewrap",
        marks=pytest.mark.skipif(
            bubblewrap_problem() is not None, reason=f"bubblewrap cannot jail commands here: {bubblewrap_problem()}"
        ),
    ),
    "none",
]


@pytest.fixture(params=ISOLATIONS)
def isolation(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def jailed(context: ToolContext) -> ToolContext:
    """The tools' context as the agent loop makes it: with the sandbox app's bubblewrap jail."""
    return attrs.evolve(context, jails={"bubblewrap": BubblewrapJail(parse_sandbox_config({}))})


async def test_runs_in_the_workspace_and_reports_the_exit_code(
    jailed: ToolContext, session: ToolSession, isolation: str
) -> None:
    result = await run_tool(BashTool(isolation=isolation), {"command": "pwd; echo oops >&2; exit 3"}, session, jailed)
    assert result.is_error
    assert result.text.startswith("exit code: 3\n")
    assert str(jailed.workspace) in result.text and "[stderr]\noops" in result.text


async def test_a_denied_command_does_not_run(jailed: ToolContext, session: ToolSession, isolation: str) -> None:
    tool = BashTool(isolation=isolation)
    assert tool.refusal_reason({"command": "touch marker && rm -rf ~"}, jailed) == (
        "command refused: `rm -rf ~` matches the deny rule 'rm * ~ *'"
    )
    result = await run_tool(tool, {"command": "touch marker && rm -rf ~"}, session, jailed)
    assert result.is_error and result.text.startswith("command refused: `rm -rf ~`")
    assert not (jailed.workspace / "marker").exists()


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ('python3 -c \'import subprocess; print(subprocess.run(["id", "-u"]).returncode)\'', "0"),
        ("crontab -l || echo no-crontab", "no-crontab"),
        ("docker ps || echo no-docker", "no-docker"),
    ],
)
async def test_harmless_commands_the_old_deny_list_refused_run_in_the_jail(
    jailed: ToolContext, session: ToolSession, command: str, output: str
) -> None:
    """They ask under supervised (not read-only) and run in the jail under full."""
    if bubblewrap_problem() is not None:
        pytest.skip(f"bubblewrap cannot jail commands here: {bubblewrap_problem()}")
    tool = BashTool()
    verdict = tool.command_verdict({"command": command}, ())
    assert verdict.denied is None and not verdict.allowed
    result = await run_tool(tool, {"command": command}, session, jailed)
    assert "command refused" not in result.text and output in result.text.splitlines()


async def test_timeout_kills_the_whole_process_group(jailed: ToolContext, session: ToolSession, isolation: str) -> None:
    command = "(sleep 5; touch late) & sleep 5"
    result = await run_tool(BashTool(timeout=0.5, isolation=isolation), {"command": command}, session, jailed)
    assert result.is_error and "timed out after 0.5 s" in result.text
    assert not (jailed.workspace / "late").exists()


async def test_what_a_command_leaves_running_is_killed_when_it_ends(
    jailed: ToolContext, session: ToolSession, isolation: str
) -> None:
    command = "(sleep 1; touch late) >/dev/null 2>&1 & echo started"
    result = await run_tool(BashTool(isolation=isolation), {"command": command}, session, jailed)
    assert result.text == "exit code: 0\nstarted"
    await trio.sleep(1.5)
    assert not (jailed.workspace / "late").exists()


async def test_output_is_capped_keeping_its_start_and_end(
    jailed: ToolContext, session: ToolSession, isolation: str
) -> None:
    tool = BashTool(output_limit=100, isolation=isolation)
    command = "head -c 5000 /dev/zero | tr '\\0' a; echo; echo THE-END"
    result = await run_tool(tool, {"command": command}, session, jailed)
    assert "[... 4909 bytes left out ...]" in result.text
    assert result.text.endswith("THE-END") and len(result.text) < 300


async def test_the_daemons_secrets_are_not_in_the_environment(
    jailed: ToolContext, session: ToolSession, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-verysecretvalue")
    result = await run_tool(BashTool(isolation=isolation), {"command": "env"}, session, jailed)
    assert "OPENROUTER_API_KEY" not in result.text and "verysecret" not in result.text
    assert f"HOME={jailed.workspace}" in result.text


async def test_bad_arguments_are_a_clear_error(jailed: ToolContext, session: ToolSession) -> None:
    result = await run_tool(BashTool(), {"cmd": "ls"}, session, jailed)
    assert result.is_error
    assert "'command' is a required property" in result.text and "'cmd' was unexpected" in result.text


async def test_terminal_keeps_the_working_directory_per_session(
    jailed: ToolContext, session: ToolSession, isolation: str
) -> None:
    terminal = TerminalTool(isolation=isolation)
    (jailed.workspace / "sub").mkdir()
    await run_tool(terminal, {"command": "cd sub"}, session, jailed)
    here = await run_tool(terminal, {"command": "pwd"}, session, jailed)
    assert here.text == f"exit code: 0\n{jailed.workspace / 'sub'}"
    other = ToolSession(id="s2", agent_id="default", user_id="u")
    there = await run_tool(terminal, {"command": "pwd"}, other, jailed)
    assert Path(there.text.splitlines()[1]) == jailed.workspace
    assert os.getcwd() != str(jailed.workspace / "sub")


async def test_terminal_keeps_its_directory_past_a_capped_output(
    jailed: ToolContext, session: ToolSession, isolation: str
) -> None:
    terminal = TerminalTool(output_limit=1000, isolation=isolation)
    (jailed.workspace / "sub").mkdir()
    result = await run_tool(terminal, {"command": "cd sub && seq 1 5000"}, session, jailed)
    assert "bytes left out" in result.text and "__BEAMCLAW_CWD__" not in result.text
    here = await run_tool(terminal, {"command": "pwd"}, session, jailed)
    assert here.text == f"exit code: 0\n{jailed.workspace / 'sub'}"


async def test_a_directory_that_has_gone_sends_the_terminal_back_to_the_workspace(
    jailed: ToolContext, session: ToolSession, isolation: str
) -> None:
    terminal = TerminalTool(isolation=isolation)
    await run_tool(terminal, {"command": "mkdir gone && cd gone"}, session, jailed)
    (jailed.workspace / "gone").rmdir()
    here = await run_tool(terminal, {"command": "pwd"}, session, jailed)
    assert here.text == f"exit code: 0\n{jailed.workspace}"


async def test_without_a_jail_the_command_is_refused_naming_the_fix(context: ToolContext, session: ToolSession) -> None:
    """No sandbox app (no jail in the context): refused, never run unjailed."""
    for tool in (BashTool(), TerminalTool()):
        result = await run_tool(tool, {"command": "touch ran"}, session, context)
        assert result.is_error
        name = tool.definition.name
        assert result.text.startswith(f"command refused: {name} runs commands in a bubblewrap jail")
        assert f'[tools.{name}] isolation = "none"' in result.text
    assert not (context.workspace / "ran").exists()


async def test_a_jail_that_cannot_run_here_refuses_naming_the_fix(context: ToolContext, session: ToolSession) -> None:
    config = parse_sandbox_config({"bubblewrap": {"bwrap": "/nonexistent/bwrap"}})
    broken = attrs.evolve(context, jails={"bubblewrap": BubblewrapJail(config)})
    result = await run_tool(BashTool(), {"command": "touch ran"}, session, broken)
    assert result.is_error
    assert "bubblewrap is not installed (no '/nonexistent/bwrap' on PATH)" in result.text
    assert "apt install bubblewrap" in result.text and 'isolation = "none"' in result.text
    assert not (context.workspace / "ran").exists()


async def test_docker_isolation_without_a_docker_jail_is_refused(context: ToolContext, session: ToolSession) -> None:
    result = await run_tool(BashTool(isolation="docker"), {"command": "true"}, session, context)
    assert result.is_error and "runs commands in a docker jail, and none is available here" in result.text


def test_isolation_is_configured_per_tool() -> None:
    from beamclaw_base import ConfigError, structure_config

    config = structure_config({"bash": {"isolation": "none"}}, ToolsConfig, "tools")
    bash, terminal = builtin_tools(config)[:2]
    assert isinstance(bash, BashTool) and bash.isolation == "none"
    assert isinstance(terminal, TerminalTool) and terminal.isolation == "bubblewrap"
    with pytest.raises(ConfigError, match=r"tools.terminal.isolation: chroot is not one of"):
        structure_config({"terminal": {"isolation": "chroot"}}, ToolsConfig, "tools")
    with pytest.raises(ValueError, match="isolation must be one of bubblewrap, docker, none"):
        BashTool(isolation="chroot")  # type: ignore[arg-type]


async def test_a_long_command_is_judged_off_the_event_loop(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long line is split in a worker thread: the event loop serves other conversations."""
    judged_in: list[str] = []
    real = ShellRules.judge

    def recording(rules: ShellRules, command: str, also: Any = ()) -> Verdict:
        judged_in.append(threading.current_thread().name)
        return real(rules, command, also)

    monkeypatch.setattr(ShellRules, "judge", recording)
    tool = BashTool(isolation="none")
    await run_tool(tool, {"command": "echo short"}, session, context)
    await run_tool(tool, {"command": "echo long; " * 1000}, session, context)
    main = threading.main_thread().name
    assert judged_in[0] == main and judged_in[1] != main
