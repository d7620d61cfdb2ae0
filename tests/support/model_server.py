"""A scripted OpenAI-compatible model server on 127.0.0.1.

It stands in for a remote LLM: each request to ``/v1/chat/completions`` takes the
next scripted step and answers it the way a real server would, as one JSON body or,
when the request asks for ``stream``, as Server-Sent Events of
``chat.completion.chunk`` objects ending with ``data: [DONE]``. The provider code
under test is the real one. Every request body is kept for assertions.

It is as strict as api.openai.com about tool calls: a history in which an assistant
message's tool call is not answered by a tool message before the next message, or a
tool message answers no pending call, is refused with the same 400 and message (and
counted in ``refusals``), so every test that runs a turn also checks the invariant.

    async with scripted_model(Reply("hello")) as model:
        ... base_url=model.base_url ...
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from .asgi_server import Receive, Scope, Send, read_body, respond, serve_asgi, with_lifespan


@attrs.frozen
class Call:
    """A tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any] | str = attrs.field(factory=dict)
    id: str = ""


@attrs.frozen
class Reply:
    """A normal answer: text and/or tool calls, with usage."""

    content: str = ""
    tool_calls: tuple[Call, ...] = ()
    prompt_tokens: int = 10
    completion_tokens: int = 5


@attrs.frozen
class Status:
    """An HTTP error, e.g. 429 with Retry-After or a 503."""

    status: int
    retry_after: float | None = None
    message: str = "scripted error"


@attrs.frozen
class Malformed:
    """A 200 whose body (or, streaming, whose first chunk) is not valid JSON."""


@attrs.frozen
class CutOff:
    """Streaming: some content, then the connection ends without ``[DONE]``."""

    content: str = "partial answ"


@attrs.frozen
class Echo:
    """Answer "You said: <the last user message>" (for trying the daemon by hand)."""


@attrs.frozen
class Agentic:
    """Call *tool* when the last message is the user's, else answer: a tool turn per message.

    Made for load and chaos tests, where many conversations run at once and a fixed
    script cannot know which request comes next. Call ids are unique per request.
    """

    tool: Call
    answer: str = "done"


@attrs.frozen
class Hold:
    """Wait until `release` is called (or for ever), then answer with *then*."""

    then: Any = Reply("released")
    released: trio.Event = attrs.field(factory=trio.Event)
    reached: trio.Event = attrs.field(factory=trio.Event)

    def release(self) -> None:
        self.released.set()


Step = Reply | Status | Malformed | CutOff | Hold | Echo | Agentic


