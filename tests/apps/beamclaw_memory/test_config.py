"""``[memory]`` of config.toml: each bad value is refused naming its key."""

from __future__ import annotations

from typing import Any

import pytest

from beamclaw_memory import MemoryConfig, parse_memory_config


def test_an_empty_table_gives_the_defaults() -> None:
    assert parse_memory_config({}) == MemoryConfig()


def test_values_are_read() -> None:
    config = parse_memory_config(
        {
            "watch_interval_seconds": 0.5,
            "embedding": {"provider": "none"},
            "search": {"chunk_size": 64, "chunk_overlap": 8},
        }
    )
    assert (config.watch_interval_seconds, config.embedding.provider) == (0.5, "none")
    assert (config.search.chunk_size, config.search.chunk_overlap) == (64, 8)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"embedding": {"provider": "cohere"}}, "provider must be one of local, openai, none"),
        ({"embedding": {"batch_size": 0}}, "batch_size"),
        ({"embedding": {"timeout_seconds": 0}}, "timeout"),
        ({"search": {"vector_weight": 1.5}}, "vector_weight must be between 0 and 1"),
        ({"search": {"min_score": -0.1}}, "min_score"),
        ({"search": {"vector_weight": 0, "bm25_weight": 0}}, "cannot both be 0"),
        ({"search": {"chunk_size": 8, "chunk_overlap": 0}}, "chunk_size must be at least 16"),
        ({"search": {"chunk_size": 100, "chunk_overlap": 100}}, r"got 100 and 100"),
        ({"search": {"default_limit": 0}}, "default_limit"),
        ({"search": {"daily_log_lookback": -1}}, "daily_log_lookback"),
        ({"search": {"workspace_files": ["../secrets.md"]}}, "must be a path inside the workspace"),
        ({"search": {"workspace_files": ["/etc/passwd"]}}, "must be a path inside the workspace"),
        ({"search": {"workspace_files": [" "]}}, "must be a path inside the workspace"),
        ({"watch_interval_seconds": 0}, "watch_interval_seconds must be positive"),
        ({"search": {"no_such_key": 1}}, "no_such_key"),
    ],
)
def test_bad_values_are_refused(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_memory_config(table)
