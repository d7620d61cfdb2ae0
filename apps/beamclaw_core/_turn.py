"""A turn: one user message waiting for, or getting, the agent's answer."""

from __future__ import annotations

import contextlib
import enum
import uuid
from collections.abc import Callable, Iterator
from typing import Final, final

import attrs
import trio

import supervision as sv
from beamclaw_tools import Autonomy

from ._channel import Channel

#: How often a waiter checks that the session holding its turn is still alive.
_LIVENESS_CHECK: Final = 1.0
LOST: Final = "The conversation's process stopped before answering; please send your message again."


@final
class TurnError(enum.Enum):
    """Why a turn failed, for channels that answer with a status (the HTTP API)."""

    #: The model server could not be reached, or answered with an error.
    MODEL = "model_error"
    #: The provider lacks what it needs to be called (its API key).
    NOT_CONFIGURED = "provider_not_configured"
    #: The agent's daily token budget is used up.
    BUDGET = "budget_exceeded"
    #: The session database could not save the turn.
    STORAGE = "storage_unavailable"
    #: A process serving the turn crashed or stopped; the conversation is intact.
    INTERRUPTED = "interrupted"
    #: The user stopped the turn.
    STOPPED = "stopped"


@final
@attrs.frozen
class TurnResult:
    """How a turn ended: the reply text, or the error the user was told (and its kind).

    *model_status* is the model server's HTTP status when it refused, *retry_after*
    the seconds after which trying again may succeed, when known.
    """

    text: str
    ok: bool = True
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    error: TurnError | None = None
    model_status: int | None = None
    retry_after: float | None = None


@final
@attrs.define(eq=False)
class Turn:
    text: str
    channel: Channel
    images: tuple[str, ...] = ()
    #: At most this autonomy for the turn (a scheduled job's ``default_autonomy``); None
    #: leaves the agent's own.
    autonomy: Autonomy | None = None
    #: Where it came from: the channel (``cli``, ``telegram``...), with the caller where a
    #: channel has several (``http:<principal>``). An approval is answered only from the
    #: origin of the turn that asked.
    origin: str = ""
    id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:16])
    result: TurnResult | None = None
    #: The session process that accepted the turn: if it is killed outright (it gets no
    #: chance to answer its queue), waiters are told instead of waiting for ever.
    owner: sv.Pid | None = None
    #: Set by the user's /stop: the loop ends the turn where it stands (see `stop`).
    stop_requested: bool = attrs.field(default=False, init=False)
    #: Called with the result once the turn is settled (a stream closes on it at once,
    #: rather than noticing the end at its next look).
    on_finish: Callable[[TurnResult], None] | None = attrs.field(default=None, kw_only=True, repr=False)
    _done: trio.Event = attrs.field(factory=trio.Event, init=False, repr=False)
    _work: trio.CancelScope | None = attrs.field(default=None, init=False, repr=False)

    def stop(self) -> None:
        """Stop the turn: the step the loop is working on is cancelled, and no other begins."""
        self.stop_requested = True
        if self._work is not None:
            self._work.cancel()

    @contextlib.contextmanager
    def working(self) -> Iterator[trio.CancelScope]:
        """The scope of one step of the turn, which `stop` cancels."""
        with trio.CancelScope() as scope:
            self._work = scope
            try:
                yield scope
            finally:
                self._work = None

    def finish(self, result: TurnResult) -> None:
        """Settle the turn once; later calls are ignored (a crash report after the answer, say)."""
        if self.result is None:
            self.result = result
            self._done.set()
            if self.on_finish is not None:
                self.on_finish(result)

    def ended(self) -> bool:
        """Whether the turn has its result; one whose session is gone ends with `LOST`."""
        if self.result is None and self.owner is not None and not sv.is_alive(self.owner):
            self.finish(TurnResult(LOST, ok=False, error=TurnError.INTERRUPTED))
        return self.result is not None

    async def wait(self) -> TurnResult:
        while not self.ended():
            with trio.move_on_after(_LIVENESS_CHECK):
                await self._done.wait()
        assert self.result is not None
        return self.result
