"""A2A over JSON-RPC 2.0: the v1.0 methods, the 0.3 names as aliases, and the standard errors.

``handle(body)`` returns either one JSON-RPC response (a dict) or, for the streaming
methods, an async iterator of them (each becomes one SSE event). Answers to a 0.3
method name come in the 0.3 shape (``kind`` fields, lowercase states), so both
generations of clients read them.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

import attrs
import trio

import beamclaw_core as core
import beamclaw_obs as obs
from beamclaw_base import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR

from ._card import A2A_PATH, agent_card
from ._config import A2AConfig
from ._tasks import (
    STATES,
    TERMINAL,
    CancelTask,
    Client,
    CreateTask,
    GetTask,
    ListTasks,
    TaskConfig,
    TaskNotCancelable,
    TaskNotFound,
    TaskRecord,
    WatchTask,
    task_call,
)
from ._worker import TaskTurn, start_task, stop_task

TASK_NOT_FOUND: Final = -32001
TASK_NOT_CANCELABLE: Final = -32002
PUSH_NOT_SUPPORTED: Final = -32003

_V1: Final = {
    "SendMessage": "send", "SendStreamingMessage": "stream", "GetTask": "get", "ListTasks": "list",
    "CancelTask": "cancel", "SubscribeToTask": "subscribe", "GetExtendedAgentCard": "card",
}  # fmt: skip
_V03: Final = {
    "message/send": "send", "message/stream": "stream", "tasks/get": "get", "tasks/cancel": "cancel",
    "tasks/resubscribe": "subscribe", "agent/getAuthenticatedExtendedCard": "card",
}  # fmt: skip
_PUSH: Final = ("TaskPushNotificationConfig", "tasks/pushNotificationConfig/")
#: The most characters of message text a task takes, unless the client says otherwise (the
#: gateway passes its ``gateway.http.max_user_chars``, the cap on chat text).
MAX_TEXT_CHARS: Final = 32_000
#: Ids (task, context) are at most this long: they are stored, and echoed in errors.
_MAX_ID: Final = 128
#: Page tokens are offsets this server issued: a few digits.
_MAX_PAGE_TOKEN_DIGITS: Final = 9


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@attrs.frozen
class _Shape:
    """How to write a task for the client: v1.0 (protobuf JSON) or 0.3 (``kind`` fields)."""

    legacy: bool

    def state(self, state: str) -> str:
        return state if self.legacy else "TASK_STATE_" + state.upper().replace("-", "_")

    def message(self, role: str, text: str, message_id: str, task: TaskRecord) -> dict[str, Any]:
        part: dict[str, Any] = {"kind": "text", "text": text} if self.legacy else {"text": text}
        body = {"messageId": message_id, "contextId": task.context_id, "taskId": task.id,
                "role": role if self.legacy else f"ROLE_{role.upper()}", "parts": [part]}  # fmt: skip
        return {"kind": "message", **body} if self.legacy else body

    def status(self, task: TaskRecord) -> dict[str, Any]:
        status: dict[str, Any] = {"state": self.state(task.state), "timestamp": task.timestamp()}
        if task.reply:
            status["message"] = self.message("agent", task.reply, f"{task.id}-status", task)
        return status

    def artifact(self, task: TaskRecord) -> dict[str, Any]:
        part: dict[str, Any] = {"kind": "text", "text": task.reply} if self.legacy else {"text": task.reply}
        return {"artifactId": f"{task.id}-reply", "name": "reply", "parts": [part]}

    def task(self, task: TaskRecord, history: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": task.id, "contextId": task.context_id, "status": self.status(task)}
        if task.state == "completed" and task.reply:
            out["artifacts"] = [self.artifact(task)]
        if history:
            out["history"] = [self.message("user", task.request, f"{task.id}-request", task)]
            if task.reply:
                out["history"].append(self.message("agent", task.reply, f"{task.id}-reply", task))
        return {"kind": "task", **out} if self.legacy else out

    def status_update(self, task: TaskRecord) -> dict[str, Any]:
        update = {"taskId": task.id, "contextId": task.context_id, "status": self.status(task)}
        if self.legacy:
            return {"kind": "status-update", **update, "final": task.terminal}
        return {"statusUpdate": update}

    def artifact_update(self, task: TaskRecord) -> dict[str, Any]:
        update = {"taskId": task.id, "contextId": task.context_id, "artifact": self.artifact(task), "lastChunk": True}
        return {"kind": "artifact-update", **update} if self.legacy else {"artifactUpdate": update}

    def first(self, task: TaskRecord) -> dict[str, Any]:
        return self.task(task) if self.legacy else {"task": self.task(task)}

    def send_result(self, task: TaskRecord) -> dict[str, Any]:
        return self.task(task) if self.legacy else {"task": self.task(task)}


def _object(params: dict[str, Any], key: str) -> dict[str, Any]:
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RpcError(INVALID_PARAMS, f"params.{key} must be an object")
    return value


def _short(value: str) -> str:
    """*value* for an error message: at most 64 characters of it."""
    return repr(value if len(value) <= 64 else value[:64] + "...")


def _id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_ID or not value.isprintable():
        raise RpcError(INVALID_PARAMS, f"{where} must be a printable string of 1 to {_MAX_ID} characters")
    return value


def _text(params: dict[str, Any], max_chars: int) -> tuple[str, str]:
    """The message's text (its text parts, joined) and its context id, checked."""
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(INVALID_PARAMS, "params.message must be an object")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise RpcError(INVALID_PARAMS, "params.message.parts must be a non-empty list")
    texts = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise RpcError(INVALID_PARAMS, f"params.message.parts[{index}] must be an object")
        if "text" in part:  # a file or data part has none, and is not read
            if not isinstance(part["text"], str):
                raise RpcError(INVALID_PARAMS, f"params.message.parts[{index}].text must be a string")
            texts.append(part["text"])
    text = "\n".join(texts)
    if len(text) > max_chars:
        raise RpcError(
            INVALID_PARAMS, f"params.message has {len(text)} characters of text; at most {max_chars} are accepted"
        )
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "params.message has no text part")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RpcError(
            INVALID_PARAMS, f"params.message text holds a lone surrogate at character {exc.start}; send valid Unicode"
        ) from None
    if "\x00" in text:  # no text column stores it (PostgreSQL refuses it), and no reader wants it
        raise RpcError(
            INVALID_PARAMS,
            f"params.message text holds a NUL character (U+0000) at character {text.index(chr(0))}; remove it",
        )
    context_id = message.get("contextId") or uuid.uuid4().hex
    _id(context_id, "params.message.contextId")
    # Stored, and the conversation's key: a credential-like id would be stored raw, and
    # scrubbed it would merge conversations.
    if obs.scrub(context_id) != context_id:
        raise RpcError(INVALID_PARAMS, "params.message.contextId looks like a credential; use an opaque id (a UUID)")
    return text, context_id


