"""``[scheduler]`` of config.toml: jobs, retries, and the heartbeat."""

from __future__ import annotations

import zoneinfo
from typing import Any

import attrs

from beamclaw_base import structure_config
from beamclaw_tools import Autonomy

from ._schedule import HORIZON_SECONDS


@attrs.frozen
class HeartbeatConfig:
    """Every agent whose HEARTBEAT.md has something to do is woken this often, within
    ``active_hours`` (start and end hour, in ``timezone``)."""

    #: false: no heartbeat turns.
    enabled: bool = True
    #: How often each agent's HEARTBEAT.md is run (at least ``min_interval_seconds``).
    default_interval_seconds: float = 1800.0
    #: A reply of ``HEARTBEAT_OK`` (nothing to report) is not delivered.
    suppress_ok: bool = True
    #: The start and end hour (0 to 24, in ``timezone``) within which heartbeats run.
    active_hours: tuple[int, int] = (8, 22)
    #: The time zone of ``active_hours`` (an IANA name: "Europe/Paris").
    timezone: str = "UTC"
    #: Where a heartbeat's reply goes: "last" (the conversation last active with the
    #: agent) or "none" (kept in the agent's own heartbeat conversation only).
    target: str = "last"


@attrs.frozen
class SchedulerConfig:
    #: false: no jobs run and the ``scheduler`` tool is not offered.
    enabled: bool = True
    #: The jobs one agent may have, for all its users together.
    max_jobs_per_agent: int = 50
    #: The jobs one user may have (with every agent together), so that one user cannot
    #: take a whole agent's ``max_jobs_per_agent`` from the others.
    max_jobs_per_user: int = 20
    #: The most autonomy a job's turn runs with: "read_only", "supervised" or "full".
    default_autonomy: str = "supervised"
    #: Consecutive failed runs (retries spent) after which a job is paused, with the reason.
    max_errors: int = 3
    #: A due time missed while the daemon was down runs once at start if it is at most
    #: this old; older ones are skipped (recorded as missed), never run once per interval.
    missed_grace_seconds: float = 3600.0
    #: Tries of one due time (the first and its retries), with backoff from
    #: ``retry_base_seconds`` doubling up to ``retry_max_seconds``, ±25% jitter.
    retry_attempts: int = 3
    retry_base_seconds: float = 2.0
    retry_max_seconds: float = 30.0
    #: Jobs running at once; the rest wait their turn, so chat turns are never starved.
    max_concurrent_runs: int = 4
    #: The shortest interval an ``every`` job may have.
    min_interval_seconds: float = 60.0
    heartbeat: HeartbeatConfig = HeartbeatConfig()


def parse_scheduler_config(table: dict[str, Any]) -> SchedulerConfig:
    """Check ``[scheduler]``; raises `ConfigError` (a ValueError) naming the bad key."""
    config = structure_config(table, SchedulerConfig, "scheduler")
    for key in ("max_jobs_per_agent", "max_jobs_per_user", "max_errors", "retry_attempts", "max_concurrent_runs"):
        if getattr(config, key) < 1:
            raise ValueError(f"scheduler.{key} must be at least 1")
    if not (config.retry_base_seconds >= 0 and config.retry_max_seconds >= 0):
        raise ValueError("scheduler.retry_base_seconds and retry_max_seconds must not be negative")
    Autonomy.parse(config.default_autonomy)  # a typo fails at start, not at the first job
    if config.min_interval_seconds <= 0 or config.missed_grace_seconds < 0:
        raise ValueError("scheduler.min_interval_seconds must be positive and missed_grace_seconds not negative")
    beat = config.heartbeat
    start, end = beat.active_hours
    if not (0 <= start <= 24 and 0 <= end <= 24):
        raise ValueError(
            f"scheduler.heartbeat.active_hours must be two hours from 0 to 24, not {list(beat.active_hours)}"
        )
    if beat.default_interval_seconds < config.min_interval_seconds:
        raise ValueError(
            f"scheduler.heartbeat.default_interval_seconds must be at least min_interval_seconds "
            f"({config.min_interval_seconds:g})"
        )
    if not beat.default_interval_seconds <= HORIZON_SECONDS:
        raise ValueError(
            f"scheduler.heartbeat.default_interval_seconds must be at most {HORIZON_SECONDS:g} (100 years)"
        )
    if beat.target not in {"last", "none"}:
        raise ValueError(f"scheduler.heartbeat.target must be 'last' or 'none', not {beat.target!r}")
    try:
        zoneinfo.ZoneInfo(beat.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"scheduler.heartbeat.timezone {beat.timezone!r} is not a known time zone") from None
    return config
