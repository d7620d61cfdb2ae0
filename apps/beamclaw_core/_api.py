"""The core app's client API: what channels (the TUI, the gateway, Telegram, A2A) call."""

from __future__ import annotations

from typing import final

import attrs

import supervision as sv

from ._channel import Channel
from ._messages import Message
from ._run import Run, TurnResult
from ._runtime import Runtime
from ._sessions import SESSIONS


@final
@attrs.frozen
class SessionHandle:
    """A conversation, reachable by id whatever process currently serves it."""

    id: str
    user_id: str
    agent_id: str
    channel: str
    dest: sv.ViaName


async def open_session(user_id: str, agent_id: str, channel: str = "") -> SessionHandle:
    """Start (or find) the conversation of *user_id* with *agent_id*; its history is restored."""
    if not user_id or not agent_id:
        raise ValueError("a session needs a user id and an agent id")
    sid: str = await sv.call(SESSIONS, ("open", user_id, agent_id, channel), timeout=30.0)
    runtime: Runtime = await sv.call(SESSIONS, "runtime")
    return SessionHandle(sid, user_id, agent_id, channel, runtime.session_dest(sid))


async def _session_call(handle: SessionHandle, request: object) -> object:
    """Call the session, starting it again first if it has stopped (expired, say)."""
    try:
        return await sv.call(handle.dest, request, timeout=30.0)
    except sv.NoProc:
        await open_session(handle.user_id, handle.agent_id, handle.channel)
        return await sv.call(handle.dest, request, timeout=30.0)


async def submit(handle: SessionHandle, text: str, channel: Channel) -> Run:
    """Queue *text* as a run and return it at once; ``await run.wait()`` for the answer.

    ``/yes``, ``/no`` and ``/always`` answer a pending approval instead of queueing.
    """
    run = Run(text, channel)
    await _session_call(handle, ("submit", run))
    return run


async def send_message(handle: SessionHandle, text: str, channel: Channel) -> TurnResult:
    """Queue *text* and wait for the agent's answer (also streamed to *channel*)."""
    run = await submit(handle, text, channel)
    return await run.wait()


async def history(handle: SessionHandle) -> list[Message]:
    messages: list[Message] = await _session_call(handle, "history")  # type: ignore[assignment]
    return messages


async def reset_session(handle: SessionHandle) -> int:
    """Forget the conversation (``/new``); return how many messages were dropped."""
    dropped: int = await _session_call(handle, "reset")  # type: ignore[assignment]
    return dropped


async def stop_session(session_id: str) -> bool:
    """Stop a running conversation's processes; its stored history stays."""
    stopped: bool = await sv.call(SESSIONS, ("stop", session_id))
    return stopped


async def running_sessions() -> list[str]:
    running: list[str] = await sv.call(SESSIONS, "running")
    return running
