"""Channels built on `BaseChannel`: the optional methods are called when a channel has
them, and a channel with only the four every channel has gets their defaults."""

from __future__ import annotations

import attrs

import beamclaw_core as core
from tests.support.model_server import Call, Reply, Status

from .conftest import RunCore


@attrs.define
class _Plain(core.BaseChannel):
    """Only what every channel has: everything it is given, in order."""

    seen: list[tuple[str, str]] = attrs.field(factory=list)

    async def send(self, text: str) -> None:
        self.seen.append(("send", text))

    async def send_typing(self) -> None:
        self.seen.append(("typing", ""))

    async def update_draft(self, text: str) -> None:
        self.seen.append(("draft", text))

    async def finalize_draft(self, text: str) -> None:
        self.seen.append(("final", text))


@attrs.define
class _Watching(_Plain):
    """A channel that shows the tool calls, the progress notes and failures apart."""

    async def turn_failed(self, text: str) -> None:
        self.seen.append(("failed", text))

    async def progress(self, text: str) -> None:
        self.seen.append(("progress", text))

    async def tool_started(self, name: str, arguments: str) -> None:
        self.seen.append(("tool_started", f"{name} {arguments}"))

    async def tool_finished(self, name: str, result: str, is_error: bool) -> None:
        self.seen.append(("tool_finished", f"{name} {result} {is_error}"))


_TOOL_TURN = (Reply(tool_calls=(Call("jq", {"filter": ".n", "input": '{"n": 7}'}, id="c1"),)), Reply("n is 7"))


async def test_a_channel_with_the_tool_events_sees_each_call_and_its_result(run_core: RunCore) -> None:
    async with run_core(*_TOOL_TURN) as r:
        channel = _Watching()
        result = await core.send_message(await r.open(), "what is n?", channel)
        assert result.text == "n is 7"
        tools = [(kind, text) for kind, text in channel.seen if kind.startswith("tool")]
        started = 'jq {"filter": ".n", "input": "{\\"n\\": 7}"}'
        assert tools == [("tool_started", started), ("tool_finished", "jq 7 False")]
        assert channel.seen[-1] == ("final", "n is 7")


async def test_a_channel_without_them_gets_the_same_turn_and_nothing_else(run_core: RunCore) -> None:
    async with run_core(*_TOOL_TURN) as r:
        channel = _Plain()
        result = await core.send_message(await r.open(), "what is n?", channel)
        assert result.text == "n is 7"
        assert {kind for kind, _ in channel.seen} <= {"typing", "draft", "final"}
        assert channel.seen[-1] == ("final", "n is 7")


async def test_a_failed_turn_is_told_apart_or_as_the_final_text(run_core: RunCore) -> None:
    async with run_core(Status(503, retry_after=0.01), Status(400), provider={"max_retries": 1}) as r:
        watching = _Watching()
        failed = await core.send_message(await r.open("watching"), "hello", watching)
        assert not failed.ok and failed.error is core.TurnError.MODEL
        kinds = [kind for kind, _ in watching.seen]
        assert "progress" in kinds and ("failed", failed.text) == watching.seen[-1] and "final" not in kinds
    async with run_core(Status(400), provider={"max_retries": 0}) as r:
        plain = _Plain()
        failed = await core.send_message(await r.open("plain"), "hello", plain)
        assert not failed.ok and plain.seen[-1] == ("final", failed.text)
