"""The ``run_skill`` tool: a skill's script run by name, in the jail bash uses.

A skill's scripts are otherwise run by ``bash`` with their paths; this tool adds what
bash cannot: the skill's own ``[core.skills.NAME] env`` (plain text or ``{ env = "VAR" }``,
read from the daemon's environment when the script runs, each value registered with
the scrubber first), given to that skill's scripts alone and never to another's or to
bash. A ``type: sandbox_script`` skill (a script that worked in ``exec``, saved) names
its own script, so it runs again by name alone. It runs code, so it asks under
``supervised`` as bash does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import attrs
import trio

from beamclaw_base import Beneath, JailUnavailable, MissingSecret, PathRefused, resolve
from beamclaw_tools import (
    Autonomy,
    BashTool,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolSession,
    jail_report,
    lookup_tool,
    object_schema,
)

from ._skill_catalog import Settings, usable_skill
from ._skills import SCRIPT_LANGUAGES, Skill

#: Bytes kept of each of a script's stdout and stderr.
_OUTPUT_LIMIT: Final = 16_000


def _script(skill: Skill, named: str | None) -> tuple[str, str]:
    """The script to run (a regular file directly in the skill's folder) and its program."""
    script = named or skill.script
    if not script:
        raise ToolError(f"the skill {skill.name!r} has no script of its own: name one of its folder ({skill.path})")
    if "/" in script or script.startswith("."):
        raise ToolError(f"{script!r} is not a file name in the skill's folder")
    try:
        with Beneath(skill.path) as folder:
            kind = folder.kind(script)
    except (OSError, PathRefused) as exc:
        raise ToolError(f"the skill's folder cannot be read: {exc}") from None
    if kind != "file":
        raise ToolError(f"the skill {skill.name!r} has no script {script!r}")
    language = skill.language if script == skill.script else ("python" if script.endswith(".py") else "shell")
    return script, SCRIPT_LANGUAGES[language]


@attrs.define
class RunSkillTool:
    """*settings* give each skill's ``[core.skills.NAME]`` as the configuration is now."""

    settings: Settings
    requires_approval: bool = True
    min_autonomy: Autonomy = Autonomy.SUPERVISED

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "run_skill",
            "Run a skill's script by the skill's name (a saved sandbox_script skill needs nothing more), "
            "with the arguments given, in the same jail as bash; the skill's configured environment is "
            "given to it.",
            object_schema(
                {
                    "name": {"type": "string", "minLength": 1},
                    "script": {"type": "string", "description": "a file of the skill's folder; default: its own"},
                    "args": {"type": "array", "items": {"type": "string"}, "default": []},
                },
                ("name",),
            ),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        skill = await usable_skill(session.agent_id, args["name"])
        script, program = await trio.to_thread.run_sync(_script, skill, args.get("script"))
        try:
            env = {
                key: resolve(value, f"the skill {skill.name}") for key, value in self.settings(skill.name).env.items()
            }
        except MissingSecret as exc:
            raise ToolError(str(exc)) from None
        bash = await lookup_tool("bash")
        if not isinstance(bash, BashTool):
            raise ToolError("skill scripts run in the jail of the bash tool, which is disabled ([tools] disabled)")
        readonly = (*context.readonly_dirs, *([] if skill.path.is_relative_to(context.workspace) else [skill.path]))
        context.workspace.mkdir(parents=True, exist_ok=True)
        try:
            result = await bash.jail(context).run(
                [program, str(Path(skill.path) / script), *args.get("args", [])],
                workspace=context.workspace,
                timeout=bash.timeout,
                output_limit=_OUTPUT_LIMIT,
                readonly=readonly,
                env=env,
            )
        except JailUnavailable as exc:
            raise ToolError(f"the script was not run: {exc}") from None
        return jail_report(result, bash.timeout)
