"""What a conversation's processes are asked and told: the session's requests (each typed
with its reply, `supervision.Request`) and the events its loop is sent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

import supervision as sv

from ._messages import Message
from ._turn import Turn, TurnResult

if TYPE_CHECKING:
    from ._session import SessionInfo  # the session module answers these: its info is only a type here
    from ._store_requests import RecordTokens

#: What became of a submitted turn: queued, taken as an answer to the waiting approval,
#: or refused as an answer when nothing waits (for the sender's channel).
Submitted = Literal["queued", "approval", "no_approval"]


# --- the session's requests -----------------------------------------------------------------


@attrs.frozen
class SessionStatus:
    """The conversation, when it was last used, and how many runs it holds (the one at work
    and the queued ones)."""

    info: SessionInfo
    updated_at: float
    turns: int


@attrs.frozen
class Status(sv.Request[SessionStatus]):
    """Asked by the cleaner and the sleeper: not a use of the conversation."""


@attrs.frozen
class SleepIfIdle(sv.Request[float | None]):
    """Sleep if idle for *idle* seconds (see `Session._sleep_if_idle` for the reply)."""

    idle: float


@attrs.frozen
class Submit(sv.Request[Submitted]):
    """Queue *turn*, or take it as the answer to the waiting approval."""

    turn: Turn


@attrs.frozen
class TakeTurn(sv.Request[Turn | None]):
    """The turn to work on (the current one, else the next queued); None when there is none."""


@attrs.frozen
class FinishTurn(sv.Request[bool]):
    """*turn* ended with *result*; the reply is whether more turns are queued."""

    turn: Turn
    result: TurnResult


@attrs.frozen
class Append(sv.Request[int]):
    """Add *messages* (scrubbed, then saved) to the history; the reply is its new length.

    *tokens* is the model call that wrote them, recorded with them (`AppendMessages`)."""

    messages: list[Message]
    tokens: RecordTokens | None = None


@attrs.frozen
class Replace(sv.Request[int]):
    """The history becomes *messages* (scrubbed, then saved); the reply is its length."""

    messages: list[Message]


@attrs.frozen
class History(sv.Request[list[Message]]):
    """The history, a copy."""


@attrs.frozen
class AttachLoop(sv.Request[bool]):
    """The loop *pid* serves the session now; the reply is whether turns wait for it."""

    pid: sv.Pid


@attrs.frozen
class AwaitingApproval(sv.Request[None]):
    """A call waits for approval, which `/always` would answer by allowing *keys*; None: no
    call waits any more."""

    keys: tuple[str, ...] | None


@attrs.frozen
class AnswerApproval(sv.Request[str]):
    """An explicit answer to the waiting approval: the answer given, or "none". *principal*:
    answer only an approval a run of that principal asked (its origin ``CHANNEL:NAME``);
    None (an admin, the owner's socket): whatever asked."""

    word: str
    principal: str | None = None


@attrs.frozen
class StopTurn(sv.Request[bool]):
    """Stop *turn*, at work or queued, or (None) the one at work; the reply is whether
    there was one still to be answered."""

    turn: Turn | None = None


@attrs.frozen
class Allowlist(sv.Request[frozenset[str]]):
    """What the user allowed for the rest of the conversation (`/always`)."""


@attrs.frozen
class Reset(sv.Request[int]):
    """Forget the history; the reply is how many messages were dropped."""


@attrs.frozen
class CloseOpenCalls(sv.Request[None]):
    """Answer the tool calls a stopped turn left without a result."""


# --- what the loop is sent (casts) ----------------------------------------------------------


@attrs.frozen
class TurnAvailable:
    """A turn was queued: an idle loop takes it."""


@attrs.frozen
class ApprovalAnswered:
    """The user answered the waiting approval with *word* (yes, no or always)."""

    word: str


@attrs.frozen
class StopWaiting:
    """The user stopped the turn *turn_id* while it waits for approval."""

    turn_id: str


@attrs.frozen
class IdleCompact:
    """Summarise a history longer than *above_pct* of the window down to *to_pct*, while
    nobody waits (the sleeper asks before the conversation sleeps)."""

    above_pct: int
    to_pct: int


#: Everything the loop is sent.
LoopEvent = TurnAvailable | ApprovalAnswered | StopWaiting | IdleCompact
