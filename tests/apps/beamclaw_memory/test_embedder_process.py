"""The embedder process in the running tree, with a remote (loopback) embeddings server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import beamclaw_memory as memory
from beamclaw_memory import EmbeddingConfig, MemoryConfig, SearchConfig

from .conftest import eventually, find, running_memory, workspace
from .embeddings_server import EmbeddingsServer, embeddings_server


def _config(server: EmbeddingsServer, **embedding: Any) -> MemoryConfig:
    settings = {"provider": "openai", "base_url": server.base_url, "api_key": None, "model": "tiny", "dimensions": 0}
    return MemoryConfig(
        watch_interval_seconds=3600,
        embedding=EmbeddingConfig(**{**settings, **embedding}),
        search=SearchConfig(chunk_size=16, chunk_overlap=0),
    )


async def _status() -> dict[str, Any]:
    (status,) = await memory.status(["default"])
    return status


def _sent(server: EmbeddingsServer) -> list[str]:
    return [text for body in server.bodies for text in body["input"]]


async def test_chunks_are_embedded_in_batches_and_cached_across_a_reindex(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    lines = [f"Fact number {i}: the {word} is in the drawer." for i, word in enumerate("abcdefg")]
    (root / "MEMORY.md").write_text("\n\n".join(lines) + "\n")
    async with embeddings_server() as server, running_memory(tmp_path, _config(server, batch_size=3)):

        async def embedded() -> bool:
            status = await _status()
            return status["chunks"] == status["embedded"] == 7

        await eventually(embedded, "every chunk embedded")
        assert (await _status())["vector_model"] == f"openai:{server.base_url}:tiny#8"  # the model and its length
        assert sorted(_sent(server)) == sorted(lines)
        assert all(len(body["input"]) <= 3 for body in server.bodies)
        found = await find("default", "Fact number 3")
        assert found.result.note == "" and found.has("Fact number 3")
        sent = len(_sent(server))
        status = await memory.reindex("default")
        assert status["chunks"] == 7
        await eventually(embedded, "every chunk embedded again")
        assert len(_sent(server)) == sent  # every vector came from the cache
        await find("default", "Fact number 3")  # the same query again: cached too
        assert len(_sent(server)) == sent


async def test_a_failing_server_leaves_keyword_search_saying_why(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text("The red bicycle is in the garage.\n")
    async with embeddings_server() as server:
        server.answer = lambda body: (500, {"error": {"message": "overloaded"}})
        async with running_memory(tmp_path, _config(server)):

            async def failed() -> str:
                return str((await _status())["embed_error"])

            error = await eventually(failed, "the embedder's failure recorded")
            assert "HTTP 500" in error and "overloaded" in error
            found = await find("default", "bicycle garage")
            assert found.has("red bicycle")
            assert found.result.note.startswith("keyword search only: no chunk has a vector (the embedder: ")
            assert "HTTP 500" in found.result.note
            assert (await _status())["embedded"] == 0


async def test_a_malformed_answer_does_not_crash_the_embedder(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text("The blue kayak is on the roof.\n")
    async with embeddings_server() as server:
        server.answer = lambda body: (200, {"data": [{"index": 0, "embedding": [1.0, float("nan")]}]})
        async with running_memory(tmp_path, _config(server)):

            async def failed() -> str:
                return str((await _status())["embed_error"])

            assert "not a finite number" in await eventually(failed, "the malformed answer reported")
            found = await find("default", "kayak")
            assert found.has("blue kayak") and found.result.note.startswith("keyword search only")
