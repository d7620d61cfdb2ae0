"""The ``exec`` tool: Python or shell code run in the warm container of the caller's scope.

Instead of many tool calls through the context window, the model writes one script
that finds tools (``search_tools``, ``/tools``), calls them locally through the bridge
(``call_tool``) and prints only what matters. Registered by the sandbox app itself
(with `keep_registered`) when Docker code execution is enabled.

A script that worked can be saved as a skill of the agent (``save_as``: see
`_skill_save`) and run again by name (``skill``). Saving adds a skill, whose
description enters every later system prompt: like ``write_file`` of a skill it asks
every time under ``supervised``, and is refused in an agent that serves several users
(the agent's skills are then the operator's).
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs

import supervision as sv
from beamclaw_tools import (
    Autonomy,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolSession,
    object_schema,
    tool_definitions,
)

from ._config import SandboxConfig
from ._registry import SandboxUnavailable, ensure_sandbox
from ._runtime import sandbox_key
from ._sandbox import ExecRequest, ExecResult
from ._skill_save import SKILL_NAME, Language, SkillNotSaved, load_skill, save_skill

#: Seconds beyond the script's own timeout that a call waits for its sandbox: a queue of
#: execs before it, a cold start.
_CALL_SLACK: Final = 90.0

_DESCRIPTION: Final = """Run Python 3 or shell code in an isolated container (no network, read-only system, \
a private /tmp, memory/CPU/process limits) and get its output. The agent's workspace is at /workspace \
({mount}). The container stays warm between calls ({scope} scope), so files in /tmp persist for a while.