_USER_ROLES: Final = frozenset({"ROLE_USER", "user"})


def _check_message(params: dict[str, Any]) -> str | None:
    """The rest of a SendMessage's fields, checked (each known field of the right type and
    value); the task it names (``message.taskId``), if any."""
    message = params["message"]
    role = message.get("role")
    if role is not None and (not isinstance(role, str) or role not in _USER_ROLES):
        raise RpcError(INVALID_PARAMS, "params.message.role must be ROLE_USER ('user' in A2A 0.3): only a user's "
                       "message can be sent to the agent")  # fmt: skip
    if "messageId" in message:
        _id(message["messageId"], "params.message.messageId")
    for where, value in (("params.message.metadata", message.get("metadata")), ("params.metadata",
                         params.get("metadata"))):  # fmt: skip
        if value is not None and not isinstance(value, dict):
            raise RpcError(INVALID_PARAMS, f"{where} must be an object")
    references = message.get("referenceTaskIds")
    if references is not None and not (isinstance(references, list) and all(isinstance(r, str) for r in references)):
        raise RpcError(INVALID_PARAMS, "params.message.referenceTaskIds must be a list of task ids")
    configuration = _object(params, "configuration")
    _count(configuration, "historyLength", 0, 0, 2**31 - 1, where="params.configuration")
    modes = configuration.get("acceptedOutputModes")
    if modes is not None and not (isinstance(modes, list) and all(isinstance(m, str) for m in modes)):
        raise RpcError(INVALID_PARAMS, "params.configuration.acceptedOutputModes must be a list of media types")
    task_id = message.get("taskId")
    return None if task_id is None else _id(task_id, "params.message.taskId")


async def _check_continued(task_id: str, client: Client) -> None:
    """A message naming a task: the task exists, and can take it (none here waits for input)."""
    record = await _get(task_id, client)
    what = f"has ended ({record.state})" if record.state in TERMINAL else f"is {record.state} and waits for no input"
    raise RpcError(INVALID_PARAMS, f"task {task_id!r} {what}; send the message without a taskId (the same "
                   "contextId continues the conversation)")  # fmt: skip


