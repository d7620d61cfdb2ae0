"""``[a2a]`` of config.toml: how this daemon presents itself to other agents."""

from __future__ import annotations

from typing import Any

import attrs

from beamclaw_base import structure_config


@attrs.frozen
class SkillConfig:
    #: One skill of the agent card, as A2A clients see it.
    id: str
    name: str
    description: str
    tags: list[str] = attrs.field(factory=list)
    examples: list[str] = attrs.field(factory=list)


_CHAT_SKILL = SkillConfig(
    "chat", "Chat", "Answer questions and carry out tasks, keeping the conversation's context.", ["chat", "assistant"]
)


@attrs.frozen
class A2AConfig:
    enabled: bool = True
    #: The agent card's name and description, as other agents see them.
    name: str = "BeamClaw"
    description: str = "A fault-tolerant AI agent: conversations that survive crashes, tools with approval."
    #: The agent that answers A2A tasks.
    agent: str = "default"
    #: The skills the agent card lists.
    skills: list[SkillConfig] = attrs.field(factory=lambda: [_CHAT_SKILL])


def parse_a2a_config(table: dict[str, Any]) -> A2AConfig:
    return structure_config(table, A2AConfig, "a2a")
