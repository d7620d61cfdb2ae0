"""The OpenAI-compatible provider against the scripted server: replies, retries and failures."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio

import beamclaw_core as core
from beamclaw_base import Secret
from tests.support.asgi_server import Receive, Scope, Send, read_body, serve_asgi
from tests.support.model_server import Call, CutOff, Hold, Malformed, Reply, ScriptedModel, Status, scripted_model

from .conftest import RunCore

USER = [core.Message("user", "hi")]


@asynccontextmanager
async def provider(*steps: Any, **config: Any) -> AsyncIterator[tuple[core.OpenAICompatProvider, ScriptedModel]]:
    async with scripted_model(*steps) as model, httpx.AsyncClient() as client:
        settings = core.ProviderConfig(base_url=model.base_url, model="m", **{"max_retries": 2, **config})
        yield core.OpenAICompatProvider("test", settings, client), model


async def _collect(p: core.OpenAICompatProvider) -> tuple[core.Completion, list[str]]:
    pieces: list[str] = []

    async def on_text(text: str) -> None:
        pieces.append(text)

    return await p.stream(USER, [], on_text), pieces


async def test_complete_and_stream_give_the_same_reply() -> None:
    reply = Reply("Hello there, friend.", tool_calls=(Call("jq", {"filter": "."}, id="x"),), prompt_tokens=7)
    async with provider(reply, reply) as (p, _):
        whole = await p.complete(USER)
        streamed, pieces = await _collect(p)
    expected_call = core.ToolCall("x", "jq", '{"filter": "."}')
    assert whole == core.Completion("Hello there, friend.", (expected_call,), core.Usage(7, 5), "tool_calls", "m")
    assert streamed == whole
    assert len(pieces) > 1 and "".join(pieces) == "Hello there, friend."


async def test_a_whole_reply_may_take_longer_than_the_read_timeout() -> None:
    # The model writes the whole reply before it sends a byte: only max_reply_seconds bounds that wait.
    hold = Hold(then=Reply("worth the wait"))
    async with provider(hold, timeout_seconds=0.05, max_retries=0) as (p, _), trio.open_nursery() as nursery:

        async def release_later() -> None:
            await hold.reached.wait()
            await trio.sleep(0.3)
            hold.release()

        nursery.start_soon(release_later)
        assert (await p.complete(USER)).content == "worth the wait"


async def test_429_then_success_honours_retry_after() -> None:
    async with provider(Status(429, retry_after=0.05), Reply("ok")) as (p, model):
        assert (await p.complete(USER)).content == "ok"
    assert len(model.requests) == 2


async def test_5xx_is_retried_then_reported() -> None:
    async with provider(
        Status(503, retry_after=0.01), Status(502, retry_after=0.01), Status(500, message="still down")
    ) as (p, model):
        with pytest.raises(core.ProviderError, match="HTTP 500: still down"):
            await p.complete(USER)
    assert len(model.requests) == 3


async def test_a_client_error_is_not_retried() -> None:
    async with provider(Status(400, message="bad model name")) as (p, model):
        with pytest.raises(core.ProviderError, match="HTTP 400: bad model name"):
            await p.complete(USER)
    assert len(model.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_json_is_a_clear_error(stream: bool) -> None:
    async with provider(Malformed()) as (p, _):
        with pytest.raises(core.ProviderError, match=r"not a valid chat completion|malformed stream chunk"):
            await (_collect(p) if stream else p.complete(USER))


async def test_a_cut_off_stream_is_an_error() -> None:
    async with provider(CutOff()) as (p, _):
        with pytest.raises(core.ProviderError, match="cut off before it finished"):
            await _collect(p)


async def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_PROVIDER_KEY", raising=False)
    async with provider(Reply("ok"), api_key=Secret("TEST_PROVIDER_KEY")) as (p, model):
        with pytest.raises(core.ProviderError, match="needs the environment variable TEST_PROVIDER_KEY"):
            await p.complete(USER)
        assert model.requests == []
        monkeypatch.setenv("TEST_PROVIDER_KEY", "sk-test-provider-key-123456")
        await p.complete(USER)
    assert model.headers[0]["authorization"] == "Bearer sk-test-provider-key-123456"


async def test_an_unreachable_server_is_reported() -> None:
    async with httpx.AsyncClient() as client:
        settings = core.ProviderConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)
        with pytest.raises(core.ProviderError, match=r"cannot reach the model server at http://127\.0\.0\.1:9/v1"):
            await core.OpenAICompatProvider("x", settings, client).complete(USER)


async def test_a_bad_reply_ends_the_turn_with_a_clear_message_and_loses_nothing(run_core: RunCore) -> None:
    async with run_core(Reply("first"), Malformed(), CutOff(), Reply("back")) as r:
        session = await r.open()
        await core.send_message(session, "one", core.CollectingChannel())
        bad = await core.send_message(session, "two", core.CollectingChannel())
        assert not bad.ok and bad.text.startswith("I could not get an answer from the model:")
        cut = core.CollectingChannel()
        assert "cut off" in (await core.send_message(session, "three", cut)).text and cut.finals
        assert (await core.send_message(session, "four", core.CollectingChannel())).text == "back"
        assert [m.content for m in await core.history(session)] == ["one", "first", "two", "three", "four", "back"]


async def test_no_api_key_answers_with_the_variable_to_set(run_core: RunCore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_KEY_FOR_TEST", raising=False)
    async with run_core(Reply("never"), provider={"api_key": {"env": "UNSET_KEY_FOR_TEST"}}) as r:
        session = await r.open()
        result = await core.send_message(session, "hello?", core.CollectingChannel())
        assert not result.ok and "UNSET_KEY_FOR_TEST" in result.text and r.model.requests == []


def test_context_windows_by_model_name() -> None:
    assert core.context_window("anthropic/claude-sonnet-4") == 200_000
    assert core.context_window("openai/gpt-4o-mini") == 128_000
    assert core.context_window("gpt-4") == 8_192
    assert core.context_window("some-local-model") == 32_768
    assert core.context_window("gpt-4o", override=1000) == 1000


async def test_each_retry_is_told_with_the_wait_the_server_asked_for() -> None:
    told: list[tuple[int, int, float, str]] = []

    async def on_retry(attempt: int, attempts: int, delay: float, why: str) -> None:
        told.append((attempt, attempts, delay, why))

    async with provider(Status(503, retry_after=0.02, message="warming up"), Reply("ok")) as (p, model):
        completion = await p.stream(USER, [], _ignore, on_retry)
    assert completion.content == "ok" and len(model.requests) == 2
    assert told == [(1, 3, 0.02, "the model server answered HTTP 503: warming up")]


async def _ignore(text: str) -> None:
    pass


@asynccontextmanager
async def raw_stream(
    pieces: Iterable[bytes], content_type: str = "text/event-stream", **config: Any
) -> AsyncIterator[core.OpenAICompatProvider]:
    """A provider whose server answers every request with *pieces*, as they are."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        headers = [(b"content-type", content_type.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for piece in pieces:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async with serve_asgi(app) as url, httpx.AsyncClient() as client:
        settings = core.ProviderConfig(base_url=f"{url}/v1", model="m", **{"max_retries": 0, **config})
        yield core.OpenAICompatProvider("test", settings, client)


