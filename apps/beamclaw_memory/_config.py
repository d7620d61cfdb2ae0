"""``[memory]`` of config.toml: what is indexed, how it is searched, and who embeds it."""

from __future__ import annotations

from typing import Any, Final

import attrs

from beamclaw_base import Secret, structure_config

PROVIDERS: Final = ("local", "openai", "none")


@attrs.frozen
class EmbeddingConfig:
    """Who turns text into vectors: "local" (offline, the packaged model), "openai" (any
    OpenAI-compatible ``/v1/embeddings``: OpenAI, OpenRouter, Ollama, llama.cpp) or
    "none" (keyword search only)."""

    #: "local", "openai" or "none" (see above).
    provider: str = "local"
    #: The OpenAI-compatible server of ``provider = "openai"`` (its ``/v1/embeddings``).
    base_url: str = "https://api.openai.com/v1"
    #: The remote server's key, ``{ env = "VAR" }``; a local server may need none.
    api_key: Secret | None = Secret("BEAMCLAW_EMBEDDING_API_KEY")
    #: The remote model; the local provider names its own.
    model: str = "text-embedding-3-small"
    #: Asked of the remote model (models that take ``dimensions``); 0 leaves it out.
    dimensions: int = 1536
    #: Texts sent to the remote model in one request.
    batch_size: int = 64
    #: A request to the remote model gets this long in all; meanwhile search answers from keywords.
    timeout_seconds: float = 30.0
    #: How long a cached vector is used before it is asked for again.
    cache_ttl_seconds: float = 86_400.0


@attrs.frozen
class SearchConfig:
    #: A hit's merged score is ``vector_weight * cosine + bm25_weight * keyword score``
    #: (divided by the best one); when one side has nothing, the other carries all the weight.
    vector_weight: float = 0.7
    bm25_weight: float = 0.3
    #: Merged scores below this are not returned.
    min_score: float = 0.35
    #: Hits ``memory_search`` returns when the model names no ``limit``.
    default_limit: int = 6
    #: Chunk length and the overlap between neighbours, in tokens (about four characters each).
    chunk_size: int = 400
    chunk_overlap: int = 80
    #: Files of the agent's workspace that are indexed besides MEMORY.md and memory/*.md.
    workspace_files: tuple[str, ...] = ("MEMORY.md", "USER.md", "AGENTS.md", "TOOLS.md")
    #: Daily logs of the last this many days weigh fully; older ones weigh OLD_LOG_WEIGHT.
    daily_log_lookback: int = 7
    #: Past conversations are indexed (each searchable by its own user only).
    conversations: bool = True


@attrs.frozen
class MemoryConfig:
    #: false: no ``memory_search`` / ``memory_get``, nothing indexed (core goes on without memory).
    enabled: bool = True
    #: Seconds between two looks of the file watcher at the workspaces (edits by hand).
    watch_interval_seconds: float = 2.0
    embedding: EmbeddingConfig = EmbeddingConfig()
    search: SearchConfig = SearchConfig()


def parse_memory_config(table: dict[str, Any]) -> MemoryConfig:
    """Check ``[memory]``; raises `ConfigError` (a ValueError) naming the bad key."""
    config = structure_config(table, MemoryConfig, "memory")
    embedding, search = config.embedding, config.search
    if embedding.provider not in PROVIDERS:
        raise ValueError(f"memory.embedding.provider must be one of {', '.join(PROVIDERS)}, not {embedding.provider!r}")
    if embedding.batch_size < 1 or embedding.dimensions < 0 or embedding.timeout_seconds <= 0:
        raise ValueError("memory.embedding: batch_size must be at least 1, dimensions not negative, timeout positive")
    for key in ("vector_weight", "bm25_weight", "min_score"):
        if not 0.0 <= getattr(search, key) <= 1.0:
            raise ValueError(f"memory.search.{key} must be between 0 and 1, not {getattr(search, key)}")
    if search.vector_weight + search.bm25_weight <= 0:
        raise ValueError("memory.search: vector_weight and bm25_weight cannot both be 0")
    if search.chunk_size < 16 or not 0 <= search.chunk_overlap < search.chunk_size:
        raise ValueError(
            f"memory.search: chunk_size must be at least 16 and chunk_overlap from 0 to below it "
            f"(got {search.chunk_size} and {search.chunk_overlap})"
        )
    if not 1 <= search.default_limit <= 50 or search.daily_log_lookback < 0:
        raise ValueError("memory.search: default_limit must be 1 to 50 and daily_log_lookback not negative")
    for name in search.workspace_files:
        if name.startswith("/") or ".." in name.split("/") or not name.strip():
            raise ValueError(f"memory.search.workspace_files: {name!r} must be a path inside the workspace")
    if config.watch_interval_seconds <= 0:
        raise ValueError("memory.watch_interval_seconds must be positive")
    return config
