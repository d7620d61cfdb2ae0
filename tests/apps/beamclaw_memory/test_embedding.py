"""The OpenAI-compatible embedder against a real HTTP server on loopback."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import httpx
import numpy as np
import pytest

from beamclaw_base import Secret
from beamclaw_memory import EmbeddingConfig, EmbeddingError, OpenAIEmbedder

from .embeddings_server import DIMENSIONS, EmbeddingsServer, embeddings_server, good_answer, vector_of


@pytest.fixture
async def server() -> AsyncIterator[EmbeddingsServer]:
    async with embeddings_server() as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as opened:
        yield opened


def _embedder(server: EmbeddingsServer, client: httpx.AsyncClient, **config: Any) -> OpenAIEmbedder:
    settings = {"provider": "openai", "base_url": server.base_url, "api_key": None, "model": "tiny", **config}
    return OpenAIEmbedder(EmbeddingConfig(**settings), client)


async def test_texts_are_sent_in_batches_and_come_back_in_order_as_unit_vectors(
    server: EmbeddingsServer, client: httpx.AsyncClient
) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = await _embedder(server, client, batch_size=3, dimensions=0).embed(texts)
    assert [body["input"] for body in server.bodies] == [texts[0:3], texts[3:6], texts[6:7]]
    assert all(body["model"] == "tiny" and body["encoding_format"] == "float" for body in server.bodies)
    assert all("dimensions" not in body for body in server.bodies)
    assert vectors.shape == (7, DIMENSIONS) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    for text, row in zip(texts, vectors, strict=True):
        expected = np.array(vector_of(text))
        np.testing.assert_allclose(row, expected / np.linalg.norm(expected), rtol=1e-6)


async def test_dimensions_and_the_api_key_are_sent_and_the_model_name_says_so(
    server: EmbeddingsServer, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBEDDINGS_KEY", "sk-test-embeddings-0123456789")
    embedder = _embedder(server, client, dimensions=8, api_key=Secret("TEST_EMBEDDINGS_KEY"))
    await embedder.embed(["one"])
    assert server.bodies[0]["dimensions"] == 8
    assert server.headers[0]["authorization"] == "Bearer sk-test-embeddings-0123456789"
    assert embedder.model == f"openai:{server.base_url}:tiny@8"
    assert _embedder(server, client, dimensions=0).model == f"openai:{server.base_url}:tiny"


async def test_no_key_set_sends_no_authorization(
    server: EmbeddingsServer, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_EMBEDDINGS_KEY", raising=False)
    await _embedder(server, client, api_key=Secret("TEST_EMBEDDINGS_KEY")).embed(["one"])
    assert "authorization" not in server.headers[0]


async def test_no_texts_make_no_request(server: EmbeddingsServer, client: httpx.AsyncClient) -> None:
    vectors = await _embedder(server, client).embed([])
    assert len(vectors) == 0
    assert server.bodies == []


def _data(rows: list[Any]) -> dict[str, Any]:
    return {"object": "list", "data": [{"index": i, "embedding": row} for i, row in enumerate(rows)]}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda body: (200, _data([[1.0, 2.0]] * (len(body["input"]) - 1))), "gave 1 vectors for 2 texts"),
        (lambda body: (200, _data([[1.0, 2.0]] * (len(body["input"]) + 1))), "gave 3 vectors for 2 texts"),
        (lambda body: (200, _data([[1.0, 2.0], [1.0, 2.0, 3.0]])), "different lengths"),
        (lambda body: (200, _data([[1.0, 2.0], []])), "different lengths, or empty"),
        (lambda body: (200, _data([[], []])), "empty"),
        (lambda body: (200, '{"data": [{"index": 0, "embedding": [NaN, 1.0]}, '
                            '{"index": 1, "embedding": [1.0, 1.0]}]}'), "not a finite number"),
        (lambda body: (200, '{"data": [{"index": 0, "embedding": [Infinity, 1.0]}, '
                            '{"index": 1, "embedding": [1.0, 1.0]}]}'), "not a finite number"),
        (lambda body: (200, _data([["1.0", 2.0], [1.0, 2.0]])), "not a finite number"),
        (lambda body: (200, _data([[True, 2.0], [1.0, 2.0]])), "not a finite number"),
        (lambda body: (200, _data([[[1.0], 2.0], [1.0, 2.0]])), "not a finite number"),
        (lambda body: (200, "this is not json"), "not an embeddings list"),
        (lambda body: (200, {"error": "no data key"}), "not an embeddings list"),
        (lambda body: (200, {"data": [{"embedding": [1.0]}, {"embedding": [1.0]}]}), "not an embeddings list"),
        (lambda body: (200, {"data": "nope"}), "not an embeddings list"),
        (lambda body: (200, [1, 2]), "not an embeddings list"),
        (lambda body: (500, {"error": {"message": "the GPU caught fire"}}), "HTTP 500: .*GPU caught fire"),
        (lambda body: (429, "slow down"), "HTTP 429: slow down"),
    ],
)  # fmt: skip
async def test_a_malformed_answer_is_an_embedding_error_saying_what(
    server: EmbeddingsServer, client: httpx.AsyncClient, answer: Any, message: str
) -> None:
    server.answer = answer
    with pytest.raises(EmbeddingError, match=message):
        await _embedder(server, client).embed(["first", "second"])


async def test_a_bad_second_batch_fails_the_whole_call(server: EmbeddingsServer, client: httpx.AsyncClient) -> None:
    def second_is_bad(body: dict[str, Any]) -> tuple[int, Any]:
        return (500, "down") if len(server.bodies) == 2 else good_answer(body)

    server.answer = second_is_bad
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        await _embedder(server, client, batch_size=2).embed(["a", "b", "c", "d", "e"])
    assert len(server.bodies) == 2


async def test_batches_of_different_lengths_are_an_error(server: EmbeddingsServer, client: httpx.AsyncClient) -> None:
    server.answer = lambda body: (200, _data([[1.0] * (2 + len(server.bodies))] * len(body["input"])))
    with pytest.raises(EmbeddingError, match="different lengths in different batches"):
        await _embedder(server, client, batch_size=1).embed(["a", "b"])


async def test_a_server_that_cannot_be_reached_is_an_embedding_error(client: httpx.AsyncClient) -> None:
    async with embeddings_server() as gone:
        url = gone.base_url
    embedder = OpenAIEmbedder(EmbeddingConfig(provider="openai", base_url=url, api_key=None), client)
    with pytest.raises(EmbeddingError, match="could not be reached"):
        await embedder.embed(["a"])


async def test_a_zero_vector_stays_zero(server: EmbeddingsServer, client: httpx.AsyncClient) -> None:
    server.answer = lambda body: (200, _data([[0.0, 0.0], [3.0, 4.0]]))
    vectors = await _embedder(server, client).embed(["a", "b"])
    assert vectors.tolist() == [[0.0, 0.0], [0.6000000238418579, 0.800000011920929]]
    assert not any(math.isnan(x) for x in vectors.ravel())
