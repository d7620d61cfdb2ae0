"""``[core]`` of config.toml as attrs classes; secrets stay references until used."""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import httpx

from beamclaw_base import Secret, TextOrSecret, structure_config
from beamclaw_tools import Autonomy

DEFAULT_SYSTEM_PROMPT = (
    "You are BeamClaw, a capable and careful assistant. Use the tools you are given when they help; "
    "say plainly when you cannot do something."
)


@attrs.frozen
class ProviderConfig:
    """One OpenAI-compatible endpoint. ``api_key`` may be left out for local servers."""

    #: The endpoint's base URL, ending before ``/chat/completions`` (http or https).
    base_url: str
    #: The model name sent with every request.
    model: str
    #: ``{ env = "VAR" }``: the key, read from the environment when first used; none for a local server.
    api_key: Secret | None = None
    #: The longest wait for the server's next bytes (connect, first token, each chunk).
    timeout_seconds: float = 120.0
    #: Retries of a 429, a 5xx or a failed connection, with backoff and the server's Retry-After.
    max_retries: int = 3
    #: Sent as ``max_tokens`` when set; the server's own default otherwise.
    max_tokens: int | None = None
    #: The model's window in tokens, for compaction; guessed from the model name when unset.
    context_window: int | None = None
    #: Extra HTTP headers sent with every request (plain text: never a secret).
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
    """``[core.agentic_loop]``: how one turn runs (tool iterations, compaction, approvals)."""

    #: Model calls with tool calls in one turn before the turn ends with what it has.
    max_tool_iterations: int = 10
    #: A history over this share of the model's window is compacted before the next call.
    compaction_threshold_pct: int = 80
    #: What compaction brings the history down to, as a share of the window.
    compaction_target_pct: int = 40
    #: Streamed text is passed to channels in pieces of about this many characters.
    stream_chunk_chars: int = 80
    #: A tool call waiting for approval this long is denied.
    approval_timeout_seconds: float = 300.0
    #: Before compaction drops old messages, a hidden model call keeps what should last:
    #: "private" in the user's own memory (searchable by that user alone), "daily_log" in
    #: the user's daily log of today (read into that user's prompts; the agent's own daily
    #: log for a single-user agent), or "off" (see `_memory`).
    memory_flush: str = "private"
    #: The ``[core.providers.NAME]`` table that writes compaction's summary and the memory
    #: flush (a cheaper model does); empty: the conversation's own provider.
    compaction_provider: str = ""
    #: The model name sent for compaction and the memory flush; empty: that provider's
    #: ``model`` (the conversation's own model when ``compaction_provider`` is empty too).
    compaction_model: str = ""
    #: Before each model call, the top memory hits for the user's message (their own
    #: memory, and the agent's shared files) are given to the model with it, quoted as
    #: recalled data, never stored in the history. Off by default: a search per turn.
    auto_context: bool = False
    #: The most memory hits ``auto_context`` gives the model.
    auto_context_limit: int = 3


@attrs.frozen
class AgentConfig:
    """``[core.agents.NAME]``: the model one agent runs on, where it is not the default."""

    #: The ``[core.providers.NAME]`` table the agent's turns use; empty: ``default_provider``.
    provider: str = ""
    #: The model name sent for the agent; empty: that provider's own ``model``.
    model: str = ""


@attrs.frozen
class MaintenanceConfig:
    """``[core.maintenance]``: what happens to a conversation nobody is talking to."""

    #: A conversation without a call for this long sleeps: its processes stop (all it has
    #: is in SQLite) and its next message wakes it. 0 keeps every conversation awake.
    idle_seconds: float = 600.0
    #: Before an idle conversation sleeps, a history longer than ``compact_above_pct`` of
    #: the model's window is summarised down to ``compact_to_pct`` (a model call: opt-in).
    idle_compaction: bool = False
    #: See ``idle_compaction``: the share of the window above which a sleeping history is summarised.
    compact_above_pct: int = 20
    #: See ``idle_compaction``: the share of the window it is summarised down to.
    compact_to_pct: int = 10
    #: The nightly and pre-expiry memory flushes (model calls: opt-in). With it, a conversation
    #: is deleted at its TTL only once what it said has been through the flush (see `_maintenance`).
    enabled: bool = False
    #: How often the maintenance process looks for conversations to flush (at least 1).
    scan_interval_seconds: float = 300.0
    #: The UTC hours ``[start, end)`` of the nightly flush, once a night; ``[22, 2]`` spans midnight.
    quiet_hours: tuple[int, int] = (2, 4)
    #: The nightly flush takes conversations with at least this many messages not flushed yet.
    nightly_min_messages: int = 10
    #: This long before a conversation's ``session_ttl_seconds`` run out, what it has not flushed yet is.
    pre_expiry_minutes: float = 10.0


