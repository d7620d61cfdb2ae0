"""The core app's client API: what channels (the TUI, the gateway, Telegram, A2A) call."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final, TypeVar, final

import attrs

import supervision as sv
from beamclaw_base import RetryPolicy, retry
from beamclaw_obs import scrub
from beamclaw_tools import Autonomy

from ._channel import Channel
from ._compaction import context_window
from ._config import parse_core_config
from ._messages import Message, estimate_tokens
from ._runtime import RESTART_WAIT
from ._session_messages import AnswerApproval, History, Reset, Status, StopTurn, Submit
from ._sessions import SESSIONS, CurrentRuntime, OpenSession, Reconfigure, RunningSessions, StopSession
from ._store import store_call
from ._store_requests import FindSessions, ListSessions, LoadSession, PairedAgent, PairingCode, SessionRow, Speaker
from ._system_prompt import system_prompt
from ._turn import Turn, TurnResult
from ._workspace import agent_names, check_agent_name

#: Retries of a call to a session that is gone or restarting: about 3.5 s in all, longer
#: than a session tree takes to come back (its loop gets 0.5 s to stop).
R = TypeVar("R")

_SESSION_RESTARTING: Final = RetryPolicy(attempts=8, wait_initial=0.05, wait_max=1.0)


@final
@attrs.frozen
class SessionHandle:
    """A conversation, reachable by id whatever process currently serves it."""

    id: str
    user_id: str
    agent_id: str
    channel: str
    dest: sv.ViaName


#: The longest user id (namespace included) a conversation may have.
MAX_USER_ID: Final = 128


class InvalidUserId(ValueError):
    """A user id that cannot be a conversation's key; the message says why."""


def check_user_id(user_id: str) -> str:
    """*user_id* if it may be a conversation's key (stored, and shown by `beamclaw sessions`).

    Printable and short, whatever channel it came from: a terminal that prints the
    sessions table must not be driven by escape sequences a client chose. Each part
    between colons is checked for credentials alone (``api:``, ``local:``, ``tg:`` are
    our own namespaces; ``api:<32 hex digits>`` read whole looks like ``key: value`` to
    the scrubber, and a UUID is a fine id).
    """
    if not user_id:
        raise InvalidUserId("a user id must not be empty")
    if len(user_id) > MAX_USER_ID or not user_id.isprintable():
        raise InvalidUserId(f"a user id must be printable and at most {MAX_USER_ID} characters, its namespace included")
    if any(scrub(part) != part for part in user_id.split(":")):
        raise InvalidUserId("a user id looks like a credential; use an opaque id (a name, a number, a UUID)")
    return user_id


#: The environment variable naming the one user of a single-user deployment.
CANONICAL_USER_ENV: Final = "BEAMCLAW_USER"


def canonical_user() -> str | None:
    """``BEAMCLAW_USER`` as it is (no namespace added), or None when it is not set.

    Read by the terminal (the CLI and TUI, in their own process) and by the daemon for the
    chat users the owner vouched for (`channel_user`); never for an API, WebSocket, A2A or
    MCP client. `InvalidUserId`, naming the variable, when it cannot be a user id.
    """
    value = os.environ.get(CANONICAL_USER_ENV, "").strip()
    if not value:
        return None
    try:
        return check_user_id(value)
    except InvalidUserId as exc:
        raise InvalidUserId(f"{CANONICAL_USER_ENV} is refused: {exc}") from None


async def channel_user(channel: str, user_id: str, *, listed: bool) -> str:
    """Whom a chat user (``telegram:42``) speaks as: the user the owner linked them to
    (``beamclaw pair link``), else ``BEAMCLAW_USER`` when it is set and the owner paired
    them or *listed* them (``allow_from``), else *user_id*; so a stranger let in by an open
    policy never reaches the owner's conversation."""
    return await store_call(Speaker(channel, user_id, listed, canonical_user()))


async def open_session(user_id: str, agent_id: str, channel: str = "") -> SessionHandle:
    """Start (or find) the conversation of *user_id* with *agent_id*; its history is restored."""
    check_user_id(user_id)
    check_agent_name(agent_id)
    sid, dest = await sv.call(
        SESSIONS, OpenSession(user_id, agent_id, channel), timeout=30.0, restart_wait=RESTART_WAIT
    )
    return SessionHandle(sid, user_id, agent_id, channel, dest)


