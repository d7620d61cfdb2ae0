"""The session tree: one supervisor per conversation under a dynamic supervisor.

    sessions_sup (DynamicSupervisor)
    └── session:<id> (Supervisor, rest_for_one)
        ├── session (GenServer, permanent): history, turn queue, metadata
        └── loop (StateMachine, transient): the agentic loop

rest_for_one: a crashing loop is restarted alone (it is the last child) and the
conversation goes on; a crashing session takes its loop down first, so no loop ever
writes into a session that was restarted under it, and a tool call left open in the
history always belongs to a loop that is gone (the restored session closes it).

The sessions process starts a conversation's tree on first use and finds it again by
session id through the registry; it is the only starter, so two messages arriving
at once never start the same session twice.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import attrs

import beamclaw_cluster as cluster
import supervision as sv
from beamclaw_base import StoreError

from ._config import CoreConfig
from ._loop import Loop
from ._runtime import Runtime
from ._session import Session, SessionInfo, session_id
from ._workspace import UnknownAgent, check_agent_exists

SESSIONS: Final = "beamclaw_core.sessions"
SESSIONS_SUP: Final = "beamclaw_core.sessions_sup"
#: A loop keeps nothing the session and the store do not have, and a running tool is
#: cancelled either way, so its stop need not wait for the tool: the session it serves
#: (restarting under rest_for_one) comes back that much sooner.
_LOOP_SHUTDOWN: Final = 0.5


def tree_name(sid: str) -> str:
    return f"session:{sid}"


def session_tree(info: SessionInfo, runtime: Runtime) -> sv.ChildSpec:
    persist = runtime.config.session_persistence
    tree = sv.Supervisor(
        [
            sv.ChildSpec(
                "session", Session.start, args=(info, persist, runtime.loop_dest(info.id), runtime.data_dir),
                name=runtime.session_dest(info.id),
            ),
            sv.ChildSpec(
                "loop", Loop.start, args=(info, runtime), restart=sv.TRANSIENT, name=runtime.loop_dest(info.id),
                shutdown=_LOOP_SHUTDOWN,
            ),
        ],
        strategy=sv.REST_FOR_ONE,
        intensity=5,
        period=10.0,
        name=tree_name(info.id),
    )  # fmt: skip
    return tree.child_spec(info.id, restart=sv.TRANSIENT, label=session_label(info))


def running_trees() -> list[str]:
    """The ids of the conversations whose tree runs."""
    return sorted(str(c.id) for c in sv.which_children(SESSIONS_SUP) if c.pid)


async def stop_tree(sid: str) -> bool:
    """Stop a conversation's tree (its history stays in the store); whether one ran.

    Called by the sessions process and by the sleeper directly: a stop never waits
    behind the conversations being started.
    """
    pid = sv.whereis(tree_name(sid))
    if pid is None:
        return False
    with contextlib.suppress(sv.NoProc, LookupError):
        await sv.terminate_child(SESSIONS_SUP, pid)
    return True


def session_label(info: SessionInfo) -> str:
    """Who talks to whom, and where: ``local:ada → default (cli)``."""
    return f"{info.user_id} → {info.agent_id}" + (f" ({info.channel})" if info.channel else "")


class OwnedElsewhere(Exception):
    """Another live node of the cluster owns the conversation: reach it there."""

    def __init__(self, where: cluster.Elsewhere) -> None:
        super().__init__(f"the conversation is served by node {where.node_id} ({where.advertise_url})")
        self.where = where


async def this_node() -> str | None:
    """This node's instance in the cluster, or None on one node."""
    member = await cluster.membership()
    return None if member is None else member.instance_id


async def _own(sid: str) -> cluster.Lease | None:
    """This node's lease on *sid* (None on one node); `OwnedElsewhere` when a live node has it."""
    member = await cluster.membership()
    if member is None:
        return None
    owned = await member.database.run(lambda tx: cluster.acquire(tx, sid, member.instance_id))
    if isinstance(owned, cluster.Elsewhere):
        raise OwnedElsewhere(owned)
    return owned


@attrs.frozen
class OpenSession(sv.Request[tuple[str, sv.ViaName]]):
    """Start (or find) the conversation of *user_id* with *agent_id* on *channel*: its id
    and where its session is reached."""

    user_id: str
    agent_id: str
    channel: str


@attrs.frozen
class StopSession(sv.Request[bool]):
    """Stop the conversation's tree (see `stop_tree`)."""

    session_id: str


@attrs.frozen
class CurrentRuntime(sv.Request[Runtime]):
    """What every conversation runs with (the configuration as it is now)."""


@attrs.frozen
class Reconfigure(sv.Request[None]):
    """The next turn of every conversation uses *config*."""

    config: CoreConfig


@attrs.frozen
class RunningSessions(sv.Request[list[str]]):
    """The ids of the conversations whose tree runs."""


class SessionsManager(sv.GenServer):
    def init(self, runtime: Runtime) -> Runtime:
        sv.register(SESSIONS)
        return runtime

    async def handle_call(self, request: sv.Request[Any], caller: sv.Caller, runtime: Runtime) -> sv.Reply | sv.NoReply:
        match request:
            case OpenSession(user_id, agent_id, channel):
                try:
                    check_agent_exists(runtime.data_dir, agent_id, runtime.config.default_agent)
                except UnknownAgent as exc:
                    sv.reply_error(caller, exc)
                    return sv.NoReply(runtime)
                per_channel = runtime.config.session_sharing == "per_channel"
                sid = session_id(user_id, agent_id, channel, per_channel=per_channel)
                # The tree may be running while its session process is being restarted.
                if runtime.registry.whereis(sid) is None and sv.whereis(tree_name(sid)) is None:
                    try:
                        lease = await _own(sid)
                    except (OwnedElsewhere, StoreError) as exc:
                        sv.reply_error(caller, exc)
                        return sv.NoReply(runtime)
                    info = SessionInfo(sid, user_id, agent_id, channel, lease)
                    await sv.start_child(SESSIONS_SUP, session_tree(info, runtime))
                return sv.Reply((sid, runtime.session_dest(sid)), runtime)
            case StopSession(sid):
                return sv.Reply(await stop_tree(sid), runtime)
            case CurrentRuntime():
                return sv.Reply(runtime, runtime)
            case Reconfigure(config):
                runtime.config = config
                return sv.Reply(None, runtime)
            case RunningSessions():
                return sv.Reply(running_trees(), runtime)
        raise ValueError(f"unknown sessions request {request!r}")