@attrs.frozen
class SkillConfig:
    """``[core.skills.NAME]``: one skill's settings, for every agent that has it."""

    #: false leaves the skill out: not in prompts, not found, its scripts not run.
    enabled: bool = True
    #: Variables given to this skill's scripts alone (``run_skill``): plain text or
    #: ``{ env = "VAR" }``, read from the daemon's environment when a script runs.
    env: dict[str, TextOrSecret] = attrs.field(factory=dict)


@attrs.frozen
class CoreConfig:
    """``[core]``: models, agents, autonomy and the conversations' lifetime."""

    #: false leaves core out of the daemon; the apps that need it (scheduler, a2a, gateway) must be off too.
    enabled: bool = True
    #: The name of the ``[core.providers.NAME]`` table used for turns.
    default_provider: str = "openrouter"
    #: The agent a conversation talks to when its channel names none.
    default_agent: str = "default"
    #: The model endpoints by name: ``[core.providers.NAME]``.
    providers: dict[str, ProviderConfig] = attrs.field(factory=lambda: dict(_DEFAULT_PROVIDERS))
    agentic_loop: AgenticLoopConfig = AgenticLoopConfig()
    maintenance: MaintenanceConfig = MaintenanceConfig()
    #: Per-agent models by agent name: ``[core.agents.NAME]`` with ``provider`` and ``model``.
    agents: dict[str, AgentConfig] = attrs.field(factory=dict)
    #: ``read_only`` (no tool that changes anything), ``supervised`` (ask first) or ``full`` (never ask).
    autonomy_level: str = "supervised"
    #: The prompt used before an agent's own files (AGENTS.md, SOUL.md...) are added.
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    #: A conversation without a message for this long is deleted.
    session_ttl_seconds: float = 30 * 24 * 3600.0
    #: Histories in SQLite (true) or in memory only, lost at exit (false).
    session_persistence: bool = True
    #: ``shared``: one conversation per user and agent, whichever channel (start in the terminal,
    #: go on from Telegram); ``per_channel``: one per channel too. ``per_user`` is read as ``shared``.
    session_sharing: Literal["shared", "per_channel"] = "shared"
    #: How often expired conversations are looked for.
    cleanup_interval_seconds: float = 3600.0
    #: Tokens per agent per UTC day; 0 means no budget.
    daily_token_budget: int = 0
    #: Per-agent overrides of ``daily_token_budget``.
    budgets: dict[str, int] = attrs.field(factory=dict)
    #: Agents with one user: USER.md, MEMORY.md, HEARTBEAT.md and the daily logs are the
    #: agent's own, in every user's prompt. Any other agent keeps them per user (see `_workspace`).
    single_user_agents: tuple[str, ...] = ()
    #: Tokens reserved for a call's reply when it is checked against the budget.
    budget_completion_reserve: int = 1024
    #: Where the bundled skills are; empty means the ``skills/`` folder shipped with BeamClaw.
    bundled_skills_dir: str = ""
    #: Skill file changes within this many milliseconds are read as one.
    skills_watch_debounce_ms: int = 500
    #: Per-skill settings by skill name: ``[core.skills.NAME]`` (``enabled``, ``env``).
    skills: dict[str, SkillConfig] = attrs.field(factory=dict)

    @property
    def autonomy(self) -> Autonomy:
        return Autonomy.parse(self.autonomy_level)

    @property
    def provider(self) -> ProviderConfig:
        return self.providers[self.default_provider]

    def provider_for(self, agent_id: str) -> tuple[str, ProviderConfig]:
        """The provider *agent_id*'s turns use, by name, with its model (``[core.agents.NAME]``)."""
        agent = self.agents.get(agent_id, AgentConfig())
        name = agent.provider or self.default_provider
        return name, _with_model(self.providers[name], agent.model)

    def summariser_for(self, agent_id: str) -> tuple[str, ProviderConfig]:
        """The provider that summarises *agent_id*'s conversations and keeps their memory
        flush (``compaction_provider`` and ``compaction_model``; the agent's own by default)."""
        loop = self.agentic_loop
        if loop.compaction_provider:
            name, config = loop.compaction_provider, self.providers[loop.compaction_provider]
        else:
            name, config = self.provider_for(agent_id)
        return name, _with_model(config, loop.compaction_model)

    def single_user(self, agent_id: str) -> bool:
        """Whether what one user of *agent_id* writes reaches every user's prompt (see ``single_user_agents``)."""
        return agent_id in self.single_user_agents

    def budget_for(self, agent_id: str) -> int:
        """The agent's daily token budget; 0 means none."""
        return self.budgets.get(agent_id, self.daily_token_budget)


