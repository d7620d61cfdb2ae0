"""The session process: a conversation's history, its turn queue and its metadata.

It is the permanent half of the per-session pair: the loop that works on its turns
may crash and be restarted, but the session, and with it the conversation, stays.
Every history change is written to the store before it is acknowledged. When the
loop dies in the middle of a turn, the session answers that turn with an error (the
user is told, not left waiting), closes any tool call left without a result so the
history stays valid for the model, and hands the queued turns to the new loop. A
session that starts (after its own crash, a store restart or a `kill -9` of the
daemon) closes such calls in the history it restores.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path
from typing import Any, Final, final

import attrs
import trio
from loguru import logger

import beamclaw_cluster as cluster
import supervision as sv
from beamclaw_base import StoreError
from beamclaw_obs import emit, scrub

from ._budget import record_tokens
from ._history import answered_history
from ._idle_sleep import tell_moved, tell_sleeper
from ._messages import Message, scrubbed_all
from ._session_messages import (
    Allowlist,
    AnswerApproval,
    Append,
    ApprovalAnswered,
    AttachLoop,
    AwaitingApproval,
    CloseOpenCalls,
    FinishTurn,
    History,
    LoopEvent,
    Replace,
    Reset,
    SessionStatus,
    SleepIfIdle,
    Status,
    StopTurn,
    StopWaiting,
    Submit,
    Submitted,
    TakeTurn,
    TurnAvailable,
)
from ._store import store_call
from ._store_requests import AppendMessages, LoadSession, RecordTokens, ReplaceHistory, TouchSession
from ._turn import Turn, TurnError, TurnResult
from ._workspace import Workspace

APPROVAL_WORDS: Final = {"/yes": "yes", "/no": "no", "/always": "always", "/y": "yes", "/n": "no"}
_STORE_FAILURES: Final = (sv.NoProc, sv.ProcessExited, sv.CallTimeout, StoreError)


class PersistError(Exception):
    """The store could not save a change; nothing was acknowledged."""


@final
@attrs.frozen
class SessionInfo:
    id: str
    user_id: str
    agent_id: str
    channel: str = ""
    #: In a cluster, this node's ownership of the conversation: every write is fenced by it.
    lease: cluster.Lease | None = None


def session_id(user_id: str, agent_id: str, channel: str = "", *, per_channel: bool = False) -> str:
    """SHA-256 of user and agent (and channel, when sessions are per channel), in hex."""
    parts = [user_id, agent_id, channel] if per_channel else [user_id, agent_id]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


@attrs.define
class _State:
    info: SessionInfo
    persist: bool
    loop_name: sv.ViaName
    history: list[Message] = attrs.field(factory=list)
    #: A list: the turns sent while one runs are few, and an empty deque takes 624 bytes in
    #: every awake conversation.
    queue: list[Turn] = attrs.field(factory=list)
    current: Turn | None = None
    loop_ref: sv.Ref | None = None
    allowlist: set[str] = attrs.field(factory=set)
    #: What `/always` would allow (see `_approval.allow_keys`) while a call waits for approval.
    pending_approval: tuple[str, ...] | None = None
    #: The channel of the turn whose call waits: only a message from there answers it.
    approval_origin: str = ""
    updated_at: float = attrs.field(factory=time.time)
    #: Set when the session agreed to sleep (see `_idle_sleep`): its tree is being stopped.
    sleeping: bool = False


def _describe(reason: Any) -> str:
    if isinstance(reason, BaseException):
        return f"{type(reason).__name__}: {reason}"
    return str(reason)


class Session(sv.GenServer):
    async def init(self, info: SessionInfo, persist: bool, loop_name: sv.ViaName, data_dir: Path) -> _State:
        state = _State(info, persist, loop_name)
        await trio.to_thread.run_sync(Workspace.of(data_dir, info.agent_id).seed)
        if persist:
            stored = await store_call(LoadSession(info.id))
            if stored is not None:
                state.history = stored.history
                state.allowlist = set(stored.allowlist)
                state.updated_at = stored.updated_at
            else:  # listed by `beamclaw sessions` from now on, messages or not
                await store_call(TouchSession(info, frozenset(state.allowlist)))
            # A loop never outlives its session (rest_for_one), so a call still open
            # here belongs to a turn that died with the previous session or daemon.
            await self._close_tool_calls(state)
        if state.history:
            emit("session_restored", session_id=info.id, agent_id=info.agent_id, messages=len(state.history))
        else:
            emit("session_start", session_id=info.id, agent_id=info.agent_id, user_id=info.user_id)
        tell_sleeper(info.id)
        return state

    async def _save(
        self, state: _State, messages: list[Message], *, replace: bool = False, tokens: RecordTokens | None = None
    ) -> None:
        if not state.persist:
            if tokens is not None:
                await record_tokens(tokens)
            return
        try:
            if replace:
                await store_call(ReplaceHistory(state.info, frozenset(state.allowlist), messages))
            else:
                start = len(state.history)
                await store_call(AppendMessages(state.info, frozenset(state.allowlist), start, messages, tokens))
        except cluster.LeaseLost as exc:
            # Another node owns the conversation now: nothing more is written or answered
            # here. The session refuses every later call as if it were gone (their senders
            # find the new owner) and the sleeper stops its tree.
            state.sleeping = True
            tell_moved(state.info.id)
            raise PersistError(f"the conversation moved to another node ({exc})") from None
        except _STORE_FAILURES as exc:
            raise PersistError(f"the session could not be saved ({type(exc).__name__}: {exc})") from None

    async def handle_call(self, request: sv.Request[Any], caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        match request:
            case Status():  # asked by the cleaner and the sleeper: not a use of the conversation
                turns = len(state.queue) + (state.current is not None)
                return sv.Reply(SessionStatus(state.info, state.updated_at, turns), state)
            case SleepIfIdle(idle):
                return sv.Reply(self._sleep_if_idle(state, idle), state)
        if state.sleeping:
            # Going to sleep: the caller starts the conversation again and retries (see `_idle_sleep`).
            sv.reply_error(caller, sv.NoProc(f"session {state.info.id[:12]} (asleep)"))
            return sv.NoReply(state)
        state.updated_at = time.time()
        match request:
            case Submit(turn):
                return sv.Reply(self._submit(turn, state), state)
            case TakeTurn():
                if state.current is None and state.queue:
                    state.current = state.queue.pop(0)
                return sv.Reply(state.current, state)
            case FinishTurn(turn, result):
                turn.finish(result)
                if state.current is turn:
                    state.current = None
                tell_sleeper(state.info.id)
                return sv.Reply(bool(state.queue), state)
            case Append(messages, tokens):
                messages = await scrubbed_all(messages)
                try:
                    await self._save(state, messages, tokens=tokens)
                except PersistError as exc:
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
                state.history.extend(messages)
                return sv.Reply(len(state.history), state)
            case Replace(messages):
                messages = await scrubbed_all(messages)
                try:
                    await self._save(state, messages, replace=True)
                except PersistError as exc:
                    sv.reply_error(caller, exc)
                    return sv.NoReply(state)
                state.history = list(messages)
                return sv.Reply(len(state.history), state)
            case History():
                return sv.Reply(list(state.history), state)
            case AttachLoop(pid):
                if state.loop_ref is not None:
                    sv.demonitor(state.loop_ref, flush=True)
                state.loop_ref = sv.monitor(pid)
                return sv.Reply(bool(state.queue) or state.current is not None, state)
            case AwaitingApproval(keys):
                state.pending_approval = keys
                state.approval_origin = state.current.origin if state.current is not None else ""
                return sv.Reply(None, state)
            case AnswerApproval(word, principal):  # an explicit answer (the owner's socket, an API client)
                if principal is not None and not state.approval_origin.endswith(f":{principal}"):
                    return sv.Reply("none", state)  # asked by another client's run, or another channel
                return sv.Reply(self._answer(state, word), state)
            case StopTurn(turn):
                turn = turn or state.current
                return sv.Reply(turn is not None and self._stop_turn(state, turn), state)
            case Allowlist():
                return sv.Reply(frozenset(state.allowlist), state)
            case Reset():
                return await self._reset(caller, state)
            case CloseOpenCalls():
                await self._close_tool_calls(state)
                return sv.Reply(None, state)
        raise ValueError(f"unknown session request {request!r}")

    @staticmethod
    def _sleep_if_idle(state: _State, idle: float) -> float | None:
        """None while a turn is in progress or waiting; else the seconds of idleness still
        to come, 0 when the session now sleeps (it refuses every call from here on)."""
        if state.current is not None or state.queue or state.pending_approval is not None:
            return None
        left = state.updated_at + idle - time.time()
        if left > 0:
            return left
        state.sleeping = True
        return 0.0

    def _submit(self, turn: Turn, state: _State) -> Submitted:
        word = APPROVAL_WORDS.get(turn.text.strip().lower())
        if word is not None:
            if state.pending_approval is None:
                turn.finish(TurnResult("There is nothing waiting for approval.", ok=False))
                return "no_approval"
            if turn.origin != state.approval_origin:
                # A /yes through another channel (another client of the same user id, an
                # MCP host's model) approves nothing: only where the question was asked.
                turn.finish(TurnResult("There is nothing waiting for approval here.", ok=False))
                return "no_approval"
            turn.finish(TurnResult(f"approval: {self._answer(state, word)}"))
            return "approval"
        state.queue.append(turn)
        self._notify_loop(state, TurnAvailable())
        return "queued"

    def _answer(self, state: _State, word: str) -> str:
        """Answer the waiting approval with *word* (yes, no or always); "none" if none waits."""
        if state.pending_approval is None or word not in {"yes", "no", "always"}:
            return "none"
        if word == "always":
            state.allowlist.update(state.pending_approval)
        state.pending_approval = None
        self._notify_loop(state, ApprovalAnswered(word))
        return word

    def _stop_turn(self, state: _State, turn: Turn) -> bool:
        """Stop *turn*: the step at work is cancelled, one waiting for approval is told, one
        still queued is answered at once. Whether it was still to be answered."""
        if turn is state.current:
            turn.stop()
            if state.pending_approval is not None:
                self._notify_loop(state, StopWaiting(turn.id))
            return True
        if turn in state.queue:
            state.queue.remove(turn)
            turn.finish(TurnResult("Stopped.", ok=False, error=TurnError.STOPPED))
            return True
        return False

    @staticmethod
    def _notify_loop(state: _State, event: LoopEvent) -> None:
        # A loop that is restarting asks for the queued turns when it attaches.
        with contextlib.suppress(sv.NoProc):
            sv.cast(state.loop_name, event)

    async def _reset(self, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        try:
            await self._save(state, [], replace=True)
        except PersistError as exc:
            sv.reply_error(caller, exc)
            return sv.NoReply(state)
        dropped = len(state.history)
        state.history = []
        emit("session_reset", session_id=state.info.id, messages=dropped)
        return sv.Reply(dropped, state)

    async def handle_info(self, message: object, state: _State) -> sv.NoReply:
        if isinstance(message, sv.Down) and message.ref == state.loop_ref:
            state.loop_ref = None
            state.pending_approval = None
            if not sv.is_normal(message.reason):
                await self._loop_crashed(state, message.reason)
        return sv.NoReply(state)

    async def _close_tool_calls(self, state: _State) -> None:
        """Answer every tool call left open by a turn that died (see `answered_history`).

        The history is scrubbed on the way too, so one stored before the scrubber knew a
        format (or before tool arguments were scrubbed) is cleaned when it is next used.
        """
        repaired = answered_history(await scrubbed_all(state.history))
        if repaired == state.history:
            return
        try:
            await self._save(state, repaired, replace=True)
        except PersistError:
            # The history stays as it was; the provider answers the calls again in each request.
            logger.error("session {}: could not save the closed tool calls of a crashed turn", state.info.id[:12])
            return
        emit(
            "history_repaired",
            session_id=state.info.id,
            messages_before=len(state.history),
            messages_after=len(repaired),
        )
        state.history = repaired

    async def _loop_crashed(self, state: _State, reason: Any) -> None:
        await self._close_tool_calls(state)
        turn, state.current = state.current, None
        if turn is None:
            return
        text = scrub(
            "Sorry, something went wrong while I was answering this message "
            f"({_describe(reason)}). "
            "The conversation is intact; please send it again."
        )
        turn.finish(TurnResult(text, ok=False, error=TurnError.INTERRUPTED))
        with trio.move_on_after(10):
            try:
                await turn.channel.turn_failed(text)
            except Exception:  # noqa: BLE001 - the channel failing must not take the session down
                logger.opt(exception=True).warning("session {}: could not send the error reply", state.info.id[:12])

    async def terminate(self, reason: Any, state: _State) -> None:
        self._finish_pending(reason, state)
        if state.info.lease is not None:
            await _release(state.info.lease)

    @staticmethod
    def _finish_pending(reason: Any, state: _State) -> None:
        pending = [*([state.current] if state.current else []), *state.queue]
        for turn in pending:
            text = "The session stopped before answering this message; please send it again."
            turn.finish(TurnResult(text, ok=False, error=TurnError.INTERRUPTED))
        emit("session_end", session_id=state.info.id, reason=_describe(reason), unanswered_turns=len(pending))


async def _release(lease: cluster.Lease) -> None:
    """Give the conversation up (it sleeps, or the session stops): another node may take
    it at once. A restarted session takes it again; failing this, the lease ends with
    this node's membership."""
    with trio.move_on_after(5, shield=True):
        member = await cluster.membership()
        if member is None or member.instance_id != lease.owner:
            return
        try:
            await member.database.run(lambda tx: cluster.release(tx, lease))
        except StoreError as exc:
            logger.warning("session {}: its lease could not be given up ({})", lease.session_id[:12], exc)
