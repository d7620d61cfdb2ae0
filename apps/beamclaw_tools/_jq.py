"""The `jq` tool: a jq filter over JSON text, run in a short-lived process of its own.

The filter is the model's, so it is treated as hostile code. In the daemon the jq
library would hold the GIL for as long as a filter runs (``last(repeat(1))`` froze every
conversation for ever), allocate without bound, read the daemon's environment through
``$ENV`` (the gateway token, the provider keys) and read any JSON file on the machine
through ``import "x" as $d {search: "/"}``. So:

- A filter that starts with a module directive (``import``, ``include``, ``module``:
  jq's grammar allows them only before the body, see `module_directive`) or names
  ``modulemeta`` or ``get_search_list`` is refused before anything runs.
- Every call runs ``_jq_worker.py`` in a new Python process (``-I``: no user site, no
  ``PYTHON*`` variables) with an empty environment (no ``HOME``, so no ``~/.jq``
  either) in an empty private folder. Before reading the request the worker lowers its
  own limits (CPU time, address space, no file writes, few descriptors, no children)
  and, where the kernel has Landlock, gives up every file-system right. The limits are
  set by the worker itself rather than in a ``preexec_fn``, which is unsafe in a
  process with threads (the daemon has several); no byte of the filter is read before
  they hold.
- The event loop only waits on pipes (``trio.lowlevel.open_process``): a filter that burns CPU
  costs its own process, which is killed at the wall-clock limit; its output is capped.
- At most ``max_concurrent`` workers run at once, so parallel calls cannot multiply
  the memory limit without bound.

The bubblewrap jail is not used: a jail takes no stdin, and the worker's own limits
and Landlock already give it less than the jail would.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import attrs
import re2
import trio

from ._tool import Autonomy, ToolContext, ToolDefinition, ToolError, ToolSession, object_schema

_WORKER: Final = Path(__file__).with_name("_jq_worker.py")
_DIRECTIVES: Final = frozenset({"import", "include", "module"})
#: jq's IDENT token (lexer.l): a directive keyword only when nothing longer matches.
_IDENT: Final = re2.compile(r"(?:[a-zA-Z_][a-zA-Z_0-9]*::)*[a-zA-Z_][a-zA-Z_0-9]*")
#: Builtins that look for module files on disk.
_FILE_BUILTINS: Final = re2.compile(r"\b(?:modulemeta|get_search_list)\b")
_STDERR_KEPT: Final = 4096
_READ: Final = 65536


def _skip_blanks_and_comments(program: str) -> int:
    """Where jq's lexer finds the first token of *program*.

    It follows lexer.l exactly: blanks are ``[ \\r\\n\\t]``; a comment runs from ``#`` to
    a newline (``\\n`` or ``\\r\\n``), and inside it a backslash followed by a backslash
    or a newline is skipped with it (so a comment ending in an odd number of
    backslashes continues on the next line).
    """
    i, n = 0, len(program)
    while i < n:
        ch = program[i]
        if ch in " \r\n\t":
            i += 1
        elif ch == "#":
            i += 1
            while i < n:
                if program[i] == "\\" and program[i + 1 : i + 2] in ("\\", "\n"):
                    i += 2
                elif program[i] == "\\" and program[i + 1 : i + 3] == "\r\n":
                    i += 3
                elif program[i] == "\n":
                    i += 1
                    break
                elif program[i : i + 2] == "\r\n":
                    i += 2
                    break
                else:
                    i += 1
        else:
            break
    return i


def module_directive(program: str) -> str | None:
    """The module directive *program* starts with (``import``, ``include``, ``module``), or None.

    jq's grammar (parser.y) reads ``TopLevel: Module Imports Query | Module Imports
    FuncDefs``, where ``Module`` starts with ``module`` and each ``Import`` with ``import``
    or ``include``; nothing else can hold a directive. So a program has one exactly
    when its first token is one of those keywords, and only the first token is read.
    """
    start = _skip_blanks_and_comments(program)
    match = _IDENT.match(program[start : start + 256])
    word = match.group(0) if match else ""
    return word if word in _DIRECTIVES else None


def refusal(program: str) -> str | None:
    """Why the filter *program* may not run, or None."""
    if "\x00" in program:
        return "the filter contains a NUL character"
    directive = module_directive(program)
    if directive is not None:
        return f"module directives ({directive!r}) are not allowed: a filter may not read files"
    found = _FILE_BUILTINS.search(program)
    if found:
        return f"{found.group(0)} is not allowed: a filter may not look for files"
    return None


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


@attrs.define
class JqTool:
    """``timeout`` (wall-clock seconds, and the CPU limit rounded up), ``memory_mib``
    (the worker's address space), ``output_limit`` (characters returned), ``max_input``
    (characters of JSON accepted) and ``max_concurrent`` (workers at once)."""

    timeout: float = 5.0
    memory_mib: int = 256
    output_limit: int = 100_000
    max_input: int = 2_000_000
    max_concurrent: int = 4
    requires_approval: bool = False
    min_autonomy: Autonomy = Autonomy.READ_ONLY
    _limiter: trio.CapacityLimiter = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        for name in ("timeout", "memory_mib", "output_limit", "max_input", "max_concurrent"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be more than 0, got {getattr(self, name)!r}")
        self._limiter = trio.CapacityLimiter(self.max_concurrent)

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            "jq",
            "Apply a jq filter to JSON text and return each output as a line of JSON.",
            object_schema(
                {
                    "filter": {"type": "string", "minLength": 1, "description": "A jq program, e.g. '.items[].name'"},
                    "input": {"type": "string", "description": "The JSON text to filter"},
                },
                ("filter", "input"),
            ),
        )

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> str:
        program: str = args["filter"]
        text: str = args["input"]
        if len(text) > self.max_input:
            raise ToolError(f"input is {len(text)} characters; the limit is {self.max_input}")
        reason = refusal(program)
        if reason is not None:
            raise ToolError(f"jq: {reason}")
        request = json.dumps({"filter": program, "input": text, "output_limit": self.output_limit}).encode()
        async with self._limiter:
            status, payload = await self._in_worker(request)
        if status == "error":
            raise ToolError(f"jq: {payload}")
        if status == "truncated":
            return f"{payload}\n[... output truncated at {self.output_limit} characters]"
        return payload

    async def _in_worker(self, request: bytes) -> tuple[str, str]:
        """(status, text) from a worker run on *request*; `ToolError` when it did not answer."""
        if not sys.executable:
            raise ToolError("jq: no Python interpreter to run the filter in")
        argv = [
            sys.executable, "-I", "-B", str(_WORKER), str(math.ceil(self.timeout)), str(self.memory_mib * 1024 * 1024),
        ]  # fmt: skip
        folder = await trio.to_thread.run_sync(tempfile.mkdtemp, "", "beamclaw-jq-")
        try:
            return await self._run(argv, folder, request)
        finally:
            await trio.to_thread.run_sync(shutil.rmtree, folder, True)

    async def _run(self, argv: list[str], folder: str, request: bytes) -> tuple[str, str]:
        out, err = bytearray(), bytearray()
        cap = self.output_limit * 4 + 64  # the worker keeps output_limit characters, at most 4 bytes each
        overflow = False
        try:
            process = await trio.lowlevel.open_process(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}, cwd=folder
            )
        except OSError as exc:
            raise ToolError(f"jq: cannot start the worker: {exc}") from None
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

        async def send() -> None:
            try:
                await stdin.send_all(request)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the worker died early; its status says why
            finally:
                await stdin.aclose()

        async def receive() -> None:
            nonlocal overflow
            while chunk := await stdout.receive_some(_READ):
                out.extend(chunk)
                if len(out) > cap:
                    overflow = True
                    process.kill()
                    return

        async def receive_errors() -> None:
            while chunk := await stderr.receive_some(_READ):
                err.extend(chunk[: max(0, _STDERR_KEPT - len(err))])

        try:
            with trio.move_on_after(self.timeout) as deadline:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send)
                    nursery.start_soon(receive)
                    nursery.start_soon(receive_errors)
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()
            with trio.CancelScope(shield=True):
                for stream in (stdin, stdout, stderr):
                    await stream.aclose()
        code = process.returncode
        assert code is not None  # reaped above
        return self._outcome(code, bytes(out), bytes(err), timed_out=deadline.cancelled_caught, overflow=overflow)

    def _outcome(self, code: int, out: bytes, err: bytes, *, timed_out: bool, overflow: bool) -> tuple[str, str]:
        timeout = f"jq: timed out after {self.timeout:g} s"
        memory = f"jq: used more than {self.memory_mib} MiB"
        if overflow:
            raise ToolError(f"jq: the output was larger than {self.output_limit} characters")
        if timed_out or code in (-signal.SIGXCPU, -signal.SIGKILL):
            raise ToolError(timeout)
        status, _, text = out.partition(b"\n")
        if code == 0 and status in (b"ok", b"truncated", b"error"):
            return status.decode(), text.decode("utf-8", "replace")
        if status == b"memory" or b"cannot allocate memory" in err or b"MemoryError" in err:
            raise ToolError(memory)
        detail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        how = f"was killed by {_signal_name(code)}" if code < 0 else f"exited with status {code}"
        raise ToolError(f"jq: the filter's process {how}" + (f": {detail[0]}" if detail[0] else ""))
