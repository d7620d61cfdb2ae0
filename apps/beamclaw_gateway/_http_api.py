"""The HTTP routes: health, metrics, the supervision tree, and the OpenAI-compatible API."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
from quart import Blueprint, Response, current_app, request

import beamclaw_core as core
import beamclaw_obs as obs
import supervision as sv

from ._config import GatewayConfig
from ._turns import BadRequest, agent_for, agents, run_events, truncated, user_id


@attrs.frozen
class Context:
    """What the routes need, kept on the app."""

    config: GatewayConfig
    data_dir: Path


def context() -> Context:
    ctx: Context = current_app.config["BEAMCLAW"]
    return ctx


def error(message: str, status: int, code: str = "invalid_request", **headers: str) -> Response:
    """An error in the OpenAI shape, which the official clients read and raise."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = json.dumps({"error": {"message": message, "type": kind, "code": code}})
    return Response(body, status=status, content_type="application/json", headers=headers)


api = Blueprint("api", __name__)


@api.get("/health")
async def health() -> Response:
    root = context().config.root
    apps = {str(c.id): c.state.value for c in sv.which_children(root)} if sv.whereis(root) else {}
    status = "ok" if all(state == "running" for state in apps.values()) else "degraded"
    return Response(json.dumps({"status": status, "apps": apps}), content_type="application/json")


@api.get("/metrics")
async def metrics() -> Response:
    try:
        text = await obs.metrics_text()
    except sv.NoProc:
        return error("the metrics backend is not running", 503, "unavailable")
    return Response(text, content_type="text/plain; version=0.0.4; charset=utf-8")


@api.get("/v1/supervision/tree")
async def tree() -> Response:
    return Response(json.dumps(sv.inspect_tree(context().config.root)), content_type="application/json")


@api.get("/v1/models")
async def models() -> Response:
    ctx = context()
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": "beamclaw"}
        for name in agents(ctx.data_dir, ctx.config.default_agent)
    ]
    return Response(json.dumps({"object": "list", "data": data}), content_type="application/json")


def _last_user_text(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    for message in reversed(messages):
        if not isinstance(message, dict):
            raise BadRequest("each message must be an object with 'role' and 'content'")
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        if not isinstance(content, str) or not content.strip():
            raise BadRequest("the last user message has no text content")
        return content
    raise BadRequest("'messages' has no message with role 'user'")


async def json_body(what: str) -> dict[str, Any]:
    """The request body as a JSON object; `BadRequest` (saying *what* was expected) otherwise."""
    raw = await request.get_data(as_text=False)
    try:
        body = json.loads(raw)
    except ValueError:  # includes bodies that are not UTF-8
        body = None
    if not isinstance(body, dict):
        raise BadRequest(f"the body must be a JSON object ({what})")
    return body


async def _turn_request() -> tuple[core.SessionHandle, str, dict[str, Any]]:
    body = await json_body("an OpenAI chat completion request")
    ctx = context()
    agent = agent_for(body.get("model"), ctx.data_dir, ctx.config.default_agent)
    user = user_id(body.get("user"), request.headers.get("X-User-Id"))
    text = truncated(_last_user_text(body.get("messages")), ctx.config.http.max_user_chars)
    if "stream" in body and not isinstance(body["stream"], bool):
        raise BadRequest("'stream' must be true or false")
    return await core.open_session(user, agent, "http"), text, body


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def _usage(result: core.TurnResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


@api.post("/v1/chat/completions")
async def chat_completions() -> Response:
    handle, text, body = await _turn_request()
    model = f"beamclaw/{handle.agent_id}" if str(body.get("model", "")).startswith("beamclaw/") else handle.agent_id
    if body.get("stream"):
        return _stream(handle, text, model, bool(body.get("stream_options", {}).get("include_usage")))
    channel = core.CollectingChannel()
    result = await core.send_message(handle, text, channel)
    # Approval questions and errors sent during the turn come before the answer.
    content = "\n\n".join([*channel.sent, result.text]) if not result.ok or channel.sent else result.text
    answer = {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": _usage(result),
    }
    return Response(json.dumps(answer), content_type="application/json")


def _stream(handle: core.SessionHandle, text: str, model: str, include_usage: bool) -> Response:
    cid = _completion_id()
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    async def events() -> AsyncIterator[bytes]:
        yield chunk({"role": "assistant", "content": ""})
        result: core.TurnResult | None = None
        async for event in run_events(handle, text):
            if event["type"] == "chunk":
                yield chunk({"content": event["text"]})
            elif event["type"] == "message":
                yield chunk({"content": f"{event['text']}\n\n"})
            elif event["type"] == "done":
                result = event["result"]
        yield chunk({}, "stop")
        if include_usage and result is not None:
            usage = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": _usage(result),
            }
            yield f"data: {json.dumps(usage)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    response = Response(events(), content_type="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.timeout = None  # a long turn is not a stuck response
    return response


@api.errorhandler(BadRequest)
async def bad_request(exc: BadRequest) -> Response:
    return error(str(exc), exc.status, exc.code)


@api.errorhandler(core.InvalidAgentName)
async def bad_agent(exc: core.InvalidAgentName) -> Response:
    return error(str(exc), 400)
