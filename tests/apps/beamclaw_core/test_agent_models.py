"""Which model does what: each agent its own (``[core.agents.NAME]``), a cheaper one for
compaction and the memory flush (``compaction_provider``), behind the `Provider` protocol."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import beamclaw_core as core
from beamclaw_core._compaction import compact
from tests.support.model_server import Reply, scripted_model

from .conftest import RunCore

LONG = "x" * 1600  # 400 tokens each: with a 2,000-token window the fourth message compacts


def _models(requests: list[dict[str, object]]) -> list[object]:
    return [request["model"] for request in requests]


async def test_each_agent_talks_to_its_own_provider_and_model(run_core: RunCore) -> None:
    async with scripted_model(repeat=Reply("from the small model")) as small:
        agents = {"writer": {"provider": "small", "model": "tiny-writer"}, "editor": {"model": "big-editor"}}
        providers = {"small": {"base_url": small.base_url, "model": "small-default"}}
        async with run_core(repeat=Reply("from the main model"), providers=providers, agents=agents) as r:
            writer = await r.open(agent="writer")
            editor = await r.open(agent="editor")
            default = await r.open()
            assert (
                await core.send_message(writer, "draft it", core.CollectingChannel())
            ).text == "from the small model"
            assert (await core.send_message(editor, "check it", core.CollectingChannel())).text == "from the main model"
            assert (await core.send_message(default, "hello", core.CollectingChannel())).text == "from the main model"
            assert _models(small.requests) == ["tiny-writer"]
            assert _models(r.model.requests) == ["big-editor", "scripted-model"]
            await r.settle()
            starts = {e.data["agent_id"]: e.data["model"] for e in r.named("agent_start")}
            assert starts == {"writer": "tiny-writer", "editor": "big-editor", "default": "scripted-model"}


async def test_compaction_and_the_memory_flush_use_the_cheaper_model(run_core: RunCore) -> None:
    async with scripted_model(Reply("NOTHING"), Reply("a cheap summary")) as cheap:
        providers = {"cheap": {"base_url": cheap.base_url, "model": "cheap-default"}}
        loop = {"compaction_provider": "cheap", "compaction_model": "kimi"}
        steps = [Reply(LONG), Reply(LONG), Reply(LONG), Reply("fresh answer")]
        async with run_core(*steps, provider={"context_window": 2000}, providers=providers, agentic_loop=loop) as r:
            session = await r.open()
            for text in ("one " + LONG, "two", "three"):
                await core.send_message(session, text, core.CollectingChannel())
            result = await core.send_message(session, "four", core.CollectingChannel())
            assert result.text == "fresh answer"
            # The flush, then the summary, went to the cheap model; every turn to the session's own.
            assert _models(cheap.requests) == ["kimi", "kimi"]
            assert "tools" not in cheap.requests[0] and "tools" not in cheap.requests[1]
            assert _models(r.model.requests) == ["scripted-model"] * 4
            assert (await core.history(session))[0].content == f"{core.SUMMARY_HEADER}\na cheap summary"


async def test_by_default_the_session_model_summarises(run_core: RunCore) -> None:
    steps = [Reply(LONG), Reply(LONG), Reply(LONG), Reply("NOTHING"), Reply("a summary"), Reply("fresh answer")]
    agents = {"default": {"model": "agent-model"}}
    async with run_core(*steps, provider={"context_window": 2000}, agents=agents) as r:
        session = await r.open()
        for text in ("one " + LONG, "two", "three", "four"):
            await core.send_message(session, text, core.CollectingChannel())
        assert _models(r.model.requests) == ["agent-model"] * 6


def test_a_provider_name_that_is_not_configured_is_refused_at_start() -> None:
    base = {"providers": {"p": {"base_url": "http://x", "model": "m"}}, "default_provider": "p"}
    with pytest.raises(ValueError, match=r"core.agents.writer.provider is 'cheap', but \[core.providers.cheap\]"):
        core.parse_core_config({**base, "agents": {"writer": {"provider": "cheap"}}})
    with pytest.raises(ValueError, match=r"core.agentic_loop.compaction_provider is 'q', but .*configured: p"):
        core.parse_core_config({**base, "agentic_loop": {"compaction_provider": "q"}})
    with pytest.raises(ValueError, match=r"core.agents.writer: unknown key 'modle'"):
        core.parse_core_config({**base, "agents": {"writer": {"modle": "m"}}})


async def test_the_openai_compatible_class_is_a_provider() -> None:
    async with httpx.AsyncClient() as client:
        provider = core.OpenAICompatProvider("p", core.ProviderConfig("http://x/v1", "m", context_window=9000), client)
        assert isinstance(provider, core.Provider)
        assert (provider.name, provider.model) == ("p", "m")
        assert provider.capabilities() == core.Capabilities(context_window=9000, timeout_seconds=120.0)


class _Canned:
    """Another API as a `Provider` would wrap it: here one that answers from a list."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[list[core.Message]] = []

    @property
    def name(self) -> str:
        return "canned"

    @property
    def model(self) -> str:
        return "canned-1"

    def capabilities(self) -> core.Capabilities:
        return core.Capabilities(context_window=1000, timeout_seconds=5.0, tools=False, streaming=False)

    async def complete(
        self, messages: list[core.Message], tools: list[dict[str, Any]] | None = None
    ) -> core.Completion:
        self.asked.append(messages)
        return core.Completion(self.answers.pop(0), model=self.model)

    async def stream(
        self, messages: list[core.Message], tools: list[dict[str, Any]] | None, on_text: Any, on_retry: Any = None
    ) -> core.Completion:
        completion = await self.complete(messages, tools)
        await on_text(completion.content)
        return completion


async def test_compaction_needs_only_the_protocol() -> None:
    history = [core.Message("user" if i % 2 == 0 else "assistant", f"message {i} " + "y" * 400) for i in range(12)]
    summariser = _Canned("what was said")
    assert isinstance(summariser, core.Provider)
    result = await compact(history, summariser, window=1000, threshold_pct=80, target_pct=40)
    assert result is not None and result.method == "summary"
    assert result.history[0].content == f"{core.SUMMARY_HEADER}\nwhat was said"
    assert "message 0" in summariser.asked[0][1].content
