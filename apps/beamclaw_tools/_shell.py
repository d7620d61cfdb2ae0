"""The `bash` and `terminal` tools: a command in a jail, with a timeout and an output cap.

The jail is the boundary: ``isolation`` names the backend ("bubblewrap" by default,
"docker"), which the agent loop passes in the `ToolContext`. With no working backend
the tools refuse, naming the fix, rather than run a command unjailed; only
``isolation = "none"``, written on purpose, runs it directly (`Unjailed`). What runs
inside is the user's policy, the tool's `ShellRules` (``[tools.bash] allow / ask /
deny``): the agent loop reads them through ``refusal_reason`` (a deny rule: refused
before anyone is asked, and again here before anything runs) and ``command_verdict``
(which simple commands make the call ask). `terminal` also keeps each session's
working directory between calls, as a terminal would.
"""

from __future__ import annotations

import shlex
import signal
from typing import Any, Final, Literal

import attrs
import trio

from beamclaw_base import Jail, JailResult, JailUnavailable, Unjailed

from ._shell_rules import Pattern, ShellRules, Verdict
from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSession, object_schema

Isolation = Literal["bubblewrap", "docker", "none"]
ISOLATIONS: Final = ("bubblewrap", "docker", "none")

_CWD_MARK: Final = "\n__BEAMCLAW_CWD__"
_UNJAILED: Final = Unjailed()
#: Commands up to this length are judged on the event loop (well under a millisecond).
_INLINE_CHECK_CHARS: Final = 2_000


def _exit_text(code: int) -> str:
    if code >= 0:
        return f"exit code: {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"exit code: {code} (killed by {name})"


def jail_report(result: JailResult, timeout: float) -> ToolResult:
    """What the model reads of a jailed command: how it ended, then stdout and stderr."""
    stdout = result.stdout.decode(errors="replace").rstrip("\n")
    stderr = result.stderr.decode(errors="replace").rstrip("\n")
    if result.timed_out:
        parts = [f"the command timed out after {timeout:g} s and was killed, with every process it started"]
    else:
        assert result.exit_code is not None
        parts = [_exit_text(result.exit_code)]
    if stdout:
        parts.append(stdout)
    if stderr:
        parts.append("[stderr]\n" + stderr)
    return ToolResult("\n".join(parts), is_error=result.timed_out or result.exit_code != 0)


def _parameters(extra: str) -> dict[str, Any]:
    return object_schema(
        {
            "command": {"type": "string", "minLength": 1, "description": f"The shell command to run{extra}."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Time limit (capped by config)."},
        },
        ("command",),
    )


def _no_jail(tool: str, isolation: str) -> str:
    return (
        f"command refused: {tool} runs commands in a {isolation} jail, and none is available here "
        f"(the sandbox app is not running). Start the daemon with its sandbox app, or, to run commands "
        f'unjailed on purpose, set [tools.{tool}] isolation = "none" in config.toml'
    )


@attrs.define
class BashTool:
    """Run one shell command in the agent's workspace, in the jail ``isolation`` names."""

    timeout: float = 30.0
    output_limit: int = 16_000
    requires_approval: bool = True
    #: ``read_only`` runs what the allow rules cover (`command_verdict`), nothing else.
    min_autonomy: Autonomy = Autonomy.READ_ONLY
    isolation: Isolation = "bubblewrap"
    rules: ShellRules = ShellRules()

    def __attrs_post_init__(self) -> None:
        if self.isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {self.isolation!r}")

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "bash",
            "Run a bash command in the agent's workspace and return its exit code and output.",
            _parameters(""),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        command, timeout = await self._checked(args)
        return jail_report(await self._run(command, context, timeout), timeout)

    def refusal_reason(self, args: dict[str, Any], context: ToolContext) -> str | None:
        """Why no answer may let this command run: a simple command of it matches ``deny``."""
        denied = self.rules.judge(args["command"]).denied
        return None if denied is None else f"command refused: {denied}"

    def command_verdict(self, args: dict[str, Any], allowed: tuple[Pattern, ...]) -> Verdict:
        """The rules' verdict on this command, with *allowed* (the session's ``/always``) added to ``allow``."""
        return self.rules.judge(args["command"], allowed)

    async def _checked(self, args: dict[str, Any]) -> tuple[str, float]:
        """The command, refused if a deny rule matches it, and its time limit.

        A long command is judged in a worker thread, which the event loop (every other
        conversation) need not wait for.
        """
        command: str = args["command"]
        if len(command) > _INLINE_CHECK_CHARS:
            verdict = await trio.to_thread.run_sync(self.rules.judge, command)
        else:
            verdict = self.rules.judge(command)
        if verdict.denied is not None:
            raise ToolError(f"command refused: {verdict.denied}")
        return command, min(float(args.get("timeout_seconds", self.timeout)), self.timeout)

    def jail(self, context: ToolContext) -> Jail:
        """The jail this tool's commands run in (skill scripts run in the same one)."""
        if self.isolation == "none":
            return _UNJAILED
        jail = context.jails.get(self.isolation)
        if jail is None:
            raise ToolError(_no_jail(self.definition.name, self.isolation))
        return jail

    async def _run(self, script: str, context: ToolContext, timeout: float) -> JailResult:
        jail = self.jail(context)
        context.workspace.mkdir(parents=True, exist_ok=True)
        try:
            return await jail.run(
                ["bash", "-c", script],
                workspace=context.workspace,
                timeout=timeout,
                output_limit=self.output_limit,
                readonly=context.readonly_dirs,
            )
        except JailUnavailable as exc:
            raise ToolError(f"command refused: {exc}") from None


@attrs.define
class TerminalTool(BashTool):
    """A terminal per session: like `bash`, but ``cd`` carries over to the next call."""

    _cwd: dict[str, str] = attrs.field(factory=dict, init=False)

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "terminal",
            "Run a command in this conversation's terminal; the working directory persists between calls.",
            _parameters(" (cd persists)"),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        command, timeout = await self._checked(args)
        workspace = str(context.workspace)
        # The jail starts in the workspace; the script goes back to where the last call
        # left off (a folder that has gone since means the workspace), and prints where
        # it ends up last, after the command's own output.
        cwd = self._cwd.get(session.id, workspace)
        mark = _CWD_MARK.encode("unicode_escape").decode()
        script = (
            f"cd -- {shlex.quote(cwd)} 2>/dev/null || cd -- {shlex.quote(workspace)}\n"
            f'{command}\n__rc=$?; printf "{mark}%s" "$PWD"; exit $__rc'
        )
        result = await self._run(script, context, timeout)
        text = result.stdout.decode(errors="replace")
        stdout, found, new_cwd = text.rpartition(_CWD_MARK)
        if found and new_cwd:
            self._cwd[session.id] = new_cwd
            result = attrs.evolve(result, stdout=stdout.encode())
        return jail_report(result, timeout)
