"""The daemon's streams end their subscriptions when their client leaves."""

from __future__ import annotations

from pathlib import Path

import trio

import beamclaw_core as core
from beamclaw_control import serve_socket
from supervision._process import node  # the subscribers are not public: the test looks inside
from tests.support.sse_client import Event, read_events


async def _stream(home: Path, path: str, found: list[Event], until: str) -> None:
    socket = await trio.open_unix_socket(str(home / "control.sock"))
    status, _ = await read_events(socket, path, lambda event: event[0] == until, found=found)
    assert status == 200


async def _ready(found: list[Event]) -> None:
    with trio.fail_after(30):
        while not found:
            await trio.sleep(0.02)
    assert found[0] == ("ready", {})


async def test_deliveries_reach_the_listener_and_stop_when_it_leaves(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_socket, {}, tmp_path)
        found: list[Event] = []
        async with trio.open_nursery() as listening:
            listening.start_soon(_stream, tmp_path, "/v1/users/local:ada/deliveries", found, "message")
            await _ready(found)
            assert core.outbound_channel("local:bob") is None
            channel = core.outbound_channel("local:ada")
            assert channel is not None
            await channel.send("the report is ready")
        assert found[1:] == [("message", {"text": "the report is ready"})]
        with trio.fail_after(30):  # the server notices the closed connection
            while core.outbound_channel("local:ada") is not None:
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()


async def test_two_listeners_of_one_user_each_get_every_delivery(tmp_path: Path) -> None:
    """A second listener (another tab, or a page of another site the browser was led to)
    does not take the first one's messages."""
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_socket, {}, tmp_path)
        first: list[Event] = []
        second: list[Event] = []
        with trio.fail_after(60):  # only stops a hang: a listener left without its message
            async with trio.open_nursery() as listening:
                for found in (first, second):
                    listening.start_soon(_stream, tmp_path, "/v1/users/local:ada/deliveries", found, "message")
                    await _ready(found)
                channel = core.outbound_channel("local:ada")
                assert channel is not None
                await channel.send("the report is ready")
        assert first[1:] == second[1:] == [("message", {"text": "the report is ready"})]
        nursery.cancel_scope.cancel()


async def test_supervision_events_unsubscribe_when_the_client_leaves(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_socket, {}, tmp_path)
        before = len(node().subscribers)
        found: list[Event] = []
        await _stream(tmp_path, "/v1/supervision/events", found, "ready")
        with trio.fail_after(30):
            while len(node().subscribers) != before:
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
