"""The skills catalog process, its file watcher, and the skill tools.

The catalog discovers each agent's skills on first use and keeps them until a
SKILL.md changes: the watcher (watchfiles, debounced) tells it to forget, so edits
are picked up without a restart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs
import trio
import watchfiles
from loguru import logger

import supervision as sv
from beamclaw_tools import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, list_tools, object_schema

from ._config import SkillConfig
from ._runtime import RESTART_WAIT
from ._skill_index import SkillIndex
from ._skills import Skill, discover, skill_places

SKILLS: Final = "beamclaw_core.skills"
#: How often the skills watcher's thread looks whether it is to stop, and how long it
#: waits for more changes of one burst: its only wake-ups at rest (a few a second, in
#: the thread, without the event loop).
_STEP_MS: Final = 200


#: An agent's skills by name (eligible or not), and the SKILL.md files that could not be read.
Found = tuple[dict[str, Skill], list[str]]
#: A skill's ``[core.skills.NAME]`` settings, as the configuration says now.
Settings = Callable[[str], SkillConfig]


def _default_settings(name: str) -> SkillConfig:
    return SkillConfig()


# --- what the catalog is asked and told ------------------------------------------------------


@attrs.frozen
class AgentSkills(sv.Request[Found]):
    """The skills of *agent_id*, discovered on first use."""

    agent_id: str


@attrs.frozen
class SearchSkills(sv.Request[list[tuple[Skill, float]]]):
    """At most *limit* eligible skills of *agent_id* best matching *query*, with their scores."""

    agent_id: str
    query: str
    limit: int


@attrs.frozen
class Reload:
    """Cast by the watcher: a SKILL.md changed, so forget what was found."""


@attrs.define
class _Catalog:
    bundled: Path | None
    data_dir: Path
    settings: Settings
    found: dict[str, Found] = attrs.field(factory=dict)
    indexes: dict[str, SkillIndex] = attrs.field(factory=dict)


class SkillsCatalog(sv.GenServer):
    def init(self, bundled: Path | None, data_dir: Path, settings: Settings = _default_settings) -> _Catalog:
        sv.register(SKILLS)
        return _Catalog(bundled, data_dir, settings)

    async def _skills(self, catalog: _Catalog, agent_id: str) -> Found:
        """The agent's skills, without those ``[core.skills.NAME] enabled = false`` leaves out
        (asked at every call, so a reload of the configuration applies at once)."""
        skills, problems = await self._discovered(catalog, agent_id)
        return {n: s for n, s in skills.items() if catalog.settings(n).enabled}, problems

    async def _discovered(self, catalog: _Catalog, agent_id: str) -> Found:
        if agent_id not in catalog.found:
            catalog.found[agent_id] = await trio.to_thread.run_sync(
                discover, skill_places(catalog.bundled, catalog.data_dir, agent_id)
            )
            for problem in catalog.found[agent_id][1]:
                logger.warning("skill skipped: {}", problem)
        return catalog.found[agent_id]

    async def handle_call(self, request: AgentSkills | SearchSkills, caller: sv.Caller, catalog: _Catalog) -> sv.Reply:
        match request:
            case AgentSkills(agent_id):
                return sv.Reply(await self._skills(catalog, agent_id), catalog)
            case SearchSkills(agent_id, query, limit):
                skills, _ = await self._skills(catalog, agent_id)
                eligible = [s for s in skills.values() if s.eligible]
                if agent_id not in catalog.indexes:
                    catalog.indexes[agent_id] = await trio.to_thread.run_sync(SkillIndex, eligible)
                hits = catalog.indexes[agent_id].search(query, limit)
                return sv.Reply([(skills[name], score) for name, score in hits if name in skills], catalog)
        raise ValueError(f"unknown skills request {request!r}")

    def handle_cast(self, message: Reload, catalog: _Catalog) -> sv.NoReply:
        match message:
            case Reload():
                catalog.found.clear()
                catalog.indexes.clear()
        return sv.NoReply(catalog)


def _is_skill_change(change: watchfiles.Change, path: str) -> bool:
    return "/skills/" in path or path.endswith("/skills")


async def watch_skills(
    folders: tuple[Path, ...], debounce_ms: int, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Tell the catalog to reload when anything under a skills folder changes.

    The watch waits in its worker thread with no timeout (inotify wakes it): nothing wakes
    the event loop at rest. A cancellation sets *stop*, which the thread looks at every
    `_STEP_MS`, so the watcher still ends within that when its supervisor stops it."""
    for folder in folders:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_set_when_cancelled, stop)
        task_status.started()
        async for changes in watchfiles.awatch(
            *folders,
            debounce=debounce_ms,
            step=_STEP_MS,
            rust_timeout=0,  # wait for a change however long (0: no timeout), not poll
            stop_event=stop,
            watch_filter=_is_skill_change,
        ):
            logger.info("skills changed ({} file(s)); reloading", len(changes))
            sv.cast(SKILLS, Reload())
        nursery.cancel_scope.cancel()


async def _set_when_cancelled(stop: trio.Event) -> None:
    try:
        await trio.sleep_forever()
    finally:
        stop.set()


async def tool_names() -> set[str]:
    """The tools there are now (for skills that need MCP servers or tools); none while the
    tool registry restarts."""
    try:
        return {tool.definition.name for tool in await list_tools()}
    except sv.NoProc:
        return set()


async def usable_skills(agent_id: str, available: set[str]) -> list[Skill]:
    """The agent's skills that can be used now (*available*: the tools there are): their programs,
    variables, system, MCP servers and tools."""
    skills, _ = await agent_skills(agent_id)
    return [skill for skill in skills.values() if not skill.unmet(available)]


async def agent_skills(agent_id: str) -> Found:
    """The agent's skills by name (eligible or not), and the SKILL.md files that could not be read."""
    return await sv.call(SKILLS, AgentSkills(agent_id), timeout=30.0, restart_wait=RESTART_WAIT)


async def usable_skill(agent_id: str, name: str) -> Skill:
    """The agent's skill *name*, which the model may read or run now; a `ToolError` saying why
    not (there is none, or what it needs is missing here)."""
    skills, _ = await agent_skills(agent_id)
    skill = skills.get(name)
    if skill is None:
        raise ToolError(f"there is no skill called {name!r}")
    unmet = skill.unmet(await tool_names())
    if unmet:
        raise ToolError(f"the skill {skill.name!r} cannot be used here: {'; '.join(unmet)}")
    return skill


@attrs.define
class SkillSearchTool:
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "skill_search",
            "Find the skills that fit a task (ranked by relevance); read one with read_skill.",
            object_schema(
                {
                    "query": {"type": "string", "minLength": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                },
                ("query",),
            ),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        search = SearchSkills(session.agent_id, args["query"], args.get("limit", 5))
        hits = await sv.call(SKILLS, search, timeout=30.0, restart_wait=RESTART_WAIT)
        available = await tool_names()
        hits = [(skill, score) for skill, score in hits if not skill.unmet(available)]
        if not hits:
            return f"no skill matches {args['query']!r}"
        return "\n".join(f"{skill.summary()} (score {score:.2f})" for skill, score in hits)


@attrs.define
class ReadSkillTool:
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "read_skill",
            "Read a skill's full instructions by name.",
            object_schema({"name": {"type": "string", "minLength": 1}}, ("name",)),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        skill = await usable_skill(session.agent_id, args["name"])
        return f"# {skill.name} (folder {skill.path})\n\n{skill.body}"
