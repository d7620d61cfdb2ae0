"""The memory app's running tree: real files, real tantivy, the real local embedder."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
import trio

import beamclaw_memory as memory
import supervision as sv
from beamclaw_memory._embedder import EMBEDDER
from beamclaw_memory._index import OLD_LOG_WEIGHT, index_name
from beamclaw_tools import ToolContext, ToolError, ToolSession, lookup_tool

from .conftest import DEADLINE, eventually, find, finds, memory_config, running_memory, workspace

NOTES = """# About the user

The user's cat is called Ginger and she is ginger.
They live in Lyon, near the river.

## Work

The user writes Rust at a company that builds trains.
Standups are at nine every morning.

## Health

Allergic to peanuts: never suggest satay.
"""


def _session(user: str, agent: str = "default") -> ToolSession:
    return ToolSession(f"session-{user}", agent, user)


async def _embedded(agent: str = "default") -> bool:
    (status,) = [s for s in await memory.status([agent]) if s["agent"] == agent]
    return status["chunks"] > 0 and status["embedded"] == status["chunks"]


async def test_search_finds_memory_lines_with_their_path_and_line_range(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    lines = NOTES.splitlines()
    async with running_memory(tmp_path, memory_config(chunk_size=16, chunk_overlap=0)):
        found = await find("default", "peanuts allergy satay")
        hit = found.result.hits[0]
        assert (hit.path, hit.kind) == ("MEMORY.md", "file")
        assert lines[hit.start_line - 1 : hit.end_line][-1] == "Allergic to peanuts: never suggest satay."
        assert hit.text == "\n".join(lines[hit.start_line - 1 : hit.end_line])  # the lines it says, blank ones too
        found = await find("default", "standups morning")
        hit = found.result.hits[0]
        assert hit.start_line <= lines.index("Standups are at nine every morning.") + 1 <= hit.end_line
        assert "Standups are at nine" in hit.text
        # memory_get reads the same lines from the file.
        text = await memory.read_lines("default", "MEMORY.md", owner=None, start=hit.start_line, count=2)
        assert text == "\n".join(lines[hit.start_line - 1 : hit.start_line + 1])
        assert await memory.read_lines("default", "MEMORY.md", owner="x", start=100, count=5) == ""


async def test_the_tools_are_registered_and_answer_for_the_sessions_user(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    context = ToolContext(root, tmp_path)
    async with running_memory(tmp_path):
        search_tool = await eventually(lambda: lookup_tool("memory_search"), "memory_search registered")
        get_tool = await eventually(lambda: lookup_tool("memory_get"), "memory_get registered")
        answer = await search_tool.execute({"query": "Ginger the cat"}, _session("alice"), context)
        assert "MEMORY.md lines 1-" in answer and "Ginger" in answer
        answer = await search_tool.execute({"query": "zzzqqq", "limit": 1}, _session("alice"), context)
        assert "No memory matched 'zzzqqq'." in answer
        assert (await get_tool.execute({"path": "MEMORY.md", "from": 3, "count": 1}, _session("a"), context)) == (
            "The user's cat is called Ginger and she is ginger."
        )
        assert "has no lines from line 999" in await get_tool.execute(
            {"path": "MEMORY.md", "from": 999}, _session("a"), context
        )
        with pytest.raises(ToolError, match="not in this agent's memory"):
            await get_tool.execute({"path": "../../etc/passwd"}, _session("a"), context)
        with pytest.raises(ToolError, match="not in this agent's memory"):
            await get_tool.execute({"path": "SOUL.md"}, _session("a"), context)


async def test_a_users_conversation_is_found_by_that_user_alone(tmp_path: Path) -> None:
    workspace(tmp_path)
    (tmp_path / "agents" / "default" / "MEMORY.md").write_text("The office wifi is called Hedgehog.\n")
    alice_doc, bob_doc = "conversations/alice-session/1", "conversations/bob-session/1"
    async with running_memory(tmp_path):
        assert memory.remember("default", "alice", alice_doc, "user: my favourite fruit is mango\nassistant: noted")
        assert memory.remember("default", "bob", bob_doc, "user: my bank passcode is walrus\nassistant: noted")
        await eventually(finds("default", "favourite fruit mango", "mango", owner="alice"), "alice finds her own")
        await eventually(finds("default", "bank passcode walrus", "walrus", owner="bob"), "bob finds his own")
        await eventually(_embedded, "every chunk embedded")  # the vector side is searched too
        for query in ("bank passcode walrus", "what is the passcode", "fruit", "noted", "user assistant"):
            alice = await find("default", query, owner="alice", limit=20)
            assert bob_doc not in alice.paths and not alice.has("walrus"), query
            nobody = await find("default", query, owner=None, limit=20)
            assert not {alice_doc, bob_doc} & set(nobody.paths), query
            bob = await find("default", query, owner="bob", limit=20)
            assert alice_doc not in bob.paths and not bob.has("mango"), query
        assert "Hedgehog" in (await find("default", "wifi Hedgehog", owner="alice")).result.hits[0].text
        # memory_get: bob's document is bob's alone.
        assert "walrus" in await memory.read_lines("default", bob_doc, owner="bob", start=1, count=5)
        for owner in ("alice", None, "", "bob-session"):
            with pytest.raises(LookupError, match="not in this agent's memory"):
                await memory.read_lines("default", bob_doc, owner=owner, start=1, count=5)
        context = ToolContext(tmp_path / "agents" / "default", tmp_path)
        get_tool = await eventually(lambda: lookup_tool("memory_get"), "memory_get registered")
        with pytest.raises(ToolError):
            await get_tool.execute({"path": bob_doc}, _session("alice"), context)


async def test_a_conversation_without_a_user_is_not_kept(tmp_path: Path) -> None:
    workspace(tmp_path)
    async with running_memory(tmp_path):
        memory.remember("default", "", "conversations/x/1", "the shared secret is marmalade")
        await memory.remember_now("default", "", "conversations/y/1", "another secret: marmalade")
        await memory.remember_now("default", "carol", "conversations/c/1", "carol likes marmalade on toast")
        assert (await find("default", "marmalade", owner="carol")).paths == ["conversations/c/1"]
        assert (await find("default", "marmalade", owner="dave")).result.hits == []
        assert (await find("default", "marmalade", owner=None)).result.hits == []
        (status,) = await memory.status(["default"])
        assert status["documents"] == 1


async def test_conversations_of_one_agent_are_not_searched_from_another(tmp_path: Path) -> None:
    workspace(tmp_path, "alpha")
    workspace(tmp_path, "beta")
    async with running_memory(tmp_path):
        memory.remember("alpha", "alice", "conversations/s/1", "the boat is moored at pier seventeen")
        await eventually(finds("alpha", "boat pier", "pier seventeen", owner="alice"), "alpha remembers")
        assert (await find("beta", "boat pier", owner="alice")).result.hits == []
        with pytest.raises(memory._agents.UnknownMemory):
            await find("../alpha", "boat")


async def test_an_edit_by_hand_is_picked_up_by_the_watcher(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text("The spare key is under the flowerpot.\n")
    async with running_memory(tmp_path, memory_config(watch=0.05)):
        assert (await find("default", "spare key flowerpot")).has("flowerpot")
        (root / "MEMORY.md").write_text("The spare key is now with the neighbour, Mrs Okafor.\n")
        (root / "memory" / "2026-02-03.md").write_text("Bought a new umbrella, bright yellow.\n")
        await eventually(finds("default", "Okafor neighbour", "Mrs Okafor"), "the edit found")
        await eventually(finds("default", "yellow umbrella", "bright yellow"), "the new daily log found")
        found = await find("default", "flowerpot", limit=20)
        assert not found.has("flowerpot")  # the old text is gone with the edit
        (root / "memory" / "2026-02-03.md").unlink()

        async def umbrella_gone() -> bool:
            return not (await find("default", "yellow umbrella")).has("umbrella")

        await eventually(umbrella_gone, "the removed log forgotten")


async def test_sync_picks_up_a_change_at_once(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text("first version\n")
    async with running_memory(tmp_path, memory_config(watch=3600)):
        assert await memory.sync("default") == 0  # the first start indexed it already
        (root / "MEMORY.md").write_text("The meeting moved to Thursday afternoon.\n")
        (root / "USER.md").write_text("Prefers to be called Sam.\n")
        assert await memory.sync("default") == 2
        assert (await find("default", "meeting Thursday")).has("Thursday afternoon")
        assert (await find("default", "called Sam")).paths[0] == "USER.md"
        assert await memory.sync("default") == 0


async def test_links_and_special_files_are_never_indexed_or_blocked_on(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The vault combination is xylophone quartz.\n")
    root = workspace(tmp_path)
    (root / "MEMORY.md").symlink_to(outside / "secret.md")
    (root / "memory" / "2026-01-01.md").symlink_to(outside / "secret.md")
    os.link(outside / "secret.md", root / "AGENTS.md")  # a hard link: the same file, from outside
    os.mkfifo(root / "USER.md")
    os.mkfifo(root / "memory" / "2026-01-02.md")
    (root / "TOOLS.md").write_text("The workshop has a lathe.\n")
    async with running_memory(tmp_path, memory_config(watch=0.05)):
        with trio.fail_after(DEADLINE):  # a FIFO opened for reading would block for ever
            assert (await find("default", "workshop lathe")).paths == ["TOOLS.md"]
            for query in ("vault combination xylophone quartz", "xylophone", "combination"):
                found = await find("default", query, limit=20)
                assert not found.has("xylophone"), query
                assert found.paths in ([], ["TOOLS.md"]), query
            for path in ("MEMORY.md", "AGENTS.md", "memory/2026-01-01.md", "USER.md"):
                with pytest.raises(LookupError):
                    await memory.read_lines("default", path, owner=None, start=1, count=5)
            await trio.sleep(0.3)  # several watcher ticks over the same files
            assert await memory.sync("default") == 0
            (status,) = await memory.status(["default"])
            assert status["documents"] == 1


async def test_a_file_replaced_by_a_link_is_forgotten(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("outside text about gravel\n")
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text("inside text about pebbles\n")
    async with running_memory(tmp_path, memory_config(watch=3600)):
        assert (await find("default", "pebbles")).has("pebbles")
        (root / "MEMORY.md").unlink()
        (root / "MEMORY.md").symlink_to(outside)
        assert await memory.sync("default") == 1
        assert (await find("default", "pebbles gravel")).result.hits == []


def _corrupt_keywords(tmp_path: Path) -> None:
    folder = tmp_path / "memory" / "default" / "bm25"
    files = [p for p in folder.iterdir() if not p.name.startswith(".")]
    assert files
    for path in files:
        path.write_bytes(b"\x00garbage\xff" * 50)


def _corrupt_store(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "default" / "chunks.db"
    assert path.stat().st_size > 0
    path.write_bytes(os.urandom(8192))


@pytest.mark.parametrize("corrupt", [_corrupt_keywords, _corrupt_store])
async def test_a_corrupted_index_is_rebuilt_after_a_restart_of_the_tree(tmp_path: Path, corrupt: object) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    (root / "memory" / "2026-03-04.md").write_text("Planted three apple trees in the orchard.\n")
    async with running_memory(tmp_path):
        assert (await find("default", "apple trees orchard")).has("apple trees")
    corrupt(tmp_path)  # type: ignore[operator]
    async with running_memory(tmp_path):
        assert (await find("default", "apple trees orchard")).has("apple trees")
        assert (await find("default", "Lyon river")).has("Lyon")
        (status,) = await memory.status(["default"])
        assert (status["documents"], status["keyword_chunks"]) == (2, status["chunks"])


@pytest.mark.parametrize("corrupt", [_corrupt_keywords, _corrupt_store])
async def test_a_corrupted_index_is_rebuilt_after_its_process_is_killed(tmp_path: Path, corrupt: object) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    async with running_memory(tmp_path, memory_config(watch=3600)):
        assert (await find("default", "Lyon river")).has("Lyon")
        pid = sv.whereis(index_name("default"))
        assert pid is not None
        sv.kill(pid)

        async def gone() -> bool:
            return sv.whereis(index_name("default")) is None

        await eventually(gone, "the index gone")
        corrupt(tmp_path)  # type: ignore[operator]
        assert (await find("default", "Lyon river")).has("Lyon")
        assert sv.whereis(index_name("default")) not in (None, pid)


async def test_a_killed_index_is_started_again_by_the_watcher(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    async with running_memory(tmp_path, memory_config(watch=0.05)):
        assert (await find("default", "Lyon")).has("Lyon")
        pid = sv.whereis(index_name("default"))
        assert pid is not None
        sv.kill(pid, RuntimeError("chaos"))

        async def restarted() -> bool:
            return sv.whereis(index_name("default")) not in (None, pid)

        await eventually(restarted, "the index restarted by the watcher")
        (root / "USER.md").write_text("Enjoys bouldering on weekends.\n")
        await eventually(finds("default", "bouldering", "bouldering"), "the restarted index keeps watching")


async def test_search_answers_while_the_embedder_is_down_and_it_comes_back(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    async with running_memory(tmp_path):
        await eventually(_embedded, "every chunk embedded")
        found = await find("default", "Lyon river")
        assert found.result.note == "" and found.has("Lyon")
        embedder = sv.whereis(EMBEDDER)
        assert embedder is not None
        sv.kill(embedder, RuntimeError("the model crashed"))
        for _ in range(5):  # while it is down or restarting, and again when it is killed once more
            found = await find("default", "Lyon river")
            assert found.has("Lyon")
            assert found.result.note == "" or found.result.note.startswith("keyword search only"), found
            pid = sv.whereis(EMBEDDER)
            if pid is not None:
                sv.kill(pid, RuntimeError("the model crashed again"))

        # Down for good (stopped by its supervisor): the search says it is keyword-only.
        await sv.terminate_child("beamclaw_memory", "embedder")
        found = await find("default", "Lyon river")
        assert found.has("Lyon")
        assert found.result.note == "keyword search only: the embedder is not answering (NoProc); restarting"
        await sv.restart_child("beamclaw_memory", "embedder")

        async def back() -> bool:
            pid = sv.whereis(EMBEDDER)
            if pid is None or pid == embedder:
                return False
            return (await find("default", "Lyon river")).result.note == ""

        await eventually(back, "the embedder back and searching by meaning")
        (status,) = await memory.status(["default"])
        assert status["vector_model"].startswith("wordllama:")


async def test_provider_none_searches_by_keywords_and_says_so(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    async with running_memory(tmp_path, memory_config(provider="none")):
        found = await find("default", "peanuts")
        assert found.has("peanuts")
        assert found.result.note == 'keyword search only: memory.embedding.provider is "none"'
        assert (await find("default", "feline companion")).result.hits == []  # nothing by meaning
        (status,) = await memory.status(["default"])
        assert (status["embedded"], status["vector_model"]) == (0, "")
        context = ToolContext(root, tmp_path)
        tool = await eventually(lambda: lookup_tool("memory_search"), "memory_search registered")
        answer = await tool.execute({"query": "peanuts"}, _session("a"), context)
        assert answer.startswith('[keyword search only: memory.embedding.provider is "none"]\nRecalled from memory')
        assert "\n--- 1. MEMORY.md lines" in answer


def _day(today: datetime.date, days_ago: int) -> str:
    return (today - datetime.timedelta(days=days_ago)).isoformat()


@pytest.mark.parametrize("provider", ["none", "local"])
async def test_daily_logs_older_than_the_lookback_weigh_less(tmp_path: Path, provider: str) -> None:
    root = workspace(tmp_path)
    today = datetime.date.today()
    text = "Renewed the passport at the consulate.\n"
    for days_ago in (0, 7, 8, 40):
        (root / "memory" / f"{_day(today, days_ago)}.md").write_text(text)
    async with running_memory(tmp_path, memory_config(provider=provider, daily_log_lookback=7, min_score=0.0)):
        if provider == "local":
            await eventually(_embedded, "every chunk embedded")
        found = await find("default", "passport consulate", limit=10)
        score = {hit.path: hit.score for hit in found.result.hits}
        recent, boundary = score[f"memory/{_day(today, 0)}.md"], score[f"memory/{_day(today, 7)}.md"]
        old, older = score[f"memory/{_day(today, 8)}.md"], score[f"memory/{_day(today, 40)}.md"]
        assert recent == boundary
        assert old == older == pytest.approx(recent * OLD_LOG_WEIGHT, abs=1e-3)
        assert found.paths[:2] == sorted(found.paths[:2]) and found.paths[2:] == sorted(found.paths[2:])
        assert all(path.endswith((_day(today, 0) + ".md", _day(today, 7) + ".md")) for path in found.paths[:2])


async def test_the_lookback_counts_from_the_trees_clock(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    now = datetime.datetime(2031, 6, 15, 12, 0)
    (root / "memory" / "2031-06-14.md").write_text("Fed the goldfish.\n")
    (root / "memory" / "2031-05-01.md").write_text("Fed the goldfish.\n")
    config = memory_config(provider="none", daily_log_lookback=7, min_score=0.0)
    async with running_memory(tmp_path, config, clock=now.timestamp):
        found = await find("default", "goldfish")
        score = {hit.path: hit.score for hit in found.result.hits}
        assert score["memory/2031-05-01.md"] == pytest.approx(score["memory/2031-06-14.md"] * OLD_LOG_WEIGHT)


async def test_reindex_rebuilds_from_the_files_and_keeps_conversations(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "MEMORY.md").write_text(NOTES)
    async with running_memory(tmp_path, memory_config(watch=3600)):
        memory.remember("default", "alice", "conversations/a/1", "user: the code word is periwinkle")
        await eventually(finds("default", "periwinkle", "periwinkle", owner="alice"), "remembered")
        status = await memory.reindex("default")
        assert status["documents"] == 2 and status["keyword_chunks"] == status["chunks"]
        assert (await find("default", "periwinkle", owner="alice")).has("periwinkle")
        assert (await find("default", "Lyon")).has("Lyon")


async def test_a_remembered_secret_is_scrubbed(tmp_path: Path) -> None:
    workspace(tmp_path)
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    async with running_memory(tmp_path):
        memory.remember("default", "alice", "conversations/a/1", f"user: my OpenAI key is {key} for the chatbot")
        found = await eventually(finds("default", "OpenAI key chatbot", "chatbot", owner="alice"), "remembered")
        assert key not in found.result.hits[0].text
        assert key not in await memory.read_lines("default", "conversations/a/1", owner="alice", start=1, count=9)


async def test_a_disabled_app_says_so_without_waiting_out_a_restart(tmp_path: Path, autojump_clock: object) -> None:
    """Memory off is told at once: a call that waited for the agents process to come back
    (as it does while the app restarts) would cost every turn that keeps memory fresh two
    seconds. Virtual time shows the wait: the clock jumps over it, and must not move."""
    workspace(tmp_path)
    async with running_memory(tmp_path, memory.MemoryConfig(enabled=False)):
        before = trio.current_time()
        for _ in range(3):
            with pytest.raises(memory.MemoryUnavailable, match="enabled = false"):
                await memory.sync("default", timeout=60.0)
        assert trio.current_time() == before


async def test_a_disabled_app_says_memory_is_unavailable(tmp_path: Path) -> None:
    workspace(tmp_path)
    async with running_memory(tmp_path, memory.MemoryConfig(enabled=False)):
        with pytest.raises(memory.MemoryUnavailable, match="not running"):
            await find("default", "anything")
        assert await lookup_tool("memory_search") is None
        assert memory.remember("default", "alice", "d", "text") is False
