"""Control and inspection of running supervisors (OTP's supervisor API)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import trio

from ._child_spec import ChildSpec
from ._gen_server import call
from ._process import Dest, Pid, Process, resolve_live
from ._supervisor import ChildCounts, ChildInfo, Control, _Engine


def _engine(sup: Dest) -> _Engine:
    proc = resolve_live(sup)
    engine = proc.behaviour
    if not isinstance(engine, _Engine):
        raise TypeError(f"{sup!r} is not a supervisor")
    return engine


async def _control(sup: Dest, op: str, arg: Any) -> Any:
    _engine(sup)
    return await call(sup, Control(op, arg), timeout=None)


async def start_child(sup: Dest, spec_or_args: Any) -> Pid | None:
    """Add and start a child; return its pid, or None if its start reported `IGNORE`.

    For a `Supervisor`, pass a `ChildSpec` (refused with `AlreadyStarted` or
    `AlreadyPresent` if its id is taken). For a `DynamicSupervisor` with a template,
    pass the extra args (a tuple, or one value); without a template, a `ChildSpec`.
    A failing start raises `StartError`.
    """
    return await _control(sup, "start_child", spec_or_args)  # type: ignore[no-any-return]


async def terminate_child(sup: Dest, id_or_pid: Hashable) -> None:
    """Stop a child by its shutdown spec. Its spec is kept (unless temporary or dynamic).

    A child being restarted is found by the pid of the process that exited, and
    terminating it ends its restart (a failing-restart loop too). A dynamic
    supervisor takes pids only; a pid that has already exited is fine (nothing to
    do), a live one that is not its child raises `ChildNotFound`, as in OTP.
    """
    await _control(sup, "terminate_child", id_or_pid)


async def restart_child(sup: Dest, child_id: Hashable) -> Pid | None:
    """Start again a child that was terminated. Refused while it runs or restarts."""
    return await _control(sup, "restart_child", child_id)  # type: ignore[no-any-return]


async def delete_child(sup: Dest, child_id: Hashable) -> None:
    """Drop the spec of a child that is not running."""
    await _control(sup, "delete_child", child_id)


async def get_childspec(sup: Dest, id_or_pid: Hashable) -> ChildSpec:
    """The spec of a child, by id (or pid); `ChildNotFound` if there is none."""
    return await _control(sup, "get_childspec", id_or_pid)  # type: ignore[no-any-return]


def which_children(sup: Dest) -> list[ChildInfo]:
    """Every child: id, pid (None when not running), type, restart type and state.

    The state is `ChildState.RESTARTING` from a crash until the replacement has started.
    """
    return _engine(sup).which_children()


def count_children(sup: Dest) -> ChildCounts:
    """How many child specs, running children, supervisors and workers *sup* has."""
    return _engine(sup).count_children()


def inspect_tree(sup: Dest) -> dict[str, Any]:
    """The live tree under *sup* as plain data (str, int, float, None, lists, dicts).

    Every node has id, pid, name, kind, restart, state, restarts, uptime (seconds)
    and mailbox (queued messages); supervisors also have strategy and children. A
    child whose spec has a label has it under ``label``.
    Safe to serialise as JSON, for the control API and the CLI.
    """
    engine = _engine(sup)
    now = trio.current_time()
    node = _describe(engine.proc, now)
    node.update(id=str(engine.spec.name or engine.proc.pid), restart=None, state="running")
    return node


#: The longest repr of one queued message `process_info` gives.
_MESSAGE_REPR_CHARS = 300


def process_info(dest: Dest, messages: int = 20) -> dict[str, Any]:
    """One live process as plain data, as Erlang's ``process_info``: what `inspect_tree`
    gives of a node (pid, name, kind, uptime, mailbox length), plus the mailbox's bound and
    the messages it dropped, and the first *messages* queued messages, each as its repr
    (cut at 300 characters), oldest first. Reading them takes nothing from the mailbox.
    Raises `NoProc` when *dest* names no live process.
    """
    proc = resolve_live(dest)
    described = _describe(proc, trio.current_time())
    described.pop("children", None)
    described.update(
        capacity=None if proc.mailbox.capacity == float("inf") else proc.mailbox.capacity,
        dropped=proc.mailbox.dropped,
        messages=[_short_repr(message) for message in proc.mailbox.peek(messages)],
    )
    return described


def _short_repr(message: Any) -> str:
    text = repr(message)
    return text if len(text) <= _MESSAGE_REPR_CHARS else text[: _MESSAGE_REPR_CHARS - 1] + "…"


def _describe(proc: Process, now: float) -> dict[str, Any]:
    engine = proc.behaviour
    described: dict[str, Any] = {
        "pid": repr(proc.pid),
        "name": proc.name if isinstance(proc.name, str) else None,
        "kind": proc.kind,
        "uptime": round(now - proc.started_at, 3),
        "mailbox": len(proc.mailbox),
    }
    if isinstance(engine, _Engine):
        described["kind"] = "supervisor"
        described["strategy"] = "dynamic" if engine.dynamic else engine.strategy.value
        described["restarts"] = engine.total_restarts
        described["children"] = [_describe_child(child, now) for child in engine.children.values()]
    return described


def _describe_child(child: Any, now: float) -> dict[str, Any]:
    proc = child.proc
    row: dict[str, Any] = {
        "id": str(child.spec.id),
        "pid": None,
        "name": None,
        "kind": child.spec.type.value,
        "uptime": None,
        "mailbox": 0,
    }
    if proc is not None and proc.alive:
        row.update(_describe(proc, now))
        row["kind"] = child.spec.type.value if child.spec.type.value == "supervisor" else proc.kind
    row.update(restart=child.spec.restart.value, state=child.state.value, restarts=child.restarts)
    if child.spec.label is not None:
        row["label"] = child.spec.label
    return row
