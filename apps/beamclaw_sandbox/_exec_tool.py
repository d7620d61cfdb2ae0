"""The ``exec`` tool: Python or shell code run in the warm container of the caller's scope.

Instead of many tool calls through the context window, the model writes one script
that finds tools (``search_tools``, ``/tools``), calls them locally through the bridge
(``call_tool``) and prints only what matters. Registered by the sandbox app itself
(with `keep_registered`) when Docker code execution is enabled.
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
                    "code": {"type": "string", "description": "The whole script."},
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
                required=("code",),
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

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        config = self.config
        timeout = float(args.get("timeout_seconds") or config.timeout_seconds)
        timeout = min(timeout, config.timeout_seconds)
        shared = config.scope == "shared"
        workspace = None if shared or config.workspace_mount == "none" else context.workspace
        try:
            sandbox = await ensure_sandbox(sandbox_key(config.scope, session), workspace)
        except SandboxUnavailable as exc:
            raise ToolError(str(exc)) from None
        request = ExecRequest(
            args.get("language", "python"), args["code"], timeout, context.call_tool,
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
