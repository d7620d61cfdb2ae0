"""`bash` and `terminal` run real subprocesses: workspace, timeout, output cap, no secrets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beamclaw_tools import BashTool, TerminalTool, ToolContext, ToolSession, run_tool


async def test_runs_in_the_workspace_and_reports_the_exit_code(context: ToolContext, session: ToolSession) -> None:
    result = await run_tool(BashTool(), {"command": "pwd; echo oops >&2; exit 3"}, session, context)
    assert result.is_error
    assert result.text.startswith("exit code: 3\n")
    assert str(context.workspace) in result.text and "[stderr]\noops" in result.text


async def test_a_refused_command_does_not_run(context: ToolContext, session: ToolSession) -> None:
    result = await run_tool(BashTool(), {"command": "touch marker && sudo ls"}, session, context)
    assert result.is_error and "command refused" in result.text
    assert not (context.workspace / "marker").exists()


async def test_timeout_kills_the_whole_process_group(context: ToolContext, session: ToolSession) -> None:
    command = "(sleep 5; touch late) & sleep 5"
    result = await run_tool(BashTool(timeout=0.5), {"command": command}, session, context)
    assert result.is_error and "timed out after 0.5 s" in result.text
    assert not (context.workspace / "late").exists()


async def test_output_is_capped(context: ToolContext, session: ToolSession) -> None:
    result = await run_tool(
        BashTool(output_limit=100), {"command": "head -c 5000 /dev/zero | tr '\\0' a"}, session, context
    )
    assert "[... output truncated: 4900 more characters]" in result.text
    assert len(result.text) < 300


async def test_the_daemons_secrets_are_not_in_the_environment(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-verysecretvalue")
    result = await run_tool(BashTool(), {"command": "env"}, session, context)
    assert "OPENROUTER_API_KEY" not in result.text and "verysecret" not in result.text
    assert f"HOME={context.workspace}" in result.text


async def test_bad_arguments_are_a_clear_error(context: ToolContext, session: ToolSession) -> None:
    result = await run_tool(BashTool(), {"cmd": "ls"}, session, context)
    assert result.is_error
    assert "'command' is a required property" in result.text and "'cmd' was unexpected" in result.text


async def test_terminal_keeps_the_working_directory_per_session(context: ToolContext, session: ToolSession) -> None:
    terminal = TerminalTool()
    (context.workspace / "sub").mkdir()
    await run_tool(terminal, {"command": "cd sub"}, session, context)
    here = await run_tool(terminal, {"command": "pwd"}, session, context)
    assert here.text == f"exit code: 0\n{context.workspace / 'sub'}"
    other = ToolSession(id="s2", agent_id="default", user_id="u")
    there = await run_tool(terminal, {"command": "pwd"}, other, context)
    assert Path(there.text.splitlines()[1]) == context.workspace
    assert os.getcwd() != str(context.workspace / "sub")