async def _session_call(handle: SessionHandle, request: sv.Request[R]) -> tuple[sv.Pid, R]:
    """Call the session; if it has stopped (expired) or is being restarted, start it again
    if need be and retry a few times.

    Returns the pid that answered along with the answer.
    """

    async def once() -> tuple[sv.Pid, R]:
        pid = handle.dest.whereis()
        if pid is None:
            await open_session(handle.user_id, handle.agent_id, handle.channel)
            pid = handle.dest.whereis()
        if pid is None:
            raise sv.NoProc(handle.dest)
        return pid, await sv.call(pid, request, timeout=30.0)

    return await retry(once, _SESSION_RESTARTING, lambda exc: isinstance(exc, (sv.NoProc, sv.ProcessExited)))


async def submit(
    handle: SessionHandle,
    text: str,
    channel: Channel,
    images: tuple[str, ...] = (),
    *,
    autonomy: Autonomy | None = None,
    origin: str | None = None,
    on_finish: Callable[[TurnResult], None] | None = None,
) -> Turn:
    """Queue *text* (and *images*, as data: URLs) as a turn and return it at once;
    ``await turn.wait()`` for the answer. *autonomy* lowers the agent's for this turn;
    *on_finish* is called with the result as soon as the turn is settled.

    ``/yes``, ``/no`` and ``/always`` answer a pending approval instead of queueing, when
    it was asked from the same *origin*: the channel and, where a channel has several
    callers, who sent it (the gateway's ``http:<principal>``); by default ``handle.channel``.
    """
    turn = Turn(text, channel, images, autonomy, origin=origin or handle.channel, on_finish=on_finish)
    await _submit(handle, turn)
    return turn


async def _submit(handle: SessionHandle, turn: Turn) -> None:
    turn.owner, _ = await _session_call(handle, Submit(turn))


async def send_message(
    handle: SessionHandle, text: str, channel: Channel, images: tuple[str, ...] = (), *, origin: str | None = None
) -> TurnResult:
    """Queue *text* and wait for the agent's answer (also streamed to *channel*); *origin*
    as for `submit`.

    If the session process is killed outright (it gets no chance to answer its
    queue), the turn ends with an error instead of waiting for ever.
    """
    turn = Turn(text, channel, images, origin=origin or handle.channel)
    await _submit(handle, turn)
    return await turn.wait()


async def history(handle: SessionHandle) -> list[Message]:
    _, messages = await _session_call(handle, History())
    return messages


async def turns_in_progress(handle: SessionHandle) -> int:
    """How many turns the conversation is running or has queued (0: it is idle)."""
    _, status = await _session_call(handle, Status())
    return status.turns


async def reset_session(handle: SessionHandle) -> int:
    """Forget the conversation (``/new``); return how many messages were dropped."""
    _, dropped = await _session_call(handle, Reset())
    return dropped


async def stop_session(session_id: str) -> bool:
    """Stop a running conversation's processes; its stored history stays."""
    return await sv.call(SESSIONS, StopSession(session_id), restart_wait=RESTART_WAIT)


async def running_sessions() -> list[str]:
    return await sv.call(SESSIONS, RunningSessions(), restart_wait=RESTART_WAIT)


@final
@attrs.frozen
class SessionSummary:
    """A conversation as `beamclaw sessions` shows it."""

    id: str
    user_id: str
    agent_id: str
    channel: str
    messages: int
    created_at: float
    updated_at: float
    running: bool


class SessionNotFound(LookupError):
    """No stored conversation has that id (or several do); the message says which."""


def _summary(row: SessionRow, running: set[str]) -> SessionSummary:
    return SessionSummary(
        row.id, row.user_id, row.agent_id, row.channel, row.messages, row.created_at, row.updated_at, row.id in running
    )


async def list_sessions(limit: int = 50, users: tuple[str, ...] | None = None) -> tuple[list[SessionSummary], int]:
    """The *limit* conversations used last (newest first), and how many are stored in all;
    with *users* (exact ids, or prefixes ending in ``*``), those users' only."""
    rows, total = await store_call(ListSessions(limit, users))
    running = set(await running_sessions())
    return [_summary(row, running) for row in rows], total


