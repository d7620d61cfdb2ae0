"""The daemon stays up for everyone: idle WebSockets by the thousand, and a deflate bomb."""

from __future__ import annotations

import contextlib
import os
import resource
import zlib
from pathlib import Path

import httpx
import trio

from tests.support.model_server import Echo

from .conftest import RunGateway, ws_upgrade

# The rate limit out of the way: the cap is what is tested.
_CAPS = {"http": {"max_ws_connections_per_client": 40, "max_ws_connections": 100}, "rate_limit": {"requests": 100_000}}


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


async def test_two_thousand_idle_websockets_leave_health_and_chat_answering(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=_CAPS) as g:
        port = int(g.url.rsplit(":", 1)[1])
        held: list[trio.SocketStream] = []
        refused: list[bytes] = []
        try:
            for _ in range(2000):
                head, stream = await ws_upgrade(port)
                if head.startswith(b"http/1.1 101"):
                    held.append(stream)
                else:
                    refused.append(head.split(b"\r\n")[0])
                    await stream.aclose()
            assert len(held) == 40 and set(refused) == {b"http/1.1 503 "}
            async with httpx.AsyncClient(base_url=g.url, timeout=30) as http:
                assert (await http.get("/health")).status_code == 200
                chat = await http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
                assert chat.json()["choices"][0]["message"]["content"] == "You said: hi"
        finally:
            for stream in held:
                await stream.aclose()
        with trio.fail_after(30):  # the closed ones are counted out: a new one is let in
            while True:
                head, stream = await ws_upgrade(port)
                await stream.aclose()
                if head.startswith(b"http/1.1 101"):
                    break
                await trio.sleep(0.1)


async def _slow_body(port: int, headers: str = "") -> trio.SocketStream:
    """A chat request whose body never ends: its head and a first byte of 1,000."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: 1000\r\n{headers}\r\n{{".encode()
    )
    return stream


async def _status(stream: trio.SocketStream, wait: float = 30.0) -> bytes:
    """The status line of the answer on *stream*, or b"" if none came within *wait* seconds."""
    answer = b""
    with trio.move_on_after(wait):
        while b"\r\n" not in answer and (chunk := await stream.receive_some()):
            answer += chunk
    return answer.split(b"\r\n")[0]


async def test_requests_that_drip_their_bodies_hold_only_their_clients_share(run_gateway: RunGateway) -> None:
    table = {"http": {"max_http_requests_per_client": 5, "max_http_requests": 8}, "rate_limit": {"requests": 100_000}}
    async with run_gateway(repeat=Echo(), gateway_table=table) as g:
        port = int(g.url.rsplit(":", 1)[1])
        held = [await _slow_body(port) for _ in range(5)]
        try:
            # In progress, waiting for the body: no answer (a second of it is enough to see).
            assert [await _status(stream, wait=1) for stream in held] == [b""] * 5
            refused = [await _slow_body(port) for _ in range(20)]
            try:
                statuses = [await _status(stream) for stream in refused]
                assert statuses == [b"HTTP/1.1 503 "] * 20  # at once, before any of its body is read
            finally:
                for stream in refused:
                    await stream.aclose()
            async with httpx.AsyncClient(base_url=g.url, timeout=30) as http:
                assert (await http.get("/health")).status_code == 200  # never counted
        finally:
            for stream in held:
                await stream.aclose()
        async with httpx.AsyncClient(base_url=g.url, timeout=30) as http:  # the closed ones are counted out
            with trio.fail_after(30):
                while (chat := await http.post("/v1/chat/completions", json={"messages": [
                        {"role": "user", "content": "hi"}]})).status_code == 503:  # fmt: skip
                    await trio.sleep(0.1)
            assert chat.json()["choices"][0]["message"]["content"] == "You said: hi"


def _frame(payload: bytes, *, compressed: bool) -> bytes:
    """One masked text frame, with RSV1 (compressed) set if asked."""
    head = bytes([0x80 | (0x40 if compressed else 0) | 0x1])
    length = len(payload)
    if length < 126:
        head += bytes([0x80 | length])
    elif length < 65536:
        head += bytes([0x80 | 126]) + length.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + length.to_bytes(8, "big")
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _bomb(megabytes: int) -> bytes:
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = b"a" * (1 << 20)
    return b"".join(deflate.compress(block) for _ in range(megabytes)) + deflate.flush(zlib.Z_SYNC_FLUSH)[:-4]


async def test_a_deflate_bomb_is_refused_before_memory_is_spent(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Echo()) as g:
        port = int(g.url.rsplit(":", 1)[1])
        bomb = _bomb(200)
        assert len(bomb) < 512_000  # under max_ws_message_bytes as sent: only inflating would find it
        before = _rss_bytes()
        offer = {"Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits"}
        head, stream = await ws_upgrade(port, offer)
        async with stream:
            assert head.startswith(b"http/1.1 101") and b"sec-websocket-extensions" not in head
            # The server may close while the frame is still being sent: its header was enough.
            with contextlib.suppress(trio.BrokenResourceError):
                await stream.send_all(_frame(bomb, compressed=True))
            closed = b""
            with trio.fail_after(30), contextlib.suppress(trio.BrokenResourceError):
                while chunk := await stream.receive_some():
                    closed += chunk
            assert closed[:1] in {b"", b"\x88"}  # closed (a close frame at most): nothing inflated, no answer
        assert _rss_bytes() - before < 100 * 1024 * 1024  # inflated, it was 200 MB
        async with httpx.AsyncClient(base_url=g.url, timeout=30) as http:
            assert (await http.get("/health")).status_code == 200


def test_the_open_file_limit_is_raised_to_the_hard_limit() -> None:
    from beamclaw_gateway._connections import raise_open_file_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
        assert raise_open_file_limit() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
