"""The daemon's routes: its status, configuration, reload and stop, the supervision tree's
events, kill, the processes and their names, the log, doctor, and deliveries.

What only the daemon root knows is asked of its host process (`HOST`, see `_host`);
the rest is the supervision library's and core's, read here. Streams are server-sent
events (`_sse`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import trio
from loguru import logger
from quart import Blueprint, Response, request

import beamclaw_core as core
import beamclaw_obs as obs
import supervision as sv
from beamclaw_gateway import BadRequest, Role, json_body, needs, principal

from ._common import answer, handle_errors, text_field
from ._doctor_checks import daemon_checks
from ._host import (
    HOST,
    RELOAD_SECONDS,
    EnvNames,
    KilledOnPurpose,
    LogFile,
    Reload,
    Resolve,
    ShowConfig,
    Status,
    Stop,
)
from ._log_tail import log_events
from ._sse import IDLE, Event, event_stream

_Item = TypeVar("_Item")

daemon_routes = handle_errors(Blueprint("daemon_routes", __name__))

#: The most log lines a client may ask for before the live ones.
MAX_LOG_LINES: Final = 10_000
_DEFAULT_LOG_LINES: Final = 100
#: How many events wait for a slow client before the newest are dropped (events never
#: hold up a supervisor).
_EVENT_BUFFER: Final = 1000
#: How long a stream waits for its next event before it says it is idle.
_IDLE_SECONDS: Final = 1.0
#: A supervision event's kind, in the API's words.
_KINDS: Final = {
    sv.EventKind.CHILD_STARTED: "start",
    sv.EventKind.CHILD_RESTARTED: "restart",
    sv.EventKind.START_FAILED: "crash",
    sv.EventKind.INTENSITY_EXCEEDED: "give-up",
    sv.EventKind.AUTO_SHUTDOWN: "stop",
    sv.EventKind.SHUTDOWN_OVERRUN: "overrun",
}


async def _ask(message: Any, timeout: float = 5.0) -> Any:
    """The host's answer to *message*."""
    return await sv.call(HOST, message, timeout=timeout)


@daemon_routes.get("/v1/status")
@needs(Role.VIEWER)
async def status() -> Response:
    """Version, pid, uptime, the apps and their restarts, sessions, model and gateway."""
    return answer(await _ask(Status()))


@daemon_routes.get("/v1/config")
@needs(Role.ADMIN)
async def config() -> Response:
    """The configuration the daemon runs with, and its file."""
    return answer(await _ask(ShowConfig()))


@daemon_routes.get("/v1/env-names")
@needs(Role.ADMIN)
async def env_names() -> Response:
    """The environment variables the configuration file names (for a reload to send)."""
    return answer(await _ask(EnvNames()))


@daemon_routes.post("/v1/reload")
@needs(Role.ADMIN)
async def reload() -> Response:
    """Read the configuration file again and apply it; ``env``: values of the variables it names."""
    environ = (await json_body("optional env: the values of variables the configuration names")).get("env", {})
    if not isinstance(environ, dict) or not all(isinstance(v, str) for v in environ.values()):
        raise BadRequest('"env" must be an object of strings')
    return answer(await _ask(Reload(environ), RELOAD_SECONDS))


@daemon_routes.post("/v1/stop")
@needs(Role.ADMIN)
async def stop() -> Response:
    """Stop the daemon as SIGTERM would (the answer goes out first)."""
    return answer(await _ask(Stop()))


@daemon_routes.post("/v1/supervision/kill")
@needs(Role.ADMIN)
async def kill() -> Response:
    """Crash one process on purpose (its supervisor restarts it): ``path`` from the root, or a
    session id first, as `beamclaw kill` takes it."""
    path = text_field(await json_body("path: the process to kill"), "path")
    pid, walked = await _ask(Resolve(path, path_only=True))
    sv.kill(pid, KilledOnPurpose(f"killed on purpose with `beamclaw kill {walked}`"))
    logger.info("{} killed {} ({}) on purpose", principal().name, walked, pid)
    return answer({"pid": repr(pid), "path": walked})


@daemon_routes.get("/v1/processes/<path:target>")
@needs(Role.ADMIN)
async def process(target: str) -> Response:
    """One process as Erlang's ``process_info``: a pid (``<0.12.0>``), a registered name, or a path."""
    pid, _ = await _ask(Resolve(target))
    try:
        return answer(sv.process_info(pid))
    except sv.NoProc:
        raise BadRequest(f"{target} has exited", 404, "not_found") from None


@daemon_routes.get("/v1/names")
@needs(Role.ADMIN)
async def names() -> Response:
    """Every registered name: its pid, kind and mailbox length."""
    found = []
    for name in sv.registered():
        with contextlib.suppress(sv.NoProc):  # freed since it was listed
            info = sv.process_info(name, messages=0)
            found.append({"name": name, "pid": info["pid"], "kind": info["kind"], "mailbox": info["mailbox"]})
    return answer({"names": found})


@daemon_routes.post("/v1/names/<name>/send")
@needs(Role.ADMIN)
async def send(name: str) -> Response:
    """Send the JSON value ``message`` to the process registered as *name*, as Erlang's ``!``."""
    body = await json_body("message: the JSON value to send")
    if "message" not in body:
        raise BadRequest('"message" is missing (any JSON value)')
    message = body["message"]
    try:
        queued = sv.send(name, message)
    except sv.NoProc:
        raise BadRequest(f"no process is registered as {name!r} (`names` lists them)", 404, "not_found") from None
    except sv.MailboxFull:
        raise BadRequest(f"the mailbox of {name!r} is full; nothing was sent", 409, "conflict") from None
    logger.info("the remote console sent {!r} to {} (for {})", message, name, principal().name)
    return answer({"name": name, "queued": queued})


