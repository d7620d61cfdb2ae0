"""``[core]`` of config.toml as attrs classes; secrets stay references until used."""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import httpx

from beamclaw_base import Secret, structure_config
from beamclaw_tools import Autonomy

DEFAULT_SYSTEM_PROMPT = (
    "You are BeamClaw, a capable and careful assistant. Use the tools you are given when they help; "
    "say plainly when you cannot do something."
)


@attrs.frozen
class ProviderConfig:
    """One OpenAI-compatible endpoint. ``api_key`` may be left out for local servers."""

    base_url: str
    model: str
    api_key: Secret | None = None
    timeout_seconds: float = 120.0
    max_retries: int = 3
    max_tokens: int | None = None
    context_window: int | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    #: A reply longer than this (its text and tool calls together, in characters) is
    #: cut off with an error: a hostile or broken server cannot make the daemon read,
    #: store and scrub gigabytes.
    max_reply_chars: int = 1_000_000
    #: A reply still coming after this long is cut off with an error (``timeout_seconds``
    #: bounds each wait for more; this bounds the whole, against a trickle that never ends).
    max_reply_seconds: float = 900.0


_DEFAULT_PROVIDERS = {
    "openrouter": ProviderConfig(
        base_url="https://openrouter.ai/api/v1", model="anthropic/claude-sonnet-4", api_key=Secret("OPENROUTER_API_KEY")
    )
}


FLUSH_MODES: Final = ("private", "daily_log", "off")


@attrs.frozen
class AgenticLoopConfig:
    max_tool_iterations: int = 10
    compaction_threshold_pct: int = 80
    compaction_target_pct: int = 40
    stream_chunk_chars: int = 80
    approval_timeout_seconds: float = 300.0
    #: Before compaction drops old messages, a hidden model call keeps what should last:
    #: "private" in the user's own memory (searchable by that user alone), "daily_log" in
    #: the user's daily log of today (read into that user's prompts; the agent's own daily
    #: log for a single-user agent), or "off" (see `_memory`).
    memory_flush: str = "private"


@attrs.frozen
class MaintenanceConfig:
    #: A conversation without a call for this long sleeps: its processes stop (all it has
    #: is in SQLite) and its next message wakes it. 0 keeps every conversation awake.
    idle_seconds: float = 600.0
    #: Before an idle conversation sleeps, a history longer than ``compact_above_pct`` of
    #: the model's window is summarised down to ``compact_to_pct`` (a model call: opt-in).
    idle_compaction: bool = False
    compact_above_pct: int = 20
    compact_to_pct: int = 10


@attrs.frozen
class CoreConfig:
    enabled: bool = True
    default_provider: str = "openrouter"
    default_agent: str = "default"
    providers: dict[str, ProviderConfig] = attrs.field(factory=lambda: dict(_DEFAULT_PROVIDERS))
    agentic_loop: AgenticLoopConfig = AgenticLoopConfig()
    maintenance: MaintenanceConfig = MaintenanceConfig()
    autonomy_level: str = "supervised"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    session_ttl_seconds: float = 30 * 24 * 3600.0
    session_persistence: bool = True
    session_sharing: Literal["per_user", "per_channel"] = "per_user"
    cleanup_interval_seconds: float = 3600.0
    daily_token_budget: int = 0
    budgets: dict[str, int] = attrs.field(factory=dict)
    #: Agents with one user: USER.md, MEMORY.md, HEARTBEAT.md and the daily logs are the
    #: agent's own, in every user's prompt. Any other agent keeps them per user (see `_workspace`).
    single_user_agents: tuple[str, ...] = ()
    budget_completion_reserve: int = 1024
    bundled_skills_dir: str = ""
    skills_watch_debounce_ms: int = 500

    @property
    def autonomy(self) -> Autonomy:
        return Autonomy.parse(self.autonomy_level)

    @property
    def provider(self) -> ProviderConfig:
        return self.providers[self.default_provider]

    def single_user(self, agent_id: str) -> bool:
        """Whether what one user of *agent_id* writes reaches every user's prompt (see ``single_user_agents``)."""
        return agent_id in self.single_user_agents

    def budget_for(self, agent_id: str) -> int:
        """The agent's daily token budget; 0 means none."""
        return self.budgets.get(agent_id, self.daily_token_budget)


def _check_base_url(key: str, url: str) -> None:
    """An absolute http(s) URL with a host: anything else could never be reached, so it is
    refused at start rather than retried at every turn."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"{key} is {url!r}, which is not a URL: {exc}") from None
    if parsed.scheme not in {"http", "https"} or not parsed.host:
        hint = f" (did you mean 'http://{url}'?)" if "://" not in url else ""
        raise ValueError(f"{key} is {url!r}, which is not an http:// or https:// URL{hint}")


def parse_core_config(table: dict[str, Any]) -> CoreConfig:
    """Check ``[core]``; raises `ConfigError` (a ValueError) naming the bad key."""
    config = structure_config(table, CoreConfig, "core")
    if config.default_provider not in config.providers:
        known = ", ".join(config.providers) or "none"
        raise ValueError(
            f"core.default_provider is {config.default_provider!r}, but [core.providers.{config.default_provider}] "
            f"is not configured (configured: {known})"
        )
    for name, provider in config.providers.items():
        _check_base_url(f"core.providers.{name}.base_url", provider.base_url)
        if provider.max_reply_chars < 1000:
            raise ValueError(f"core.providers.{name}.max_reply_chars must be at least 1000")
    config.autonomy  # noqa: B018 - parse now, so a typo fails at start, not at the first tool call
    loop = config.agentic_loop
    if not 0 < loop.compaction_target_pct < loop.compaction_threshold_pct <= 100:
        raise ValueError("core.agentic_loop: need 0 < compaction_target_pct < compaction_threshold_pct <= 100")
    upkeep = config.maintenance
    if upkeep.idle_seconds < 0:
        raise ValueError("core.maintenance.idle_seconds must be 0 (never sleep) or more")
    if not 0 < upkeep.compact_to_pct < upkeep.compact_above_pct <= 100:
        raise ValueError("core.maintenance: need 0 < compact_to_pct < compact_above_pct <= 100")
    if loop.max_tool_iterations < 0:
        raise ValueError("core.agentic_loop.max_tool_iterations must be >= 0")
    if loop.memory_flush not in FLUSH_MODES:
        raise ValueError(
            f"core.agentic_loop.memory_flush must be one of {', '.join(FLUSH_MODES)}, not {loop.memory_flush!r}"
        )
    return config
