"""What the agent loop does for long-term memory, with the memory app running beside core:
the index follows the tools' writes before the next model call, exchanges are kept per
user, the memory flush runs before compaction, and the prompt points to the search."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import trio

import beamclaw_core as core
import beamclaw_memory as memory
from beamclaw_core._memory import FLUSH_PROMPT
from tests.support.model_server import Call, Reply, Status

from .conftest import RunCore, Running

FAST = {"watch_interval_seconds": 0.1, "embedding": {"provider": "none"}}
LONG = "x" * 1600  # 400 tokens: with a 2,000-token window the fourth message compacts
KEPT = "- Ada's sister Ines lives in Porto"


def _tool_results(requests: list[dict[str, object]]) -> list[str]:
    messages = requests[-1]["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m["role"] == "tool"]


async def test_a_memory_written_by_a_tool_is_found_by_the_next_search(run_core: RunCore) -> None:
    steps = [
        Reply(tool_calls=(Call("workspace_memory", {"action": "append", "content": "The boat is moored at Quay 7."}),)),
        Reply(tool_calls=(Call("memory_search", {"query": "where is the boat moored"}),)),
        Reply("At Quay 7."),
    ]
    async with run_core(*steps, autonomy_level="full", memory=FAST) as r:
        session = await r.open()
        result = await core.send_message(session, "remember where my boat is, then tell me", core.CollectingChannel())
        assert result.text == "At Quay 7."
        found = _tool_results(r.model.requests)[-1]
        assert "MEMORY.md lines" in found and "The boat is moored at Quay 7." in found


async def test_each_user_finds_only_their_own_past_conversations(run_core: RunCore) -> None:
    steps = [
        Reply("Noted: your locker code is 4417."),
        Reply(tool_calls=(Call("memory_search", {"query": "locker code"}),)),
        Reply("I do not know it."),
        Reply(tool_calls=(Call("memory_search", {"query": "locker code"}),)),
        Reply("It is 4417."),
    ]
    async with run_core(*steps, memory=FAST) as r:
        alice, bob = await r.open("local:alice"), await r.open("local:bob")
        await core.send_message(alice, "my locker code is 4417", core.CollectingChannel())
        with trio.fail_after(10):  # the exchange is handed over after the reply (a cast)
            while not (hits := await memory.search("default", "locker", owner="local:alice", limit=3)).hits:
                await trio.sleep(0.01)
        assert hits.hits[0].path.startswith("conversations/") and "4417" in hits.hits[0].text
        await core.send_message(bob, "what is the locker code?", core.CollectingChannel())
        assert "4417" not in _tool_results(r.model.requests)[-1]
        assert "No memory matched" in _tool_results(r.model.requests)[-1]
        await core.send_message(alice, "what is my locker code?", core.CollectingChannel())
        assert "4417" in _tool_results(r.model.requests)[-1]
        with_path = hits.hits[0].path
        assert "4417" in await memory.read_lines("default", with_path, owner="local:alice", start=1, count=5)
        try:
            await memory.read_lines("default", with_path, owner="local:bob", start=1, count=5)
        except LookupError as exc:
            assert "not in this agent's memory" in str(exc)
        else:
            raise AssertionError("bob read alice's conversation")


def _daily(home: Path) -> str:
    return (home / "agents" / "default" / "memory" / f"{datetime.date.today().isoformat()}.md").read_text()


async def _compact_with_a_flush(r: Running) -> None:
    """Four messages: the fourth compacts, so the model is asked for the flush (request 3)."""
    session = await r.open("local:ada")
    for text in ("my sister Ines moved to Porto " + LONG, "two", "three"):
        await core.send_message(session, text, core.CollectingChannel())
    assert (await core.send_message(session, "four", core.CollectingChannel())).text == "fresh answer"
    flush = r.model.requests[3]["messages"]
    assert flush[0]["content"] == FLUSH_PROMPT and "my sister Ines moved to Porto" in flush[1]["content"]
    assert "tools" not in r.model.requests[3]  # a hidden turn: it cannot act, only answer
    await r.settle()
    assert [e.data["chars"] for e in r.named("memory_flush")] == [len(KEPT)]


async def test_before_compaction_the_model_keeps_what_should_last_for_that_user_alone(run_core: RunCore) -> None:
    steps = [Reply(LONG), Reply(LONG), Reply(LONG), Reply(KEPT), Reply("a summary"), Reply("fresh answer")]
    async with run_core(*steps, provider={"context_window": 2000}, memory=FAST) as r:
        await _compact_with_a_flush(r)
        found = await memory.search("default", "Ines Porto", owner="local:ada", limit=3)
        assert any(hit.path.startswith("kept/") and KEPT in hit.text for hit in found.hits)
        for other in ("local:bob", None):
            assert not (await memory.search("default", "Ines Porto", owner=other, limit=3)).hits
        assert not (r.home / "agents" / "default" / "memory" / f"{datetime.date.today()}.md").exists()


async def test_a_flush_into_the_daily_log_when_the_operator_says_so(run_core: RunCore) -> None:
    steps = [Reply(LONG), Reply(LONG), Reply(LONG), Reply(KEPT), Reply("a summary"), Reply("fresh answer")]
    loop = {"memory_flush": "daily_log"}
    one_user = {"single_user_agents": ["default"]}  # the agent's own daily log: read into every prompt
    async with run_core(*steps, provider={"context_window": 2000}, memory=FAST, agentic_loop=loop, **one_user) as r:
        await _compact_with_a_flush(r)
        assert KEPT in _daily(r.home)
        found = await memory.search("default", "Ines Porto", owner=None, limit=3)
        assert found.hits and found.hits[0].path.startswith("memory/") and "Porto" in found.hits[0].text


async def test_a_failed_or_empty_flush_writes_nothing_and_compaction_goes_on(run_core: RunCore, tmp_path: Path) -> None:
    long = "x" * 1600
    for n, flush in enumerate((Reply("NOTHING"), Status(400))):
        steps = [Reply(long), Reply(long), Reply(long), flush, Reply("a summary"), Reply("fresh answer")]
        provider = {"context_window": 2000, "max_retries": 0}
        async with run_core(*steps, provider=provider, home=tmp_path / str(n)) as r:
            session = await r.open()
            for text in ("one " + long, "two", "three", "four"):
                result = await core.send_message(session, text, core.CollectingChannel())
            assert result.text == "fresh answer"
            assert (await core.history(session))[0].content == f"{core.SUMMARY_HEADER}\na summary"
            assert not (r.home / "agents" / "default" / "memory" / f"{datetime.date.today()}.md").exists()


async def test_with_memory_flush_off_compaction_asks_nothing_first(run_core: RunCore) -> None:
    long = "x" * 1600
    steps = [Reply(long), Reply(long), Reply(long), Reply("a summary"), Reply("fresh answer")]
    async with run_core(*steps, provider={"context_window": 2000}, agentic_loop={"memory_flush": "off"}) as r:
        session = await r.open()
        for text in ("one " + long, "two", "three", "four"):
            result = await core.send_message(session, text, core.CollectingChannel())
        assert result.text == "fresh answer"
        assert all(m["content"] != FLUSH_PROMPT for req in r.model.requests for m in req["messages"])


async def test_the_prompt_points_to_memory_search_only_when_it_is_there(run_core: RunCore, tmp_path: Path) -> None:
    for n, (table, pointed) in enumerate(((FAST, True), (None, False))):
        async with run_core(Reply("hi"), memory=table, home=tmp_path / str(n)) as r:
            await core.send_message(await r.open(), "hello", core.CollectingChannel())
            prompt = r.model.requests[0]["messages"][0]["content"]
            tools = json.dumps(r.model.requests[0].get("tools", []))
            assert ("memory_search" in prompt) is pointed and ("memory_search" in tools) is pointed