@daemon_routes.get("/v1/doctor")
@needs(Role.ADMIN)
async def doctor() -> Response:
    """The checks of `beamclaw doctor` the daemon runs itself, with its environment (`daemon_checks`)."""
    shown = await _ask(ShowConfig())
    checks = await daemon_checks(shown["config"], Path(shown["path"]))
    return answer({"checks": [check.as_dict() for check in checks]})


async def _next(receive: trio.MemoryReceiveChannel[_Item]) -> _Item | None:
    """The next item, or None after a second without one (never yield inside a cancel
    scope in an async generator: its deadline would cancel the consumer)."""
    with trio.move_on_after(_IDLE_SECONDS):
        return await receive.receive()
    return None


def _reason(reason: Any) -> str | None:
    if reason is None:
        return None
    text = f"{type(reason).__name__}: {reason}" if isinstance(reason, BaseException) else str(reason)
    return obs.scrub(text)


def _event_fields(event: sv.SupervisorEvent, at: float) -> dict[str, Any]:
    kind = _KINDS.get(event.kind)
    if kind is None:  # a child that exited: a crash, or a stop
        kind = "crash" if isinstance(event.reason, BaseException) else "stop"
    name = event.supervisor_name
    return {
        "kind": kind, "supervisor": str(name) if name is not None else repr(event.supervisor),
        "child_id": str(event.child_id), "pid": repr(event.pid) if event.pid is not None else None,
        "reason": _reason(event.reason), "at": at,
    }  # fmt: skip


def _restarts(event: sv.SupervisorEvent) -> int | None:
    """How often the child of a restart event has been restarted (None if its supervisor is gone)."""
    with contextlib.suppress(sv.NoProc):
        for child in sv.inspect_tree(event.supervisor).get("children", []):
            if child["id"] == str(event.child_id):
                return int(child["restarts"])
    return None


async def _supervision_events() -> AsyncIterator[Event | None]:
    """``ready`` once subscribed, then every supervision event, until the client leaves."""
    send, receive = trio.open_memory_channel[tuple[sv.SupervisorEvent, float]](_EVENT_BUFFER)

    def deliver(event: sv.SupervisorEvent) -> None:
        with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
            send.send_nowait((event, time.time()))

    subscription = sv.subscribe(deliver)
    try:
        yield "ready", {}
        while True:
            item = await _next(receive)
            if item is None:
                yield IDLE
                continue
            event, at = item
            fields = _event_fields(event, at)
            if event.kind is sv.EventKind.CHILD_RESTARTED:
                fields["restarts"] = _restarts(event)
            yield "supervision", fields
    finally:
        sv.unsubscribe(subscription)


@daemon_routes.get("/v1/supervision/events")
@needs(Role.VIEWER)
async def supervision_events() -> Response:
    """Every supervision event (start, crash, restart, give-up, stop) as it happens."""
    return event_stream(_supervision_events())


def _lines(value: str | None) -> int:
    if value is None:
        return _DEFAULT_LOG_LINES
    try:
        lines = int(value)
    except ValueError:
        lines = -1
    if not 0 <= lines <= MAX_LOG_LINES:
        raise BadRequest(f'"lines" must be a whole number from 0 to {MAX_LOG_LINES}')
    return lines


@daemon_routes.get("/v1/logs")
@needs(Role.ADMIN)
async def logs() -> Response:
    """The last ``lines`` lines of the log file (100 by default), then each new one; scrubbed."""
    lines = _lines(request.args.get("lines"))
    path = await _ask(LogFile())
    if path is None:
        raise BadRequest("the daemon writes no log file ([obs] log_file = false)", 404, "not_found")
    return event_stream(log_events(Path(path), lines))


#: The streams listening to each user's deliveries: every one gets every message (a
#: second listener, a second tab, must not take the first one's messages).
_listening: dict[str, set[trio.MemorySendChannel[str]]] = {}


@attrs.define
class _Deliveries(core.BaseChannel):
    """A `beamclaw_core.Channel` that hands each message delivered to *user* to every
    stream listening to that user."""

    user: str

    async def send(self, text: str) -> None:
        for queue in list(_listening.get(self.user, ())):
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                queue.send_nowait(text)

    async def send_typing(self) -> None:
        """Nothing: a delivery is a finished message."""

    async def update_draft(self, text: str) -> None:
        """Nothing: only finished messages are delivered."""

    async def finalize_draft(self, text: str) -> None:
        await self.send(text)


async def _deliveries(user: str) -> AsyncIterator[Event | None]:
    send, receive = trio.open_memory_channel[str](_EVENT_BUFFER)
    channel = _Deliveries(user)
    _listening.setdefault(user, set()).add(send)
    try:
        with core.outbound(user.partition(":")[0], lambda uid: channel if uid == user else None):
            yield "ready", {}
            while True:
                text = await _next(receive)
                yield IDLE if text is None else ("message", {"text": obs.scrub(text)})
    finally:
        listeners = _listening.get(user, set())
        listeners.discard(send)
        if not listeners:
            _listening.pop(user, None)


@daemon_routes.get("/v1/users/<user>/deliveries")
@needs(Role.OPERATOR)
async def deliveries(user: str) -> Response:
    """``ready`` once listening, then each message delivered to *user* (a scheduled job's
    reply) while the client listens."""
    user_id = principal().check_user(principal().user_for(user))
    try:
        core.check_user_id(user_id)
    except core.InvalidUserId as exc:
        raise BadRequest(str(exc)) from None
    return event_stream(_deliveries(user_id))
