"""The stdio transport: an MCP server as a subprocess, its messages one JSON line each.

BeamClaw's own, in place of the SDK's ``stdio_client``, because a server is untrusted
input and the SDK's reader trusts it:

- a line is read in bounded time and memory: one longer than ``max_message_bytes``
  ends the connection (a crash, restarted) instead of being assembled for minutes;
- bytes that are not UTF-8 are replaced, not fatal (the SDK's reader stopped there and
  waited for ever, the server still looking ready); a line that is not a message (a
  banner printed on stdout) is logged and skipped, one that was meant as a message
  (it starts with ``{``) but is not valid JSON-RPC (nested too deeply...) ends the
  connection, saying why, instead of leaving its request unanswered;
- a message is parsed off the event loop when it is large;
- the server's exit ends the connection even while a child of its holds its stdout
  open; the server runs in a process group of its own, and the whole group is stopped
  when the connection ends (stdin closed, then SIGTERM, then SIGKILL): a server's
  children never outlive it.

The streams are the SDK's (a `SessionMessage`, or an exception that ends the
connection), so a `mcp.ClientSession` runs over them unchanged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import attrs
import pydantic
import trio
from loguru import logger
from mcp import types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from beamclaw_obs import scrub

#: Messages longer than this are parsed in a worker thread.
_OFF_LOOP_BYTES: Final = 65_536
#: How many of a server's lines that are not messages are logged.
_NOISE_LOGGED: Final = 5
#: After stdin is closed, how long a server has to exit on its own; then after SIGTERM.
_GRACE_SECONDS: Final = 2.0


class MessageTooLarge(Exception):
    """The server sent a line longer than ``mcp.max_message_bytes``."""


class ServerExited(Exception):
    """The server's process ended (its stdout may still be open, held by a child of its)."""


def _parse(line: bytes) -> SessionMessage | str:
    """The message on *line*, or why it is not one."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace")))
    except pydantic.ValidationError as exc:
        return str(exc.errors()[0]["msg"])[:200]
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__


@attrs.define
class _Reader:
    """Turns a server's stdout into messages, one a line."""

    label: str
    limit: int
    #: Lines that were not JSON-RPC messages: each is skipped, the first few logged.
    noise: int = 0

    async def run(self, stdout: trio.abc.ReceiveStream, sink: Any) -> None:
        pending: list[bytes | bytearray] = []
        size = 0
        async with sink:
            try:
                while chunk := await stdout.receive_some(65536):
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        line = b"".join([*pending, chunk[start:end]])
                        pending, size, start = [], 0, end + 1
                        await self._line(line, sink)
                    pending.append(chunk[start:])
                    size += len(chunk) - start
                    if size > self.limit:
                        await sink.send(
                            MessageTooLarge(f"the server sent a message larger than {self.limit:,} bytes "
                                            "(mcp.max_message_bytes)")
                        )  # fmt: skip
                        return
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, trio.BrokenResourceError):
                return

    async def _line(self, line: bytes, sink: Any) -> None:
        if not line.strip():
            return
        parsed = _parse(line) if len(line) < _OFF_LOOP_BYTES else await trio.to_thread.run_sync(_parse, line)
        if isinstance(parsed, SessionMessage):
            await sink.send(parsed)
            return
        if line.lstrip().startswith(b"{"):  # meant as a message: its request would wait for ever
            await sink.send(ValueError(f"the server sent a message that is not valid JSON-RPC: {parsed}"))
            return
        # A server that prints on stdout what belongs on stderr (a banner) is common, and not fatal.
        self.noise += 1
        if self.noise <= _NOISE_LOGGED:
            text = line[:200].decode("utf-8", "replace")
            more = " (further such lines are not logged)" if self.noise == _NOISE_LOGGED else ""
            logger.warning("{}: a line on stdout that is not a JSON-RPC message, skipped{}: {!r}", self.label, more,
                           scrub(text))  # fmt: skip


async def _write(stdin: trio.abc.SendStream, source: Any) -> None:
    async with source:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            async for message in source:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await stdin.send_all(line.encode())


async def _watch_exit(process: trio.Process, sink: Any) -> None:
    """Tell the session when the server exits: a child holding its stdout would hide it."""
    async with sink:
        code = await process.wait()
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await sink.send(ServerExited(f"the server exited with code {code}"))


def _signal_group(process: trio.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def _stop(process: trio.Process) -> None:
    """Close stdin, give the server a moment, then SIGTERM and SIGKILL its whole group."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        assert process.stdin is not None
        await process.stdin.aclose()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with trio.move_on_after(_GRACE_SECONDS):
            await process.wait()
        if process.returncode is not None:
            _signal_group(process, signal.SIGKILL)  # its children too, whatever they do
            return
        _signal_group(process, sig)
    with trio.move_on_after(_GRACE_SECONDS):
        await process.wait()


@contextlib.asynccontextmanager
async def stdio_connection(
    label: str, command: list[str], *, env: dict[str, str], cwd: str | None, stderr_fd: int, max_message_bytes: int
) -> AsyncIterator[tuple[Any, Any]]:
    """The server started by *command*: its (read, write) streams, for as long as the block runs."""
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_fd,
        env=get_default_environment() | env, cwd=cwd, start_new_session=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    read_sink, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_source = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_Reader(label, max_message_bytes).run, process.stdout, read_sink.clone())
            nursery.start_soon(_watch_exit, process, read_sink)
            nursery.start_soon(_write, process.stdin, write_source)
            try:
                yield read_stream, write_stream
            finally:
                read_stream.close()
                write_stream.close()
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process)
            await process.stdout.aclose()
