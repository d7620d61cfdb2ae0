"""The `bash` and `terminal` tools: a command in a subprocess, with a timeout and an output cap.

Both refuse what the deny list refuses before anything runs. The subprocess gets a
minimal environment (never the daemon's secrets) and its own process group, so a
timeout kills everything it started. `terminal` also keeps each session's working
directory between calls, as a terminal would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from ._shell_policy import check_command
from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSession, object_schema

_SAFE_ENV: Final = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "USER", "LOGNAME", "SHELL")
_CWD_MARK: Final = "\n__BEAMCLAW_CWD__"


def _child_env(workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _SAFE_ENV}
    env["HOME"] = str(workspace)
    return env


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... output truncated: {len(text) - limit} more characters]"


async def _kill_group(process: trio.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@attrs.frozen
class _Outcome:
    returncode: int | None
    stdout: str
    stderr: str


async def run_shell(script: str, cwd: Path, timeout: float) -> _Outcome:
    """Run *script* with ``bash -c`` in *cwd*; ``returncode`` is None when it timed out."""
    with trio.move_on_after(timeout):
        done = await trio.run_process(
            ["bash", "-c", script],
            cwd=cwd,
            env=_child_env(cwd),
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            start_new_session=True,
            deliver_cancel=_kill_group,
        )
        return _Outcome(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
    return _Outcome(None, "", "")


def _report(outcome: _Outcome, timeout: float, limit: int) -> ToolResult:
    if outcome.returncode is None:
        return ToolResult(f"the command timed out after {timeout:g} s and was killed", is_error=True)
    parts = [f"exit code: {outcome.returncode}"]
    if outcome.stdout:
        parts.append(_cap(outcome.stdout.rstrip("\n"), limit))
    if outcome.stderr:
        parts.append("[stderr]\n" + _cap(outcome.stderr.rstrip("\n"), limit))
    return ToolResult("\n".join(parts), is_error=outcome.returncode != 0)


def _parameters(extra: str) -> dict[str, Any]:
    return object_schema(
        {
            "command": {"type": "string", "minLength": 1, "description": f"The shell command to run{extra}."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Time limit (capped by config)."},
        },
        ("command",),
    )


@attrs.define
class BashTool:
    """Run one shell command in the agent's workspace."""

    timeout: float = 30.0
    output_limit: int = 16_000
    requires_approval: bool = True
    min_autonomy: Autonomy = Autonomy.SUPERVISED

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "bash",
            "Run a bash command in the agent's workspace and return its exit code and output.",
            _parameters(""),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        command, timeout = self._checked(args)
        context.workspace.mkdir(parents=True, exist_ok=True)
        return _report(await run_shell(command, context.workspace, timeout), timeout, self.output_limit)

    def _checked(self, args: dict[str, Any]) -> tuple[str, float]:
        """The command, refused by the deny list if it must be, and its time limit."""
        command: str = args["command"]
        reason = check_command(command)
        if reason is not None:
            raise ToolError(f"command refused: {reason}")
        return command, min(float(args.get("timeout_seconds", self.timeout)), self.timeout)


@attrs.define
class TerminalTool(BashTool):
    """A terminal per session: like `bash`, but ``cd`` carries over to the next call."""

    _cwd: dict[str, Path] = attrs.field(factory=dict, init=False)

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "terminal",
            "Run a command in this conversation's terminal; the working directory persists between calls.",
            _parameters(" (cd persists)"),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        command, timeout = self._checked(args)
        context.workspace.mkdir(parents=True, exist_ok=True)
        cwd = self._cwd.get(session.id, context.workspace)
        if not cwd.is_dir():
            cwd = context.workspace
        script = f'{command}\n__rc=$?; printf "{_CWD_MARK.encode("unicode_escape").decode()}%s" "$PWD"; exit $__rc'
        outcome = await run_shell(script, cwd, timeout)
        stdout, mark, new_cwd = outcome.stdout.rpartition(_CWD_MARK)
        if mark:
            self._cwd[session.id] = Path(new_cwd)
            outcome = attrs.evolve(outcome, stdout=stdout)
        return _report(outcome, timeout, self.output_limit)
