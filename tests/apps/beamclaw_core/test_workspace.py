"""Agent workspaces, the system prompt built from them, and the workspace_memory tool."""

from __future__ import annotations

import datetime
import secrets
import threading
from pathlib import Path

import pytest

import beamclaw_core as core
import beamclaw_obs as obs
from beamclaw_core import _system_prompt as system_prompt_module
from beamclaw_core._system_prompt import PREAMBLE, assemble, truncate
from beamclaw_core._workspace import CONTEXT_FILES, SEEDED_FILES, InvalidAgentName, Workspace, check_agent_name
from beamclaw_core._workspace_tool import WorkspaceMemoryTool
from beamclaw_obs import _held_secrets
from beamclaw_tools import Autonomy, ToolContext, ToolSession, run_tool
from tests.support.model_server import Reply

from .conftest import RunCore

TODAY = datetime.date(2026, 11, 22)


def test_seeding_creates_the_files_and_never_overwrites(tmp_path: Path) -> None:
    ws = Workspace.of(tmp_path, "ada")
    ws.root.mkdir(parents=True)
    (ws.root / "IDENTITY.md").write_text("I am Ada.")
    (ws.root / "USER.md").write_text("")  # even an empty file is the user's
    created = ws.seed()
    assert set(created) == set(SEEDED_FILES) - {"IDENTITY.md", "USER.md"}
    assert ws.read("IDENTITY.md") == "I am Ada." and ws.read("USER.md") == ""
    assert ws.seed() == []  # a second time, nothing
    assert (ws.root / "memory").is_dir() and (ws.root.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("name", ["", "../etc", "a/b", "Ada", "-x", "a" * 33, ".hidden", "a b"])
def test_agent_names_are_checked(name: str) -> None:
    with pytest.raises(InvalidAgentName):
        check_agent_name(name)


def test_an_empty_bootstrap_ends_the_ritual(tmp_path: Path) -> None:
    ws = Workspace.of(tmp_path, "ada")
    ws.seed()
    assert ws.read("BOOTSTRAP.md")
    ws.write("BOOTSTRAP.md", "  \n")
    assert (ws.root / "BOOTSTRAP.md").read_text() == ""
    ws.seed()  # every conversation's start seeds: an emptied ritual stays over
    assert ws.read("BOOTSTRAP.md") == ""
    with pytest.raises(ValueError, match="not a workspace file"):
        ws.write("../../x.md", "no")


def test_truncation_keeps_head_and_tail_around_a_marker() -> None:
    text = "H" * 15_000 + "M" * 10_000 + "T" * 5_000
    out = truncate(text, "MEMORY.md")
    head, marker, tail = out.split("\n")
    assert head == "H" * 14_000 and tail == "T" * 4_000
    assert marker == "[...truncated, read MEMORY.md for full content...]"
    assert truncate("short", "X.md") == "short"


def test_the_prompt_has_the_files_in_order_and_skips_empty_ones(tmp_path: Path) -> None:
    ws = Workspace.of(tmp_path, "ada")
    ws.root.mkdir(parents=True)
    for name in CONTEXT_FILES:
        ws.create(name, f"content of {name}")
    ws.write("TOOLS.md", "   ")
    ws.append(Workspace.daily_name(TODAY), "today's log")
    ws.append(Workspace.daily_name(TODAY - datetime.timedelta(days=1)), "yesterday's log")
    ws.append(Workspace.daily_name(TODAY - datetime.timedelta(days=2)), "older log")
    prompt = assemble("BASE", ws, TODAY, "<skills>x</skills>")
    order = [prompt.index(f'<file name="{n}">') for n in CONTEXT_FILES if n != "TOOLS.md"]
    assert order == sorted(order) and prompt.startswith("BASE\n\n<workspace_context>\n" + PREAMBLE)
    assert '<file name="TOOLS.md">' not in prompt and "older log" not in prompt
    assert prompt.index("yesterday's log") > prompt.index("today's log") > prompt.index("content of MEMORY.md")
    assert prompt.endswith("</workspace_context>\n\n<skills>x</skills>")


def test_all_files_together_stay_within_the_total(tmp_path: Path) -> None:
    ws = Workspace.of(tmp_path, "ada")
    ws.root.mkdir(parents=True)
    for name in CONTEXT_FILES:
        ws.create(name, name[0] * 15_000)
    prompt = assemble("", ws, TODAY)
    inside = prompt.split(PREAMBLE)[1]
    assert 20_000 < len(inside) < 24_000 + 1_000  # the tags and markers add a little
    for name in CONTEXT_FILES:  # every file keeps its share, the last one too
        assert f"[...truncated, read {name} for full content...]" in prompt


async def test_the_tool_reaches_only_the_users_own_files(tmp_path: Path) -> None:
    tool = WorkspaceMemoryTool()
    context_a = ToolContext(workspace=tmp_path / "agents" / "a", data_dir=tmp_path)
    session_a = ToolSession("s", "a", "u")
    Workspace.of(tmp_path, "a").seed()

    async def call(args: dict[str, object]) -> str:
        result = await run_tool(tool, args, session_a, context_a)
        return ("ERROR " if result.is_error else "") + result.text

    assert await call({"action": "append", "content": "likes tea"}) == "appended to MEMORY.md"
    assert await call({"action": "read"}) == "\nlikes tea\n"
    assert await call({"action": "replace", "content": "fresh"}) == "replaced MEMORY.md"
    assert await call({"action": "read"}) == "fresh"
    assert await call({"action": "update_user", "content": "Ada, Lisbon"}) == "replaced USER.md"
    assert await call({"action": "read_user"}) == "Ada, Lisbon"
    assert await call({"action": "update_heartbeat", "content": "- check the mail"}) == "replaced HEARTBEAT.md"
    assert await call({"action": "read_heartbeat"}) == "- check the mail"
    assert (await call({"action": "append_daily", "content": "met Ada", "date": "2026-11-22"})).endswith("22.md")
    assert "met Ada" in await call({"action": "read_daily", "date": "2026-11-22"})
    assert await call({"action": "list_daily"}) == "2026-11-22"
    assert await call({"action": "update_bootstrap", "content": ""}) == (
        "BOOTSTRAP.md emptied: the first-run ritual is over"
    )
    own = tmp_path / "users" / "a" / "u"
    assert sorted(p.name for p in own.iterdir()) == ["HEARTBEAT.md", "MEMORY.md", "USER.md", "memory"]
    assert (own.stat().st_mode & 0o777) == 0o700 and (own.parent.stat().st_mode & 0o777) == 0o700
    assert Workspace.of(tmp_path, "a").read("MEMORY.md") == core.template("MEMORY.md")  # the agent's: untouched
    refused = await call({"action": "read", "path": "../b/MEMORY.md"})
    assert refused.startswith("ERROR invalid arguments") and "'path' was unexpected" in refused
    bad_date = await call({"action": "read_daily", "date": "../../../etc/passwd"})
    assert bad_date.startswith("ERROR invalid arguments")
    assert (await call({"action": "append"})).startswith("ERROR action 'append' needs 'content'")
    assert not (tmp_path / "agents" / "b").exists()


async def test_every_bootstrap_file_is_reached_and_only_prompt_files_ask(tmp_path: Path) -> None:
    tool = WorkspaceMemoryTool(lambda _agent: True)  # a single-user agent: its own files
    context = ToolContext(workspace=tmp_path / "agents" / "a", data_dir=tmp_path, single_user=True)
    session = ToolSession("s", "a", "u")
    Workspace.of(tmp_path, "a").seed()

    async def call(args: dict[str, object]) -> str:
        result = await run_tool(tool, args, session, context)
        return ("ERROR " if result.is_error else "") + result.text

    for file in ("IDENTITY", "USER", "SOUL", "TOOLS", "AGENTS", "BOOTSTRAP"):
        assert await call({"action": "read_bootstrap", "file": file}) == core.template(f"{file}.md")
        assert await call({"action": "update_bootstrap", "file": file, "content": f"new {file}"}) == (
            f"replaced {file}.md"
        )
        assert (tmp_path / "agents" / "a" / f"{file}.md").read_text() == f"new {file}"
    assert (await call({"action": "read_bootstrap", "file": "HEARTBEAT"})).startswith("ERROR invalid arguments")
    assert (
        await call({"action": "delete_daily", "date": "2026-11-20"})
    ) == "ERROR there is no daily log for 2026-11-20"
    assert (await call({"action": "delete_daily"})).startswith("ERROR delete_daily needs 'date'")

    def asks(args: dict[str, object]) -> bool:
        return core.decide(tool, Autonomy.SUPERVISED, {"workspace_memory"}, args)[0] is core.Decision.ASK

    assert not asks({"action": "append", "content": "x"}) and not asks({"action": "replace", "content": "x"})
    assert not asks({"action": "append_daily", "content": "x"}) and not asks(
        {"action": "delete_daily", "date": "2026-11-20"}
    )
    assert asks({"action": "update_bootstrap", "file": "SOUL", "content": "x"}) and asks(
        {"action": "update_user", "content": "x"}
    )
    assert not asks({"action": "update_bootstrap", "content": ""})  # ending the ritual


async def test_each_model_call_sees_the_workspace(run_core: RunCore) -> None:
    async with run_core(Reply("hi"), Reply("again")) as r:
        session = await r.open(agent="ada")
        await core.send_message(session, "hello", core.CollectingChannel())
        ws = Workspace.of(r.home, "ada")
        assert ws.read("BOOTSTRAP.md")  # seeded when the session started
        ws.write("IDENTITY.md", "Name: Ada Lovelace")
        await core.send_message(session, "who are you?", core.CollectingChannel())
        first, second = (req["messages"][0]["content"] for req in r.model.requests)
        assert "Bootstrap: your first conversation" in first
        assert "Name: Ada Lovelace" in second and "Name: Ada Lovelace" not in first
        with pytest.raises(ValueError, match="invalid agent name"):
            await r.open(agent="../../etc")


async def test_the_prompt_kept_between_turns_is_rebuilt_after_a_file_changes(
    run_core: RunCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every file counts as settled at once, so the second and third prompts may come from the cache.
    monkeypatch.setattr(system_prompt_module, "RACY_SECONDS", 0.0)
    async with run_core(Reply("hi"), Reply("again"), Reply("and again")) as r:
        session = await r.open(agent="ada")
        ws = Workspace.of(r.home, "ada")
        ws.write("IDENTITY.md", "Name: Ada Lovelace")
        await core.send_message(session, "hello", core.CollectingChannel())
        await core.send_message(session, "hello again", core.CollectingChannel())
        ws.write("IDENTITY.md", "Name: Ada Byron-Kin")  # the same size
        await core.send_message(session, "who are you?", core.CollectingChannel())
        first, second, third = (req["messages"][0]["content"] for req in r.model.requests)
        assert first == second and "Name: Ada Lovelace" in first
        assert "Name: Ada Byron-Kin" in third and "Lovelace" not in third


async def test_a_prompt_built_while_a_secret_is_being_registered_is_not_kept_unredacted(
    run_core: RunCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registration in a worker thread caught half done by a turn: the prompt that turn
    built (the value not known yet) is not sent again once the registration is over."""
    monkeypatch.setattr(system_prompt_module, "RACY_SECONDS", 0.0)
    value = f"racing{secrets.token_hex(8)}"
    halfway, go_on = threading.Event(), threading.Event()
    forms = _held_secrets.forms_of

    def paused_forms_of(held: str) -> tuple[set[str], set[str]]:
        halfway.set()
        go_on.wait(10)
        return forms(held)

    async with run_core(Reply("hi"), Reply("again")) as r:
        session = await r.open(agent="ada")
        Workspace.of(r.home, "ada").write("IDENTITY.md", f"Name: {value}")
        obs.scrub("the matcher is compiled by this first scrub")
        monkeypatch.setattr(_held_secrets, "forms_of", paused_forms_of)
        worker = threading.Thread(target=obs.register_secret, args=(value,))
        worker.start()
        try:
            assert halfway.wait(10)
            await core.send_message(session, "hello", core.CollectingChannel())  # racing: either prompt is right
        finally:
            go_on.set()
            worker.join()
        await core.send_message(session, "hello again", core.CollectingChannel())
        second = r.model.requests[1]["messages"][0]["content"]
        assert value not in second and f"Name: {obs.REDACTED}" in second


async def test_only_an_existing_agent_or_the_default_can_be_talked_to(run_core: RunCore) -> None:
    async with run_core(Reply("hi")) as r:
        with pytest.raises(core.UnknownAgent, match=r"there is no agent 'nosuchagent' \(agents: default\)"):
            await core.open_session("local:ada", "nosuchagent", "cli")
        assert not (r.home / "agents" / "nosuchagent").exists()
        assert core.agent_names(r.home, "default") == ["default"]
        await core.open_session("local:ada", "default", "cli")  # the default is made on first use
        assert (r.home / "agents" / "default" / "IDENTITY.md").is_file()
        Workspace.of(r.home, "ops").seed()  # what `beamclaw agent create ops` does
        await core.open_session("local:ada", "ops", "cli")
        assert core.agent_names(r.home, "default") == ["default", "ops"]
