"""Streaming a reply to a channel in ~80-character steps, thinking blocks hidden."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio
from loguru import logger

from beamclaw_obs import scrub

from ._channel import Channel
from ._tool_parsing import strip_thinking


async def tell(action: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Call a channel method; a failing or hanging channel is logged, never fatal to the turn."""
    try:
        with trio.move_on_after(30):
            await action(*args)
    except Exception:  # noqa: BLE001 - a channel's own failure must not crash the loop
        logger.opt(exception=True).warning("channel {} failed", getattr(action, "__name__", action))


@attrs.define
class Drafter:
    channel: Channel
    chunk_chars: int = 80
    _raw: list[str] = attrs.field(factory=list)
    _raw_len: int = 0
    _checked_len: int = 0
    _sent_len: int = 0

    async def feed(self, text: str) -> None:
        self._raw.append(text)
        self._raw_len += len(text)
        if self._raw_len - self._checked_len < self.chunk_chars:
            return
        self._checked_len = self._raw_len
        visible = scrub(strip_thinking("".join(self._raw)))
        if len(visible) - self._sent_len >= self.chunk_chars:
            self._sent_len = len(visible)
            await tell(self.channel.update_draft, visible)
