"""Streaming a reply to a channel in ~80-character steps, thinking blocks hidden, secrets scrubbed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio
from loguru import logger

from beamclaw_obs import OFF_LOOP_CHARS, StreamScrubber

from ._channel import Channel
from ._tool_parsing import ThinkingFilter


async def tell(action: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Call a channel method; a failing or hanging channel is logged, never fatal to the turn."""
    try:
        with trio.move_on_after(30):
            await action(*args)
    except Exception:  # noqa: BLE001 - a channel's own failure must not crash the loop
        logger.opt(exception=True).warning("channel {} failed", getattr(action, "__name__", action))


@attrs.define
class Drafter:
    """Turns a streamed reply into drafts: thinking hidden, credentials scrubbed, in one pass.

    Each piece goes once through a `ThinkingFilter` and a `StreamScrubber`, so a reply
    of N characters costs O(N) however it is chunked (re-reading the whole reply at
    every step took 21 s for 30 KB). A draft is the whole text shown so far, sent when
    it has grown by ``chunk_chars``, or by an eighth of itself once it is long, so the
    drafts of even a huge reply copy O(N) characters in all.
    """

    channel: Channel
    chunk_chars: int = 80
    _thinking: ThinkingFilter = attrs.field(factory=ThinkingFilter)
    _scrubber: StreamScrubber = attrs.field(factory=StreamScrubber)
    _shown: list[str] = attrs.field(factory=list)
    _shown_len: int = 0
    _sent_len: int = 0

    async def feed(self, text: str) -> None:
        if len(text) < OFF_LOOP_CHARS:
            visible = self._scrubber.feed(self._thinking.feed(text))
        else:  # one huge piece: scrubbed in a worker thread, the loop runs on (one feed at a time)
            visible = await trio.to_thread.run_sync(lambda: self._scrubber.feed(self._thinking.feed(text)))
        if not visible:
            return
        self._shown.append(visible)
        self._shown_len += len(visible)
        if self._shown_len - self._sent_len >= max(self.chunk_chars, self._sent_len // 8):
            self._sent_len = self._shown_len
            self._shown = ["".join(self._shown)]
            await tell(self.channel.update_draft, self._shown[0].strip())

    async def finish(self) -> None:
        """The end of a model round's stream: what was held back is shown (scrubbed)."""
        rest = self._scrubber.feed(self._thinking.flush()) + self._scrubber.flush()
        self._shown.append(rest)
        self._shown_len += len(rest)
        if self._shown_len > self._sent_len:
            self._sent_len = self._shown_len
            self._shown = ["".join(self._shown)]
            await tell(self.channel.update_draft, self._shown[0].strip())
