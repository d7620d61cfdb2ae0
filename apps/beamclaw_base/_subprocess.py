"""Child processes for the commands the agent runs, jailed or not.

`run_captured` spawns one command without blocking the event loop, keeps a capped part
of its output, and never leaves anything behind: when the command ends, times out or
its caller is cancelled, its whole process group is killed and the child is reaped.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, final

import attrs
import outcome
import trio

from ._jail import SYSTEM_PATH, JailResult, check_cwd

#: How long the output may still flow once the command has exited (a process that left
#: its group, with setsid, can hold the pipes open; it must not hold the caller).
_DRAIN_GRACE: Final = 0.5
#: How much of the end of each stream is kept when the output is over its limit: the end
#: is where errors and the terminal's working-directory mark are.
_TAIL: Final = 4096


class _Spawner:
    """Forks every child from one thread that lives as long as the process.

    Why not trio's worker threads: a child that asks the kernel to kill it when its
    parent dies (bubblewrap's ``--die-with-parent``, ``PR_SET_PDEATHSIG``) is killed when
    the *thread* that forked it exits, and trio's idle worker threads exit after 10 s,
    which would kill every command running longer than that. One thread that never exits
    keeps "the parent" meaning the daemon, and the event loop never waits for a fork.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="beamclaw-spawner", daemon=True)
                self._thread.start()

    async def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen(argv, **kwargs)``, run in the spawner thread."""
        self._ensure_thread()
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        box: list[outcome.Outcome[subprocess.Popen[bytes]]] = []

        def deliver(result: outcome.Outcome[subprocess.Popen[bytes]]) -> None:
            box.append(result)
            done.set()

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(list(argv), **kwargs)

        def job() -> None:
            result = outcome.capture(spawn)
            try:
                token.run_sync_soon(deliver, result)
            except trio.RunFinishedError:  # nobody is left to own the child
                if isinstance(result, outcome.Value):
                    _kill(result.value.pid)
                    result.value.wait()

        self._jobs.put(job)
        # A fork takes milliseconds; a cancelled caller still gets the child, to kill it.
        with trio.CancelScope(shield=True):
            await done.wait()
        return box[0].unwrap()


_SPAWNER: Final = _Spawner()


def _kill(pid: int) -> None:
    """SIGKILL the process group led by *pid*, and *pid* itself (if it left its group).

    Called only while *pid* is not yet reaped, so neither number can have been reused.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


async def _wait_exited(popen: subprocess.Popen[bytes]) -> None:
    """Until *popen* has exited (it is left unreaped, a zombie, so its pid stays its own)."""
    try:
        pidfd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # no pidfd (Linux before 5.3): poll
        while True:
            with contextlib.suppress(ChildProcessError):
                if os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return
            await trio.sleep(0.01)
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        trio.lowlevel.notify_closing(pidfd)
        os.close(pidfd)


class _Capture:
    """The first bytes of a stream and its last `_TAIL` bytes, at most *limit* in all."""

    def __init__(self, limit: int) -> None:
        self._tail_size = min(_TAIL, limit // 4)
        self._head_size = limit - self._tail_size
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    def feed(self, data: bytes) -> None:
        self._total += len(data)
        room = self._head_size - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data and self._tail_size:
            self._tail += data
            del self._tail[: -self._tail_size]

    def value(self) -> tuple[bytes, bool]:
        """The kept bytes, with one line in their middle saying how many were left out."""
        left_out = self._total - len(self._head) - len(self._tail)
        if left_out <= 0:
            return bytes(self._head + self._tail), False
        return bytes(self._head) + f"\n[... {left_out} bytes left out ...]\n".encode() + bytes(self._tail), True


async def _drain(stream: trio.lowlevel.FdStream, capture: _Capture) -> None:
    while chunk := await stream.receive_some(65536):
        capture.feed(chunk)


async def run_captured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str,
    timeout: float,
    output_limit: int,
    pass_fds: Sequence[int] = (),
) -> JailResult:
    """Run *argv* in a new session (its own process group), stdin from /dev/null, with
    exactly *env*; keep at most *output_limit* bytes of stdout and of stderr.

    When the command exits, what it left running in its group is killed; after *timeout*
    seconds, or if the caller is cancelled, the command and its group are killed. The
    child is always reaped before this returns or raises.

    Raises:
        ValueError: *output_limit* or *timeout* is not positive.
        OSError: the program could not be started (not found, not executable).
    """
    if output_limit <= 0:
        raise ValueError(f"output_limit must be more than 0, got {output_limit!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be more than 0, got {timeout!r}")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    streams = (trio.lowlevel.FdStream(out_r), trio.lowlevel.FdStream(err_r))
    try:
        popen = await _SPAWNER.popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
        )
    except BaseException:
        with trio.CancelScope(shield=True):
            for stream in streams:
                await stream.aclose()
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    out, err = _Capture(output_limit), _Capture(output_limit)
    try:
        with trio.move_on_after(timeout) as deadline:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_drain, streams[0], out)
                nursery.start_soon(_drain, streams[1], err)
                await _wait_exited(popen)
                _kill(popen.pid)
                popen.wait()  # a zombie by now: this reaps it at once
                nursery.cancel_scope.deadline = trio.current_time() + _DRAIN_GRACE
    finally:
        if popen.returncode is None:
            _kill(popen.pid)
            with trio.CancelScope(shield=True):
                await _wait_exited(popen)
            popen.wait()
        with trio.CancelScope(shield=True):
            for stream in streams:
                await stream.aclose()
    stdout, out_cut = out.value()
    stderr, err_cut = err.value()
    if deadline.cancelled_caught:
        return JailResult(None, stdout, stderr, timed_out=True, truncated=out_cut or err_cut)
    return JailResult(popen.returncode, stdout, stderr, truncated=out_cut or err_cut)


#: What an unjailed command may see of the daemon's environment (nothing secret).
_SAFE_ENV: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME", "SHELL")


@final
@attrs.frozen
class Unjailed:
    """``isolation = "none"``: the command runs as the daemon's user, directly.

    It gets a minimal environment (never the daemon's secrets) and its own process
    group, killed when the command ends or times out, but it sees every file, process
    and socket the daemon's user can: only the deny list stands in its way. Use it on
    purpose, where the whole machine is already a sandbox.
    """

    @property
    def backend(self) -> str:
        return "none"

    async def check(self) -> str | None:
        return None

    async def run(
        self,
        argv: Sequence[str],
        *,
        workspace: Path,
        cwd: Path | None = None,
        timeout: float,
        output_limit: int,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
    ) -> JailResult:
        extra = env
        env = {k: v for k, v in os.environ.items() if k in _SAFE_ENV}
        env.setdefault("PATH", SYSTEM_PATH)
        env["HOME"] = str(workspace)
        env.update(extra or {})
        return await run_captured(
            argv, env=env, cwd=check_cwd(workspace, cwd), timeout=timeout, output_limit=output_limit
        )
