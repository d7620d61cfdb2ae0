"""A chat turn, streamed as server-sent events: what the terminal, the TUI and the web
console show while the agent works.

The turn runs in its conversation whatever happens to the request: a client that goes
away loses the stream, never the turn (it is stored). Its events, each
``event: NAME`` and ``data: JSON``: ``typing``, ``draft`` (the whole reply so far),
``final``, ``message`` (a separate message, such as an error), ``progress`` (a passing
note: the model is being retried), ``tool_started`` and ``tool_finished`` (a tool card),
``approval`` (a tool call waits for the user's word: answer it with
``POST /v1/sessions/<id>/approval``, or send ``/yes``), and last ``reply``.

A turn runs with its principal's origin on its channel (``console:NAME``, ``cli:NAME``):
a ``/yes`` sent as a chat message answers only what a run of the same origin asked.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Final

import attrs
import trio
from quart import Blueprint, Response

import beamclaw_core as core
from beamclaw_gateway import BadRequest, Role, json_body, needs, principal

from ._common import handle_errors, text_field
from ._session_routes import channel_field, handle_name_errors, named_session, own_handle

chat_routes = handle_name_errors(handle_errors(Blueprint("chat_routes", __name__)))

#: Seconds between two keepalive comments while nothing else is sent: a dead client is noticed.
KEEPALIVE: Final = 15.0
#: How often the stream looks whether the turn's session died without settling it (a
#: settled turn closes the stream's channel at once: see `EventChannel.close`).
_POLL: Final = 1.0


def frame(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


@attrs.define(eq=False)
class EventChannel(core.BaseChannel):
    """A `beamclaw_core.Channel` whose every call becomes an event (its name and data) on
    a memory channel; once the stream's reader is gone, the events are dropped."""

    _send: trio.MemorySendChannel[tuple[str, dict[str, Any]]]
    session: str

    @classmethod
    def open(cls, session: str) -> tuple[EventChannel, trio.MemoryReceiveChannel[tuple[str, dict[str, Any]]]]:
        send, receive = trio.open_memory_channel[tuple[str, dict[str, Any]]](float("inf"))
        return cls(send, session), receive

    def close(self, _: core.TurnResult | None = None) -> None:
        """No more events: the turn is settled (its ``reply`` follows)."""
        self._send.close()

    def _put(self, event: str, **data: Any) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            self._send.send_nowait((event, data))

    async def send(self, text: str) -> None:
        self._put("message", text=text)

    async def send_typing(self) -> None:
        self._put("typing")

    async def update_draft(self, text: str) -> None:
        self._put("draft", text=text)

    async def finalize_draft(self, text: str) -> None:
        self._put("final", text=text)

    async def turn_failed(self, text: str) -> None:
        """Nothing: the last event (``reply``, not ok) carries the same text."""

    async def progress(self, text: str) -> None:
        self._put("progress", text=text)

    async def tool_started(self, name: str, arguments: str) -> None:
        self._put("tool_started", name=name, arguments=arguments)

    async def tool_finished(self, name: str, result: str, is_error: bool) -> None:
        self._put("tool_finished", name=name, result=result, is_error=is_error)

    async def approval_asked(self, question: str) -> None:
        self._put("approval", question=question, session=self.session)


async def _events(
    turn: core.Turn, events: trio.MemoryReceiveChannel[tuple[str, dict[str, Any]]], session: str
) -> AsyncIterator[bytes]:
    """The turn's events as they come, a keepalive comment when none came for a while, and
    last its ``reply``."""
    async with events:
        quiet_since = trio.current_time()
        while True:
            item, settled = None, False
            # Never yield inside a cancel scope: the scope would leak into the consumer.
            with trio.move_on_after(_POLL):
                try:
                    item = await events.receive()
                except trio.EndOfChannel:
                    settled = True
            if settled:
                break
            if item is not None:
                quiet_since = trio.current_time()
                yield frame(*item)
            elif turn.ended():
                break
            elif trio.current_time() - quiet_since >= KEEPALIVE:
                quiet_since = trio.current_time()
                yield b": keepalive\n\n"
        while True:  # what came between the last look and the end
            try:
                yield frame(*events.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
    result = await turn.wait()
    yield frame("reply", {"ok": result.ok, "text": result.text, "session": session})


@chat_routes.post("/v1/chat")
@needs(Role.OPERATOR)
async def chat() -> Response:
    """A turn of ``{text, user?, agent?, session?, channel?}`` (a session by id, or the
    conversation of the user with the agent), streamed (see the module's docstring)."""
    body = await json_body("{text, user?, agent?, session?, channel?}")
    text = core.truncated(text_field(body, "text"))
    channel = channel_field(body)
    prefix = body.get("session")
    if prefix is not None and not isinstance(prefix, str):
        raise BadRequest('"session" must be a session id')
    handle = await (own_handle(prefix) if prefix else named_session(body, channel))
    sink, events = EventChannel.open(handle.id)
    turn = await core.submit(handle, text, sink, origin=principal().origin(channel), on_finish=sink.close)
    response = Response(_events(turn, events, handle.id), content_type="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.timeout = None  # a long turn is not a stuck response
    return response