def _event(delta: dict[str, Any], finish: str | None = None) -> str:
    return json.dumps({"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


async def test_an_endless_line_is_cut_off_and_never_held_whole() -> None:
    """The hostile server: 24 MB without a newline. httpx-sse keeps a line until it ends;
    the provider stops handing it bytes past its bound and reads the rest to drop it."""
    megabyte = b"data: " + b"a" * (1024 * 1024 - 6)
    tracemalloc.start()
    try:
        async with raw_stream([megabyte] * 24, max_reply_chars=1000) as p:
            with pytest.raises(core.ProviderError, match="longer than 1,000 characters"):
                await p.stream(USER, [], _ignore)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024  # the line held whole would be 24 MB, and copies of it


async def test_an_event_stream_split_anywhere_with_crlf_comments_and_named_events_is_read() -> None:
    text = (
        ": a comment a proxy keeps the connection alive with\r\n"
        f"event: message\r\nid: 1\r\ndata: {_event({'content': 'Hel'})}\r\n\r\n"
        f"data: {_event({'content': 'lo'})}\r\n\r\n"
        f"data:{_event({}, 'stop')}\n\n"  # no space after the colon
        "data: [DONE]\n\n"
    ).encode()
    async with raw_stream(text[i : i + 7] for i in range(0, len(text), 7)) as p:
        completion = await p.stream(USER, [], _ignore)
    assert completion.content == "Hello" and completion.finish_reason == "stop"


async def test_a_streamed_request_answered_with_json_is_a_clear_error() -> None:
    async with raw_stream([b'{"choices": []}'], content_type="application/json") as p:
        with pytest.raises(core.ProviderError, match="answered a streamed request with application/json"):
            await p.stream(USER, [], _ignore)


async def test_a_stream_that_breaks_off_mid_event_is_cut_off() -> None:
    async with raw_stream([f'data: {_event({"content": "Hi"})}\n\ndata: {{"choi'.encode()]) as p:
        with pytest.raises(core.ProviderError, match="cut off before it finished"):
            await p.stream(USER, [], _ignore)


async def test_the_request_is_the_history_tools_and_options_as_json() -> None:
    """The body is put together from each message's JSON, made once, and the tools' JSON,
    made once per list: it reads as the whole request serialised at once would."""
    history = [
        core.Message("system", "be brief"),
        core.Message("user", "héllo", images=("data:image/png;base64,AAAA",)),
        core.Message("assistant", "", tool_calls=(core.ToolCall("c1", "jq", '{"filter": "."}'),)),
        core.Message("tool", "1", tool_call_id="c1", name="jq"),
    ]
    tools = [{"type": "function", "function": {"name": "jq", "description": "d", "parameters": {"type": "object"}}}]
    async with provider(Reply("a"), Reply("b"), max_tokens=99) as (p, model):
        await p.complete(history, tools)
        await p.stream(history, tools, _ignore)
    whole, streamed = model.requests
    expected = {"model": "m", "messages": [m.to_openai() for m in history], "tools": tools, "max_tokens": 99}
    assert whole == expected
    assert streamed == {**expected, "stream": True, "stream_options": {"include_usage": True}}
    assert history[1].openai_json == json.dumps(history[1].to_openai())
