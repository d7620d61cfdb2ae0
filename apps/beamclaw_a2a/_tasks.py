"""The task manager: every A2A task's state, in the store, and who is waiting to hear of it.

States follow A2A: submitted -> working -> completed | failed | canceled (or rejected,
input-required). Tasks are persisted, so GetTask still answers after a restart. Each
task records the instance of the node that runs its turn (`instance`): a task still
submitted or working whose instance is not alive lost its turn, and is marked failed,
at start and, in a cluster, every lease time (`_fail_interrupted`) by whichever node
looks first; a live node's tasks are left alone.

A message is one task, however often it is sent and to whichever node: the message
id the client gave (``messageId``) is unique per client in the table, and a repeat is
answered with the task the first one made.

In a cluster any node answers for any task: after each change the writer notifies
``bc_a2a`` with the task id (`beamclaw_base.notify`, delivered at commit), and every
node's task manager re-reads the task for its own watchers.

Each task maps to a conversation: its context id makes the session's user
(`Client.user`), so later messages in the same context continue it.

A task belongs to the client that created it (`Client.owner`, the gateway's principal):
another client's GetTask, ListTasks, CancelTask and SubscribeToTask find nothing, as if
it did not exist; an admin's client sees every task.

Texts pass the scrubber (`beamclaw_obs.scrub`, `scrub_data`) on the way in, so no credential a
caller or the agent wrote is stored, and on the way out, so none stored before the
scrubber knew its shape (or before tasks were scrubbed at all) is handed back.

The tasks live in the a2a schema of the configured store (``a2a.db`` in the data dir, or
PostgreSQL). Every request is one transaction; watchers hear of a change and events are
emitted only once it is committed.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import time
import uuid
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import trio

import beamclaw_cluster as cluster
import beamclaw_obs as obs
import supervision as sv
from beamclaw_base import Database, Notified, Schema, Step, StoreConfig, Tx, notify, notify_group, open_store

from ._config import A2AConfig

R = TypeVar("R")

TASKS: Final = "beamclaw_a2a.tasks"
#: Seconds a call waits for the task manager while it is being restarted (back in milliseconds).
RESTART_WAIT: Final = 2.0
TERMINAL: Final = frozenset({"completed", "failed", "canceled", "rejected"})
STATES: Final = frozenset({"submitted", "working", "input-required", "auth-required", *TERMINAL})

#: The tasks' table, as its versions build it. SQLite files kept the version in
#: ``user_version`` already (version 1 files may say 0), so both steps are safe on them.
SCHEMA: Final = Schema(
    "a2a",
    (
        Step(
            sqlite="""
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    state TEXT NOT NULL,
    request TEXT NOT NULL,
    reply TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_context ON tasks(context_id, created_at);
""",
            postgres="""
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    state TEXT NOT NULL,
    request TEXT NOT NULL,
    reply TEXT NOT NULL DEFAULT '',
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_context ON tasks(context_id, created_at);
""",
        ),
        # Version 2: each task's owner (tasks from before have none: only an admin sees them).
        Step.portable("ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT ''"),
        # Version 3: the instance of the node running the task's turn (tasks from before
        # have none: no node is theirs, so they count as interrupted), and the client's
        # message id, one task per message of a client.
        Step.portable("""
