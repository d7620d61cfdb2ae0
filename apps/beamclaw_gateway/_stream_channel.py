"""A channel that turns a run's drafts and messages into events on a memory channel.

The HTTP (SSE) and WebSocket handlers read these events and write them to their
client; the run itself goes on in the session even if the client goes away.
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

import beamclaw_core as core


@attrs.define(eq=False)
class StreamChannel(core.BaseChannel):
    """A `beamclaw_core.Channel` with the tool events; each becomes a dict event."""

    _send: trio.MemorySendChannel[dict[str, Any]]
    _shown: str = ""

    @classmethod
    def open(cls) -> tuple[StreamChannel, trio.MemoryReceiveChannel[dict[str, Any]]]:
        send, receive = trio.open_memory_channel[dict[str, Any]](float("inf"))
        return cls(send), receive

    def _put(self, **event: Any) -> None:
        self._send.send_nowait(event)

    def _delta(self, text: str) -> str:
        """The new part of the reply, or all of it if it was rewritten (a new model round)."""
        delta = text[len(self._shown) :] if text.startswith(self._shown) else text
        self._shown = text
        return delta

    async def send(self, text: str) -> None:
        self._put(type="message", text=text)

    async def send_typing(self) -> None:
        self._put(type="typing")

    async def update_draft(self, text: str) -> None:
        delta = self._delta(text)
        if delta:
            self._put(type="chunk", text=delta)

    async def finalize_draft(self, text: str) -> None:
        delta = self._delta(text)
        if delta:
            self._put(type="chunk", text=delta)
        self._put(type="final", text=text)

    async def turn_failed(self, text: str) -> None:
        self._put(type="failed", text=text)

    async def tool_started(self, name: str, arguments: str) -> None:
        self._put(type="tool_call", name=name, arguments=arguments)

    async def tool_finished(self, name: str, result: str, is_error: bool) -> None:
        self._put(type="tool_result", name=name, result=result, is_error=is_error)
