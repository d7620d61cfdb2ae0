"""The official `openai` client against /v1/chat/completions and /v1/models."""

from __future__ import annotations

import gc
import json

import openai
import pytest

from tests.support.model_server import Call, Reply

from .conftest import RunGateway


def _client(url: str, token: str = "none") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0)


async def test_plain_completion_and_history_server_side(run_gateway: RunGateway) -> None:
    async with run_gateway(Reply("Hello from BeamClaw."), Reply("You said hi before.")) as g, _client(g.url) as client:
        first = await client.chat.completions.create(
            model="default", messages=[{"role": "user", "content": "hi"}], user="ada"
        )
        assert first.choices[0].message.content == "Hello from BeamClaw."
        assert first.usage is not None and first.usage.total_tokens == 15 and first.model == "default"
        second = await client.chat.completions.create(
            model="beamclaw/default", messages=[{"role": "user", "content": "what did I say?"}], user="ada"
        )
        assert second.choices[0].message.content == "You said hi before." and second.model == "beamclaw/default"
        sent = [m["content"] for m in g.model.requests[1]["messages"][1:]]
        assert sent == ["hi", "Hello from BeamClaw.", "what did I say?"]
        # Nobody watches a JSON answer grow, yet the model streams it: only a stream's read
        # timeout tells a stalled model server from a slow model.
        assert [request.get("stream", False) for request in g.model.requests] == [True, True]


# The official client stops reading at [DONE] and leaves its stream generators (and the
# connection) to the garbage collector, which Trio reports. That is the client's way, not
# the server's: test_the_sse_stream_is_well_formed reads the whole stream with httpx.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_streaming_with_a_tool_call(run_gateway: RunGateway) -> None:
    steps = [Reply(tool_calls=(Call("jq", {"filter": ".a", "input": '{"a": 42}'}),)), Reply("The answer is 42. " * 30)]
    async with run_gateway(*steps) as g, _client(g.url) as client:
        stream = await client.chat.completions.create(
            model="default",
            messages=[{"role": "user", "content": "compute"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        pieces, finish, usage = [], None, None
        async with stream:
            async for chunk in stream:
                if chunk.usage:
                    usage = chunk.usage
                for choice in chunk.choices:
                    pieces.append(choice.delta.content or "")
                    finish = choice.finish_reason or finish
        assert "".join(pieces) == ("The answer is 42. " * 30).strip()
        assert len([p for p in pieces if p]) > 1 and finish == "stop"
        gc.collect()  # the client's leftovers are collected here, where their warnings are expected
        assert usage is not None and usage.total_tokens == 30
        assert all(request["stream"] is True for request in g.model.requests)


async def test_models_lists_the_agents(run_gateway: RunGateway) -> None:
    async with run_gateway() as g, _client(g.url) as client:
        (g.home / "agents" / "ada").mkdir(parents=True)
        models = await client.models.list()
        assert [m.id for m in models.data] == ["ada", "default"]


async def test_bad_requests_are_clear_errors(run_gateway: RunGateway) -> None:
    async with run_gateway() as g, _client(g.url) as client:
        with pytest.raises(openai.NotFoundError, match="model 'nobody' not found"):
            await client.chat.completions.create(model="nobody", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError, match="no message with role 'user'"):
            await client.chat.completions.create(model="default", messages=[{"role": "system", "content": "x"}])
        with pytest.raises(openai.BadRequestError, match="invalid agent name"):
            await client.chat.completions.create(model="../etc", messages=[{"role": "user", "content": "x"}])
        async with g.client() as http:
            json_type = {"Content-Type": "application/json"}
            raw = await http.post("/v1/chat/completions", content=b"{not json", headers=json_type)
            assert raw.status_code == 400 and "must be JSON: Expecting property name" in raw.json()["error"]["message"]
            for bad, message in [
                (b"\xdc\x00", "must be JSON in UTF-8"),
                (b"[1, 2]", "must be a JSON object"),
                (b'{"model": {}, "messages": []}', "'model' must be a string"),
                (b'{"messages": [{"role": "user", "content": ""}]}', "has no text content"),
                (b'{"messages": [{"role": "user", "content": 5}]}', "messages[0].content must be a string, a list"),
                (b'{"messages": "hi"}', "must be a non-empty list"),
                (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "'stream' must be true"),
                (b'{"messages": [{"role": "user", "content": "x"}], "user": 7}', "'user' must be a string"),
            ]:
                answer = await http.post("/v1/chat/completions", content=bad, headers=json_type)
                assert answer.status_code == 400 and message in answer.json()["error"]["message"], bad
            assert g.model.requests == []


async def test_the_sse_stream_is_well_formed(run_gateway: RunGateway) -> None:
    async with run_gateway(Reply("Streamed answer, long enough to come in several chunks. " * 3)) as g:
        body = {"model": "default", "messages": [{"role": "user", "content": "go"}], "stream": True}
        async with g.client() as http, http.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line async for line in response.aiter_lines() if line]
        assert lines[-1] == "data: [DONE]"
        chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
        assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        assert text == ("Streamed answer, long enough to come in several chunks. " * 3).strip()