def invalid_tool_history(messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The (message, param) api.openai.com answers with HTTP 400 for *messages*, or None if valid."""
    pending: list[str] = []
    opened_at = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.",
                    f"messages.[{index}].role",
                )
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            break
        if role == "assistant" and message.get("tool_calls"):
            pending = [call["id"] for call in message["tool_calls"]]
            opened_at = index
    if not pending:
        return None
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
        f"messages.[{opened_at}].role",
    )


def _chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or f"call_{i}",
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
            },
        }
        for i, call in enumerate(reply.tool_calls)
    ]


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


@attrs.define
class ScriptedModel:
    """The server's script and what it has seen. ``repeat`` answers when the script is empty.

    ``keep_requests=False`` keeps only a count: a benchmark's thousands of growing
    request bodies would otherwise fill the heap and its figures with GC pauses.
    """

    steps: list[Step] = attrs.field(factory=list)
    repeat: Step | None = None
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    headers: list[dict[str, str]] = attrs.field(factory=list)
    base_url: str = ""
    chunk_size: int = 8
    keep_requests: bool = True
    #: The model id `/v1/models` lists (any model name is answered).
    model_id: str = "scripted-model"
    count: int = 0
    strict: bool = True
    refusals: list[str] = attrs.field(factory=list)

    def add(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def _next(self) -> Step | None:
        if self.steps:
            return self.steps.pop(0)
        return self.repeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/").endswith("/models"):
            await respond(send, 200, {"object": "list", "data": [{"id": self.model_id, "object": "model"}]})
            return
        if not scope["path"].rstrip("/").endswith("/chat/completions"):
            await respond(send, 404, {"error": {"message": f"no route {scope['path']}"}})
            return
        body = json.loads(await read_body(receive))
        self.count += 1
        if self.keep_requests:
            self.requests.append(body)
            self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        invalid = invalid_tool_history(body.get("messages", [])) if self.strict else None
        if invalid is not None:
            self.refusals.append(invalid[0])
            error = {"message": invalid[0], "type": "invalid_request_error", "param": invalid[1], "code": None}
            await respond(send, 400, {"error": error})
            return
        step = self._next()
        while isinstance(step, Hold):
            step.reached.set()
            await step.released.wait()
            step = step.then
        model = body.get("model", "scripted")
        if isinstance(step, Echo):
            users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
            step = Reply(f"You said: {users[-1] if users else ''}")
        elif isinstance(step, Agentic):
            last = (body.get("messages") or [{}])[-1]
            call = attrs.evolve(step.tool, id=f"call_{self.count}")
            step = Reply(tool_calls=(call,)) if last.get("role") == "user" else Reply(step.answer)
        match step:
            case None:
                await respond(send, 500, {"error": {"message": "the scripted model has no step left"}})
            case Status(status, retry_after, message):
                headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
                await respond(send, status, {"error": {"message": message, "code": status}}, headers)
            case Malformed() if not body.get("stream"):
                await respond(send, 200, '{"id": "x", "choices": [ {"message": ', {"content-type": "application/json"})
            case Reply() if not body.get("stream"):
                message: dict[str, Any] = {"role": "assistant", "content": step.content or None}
                if step.tool_calls:
                    message["tool_calls"] = _tool_calls(step)
                finish = "tool_calls" if step.tool_calls else "stop"
                await respond(
                    send,
                    200,
                    {
                        "id": f"chatcmpl-{self.count}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": _usage(step),
                    },
                )
            case _:
                await self._stream(send, step, model, body)

    async def _stream(self, send: Send, step: Step, model: str, body: dict[str, Any]) -> None:
        cid = f"chatcmpl-{self.count}"
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def event(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        await event(_chunk(cid, model, {"role": "assistant", "content": ""}))
        if isinstance(step, Malformed):
            await event(b'data: {"id": "x", "choices": [\n\n')
        elif isinstance(step, CutOff):
            await event(_chunk(cid, model, {"content": step.content}))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        elif isinstance(step, Reply):
            text = step.content
            for i in range(0, len(text), self.chunk_size):
                await event(_chunk(cid, model, {"content": text[i : i + self.chunk_size]}))
            for index, call in enumerate(_tool_calls(step)):
                head = {"index": index, "id": call["id"], "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""}}  # fmt: skip
                await event(_chunk(cid, model, {"tool_calls": [head]}))
                args = call["function"]["arguments"]
                for i in range(0, len(args), self.chunk_size):
                    piece = {"index": index, "function": {"arguments": args[i : i + self.chunk_size]}}
                    await event(_chunk(cid, model, {"tool_calls": [piece]}))
            await event(_chunk(cid, model, {}, "tool_calls" if step.tool_calls else "stop"))
            if body.get("stream_options", {}).get("include_usage"):
                usage = {"id": cid, "object": "chat.completion.chunk", "model": model, "choices": [],
                         "usage": _usage(step)}  # fmt: skip
                await event(f"data: {json.dumps(usage)}\n\n".encode())
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})


@asynccontextmanager
async def scripted_model(*steps: Step, repeat: Step | None = None) -> AsyncIterator[ScriptedModel]:
    """Serve a `ScriptedModel` with *steps*; ``model.base_url`` ends in ``/v1``."""
    model = ScriptedModel(list(steps), repeat=repeat)
    async with serve_asgi(model) as url:
        model.base_url = f"{url}/v1"
        yield model


async def _serve_forever(port: int) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    print(f'echo model on http://127.0.0.1:{port}/v1: configure model = "echo" (Ctrl-C to stop)', flush=True)
    await serve(with_lifespan(ScriptedModel(repeat=Echo(), model_id="echo", keep_requests=False)), config, mode="asgi")


if __name__ == "__main__":
    import argparse
    import socket
    import sys

    parser = argparse.ArgumentParser(description="Serve the scripted model as an echo model, for trying BeamClaw.")
    parser.add_argument("--port", type=int, default=8001)
    port = parser.parse_args().port
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise SystemExit(f"model_server: cannot listen on 127.0.0.1:{port}: {exc.strerror}; use --port") from None
    try:
        trio.run(_serve_forever, port)
    except KeyboardInterrupt:
        sys.exit(130)
