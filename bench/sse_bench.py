"""The provider's streaming hot path: our old line reader against httpx-sse, same stream.

    python -m bench.sse_bench [--quick]

A recorded reply (a few hundred small ``data:`` events, as OpenAI-compatible servers
send them, then usage and ``[DONE]``) is served from memory by httpx's MockTransport in
network-sized pieces, so only the reading is measured: no socket, no server.

Figures (printed, and written to bench/results/sse.json), microseconds per reply:
  lines     the reader the provider had before issue 21 (kept here as the reference)
  httpx_sse httpx-sse's `EventSource.aiter_sse` over the same response
  provider  `OpenAICompatProvider.stream`, the whole path (parsing chunks, callbacks)
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx
import httpx_sse
import trio
from loguru import logger

import beamclaw_core as core

from ._cli import quick_flag, save

_PIECE = 1400  # bytes per read: about one TCP segment


def _recorded(events: int = 400) -> bytes:
    """A streamed reply of *events* content deltas, its usage and [DONE]."""
    head: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    out += [{**head, "choices": [{"index": 0, "delta": {"content": f" word{i}"}}]} for i in range(events)]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out.append({**head, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": events}})
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in out) + b"data: [DONE]\n\n"


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncGenerator[bytes, None]:
        for i in range(0, len(self._body), _PIECE):
            yield self._body[i : i + _PIECE]


def _client(body: bytes) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Pieces(body))

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


async def _old_lines(response: httpx.Response) -> int:
    """The provider's reader before issue 21: split the text on newlines, keep ``data:`` lines."""
    buffer, payloads = "", 0
    async for piece in response.aiter_text():
        buffer += piece
        *lines, buffer = buffer.split("\n")
        for text in lines:
            line = text.rstrip("\r")
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                json.loads(line[5:].strip())
                payloads += 1
    return payloads


async def _sse(response: httpx.Response) -> int:
    payloads = 0
    async for event in httpx_sse.EventSource(response).aiter_sse():
        if event.data != "[DONE]":
            json.loads(event.data)
            payloads += 1
    return payloads


async def _time_reader(client: httpx.AsyncClient, read: Callable[[httpx.Response], Awaitable[int]]) -> float:
    started = time.perf_counter()
    async with client.stream("POST", "http://model/v1/chat/completions") as response:
        await read(response)
    return (time.perf_counter() - started) * 1e6


async def _time_provider(provider: core.OpenAICompatProvider) -> float:
    async def on_text(text: str) -> None:
        pass

    started = time.perf_counter()
    await provider.stream([core.Message("user", "hi")], None, on_text)
    return (time.perf_counter() - started) * 1e6


async def main(quick: bool) -> dict[str, Any]:
    rounds = 20 if quick else 300
    body = _recorded()
    timings: dict[str, list[float]] = {"lines": [], "httpx_sse": [], "provider": []}
    async with _client(body) as client:
        provider = core.OpenAICompatProvider("bench", core.ProviderConfig("http://model/v1", "m"), client)
        for _ in range(rounds):  # interleaved, so a noisy neighbour hits all alike
            timings["lines"].append(await _time_reader(client, _old_lines))
            timings["httpx_sse"].append(await _time_reader(client, _sse))
            timings["provider"].append(await _time_provider(provider))
    result: dict[str, Any] = {"events": 403, "bytes": len(body), "rounds": rounds}
    for name, values in timings.items():
        result[name] = {
            "median_us": round(statistics.median(values)),
            "p90_us": round(sorted(values)[rounds * 9 // 10]),
        }
        print(f"{name:10} median {result[name]['median_us']:>6} us   p90 {result[name]['p90_us']:>6} us")
    return result


if __name__ == "__main__":
    logger.remove()  # the provider's debug line per reply is not what is measured
    figures = trio.run(main, quick_flag(__doc__))
    save("sse", figures)
