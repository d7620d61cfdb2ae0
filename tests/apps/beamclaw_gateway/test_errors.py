"""Failures are HTTP errors in the OpenAI shape, never a 200 with the error as the answer,
and never a 500: a model that failed is 502 (or its own 429), a part being restarted 503."""

from __future__ import annotations

import openai
import pytest

import supervision as sv
from tests.support.model_server import Call, Reply, Status

from .conftest import RunGateway

_CHAT = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "user": "ada"}


def _client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_missing_key_is_a_503_naming_the_variable(
    run_gateway: RunGateway, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    monkeypatch.delenv("UNSET_KEY_FOR_TEST", raising=False)
    async with run_gateway(provider={"api_key": {"env": "UNSET_KEY_FOR_TEST"}}) as g, _client(g.url) as client:
        with pytest.raises(openai.APIStatusError) as info:
            await client.chat.completions.create(**_CHAT, stream=stream)  # type: ignore[call-overload]
        assert info.value.status_code == 503
        assert info.value.code == "provider_not_configured"
        assert "UNSET_KEY_FOR_TEST" in info.value.message


@pytest.mark.parametrize("stream", [False, True])
async def test_a_model_error_is_a_502(run_gateway: RunGateway, stream: bool) -> None:
    async with run_gateway(repeat=Status(500, message="the model fell over")) as g, g.client() as client:
        response = await client.post("/v1/chat/completions", json={**_CHAT, "stream": stream})
        assert response.status_code == 502
        error = response.json()["error"]
        assert error["code"] == "model_error" and "HTTP 500" in error["message"]


async def test_a_rate_limited_model_is_a_429_with_its_retry_after(run_gateway: RunGateway) -> None:
    async with (
        run_gateway(repeat=Status(429, retry_after=7), provider={"max_retries": 0}) as g,
        g.client() as client,
    ):
        response = await client.post("/v1/chat/completions", json=_CHAT)
        assert response.status_code == 429 and response.headers["retry-after"] == "7"


async def test_a_part_that_is_down_is_a_503_with_retry_after(run_gateway: RunGateway) -> None:
    async with run_gateway(Reply("back again")) as g, g.client() as client:
        await sv.terminate_child("beamclaw_core", "sessions")  # as if stuck restarting
        response = await client.post("/v1/chat/completions", json=_CHAT)
        assert response.status_code == 503 and response.headers["retry-after"] == "1"
        assert response.json()["error"]["code"] == "restarting"
        await sv.restart_child("beamclaw_core", "sessions")
        response = await client.post("/v1/chat/completions", json=_CHAT)
        assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "back again"


async def test_an_error_after_the_stream_began_is_an_error_event(run_gateway: RunGateway) -> None:
    """Once the 200 is sent, a failure can only be said in the stream, as OpenAI does."""
    steps = [Reply("Let me look. " * 10, tool_calls=(Call("jq", {"filter": ".", "input": "1"}),)), Status(400)]
    async with run_gateway(*steps, provider={"max_retries": 0}) as g, g.client() as client:
        async with client.stream("POST", "/v1/chat/completions", json={**_CHAT, "stream": True}) as response:
            assert response.status_code == 200
            lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
        assert lines[-1] == "data: [DONE]"
        assert '"code": "model_error"' in lines[-2] and "HTTP 400" in lines[-2]
        assert any("Let me look." in line for line in lines)