Python scripts can call BeamClaw's tools locally instead of through the conversation: \
search_tools(query) lists matching tools, get_tool(name) gives a tool's JSON schema, \
call_tool(name, **arguments) runs it and returns its text (raising ToolCallError on failure). \
The same tools are described on disk under /tools (index.txt, <name>/schema.json). From shell: \
python3 -m beamclaw_bridge call NAME '{{"arg": "value"}}'. Process data in the script and print \
only the result you need. Personal data (emails, phone and card numbers, IBANs, keys) appears as \
tokens such as PII_EMAIL_..._1; pass tokens to tools unchanged."""


@final
@attrs.frozen
class ExecTool:
    """``exec`` for one configuration (its scope, workspace mount, timeout, network)."""

    config: SandboxConfig

    @property
    def definition(self) -> ToolDefinition:
        mount = {"none": "not mounted", "ro": "read-only", "rw": "writable"}[self.config.workspace_mount]
        if self.config.scope == "shared":
            mount = "not mounted: the container is shared by every agent"
        return ToolDefinition(
            "exec",
            _DESCRIPTION.format(mount=mount, scope=self.config.scope),
            object_schema(
                {
                    "code": {"type": "string", "description": "The whole script (or give 'skill')."},
                    "skill": {
                        "type": "string",
                        "pattern": SKILL_NAME,
                        "description": "Run a script saved earlier with save_as, by its skill name, instead of code.",
                    },
                    "save_as": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "pattern": SKILL_NAME},
                            "description": {"type": "string", "minLength": 1, "maxLength": 300},
                        },
                        "required": ["name", "description"],
                        "additionalProperties": False,
                        "description": "If the code runs successfully (exit 0), save it as a skill of this "
                        "name, to run again by name later.",
                    },
                    "language": {
                        "type": "string",
                        "enum": ["python", "shell"],
                        "default": "python",
                        "description": "python (python3) or shell (bash).",
                    },
                    "timeout_seconds": {
                        "type": "number",
                        "minimum": 1,
                        "maximum": self.config.timeout_seconds,
                        "description": f"Stop the script after this long (at most {self.config.timeout_seconds:g}).",
                    },
                },
            ),
        )

    @property
    def requires_approval(self) -> bool:
        # With no network the container can reach nothing but the bridge, whose calls
        # the policy and the loop check one by one; with a network it could reach out.
        # With the workspace writable it could rewrite the files that enter the system
        # prompt (AGENTS.md, MEMORY.md...), which nothing may do unasked, as bash asks.
        return self.config.network != "none" or self.config.workspace_mount == "rw"

    @property
    def min_autonomy(self) -> Autonomy:
        return Autonomy.SUPERVISED

    def approval_reason(self, args: dict[str, Any]) -> str | None:
        """Saving a skill asks every time: its description enters every later system prompt."""
        if "save_as" not in args:
            return None
        return f"saving the skill {args['save_as']['name']!r} adds it to every later system prompt: it needs approval"

    def refusal_reason(self, args: dict[str, Any], context: ToolContext) -> str | None:
        """An agent serving several users has the operator's skills only."""
        if "save_as" not in args or context.single_user:
            return None
        return (
            "this agent serves several users, so its skills are its operator's: a script cannot be saved as one "
            "(run it without save_as)"
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        if ("code" in args) == ("skill" in args):
            raise ToolError("give either 'code' (a script) or 'skill' (the name of a saved one)")
        try:
            language, code = (
                load_skill(context.workspace, args["skill"])
                if "skill" in args
                else (args.get("language", "python"), args["code"])
            )
        except SkillNotSaved as exc:
            raise ToolError(str(exc)) from None
        save = args.get("save_as")
        if save is not None and (refusal := self.refusal_reason(args, context)):
            raise ToolError(refusal)
        if save is not None and (context.workspace / "skills" / save["name"]).exists():
            raise ToolError(f"there is already a skill folder skills/{save['name']}: choose another name")
        result = await self._run(language, code, args.get("timeout_seconds"), session, context)
        if save is None or result.is_error:
            return result
        try:
            folder = save_skill(context.workspace, save["name"], save["description"], language, code)
        except SkillNotSaved as exc:
            return ToolResult(f"{result.text}\n[{exc}]", is_error=True)
        note = f"saved as the skill {save['name']!r} ({folder}/): run it again by name with run_skill, or exec skill"
        return ToolResult(f"{result.text}\n[{note}]")

    async def _run(
        self, language: Language, code: str, seconds: float | None, session: ToolSession, context: ToolContext
    ) -> ToolResult:
        """Run *code* in the caller's sandbox for at most *seconds* (the configured limit by default)."""
        config = self.config
        timeout = min(float(seconds or config.timeout_seconds), config.timeout_seconds)
        shared = config.scope == "shared"
        workspace = None if shared or config.workspace_mount == "none" else context.workspace
        try:
            sandbox = await ensure_sandbox(sandbox_key(config.scope, session), workspace)
        except SandboxUnavailable as exc:
            raise ToolError(str(exc)) from None
        request = ExecRequest(
            language, code, timeout, context.call_tool,
            await tool_definitions(),
        )  # fmt: skip
        try:
            result = await sv.call(sandbox, request, timeout=timeout + _CALL_SLACK, restart_wait=10.0)
        except sv.CallTimeout:
            raise ToolError(f"the sandbox did not answer within {timeout + _CALL_SLACK:g}s") from None
        except sv.ProcessExited as exc:
            raise ToolError(
                f"the sandbox stopped while running the code ({exc}); it restarts with a new container"
            ) from None
        return format_result(result)


def format_result(result: ExecResult) -> ToolResult:
    """What the model reads: how it ended, then stdout and stderr."""
    if result.timed_out:
        head = f"timed out after {result.duration_ms / 1000:.1f}s (killed)"
    elif result.exit_code == 137:
        head = "killed (exit 137: out of memory, or the process limit)"
    else:
        head = f"exit code {result.exit_code} ({result.duration_ms / 1000:.2f}s)"
    if result.bridge_calls or result.bridge_denied:
        head += f"; {result.bridge_calls} tool call(s) through the bridge, {result.bridge_denied} denied by policy"
    parts = [head]
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("stderr:\n" + result.stderr.rstrip("\n"))
    if result.truncated:
        parts.append("[output truncated: the script printed more than max_output_bytes]")
    return ToolResult("\n".join(parts), is_error=result.exit_code != 0)
