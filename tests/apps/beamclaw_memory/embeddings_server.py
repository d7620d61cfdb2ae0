"""A scripted OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 (hypercorn).

Each request is answered by ``answer(body)``: by default one deterministic vector per
input (its index in *vocabulary* plus one, as a one-hot of `DIMENSIONS` numbers, so a
test can tell which text each row came from); a test swaps in a malformed answer.
Every request body and its headers are kept.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs

from tests.support.asgi_server import Receive, Scope, Send, read_body, respond, serve_asgi

DIMENSIONS = 8


def vector_of(text: str) -> list[float]:
    """A deterministic, distinct-ish vector for *text*."""
    seed = zlib.crc32(text.encode())
    return [float((seed >> shift) & 0xFF) + 1.0 for shift in range(0, DIMENSIONS * 3, 3)]


def good_answer(body: dict[str, Any]) -> tuple[int, Any]:
    data = [{"object": "embedding", "index": i, "embedding": vector_of(t)} for i, t in enumerate(body["input"])]
    data.reverse()  # servers need not answer in order: the index says where each goes
    return 200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1}}


@attrs.define
class EmbeddingsServer:
    base_url: str = ""
    answer: Callable[[dict[str, Any]], tuple[int, Any]] = good_answer
    bodies: list[dict[str, Any]] = attrs.field(factory=list)
    headers: list[dict[str, str]] = attrs.field(factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await read_body(receive)
        if scope["path"] != "/v1/embeddings" or scope["method"] != "POST":
            await respond(send, 404, {"error": {"message": f"no route {scope['path']}"}})
            return
        body = json.loads(raw)
        self.bodies.append(body)
        self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        status, answer = self.answer(body)
        await respond(send, status, answer if isinstance(answer, (dict, bytes, str)) else json.dumps(answer))


@asynccontextmanager
async def embeddings_server() -> AsyncIterator[EmbeddingsServer]:
    server = EmbeddingsServer()
    async with serve_asgi(server) as url:
        server.base_url = f"{url}/v1"
        yield server