async def find_session(prefix: str) -> SessionSummary:
    """The stored conversation whose id starts with *prefix* (as `beamclaw sessions` prints it)."""
    if not prefix or not all(c in "0123456789abcdef" for c in prefix):
        raise SessionNotFound(f"{prefix!r} is not a session id: `beamclaw sessions` lists them")
    rows = await store_call(FindSessions(prefix))
    if len(rows) != 1:
        what = "several sessions" if rows else "no session"
        raise SessionNotFound(f"{what} start with {prefix!r}: `beamclaw sessions` lists them")
    return _summary(rows[0], set(await running_sessions()))


async def reopen_session(summary: SessionSummary) -> SessionHandle:
    """A handle on a listed conversation (started again if it is not running)."""
    return await open_session(summary.user_id, summary.agent_id, summary.channel)


@final
@attrs.frozen
class ContextUsage:
    """How full the model's context window is for a conversation (tokens estimated)."""

    used: int
    window: int
    messages: int

    @property
    def fraction(self) -> float:
        return min(1.0, self.used / self.window) if self.window else 0.0


async def context_usage(handle: SessionHandle) -> ContextUsage:
    """The system prompt and the history, against the model's context window."""
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    messages = await history(handle)
    prompt = await system_prompt(runtime, handle.agent_id, handle.user_id)
    _, provider = runtime.config.provider_for(handle.agent_id)
    used = estimate_tokens([Message("system", prompt), *messages])
    return ContextUsage(used, context_window(provider.model, provider.context_window), len(messages))


async def stored_context_usage(summary: SessionSummary) -> ContextUsage:
    """`context_usage` of a listed conversation, from what is stored: a sleeping one is not woken."""
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    stored = await store_call(LoadSession(summary.id))
    messages = stored.history if stored is not None else []
    prompt = await system_prompt(runtime, summary.agent_id, summary.user_id)
    _, provider = runtime.config.provider_for(summary.agent_id)
    used = estimate_tokens([Message("system", prompt), *messages])
    return ContextUsage(used, context_window(provider.model, provider.context_window), len(messages))


async def known_agents() -> tuple[list[str], str]:
    """The agents there are (`agent_names`), and the default one."""
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    default = runtime.config.default_agent
    return agent_names(runtime.data_dir, default), default


async def stop_turn(handle: SessionHandle, turn: Turn | None = None) -> bool:
    """Stop *turn* of this conversation, whether it is being worked on or still queued (an
    A2A task canceled by its client), or without one the turn at work (``/stop``); return
    whether there was one still to be answered.

    A turn at work is stopped where it stands (the loop is restarted by its supervisor)
    and answered "Stopped."; the queued messages go on.
    """
    _, stopped = await _session_call(handle, StopTurn(turn))
    return stopped


async def answer_approval(handle: SessionHandle, word: str, principal: str | None = None) -> str:
    """Answer the conversation's waiting approval with *word* (``yes``, ``no``, ``always``):
    with no *principal*, whatever channel asked (the owner's explicit answer, for the
    control socket and admins only); with one, only an approval a run of that principal
    asked, on any of its channels (a ``/yes`` sent as a message approves only through the
    channel that asked). Returns the answer given, or ``none`` when nothing it may answer
    was waiting."""
    _, answered = await _session_call(handle, AnswerApproval(word, principal))
    return answered


async def pairing_code(channel: str, user_id: str, display: str = "") -> str:
    """A pairing code for *user_id* on *channel* (raises `PairingError` past the limit)."""
    return await store_call(PairingCode(channel, user_id, display))


async def paired_agent(channel: str, user_id: str) -> str | None:
    """The agent *user_id* was paired with on *channel*, or None."""
    return await store_call(PairedAgent(channel, user_id))


#: Keys of ``[core]`` that shape the app's tree; changing one needs the app restarted.
_TREE_KEYS: Final = ("enabled", "bundled_skills_dir", "skills_watch_debounce_ms", "cleanup_interval_seconds")


async def reconfigure(table: dict[str, Any]) -> bool:
    """Apply a new ``[core]`` to the running app; the next turn of every conversation uses it.

    Returns False, changing nothing, when a key that shapes the app's tree changed (the
    caller restarts the app instead). Raises `ConfigError` for a bad table.
    """
    config = parse_core_config(table)
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    if any(getattr(config, key) != getattr(runtime.config, key) for key in _TREE_KEYS):
        return False
    await sv.call(SESSIONS, Reconfigure(config), restart_wait=RESTART_WAIT)
    return True