def _with_model(config: ProviderConfig, model: str) -> ProviderConfig:
    return attrs.evolve(config, model=model) if model and model != config.model else config


def _check_provider_name(key: str, name: str, config: CoreConfig) -> None:
    if name and name not in config.providers:
        known = ", ".join(config.providers) or "none"
        raise ValueError(f"{key} is {name!r}, but [core.providers.{name}] is not configured (configured: {known})")


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


def _check_maintenance(upkeep: MaintenanceConfig, ttl: float) -> None:
    """The nightly and pre-expiry settings make sense together (see `MaintenanceConfig`)."""
    if upkeep.scan_interval_seconds < 1:
        raise ValueError("core.maintenance.scan_interval_seconds must be at least 1")
    start, end = upkeep.quiet_hours
    if not (0 <= start <= 23 and 0 <= end <= 23) or start == end:
        raise ValueError(
            f"core.maintenance.quiet_hours is {[start, end]}: need two different UTC hours from 0 to 23, "
            "[start, end) (e.g. [2, 4])"
        )
    if upkeep.nightly_min_messages < 1:
        raise ValueError("core.maintenance.nightly_min_messages must be at least 1")
    if upkeep.pre_expiry_minutes < 0 or (upkeep.enabled and upkeep.pre_expiry_minutes * 60 >= ttl):
        raise ValueError("core.maintenance.pre_expiry_minutes must be 0 or more and shorter than session_ttl_seconds")


def parse_core_config(table: dict[str, Any]) -> CoreConfig:
    """Check ``[core]``; raises `ConfigError` (a ValueError) naming the bad key."""
    if table.get("session_sharing") == "per_user":  # its name before the spec's ``shared``
        table = {**table, "session_sharing": "shared"}
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
    _check_provider_name("core.agentic_loop.compaction_provider", config.agentic_loop.compaction_provider, config)
    for agent, choice in config.agents.items():
        _check_provider_name(f"core.agents.{agent}.provider", choice.provider, config)
    config.autonomy  # noqa: B018 - parse now, so a typo fails at start, not at the first tool call
    loop = config.agentic_loop
    if not 0 < loop.compaction_target_pct < loop.compaction_threshold_pct <= 100:
        raise ValueError("core.agentic_loop: need 0 < compaction_target_pct < compaction_threshold_pct <= 100")
    upkeep = config.maintenance
    if upkeep.idle_seconds < 0:
        raise ValueError("core.maintenance.idle_seconds must be 0 (never sleep) or more")
    if not 0 < upkeep.compact_to_pct < upkeep.compact_above_pct <= 100:
        raise ValueError("core.maintenance: need 0 < compact_to_pct < compact_above_pct <= 100")
    _check_maintenance(upkeep, config.session_ttl_seconds)
    if loop.max_tool_iterations < 0:
        raise ValueError("core.agentic_loop.max_tool_iterations must be >= 0")
    if not 1 <= loop.auto_context_limit <= 20:
        raise ValueError("core.agentic_loop.auto_context_limit must be between 1 and 20")
    if loop.memory_flush not in FLUSH_MODES:
        raise ValueError(
            f"core.agentic_loop.memory_flush must be one of {', '.join(FLUSH_MODES)}, not {loop.memory_flush!r}"
        )
    return config
