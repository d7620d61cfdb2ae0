"""Compaction: summarise the old part above the threshold; trim when the model cannot."""

from __future__ import annotations

import httpx

import beamclaw_core as core
from beamclaw_core._compaction import compact, split
from tests.support.model_server import Reply, Status, scripted_model

from .conftest import RunCore


def _history(turns: int, size: int = 400) -> list[core.Message]:
    out = []
    for i in range(turns):
        out += [
            core.Message("user", f"question {i} " + "q" * size),
            core.Message("assistant", f"answer {i} " + "a" * size),
        ]
    return out


def test_split_keeps_the_newest_messages_and_never_starts_at_a_tool_result() -> None:
    call = core.ToolCall("c", "jq", "{}")
    history = [
        *_history(3),
        core.Message("assistant", "", tool_calls=(call,)),
        core.Message("tool", "r" * 200, tool_call_id="c"),
        core.Message("user", "last"),
    ]
    older, kept = split(history, budget=60)
    assert older + kept == history
    assert kept[0].role != "tool" and kept[-1].content == "last"
    older, kept = split(history, budget=10_000)
    assert older == []


async def test_above_the_threshold_the_old_part_becomes_a_summary() -> None:
    history = _history(6)  # ~1,250 tokens
    async with scripted_model(Reply("They asked six questions.")) as model, httpx.AsyncClient() as client:
        provider = core.OpenAICompatProvider("t", core.ProviderConfig(model.base_url, "m"), client)
        assert await compact(history, provider, window=4000, threshold_pct=80, target_pct=40) is None
        result = await compact(history, provider, window=1000, threshold_pct=80, target_pct=40)
    assert result is not None and result.method == "summary"
    assert result.history[0] == core.Message("system", f"{core.SUMMARY_HEADER}\nThey asked six questions.")
    assert result.history[1:] == history[-len(result.history) + 1 :]
    assert result.tokens_after < 400 < result.tokens_before
    transcript = model.requests[0]["messages"][1]["content"]
    assert transcript.startswith("user: question 0") and "answer 2" in transcript
    assert "tools" not in model.requests[0]


async def test_when_the_model_cannot_summarise_the_history_is_trimmed() -> None:
    history = _history(6)
    async with scripted_model(Status(400)) as model, httpx.AsyncClient() as client:
        provider = core.OpenAICompatProvider("t", core.ProviderConfig(model.base_url, "m", max_retries=0), client)
        result = await compact(history, provider, window=1000, threshold_pct=80, target_pct=40)
    assert result is not None and result.method == "trim"
    assert result.history == history[-len(result.history) :] and result.history[0].role == "user"


async def test_the_loop_compacts_before_calling_the_model(run_core: RunCore) -> None:
    long = "x" * 1600  # 400 tokens each
    flush = Reply("NOTHING")  # the memory flush comes first (tests/apps/beamclaw_core/test_memory.py)
    steps = [Reply(long), Reply(long), Reply(long), flush, Reply("a summary"), Reply("fresh answer")]
    async with run_core(*steps, provider={"context_window": 2000}) as r:
        session = await r.open()
        for text in ("one " + long, "two", "three"):
            await core.send_message(session, text, core.CollectingChannel())
        result = await core.send_message(session, "four", core.CollectingChannel())
        assert result.text == "fresh answer"
        history = await core.history(session)
        assert history[0].content == f"{core.SUMMARY_HEADER}\na summary"
        assert history[-2:] == [core.Message("user", "four"), core.Message("assistant", "fresh answer")]
        assert r.model.requests[-1]["messages"][1]["content"].startswith(core.SUMMARY_HEADER)
        await r.settle()
        (event,) = r.named("compaction_complete")
        assert event.data["method"] == "summary" and event.data["tokens_after"] < event.data["tokens_before"]