def _task_id(params: dict[str, Any]) -> str:
    return _id(params.get("id"), "params.id")


def _flag(options: dict[str, Any], key: str, where: str) -> bool | None:
    value = options.get(key)
    if value is not None and not isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"{where}.{key} must be true or false")
    return value


def _count(params: dict[str, Any], key: str, default: int, low: int, high: int, *, where: str = "params") -> int:
    value = params.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RpcError(INVALID_PARAMS, f"{where}.{key} must be an integer from {low} to {high}")
    return value


def _page_offset(params: dict[str, Any]) -> int:
    token = params.get("pageToken")
    if token is None or token == "":
        return 0
    if not isinstance(token, str) or not token.isascii() or not token.isdigit() or len(token) > _MAX_PAGE_TOKEN_DIGITS:
        raise RpcError(INVALID_PARAMS, "params.pageToken must be a nextPageToken from an earlier ListTasks")
    return int(token)


def _state_filter(params: dict[str, Any]) -> str | None:
    state = params.get("status")
    if state is None or state == "":
        return None
    name = state.removeprefix("TASK_STATE_").lower().replace("_", "-") if isinstance(state, str) else None
    if name not in STATES:
        known = ", ".join(sorted("TASK_STATE_" + s.upper().replace("-", "_") for s in STATES))
        raise RpcError(INVALID_PARAMS, f"params.status must be one of {known}")
    return name


async def _get(task_id: str, client: Client) -> TaskRecord:
    try:
        record = await task_call(GetTask(task_id, client))
    except TaskNotFound as exc:
        raise RpcError(TASK_NOT_FOUND, str(exc)) from None
    return record


async def _events(
    shape: _Shape, record: TaskRecord, receive: trio.MemoryReceiveChannel[TaskRecord]
) -> AsyncIterator[dict[str, Any]]:
    """The task now, then each change until it ends (with its artifact before the last status)."""
    yield shape.first(record)
    async with receive:
        async for update in receive:
            if update.state == "completed" and update.reply:
                yield shape.artifact_update(update)
            yield shape.status_update(update)


