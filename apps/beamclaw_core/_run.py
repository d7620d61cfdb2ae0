"""A run: one user message waiting for, or getting, the agent's answer."""

from __future__ import annotations

import uuid
from typing import final

import attrs
import trio

from ._channel import Channel


@final
@attrs.frozen
class TurnResult:
    """How a run ended: the reply text, or the error the user was told."""

    text: str
    ok: bool = True
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0


@final
@attrs.define(eq=False)
class Run:
    text: str
    channel: Channel
    images: tuple[str, ...] = ()
    id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:16])
    result: TurnResult | None = None
    _done: trio.Event = attrs.field(factory=trio.Event, init=False, repr=False)

    def finish(self, result: TurnResult) -> None:
        """Settle the run once; later calls are ignored (a crash report after the answer, say)."""
        if self.result is None:
            self.result = result
            self._done.set()

    async def wait(self) -> TurnResult:
        await self._done.wait()
        assert self.result is not None
        return self.result
