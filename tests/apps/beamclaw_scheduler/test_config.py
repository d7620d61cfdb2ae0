"""[scheduler]: each bad key is refused at start, naming it and what would do."""

from __future__ import annotations

from typing import Any

import pytest

from beamclaw_scheduler import parse_scheduler_config


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_jobs_per_agent": 0}, "scheduler.max_jobs_per_agent must be at least 1"),
        ({"default_autonomy": "yolo"}, "unknown autonomy level 'yolo'"),
        ({"heartbeat": {"active_hours": [8, 25]}}, "active_hours must be two hours from 0 to 24"),
        ({"heartbeat": {"timezone": "Mars/Olympus"}}, "'Mars/Olympus' is not a known time zone"),
        ({"heartbeat": {"target": "everyone"}}, "target must be 'last' or 'none'"),
        ({"heartbeat": {"default_interval_seconds": 5}}, "must be at least min_interval_seconds (60)"),
        ({"retry_attempt": 3}, "retry_attempt"),
    ],
)
def test_a_bad_table_is_refused_saying_why(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_scheduler_config(table)
    assert message in str(refused.value)


def test_the_defaults_are_the_reference_s() -> None:
    config = parse_scheduler_config({})
    assert (config.max_jobs_per_agent, config.max_errors, config.default_autonomy) == (50, 3, "supervised")
    assert (config.heartbeat.default_interval_seconds, config.heartbeat.active_hours) == (1800.0, (8, 22))
