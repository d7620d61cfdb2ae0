"""A2A over JSON-RPC 2.0: the v1.0 methods, the 0.3 names as aliases, and the standard errors.

``handle(body)`` returns either one JSON-RPC response (a dict) or, for the streaming
methods, an async iterator of them (each becomes one SSE event). Answers to a 0.3
method name come in the 0.3 shape (``kind`` fields, lowercase states), so both
generations of clients read them.
"""

from __future__ import annotations

import importlib.metadata
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

import attrs

from ._card import agent_card
from ._config import A2AConfig
from ._tasks import TERMINAL, TaskNotCancelable, TaskNotFound, TaskRecord, task_call
from ._worker import start_task

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
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


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@attrs.frozen
class _Shape:
    """How to write a task for the caller: v1.0 (protobuf JSON) or 0.3 (``kind`` fields)."""

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


def _text(params: dict[str, Any]) -> tuple[str, str]:
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(INVALID_PARAMS, "params.message must be an object")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise RpcError(INVALID_PARAMS, "params.message.parts must be a non-empty list")
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if not texts or not "".join(texts).strip():
        raise RpcError(INVALID_PARAMS, "params.message has no text part")
    context_id = message.get("contextId") or uuid.uuid4().hex
    if not isinstance(context_id, str) or len(context_id) > 128:
        raise RpcError(INVALID_PARAMS, "params.message.contextId must be a string of at most 128 characters")
    return "\n".join(texts), context_id


def _task_id(params: dict[str, Any]) -> str:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(INVALID_PARAMS, "params.id must be a task id")
    return task_id


async def _get(task_id: str) -> TaskRecord:
    try:
        record: TaskRecord = await task_call("get", task_id)
    except TaskNotFound as exc:
        raise RpcError(TASK_NOT_FOUND, str(exc)) from None
    return record


async def _events(shape: _Shape, record: TaskRecord, receive: Any) -> AsyncIterator[dict[str, Any]]:
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

    async def handle(self, body: bytes | str, base_url: str) -> dict[str, Any] | AsyncIterator[dict[str, Any]]:
        """One JSON-RPC request; a dict, or an async iterator of dicts for streaming methods."""
        try:
            request = json.loads(body)
        except ValueError as exc:
            return _error(None, PARSE_ERROR, f"parse error: {exc}")
        if (
            not isinstance(request, dict)
            or request.get("jsonrpc") != "2.0"
            or not isinstance(request.get("method"), str)
        ):
            rid = request.get("id") if isinstance(request, dict) else None
            return _error(rid, INVALID_REQUEST, 'invalid request: need {"jsonrpc": "2.0", "method": ..., "id": ...}')
        rid = request.get("id")
        method = request["method"]
        params = request.get("params", {})
        if not isinstance(params, dict):
            return _error(rid, INVALID_PARAMS, "params must be an object")
        try:
            if method.startswith(_PUSH) or "PushNotification" in method:
                raise RpcError(PUSH_NOT_SUPPORTED, "push notifications are not supported by this agent")
            action = _V1.get(method) or _V03.get(method)
            if action is None:
                raise RpcError(METHOD_NOT_FOUND, f"method {method!r} not found")
            shape = _Shape(legacy=method in _V03)
            result = await self._dispatch(action, params, shape, base_url)
        except RpcError as exc:
            return _error(rid, exc.code, str(exc))
        if isinstance(result, dict):
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        return _wrap(rid, result)

    async def _dispatch(
        self, action: str, params: dict[str, Any], shape: _Shape, base_url: str
    ) -> dict[str, Any] | AsyncIterator[dict[str, Any]]:
        match action:
            case "card":
                return self.card(base_url)
            case "send" | "stream":
                text, context_id = _text(params)
                record: TaskRecord = await task_call("create", context_id, text)
                _, receive = await task_call("watch", record.id)
                await start_task(record.id, context_id, self.config.agent, text)
                if action == "stream":
                    return _events(shape, record, receive)
                configuration = params.get("configuration") or {}
                if configuration.get("returnImmediately") or configuration.get("blocking") is False:
                    await receive.aclose()
                    return shape.send_result(record)
                async with receive:
                    async for record in receive:  # noqa: B007 - the last one is the answer
                        pass
                return shape.send_result(await _get(record.id))
            case "get":
                return shape.task(await _get(_task_id(params)), history=params.get("historyLength") != 0)
            case "list":
                size = params.get("pageSize", 50)
                offset = int(params.get("pageToken") or 0) if str(params.get("pageToken") or "0").isdigit() else 0
                if not isinstance(size, int) or not 1 <= size <= 100:
                    raise RpcError(INVALID_PARAMS, "params.pageSize must be 1 to 100")
                state = params.get("status")
                state = state.removeprefix("TASK_STATE_").lower().replace("_", "-") if isinstance(state, str) else None
                records, total = await task_call("list", params.get("contextId"), state, size, offset)
                next_token = str(offset + size) if offset + size < total else ""
                return {"tasks": [shape.task(r, history=False) for r in records], "nextPageToken": next_token,
                        "pageSize": size, "totalSize": total}  # fmt: skip
            case "cancel":
                try:
                    record = await task_call("cancel", _task_id(params))
                except TaskNotFound as exc:
                    raise RpcError(TASK_NOT_FOUND, str(exc)) from None
                except TaskNotCancelable as exc:
                    raise RpcError(TASK_NOT_CANCELABLE, str(exc)) from None
                return shape.task(record)
            case "subscribe":
                try:
                    record, receive = await task_call("watch", _task_id(params))
                except TaskNotFound as exc:
                    raise RpcError(TASK_NOT_FOUND, str(exc)) from None
                if record.state in TERMINAL:
                    await receive.aclose()
                    raise RpcError(INVALID_REQUEST, f"task {record.id!r} has ended ({record.state}); use GetTask")
                return _events(shape, record, receive)
        raise RpcError(METHOD_NOT_FOUND, action)  # pragma: no cover


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


async def _wrap(rid: Any, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    async for event in events:
        yield {"jsonrpc": "2.0", "id": rid, "result": event}


async def a2a_service() -> A2AService:
    """The service of the running A2A app (its configuration comes from the task manager)."""
    config: A2AConfig = await task_call("config")
    try:
        version = importlib.metadata.version("beamclaw")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return A2AService(config, version)