@attrs.frozen
class A2AService:
    config: A2AConfig
    version: str

    def card(self, base_url: str) -> dict[str, Any]:
        return agent_card(self.config, base_url, self.version)

    async def handle(
        self, body: bytes | str, base_url: str, client: Client, max_text_chars: int = MAX_TEXT_CHARS
    ) -> dict[str, Any] | AsyncIterator[dict[str, Any]]:
        """One JSON-RPC request of *client*; a dict, or an async iterator of dicts for
        streaming methods.

        Every bad request is a JSON-RPC error saying what was wrong, never an exception;
        a message with more than *max_text_chars* characters of text is refused. A task
        of another client is not found (see `Client`).
        """
        try:
            # Decoded here: given bytes, json.loads would also take UTF-16 and UTF-32.
            request = json.loads(body.decode() if isinstance(body, bytes) else body, parse_constant=_no_constant)
        except RecursionError:
            return _error(None, PARSE_ERROR, "parse error: the JSON is nested too deeply")
        except UnicodeDecodeError:
            return _error(None, PARSE_ERROR, "parse error: the body is not UTF-8")
        except ValueError as exc:  # includes numbers of more than 4,300 digits
            return _error(None, PARSE_ERROR, f"parse error: {exc}")
        rid = request.get("id") if isinstance(request, dict) else None
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
            return _error(None, INVALID_REQUEST, "invalid request: the id must be a string, an integer or null")
        if (
            not isinstance(request, dict)
            or request.get("jsonrpc") != "2.0"
            or not isinstance(request.get("method"), str)
        ):
            return _error(rid, INVALID_REQUEST, 'invalid request: need {"jsonrpc": "2.0", "method": ..., "id": ...}')
        method = request["method"]
        obs.emit("a2a_request", method="POST", path=A2A_PATH, rpc_method=method[:64])
        params = request.get("params", {})
        if not isinstance(params, dict):
            return _error(rid, INVALID_PARAMS, "params must be an object")
        try:
            if method.startswith(_PUSH) or "PushNotification" in method:
                raise RpcError(PUSH_NOT_SUPPORTED, "push notifications are not supported by this agent")
            action = _V1.get(method) or _V03.get(method)
            if action is None:
                raise RpcError(METHOD_NOT_FOUND, f"method {_short(method)} not found")
            shape = _Shape(legacy=method in _V03)
            result = await self._dispatch(action, params, shape, base_url, max_text_chars=max_text_chars, client=client)
        except RpcError as exc:
            return _error(rid, exc.code, str(exc))
        if isinstance(result, dict):
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        return _wrap(rid, result)

    async def _dispatch(
        self, action: str, params: dict[str, Any], shape: _Shape, base_url: str, *, max_text_chars: int, client: Client
    ) -> dict[str, Any] | AsyncIterator[dict[str, Any]]:
        match action:
            case "card":
                return self.card(base_url)
            case "send" | "stream":
                text, context_id = _text(params, max_text_chars)
                continued = _check_message(params)
                if continued is not None:
                    await _check_continued(continued, client)
                configuration = _object(params, "configuration")
                return_at_once = _flag(configuration, "returnImmediately", "params.configuration")
                blocking = _flag(configuration, "blocking", "params.configuration")
                await self._own_context(client, context_id)
                message_id = params["message"].get("messageId")
                created = await task_call(CreateTask(context_id, text, client, message_id))
                record = created.task
                _, receive = await task_call(WatchTask(record.id, client))
                if created.new:  # a message sent again is answered with the task it made, run once
                    await start_task(TaskTurn(record.id, client, context_id, self.config.agent, text))
                if action == "stream":
                    return _events(shape, record, receive)
                if return_at_once or blocking is False:
                    await receive.aclose()
                    return shape.send_result(record)
                async with receive:
                    async for record in receive:  # noqa: B007 - the last one is the answer
                        pass
                return shape.send_result(await _get(record.id, client))
            case "get":
                task_id = _task_id(params)
                history = _count(params, "historyLength", 1, 0, 2**31 - 1)
                return shape.task(await _get(task_id, client), history=history != 0)
            case "list":
                size = _count(params, "pageSize", 50, 1, 100)
                offset = _page_offset(params)
                state = _state_filter(params)
                given = params.get("contextId")
                in_context = None if given in (None, "") else _id(given, "params.contextId")
                records, total = await task_call(ListTasks(client, in_context, state, size, offset))
                next_token = str(offset + size) if offset + size < total else ""
                return {"tasks": [shape.task(r, history=False) for r in records], "nextPageToken": next_token,
                        "pageSize": size, "totalSize": total}  # fmt: skip
            case "cancel":
                try:
                    record = await task_call(CancelTask(_task_id(params), client))
                except TaskNotFound as exc:
                    raise RpcError(TASK_NOT_FOUND, str(exc)) from None
                except TaskNotCancelable as exc:
                    raise RpcError(TASK_NOT_CANCELABLE, str(exc)) from None
                await stop_task(record.id)  # its turn stops too, where it stands
                return shape.task(record)
            case "subscribe":
                try:
                    record, receive = await task_call(WatchTask(_task_id(params), client))
                except TaskNotFound as exc:
                    raise RpcError(TASK_NOT_FOUND, str(exc)) from None
                if record.state in TERMINAL:
                    await receive.aclose()
                    raise RpcError(INVALID_REQUEST, f"task {record.id!r} has ended ({record.state}); use GetTask")
                return _events(shape, record, receive)
        raise RpcError(METHOD_NOT_FOUND, action)  # pragma: no cover

    async def _own_context(self, client: Client, context_id: str) -> None:
        """Open the context's conversation here, before a task is made for it: in a cluster
        `beamclaw_core.OwnedElsewhere` when a live node owns it (the gateway forwards the
        whole request there, so the task is made and run by the owner). One that cannot be
        opened at all is left to the task's worker, which records why as the task's failure."""
        with contextlib.suppress(core.InvalidUserId, core.InvalidAgentName):
            await core.open_session(client.user(context_id), self.config.agent, "a2a")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error; the id and message scrubbed (they may quote what the client sent)."""
    return {"jsonrpc": "2.0", "id": obs.scrub_data(rid), "error": {"code": code, "message": obs.scrub(message)}}


async def _wrap(rid: Any, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    async for event in events:
        yield {"jsonrpc": "2.0", "id": rid, "result": event}


async def a2a_service() -> A2AService:
    """The service of the running A2A app (its configuration comes from the task manager)."""
    config = await task_call(TaskConfig())
    try:
        version = importlib.metadata.version("beamclaw")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return A2AService(config, version)