ALTER TABLE tasks ADD COLUMN instance TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN message_id TEXT;
CREATE UNIQUE INDEX tasks_message ON tasks(owner, message_id);
"""),
    ),
)
#: The channel a change of a task is notified on (its payload: the task id).
CHANNEL: Final = "bc_a2a"
#: TERMINAL as an SQL list, for the statements that leave an ended task as it is.
_ENDED: Final = "(" + ", ".join(f"'{state}'" for state in sorted(TERMINAL)) + ")"


@attrs.frozen
class Client:
    """Who sends an A2A request, as the gateway decided (never the request itself)."""

    #: The principal's name: the tasks it creates, and their conversations, are its own.
    owner: str
    #: An admin that may act as anyone: it sees every task.
    sees_all: bool = False

    def user(self, context_id: str) -> str:
        """The conversation of a context: ``a2a:<owner>/<contextId>``, so two clients with
        the same context id never share one (a context id is the remote agent's choice)."""
        return f"a2a:{self.owner}/{context_id}"

    @property
    def origin(self) -> str:
        """Where its runs come from (see `beamclaw_core.submit`): only its own ``/yes``
        answers an approval one of its turns asked for."""
        return f"a2a:{self.owner}"

    @property
    def scope(self) -> str | None:
        """The owner whose tasks it may see, or None for all."""
        return None if self.sees_all else self.owner


class TaskNotFound(LookupError):
    pass


class TaskNotCancelable(ValueError):
    pass


@attrs.frozen
class TaskRecord:
    id: str
    context_id: str
    state: str
    request: str
    reply: str
    created_at: float
    updated_at: float

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    def timestamp(self) -> str:
        return datetime.datetime.fromtimestamp(self.updated_at, datetime.UTC).isoformat().replace("+00:00", "Z")


_COLUMNS: Final = "id, context_id, state, request, reply, created_at, updated_at"


def _storable(text: str) -> str:
    """*text* as a text column holds it: PostgreSQL refuses NUL, so it becomes U+FFFD on
    both backends (a client's message with one is refused before it gets here)."""
    return text.replace("\x00", "\ufffd")


def _fail_interrupted(tx: Tx, instance: str, clustered: bool, now: float) -> list[str]:
    """Fail each task still submitted or working whose node is gone (its turn went with
    it); their ids. On one node every instance but this one is gone; in a cluster,
    those the registry does not hold alive (`beamclaw_cluster.ALIVE`)."""
    gone = f"AND NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.instance_id = tasks.instance AND {cluster.ALIVE})"
    rows = tx.execute(
        "UPDATE tasks SET state = 'failed', reply = 'the daemon restarted while this task was working', "
        f"updated_at = ? WHERE state IN ('submitted', 'working') AND instance <> ? {gone if clustered else ''} "
        "RETURNING id",
        (now, instance),
    ).fetchall()
    for (task_id,) in rows:
        notify(tx, CHANNEL, task_id)
    return [task_id for (task_id,) in rows]


def _scrubbed(row: tuple[Any, ...]) -> TaskRecord:
    """A stored row as a record, its texts scrubbed (the id is ours, a hex uuid)."""
    task_id, context_id, state, request, reply, created_at, updated_at = row
    context_id, request, reply = obs.scrub_data((context_id, request, reply))
    return TaskRecord(task_id, context_id, state, request, reply, created_at, updated_at)


def _row(tx: Tx, task_id: str, scope: str | None = None) -> TaskRecord:
    """The task, if *scope* (an owner; None: any) may see it; `TaskNotFound` otherwise."""
    row = tx.execute(f"SELECT {_COLUMNS}, owner FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None or (scope is not None and row[-1] != scope):
        shown = task_id if len(task_id) <= 64 else task_id[:64] + "..."
        raise TaskNotFound(f"task {shown!r} not found")
    return _scrubbed(tuple(row[:-1]))


def _insert(tx: Tx, record: TaskRecord, owner: str, instance: str, message_id: str | None) -> TaskRecord | None:
    """Store the new task; None when *owner* sent *message_id* before: then the task it
    made, which this one is."""
    values = (*attrs.astuple(record), owner, instance, message_id)
    added = tx.execute(
        f"INSERT INTO tasks ({_COLUMNS}, owner, instance, message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (owner, message_id) DO NOTHING RETURNING id",
        values,
    ).fetchone()
    if added is not None:
        notify(tx, CHANNEL, record.id)
        return None
    (first,) = tx.execute("SELECT id FROM tasks WHERE owner = ? AND message_id = ?", (owner, message_id)).fetchone()
    return _row(tx, first)


def _update(tx: Tx, task_id: str, state: str, reply: str, now: float) -> tuple[TaskRecord, bool]:
    """The task moved to *state*, unless it has ended (a canceled task stays canceled when
    its turn ends); whether it changed."""
    changed = tx.execute(
        f"UPDATE tasks SET state = ?, reply = ?, updated_at = ? WHERE id = ? AND state NOT IN {_ENDED}",
        (state, reply, now, task_id),
    ).rowcount
    if changed:
        notify(tx, CHANNEL, task_id)
    return _row(tx, task_id), changed > 0


def _cancel(tx: Tx, task_id: str, scope: str | None, now: float) -> TaskRecord:
    current = _row(tx, task_id, scope)
    if current.terminal:
        raise TaskNotCancelable(f"task {task_id!r} is already {current.state}")
    tx.execute("UPDATE tasks SET state = 'canceled', updated_at = ? WHERE id = ?", (now, task_id))
    notify(tx, CHANNEL, task_id)
    return _row(tx, task_id)


def _list(
    tx: Tx, *, scope: str | None, context_id: str | None, state: str | None, limit: int, offset: int
) -> tuple[list[TaskRecord], int]:
    where, args = ["1 = 1"], []
    if scope is not None:
        where.append("owner = ?")
        args.append(scope)
    if context_id:
        where.append("context_id = ?")
        args.append(context_id)
    if state:
        where.append("state = ?")
        args.append(state)
    clause = " AND ".join(where)
    total = tx.execute(f"SELECT count(*) FROM tasks WHERE {clause}", args).fetchone()[0]
    rows = tx.execute(f"SELECT {_COLUMNS} FROM tasks WHERE {clause} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                      [*args, limit, offset]).fetchall()  # fmt: skip
    return [_scrubbed(tuple(r)) for r in rows], int(total)


# --- what the task manager is asked (each typed with its reply, `supervision.Request`) ---


@attrs.frozen
class Created:
    """The task a message made, and whether it is new (False: the message was sent before)."""

    task: TaskRecord
    new: bool


@attrs.frozen
class CreateTask(sv.Request[Created]):
    """A new task of *client*, submitted: *text* to the conversation of *context_id*;
    the task made before when *client* sent *message_id* already."""

    context_id: str
    text: str
    client: Client
    message_id: str | None = None


@attrs.frozen
class UpdateTask(sv.Request[TaskRecord]):
    """The task's turn moved it to *state* with *reply*; a task already ended stays as it is."""

    task_id: str
    state: str
    reply: str


@attrs.frozen
class GetTask(sv.Request[TaskRecord]):
    """The task, if *client* may see it (`TaskNotFound` otherwise)."""

    task_id: str
    client: Client


@attrs.frozen
class ListTasks(sv.Request[tuple[list[TaskRecord], int]]):
    """A page of the tasks *client* may see, newest first, and how many there are in all;
    only those of *context_id* and in *state* when given."""

    client: Client
    context_id: str | None
    state: str | None
    limit: int
    offset: int


@attrs.frozen
class CancelTask(sv.Request[TaskRecord]):
    """Cancel the task (`TaskNotCancelable` when it has ended already)."""

    task_id: str
    client: Client


@attrs.frozen
class WatchTask(sv.Request[tuple[TaskRecord, trio.MemoryReceiveChannel[TaskRecord]]]):
    """The task now, and a channel of its changes that closes when it ends (closed already
    for a task that has ended)."""

    task_id: str
    client: Client


@attrs.frozen
class TaskConfig(sv.Request[A2AConfig]):
    """The app's configuration, which the gateway's A2A service is built from."""


@attrs.frozen
class FailInterrupted(sv.Request[list[str]]):
    """Fail the tasks whose node is gone (`_fail_interrupted`); their ids."""


#: Every request the task manager answers.
TaskRequest = CreateTask | UpdateTask | GetTask | ListTasks | CancelTask | WatchTask | TaskConfig | FailInterrupted


@attrs.define
class _State:
    db: Database
    config: A2AConfig
    #: The node instance new tasks run on: the cluster's, or this start's on one node.
    instance: str
    clustered: bool
    watchers: dict[str, list[trio.MemorySendChannel[TaskRecord]]] = attrs.field(factory=dict)
    #: What each watched task's watchers were last sent (a change is sent once, whether
    #: this node made it or heard of it from another).
    sent: dict[str, TaskRecord] = attrs.field(factory=dict)


def _opened(path: Path, store: StoreConfig, instance: str, clustered: bool) -> Database:
    db = open_store(store, SCHEMA, sqlite_file=path)
    try:
        now = time.time()
        db.transact(lambda tx: _fail_interrupted(tx, instance, clustered, now))
    except BaseException:
        db.close()
        raise
    return db


class TaskManager(sv.GenServer):
    """The tasks' one process: it owns the store's `Database` and the watchers.

    Its SQL runs on the event loop on SQLite (short statements, as before) and in worker
    threads on PostgreSQL (`Database.run` decides).
    """

    async def init(self, path: Path, config: A2AConfig, store: StoreConfig) -> _State:
        sv.register(TASKS)
        sv.pg.join(notify_group(CHANNEL))
        member = await cluster.membership()
        instance, clustered = (uuid.uuid4().hex, False) if member is None else (member.instance_id, True)
        db = await trio.to_thread.run_sync(_opened, path, store, instance, clustered)
        return _State(db, config, instance, clustered)

    async def handle_call(self, request: TaskRequest, caller: sv.Caller, state: _State) -> sv.Reply | sv.NoReply:
        try:
            return sv.Reply(await self._answer(request, state), state)
        except (TaskNotFound, TaskNotCancelable) as exc:
            sv.reply_error(caller, exc)
            return sv.NoReply(state)

    async def _answer(self, request: TaskRequest, state: _State) -> object:
        db = state.db
        match request:
            case CreateTask(context_id, text, client, message_id):
                now = time.time()
                record = TaskRecord(uuid.uuid4().hex, context_id, "submitted", _storable(obs.scrub(text)), "", now, now)
                await self._renew_instance(state)
                first = await db.run(
                    lambda tx: _insert(tx, record, client.owner, state.instance, message_id), inline=True
                )
                return Created(record, True) if first is None else Created(first, False)
            case UpdateTask(task_id, new_state, reply):
                stored, now = _storable(obs.scrub(reply)), time.time()
                record, changed = await db.run(lambda tx: _update(tx, task_id, new_state, stored, now), inline=True)
                if changed:
                    self._notify(state, record)
                    obs.emit("a2a_task_updated", task_id=task_id, state=new_state)
                return record
            case GetTask(task_id, client):
                return await db.run(lambda tx: _row(tx, task_id, client.scope), write=False, inline=True)
            case ListTasks(client, context_id, task_state, limit, offset):
                page = functools.partial(_list, scope=client.scope, context_id=context_id, state=task_state,
                                         limit=limit, offset=offset)  # fmt: skip
                return await db.run(page, write=False, inline=True)
            case CancelTask(task_id, client):
                now = time.time()
                record = await db.run(lambda tx: _cancel(tx, task_id, client.scope, now), inline=True)
                self._notify(state, record)
                obs.emit("a2a_task_updated", task_id=task_id, state="canceled")
                return record
            case TaskConfig():
                return state.config
            case FailInterrupted():
                await self._renew_instance(state)
                now = time.time()
                failed: list[str] = await db.run(lambda tx: _fail_interrupted(tx, state.instance, state.clustered, now))
                for task_id in failed:
                    await self._reread(state, task_id)
                return failed
            case WatchTask(task_id, client):
                current = await db.run(lambda tx: _row(tx, task_id, client.scope), write=False, inline=True)
                send, receive = trio.open_memory_channel[TaskRecord](64)
                if current.terminal:
                    send.close()
                else:
                    state.watchers.setdefault(task_id, []).append(send)
                    state.sent.setdefault(task_id, current)
                return current, receive
        raise ValueError(f"unknown task manager request {request!r}")

    @staticmethod
    async def _renew_instance(state: _State) -> None:
        """In a cluster, the node's current instance (a node taken for dead joins again as a new one)."""
        if state.clustered and (member := await cluster.membership()) is not None:
            state.instance = member.instance_id

    async def handle_info(self, message: object, state: _State) -> sv.NoReply:
        """Another node changed a task (or the listener reconnected: re-read every watched one)."""
        if isinstance(message, Notified) and message.channel == CHANNEL:
            for task_id in [message.payload] if message.payload else list(state.watchers):
                if task_id in state.watchers:
                    await self._reread(state, task_id)
        return sv.NoReply(state)

    async def _reread(self, state: _State, task_id: str) -> None:
        if task_id in state.watchers:
            with contextlib.suppress(TaskNotFound):
                self._notify(state, await state.db.run(lambda tx: _row(tx, task_id), write=False, inline=True))

    @staticmethod
    def _notify(state: _State, record: TaskRecord) -> None:
        if state.sent.get(record.id) == record:
            return
        if record.id in state.watchers:
            state.sent[record.id] = record
        for send in state.watchers.get(record.id, []):
            # A watcher that does not keep up misses intermediate states, not the channel's close.
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                send.send_nowait(record)
        if record.terminal:
            state.sent.pop(record.id, None)
            for send in state.watchers.pop(record.id, []):
                send.close()

    async def terminate(self, reason: Any, state: _State) -> None:
        await trio.to_thread.run_sync(state.db.close)


async def fail_interrupted(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A process: in a cluster, every lease time, fail the tasks of nodes that died since
    (their watchers on any node hear of it); on one node, nothing (the start did it)."""
    task_status.started()
    member = await cluster.membership()
    if member is None:
        await trio.sleep_forever()
        return
    while True:
        await trio.sleep(member.lease_seconds)
        await task_call(FailInterrupted())


async def task_call(request: sv.Request[R]) -> R:
    """A request to the task manager, riding through a restart of it."""
    return await sv.call(TASKS, request, timeout=30.0, restart_wait=RESTART_WAIT)
