"""GenServer: calls, casts, deferred replies, and calls that fail at once."""

from __future__ import annotations

import contextlib

import pytest
import trio

import supervision as sv

from .conftest import Boom, Control, Worker, settle, watching


class Counter(sv.GenServer):
    def init(self, start: int = 0) -> int:
        return start

    def handle_call(self, request, caller, count):
        match request:
            case "get":
                return sv.Reply(count, count)
            case ("add", n):
                return sv.Reply(count + n, count + n)
            case "later":
                self.pending = caller
                return sv.NoReply(count)
            case "answer_later":
                sv.reply(self.pending, "deferred")
                return sv.Reply("ok", count)
            case "fail_later":
                sv.reply_error(self.pending, LookupError("no such thing"))
                return sv.Reply("ok", count)
            case "bad":
                return "not a Reply"
        raise AssertionError(request)

    def handle_cast(self, message, count):
        return sv.NoReply(count + message)

    def handle_info(self, message, count):
        return sv.NoReply(count * message)


@pytest.mark.otp("gen_server_SUITE:call", "gen_server_SUITE:cast", "gen_server_SUITE:info")
async def test_call_cast_and_info(nursery) -> None:
    pid = await nursery.start(Counter.start, 1)
    assert await sv.call(pid, ("add", 2)) == 3
    sv.cast(pid, 10)
    sv.send(pid, 2)  # a plain message goes to handle_info
    assert await sv.call(pid, "get") == 26
    await sv.stop(pid)


async def test_deferred_reply_with_noreply(nursery) -> None:
    pid = await nursery.start(Counter.start)
    async with trio.open_nursery() as inner:
        results = []

        async def wait_answer() -> None:
            results.append(await sv.call(pid, "later"))

        inner.start_soon(wait_answer)
        await settle()
        assert await sv.call(pid, "answer_later") == "ok"
    assert results == ["deferred"]

    async with trio.open_nursery() as inner:
        failures = []

        async def wait_failure() -> None:
            try:
                await sv.call(pid, "later")
            except LookupError as exc:
                failures.append(str(exc))

        inner.start_soon(wait_failure)
        await settle()
        await sv.call(pid, "fail_later")
    assert failures == ["no such thing"]
    assert await sv.call(pid, "get") == 0  # the server itself is fine
    await sv.stop(pid)


@pytest.mark.otp("gen_server_SUITE:start")
async def test_call_to_a_dead_pid_or_unknown_name_raises_noproc_at_once(nursery) -> None:
    pid = await nursery.start(Counter.start)
    await sv.stop(pid)
    with pytest.raises(sv.NoProc):
        await sv.call(pid, "get", timeout=None)
    with pytest.raises(sv.NoProc):
        await sv.call("nobody", "get", timeout=None)
    sv.cast(pid, 1)  # a cast to a dead pid is dropped, as in OTP
    with pytest.raises(sv.NoProc):
        sv.cast("nobody", 1)


async def test_call_to_a_server_that_dies_meanwhile_raises_process_exited_at_once(autojump_clock) -> None:
    async with sv.open_supervisor(sv.Supervisor([sv.ChildSpec("w", Worker.start, name="w")], intensity=5)):
        started = trio.current_time()
        with pytest.raises(sv.ProcessExited) as raised:
            await sv.call("w", "crash", timeout=None)
        assert isinstance(raised.value.reason, Boom)

        # a server busy in a long handler is killed while a caller waits
        await settle()
        pid = sv.whereis("w")
        failures = []

        async def waiting_call() -> None:
            try:
                await sv.call(pid, ("sleep", 1000), timeout=None)
            except sv.ProcessExited as exc:
                failures.append(exc.reason)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting_call)
            await settle()
            sv.kill(pid, Boom("gone"))
        assert len(failures) == 1 and isinstance(failures[0], Boom)
        assert trio.current_time() - started < 1  # never waited for a timeout


@pytest.mark.otp("gen_server_SUITE:call")
async def test_call_timeout_uses_trio_clock_and_a_late_reply_is_dropped(nursery, autojump_clock) -> None:
    pid = await nursery.start(Worker.start, Control())
    with pytest.raises(sv.CallTimeout) as raised:
        await sv.call(pid, ("sleep", 10), timeout=5)
    assert raised.value.timeout == 5
    await trio.sleep(10)  # the late reply comes and is dropped
    assert await sv.call(pid, "ping") == "pong"
    await sv.stop(pid)


@pytest.mark.otp("gen_server_SUITE:crash")
async def test_stop_with_reply_runs_terminate_and_exits_with_the_reason(nursery) -> None:
    control = Control()
    pid = await nursery.start(Worker.start, control, "w")
    with watching(pid) as downs:
        assert await sv.call(pid, "stop") == "bye"
        assert await downs.reason(pid) == sv.NORMAL
    assert control.log[-1] == ("terminate", "w", sv.NORMAL)


@pytest.mark.otp("gen_server_SUITE:crash")
async def test_crash_in_a_handler_runs_terminate_with_the_exception(harness) -> None:
    control = Control()
    sup = await harness.start(sv.Supervisor([sv.ChildSpec("w", Worker.start, args=(control, "w"))], intensity=0))
    sv.cast(sv.which_children(sup)[0].pid, "crash")
    await settle()
    [(_, _, reason)] = [e for e in control.log if e[0] == "terminate"]
    assert isinstance(reason, Boom)


@pytest.mark.otp("gen_server_SUITE:call")
async def test_a_bad_handler_return_crashes_with_a_clear_error(nursery) -> None:
    async with trio.open_nursery() as inner:
        pid = await inner.start(_swallowing_start, Counter)
        with watching(pid) as downs:
            with pytest.raises(sv.ProcessExited):
                await sv.call(pid, "bad")
            reason = await downs.reason(pid)
    assert isinstance(reason, TypeError)
    assert "handle_call returned 'not a Reply'" in str(reason)


async def _swallowing_start(server, *, task_status) -> None:
    with contextlib.suppress(Exception):
        await server.start(task_status=task_status)


async def test_calling_yourself_is_refused() -> None:
    class Selfish(sv.GenServer):
        async def handle_call(self, request, caller, state):
            return sv.Reply(await sv.call(sv.self(), "again"), state)

    async with sv.open_supervisor(sv.Supervisor([sv.ChildSpec("s", Selfish.start, name="s")], intensity=5)):
        with pytest.raises(sv.ProcessExited) as raised:
            await sv.call("s", "go")
        assert isinstance(raised.value.reason, RuntimeError)


@pytest.mark.otp("gen_server_SUITE:start")
async def test_init_may_ignore_and_a_failing_init_fails_the_start(nursery) -> None:
    assert await nursery.start(Worker.start, Control(start="ignore")) is sv.IGNORE
    with pytest.raises(Boom):
        await nursery.start(Worker.start, Control(start="error"))


async def test_mailbox_overflow_policies(nursery) -> None:
    class Sink(sv.GenServer):
        mailbox_capacity = 2
        mailbox_overflow = sv.Overflow.DROP

        async def handle_call(self, request, caller, state):
            return sv.Reply(len(state), state)

        async def handle_info(self, message, state):
            await trio.sleep(0)
            return sv.NoReply([*state, message])

    sink = await nursery.start(Sink.start, [])
    for n in range(5):
        sv.send(sink, n)  # never blocks, never raises: the newest are dropped
    with pytest.raises(sv.MailboxFull):
        await sv.call(sink, "count")  # a call is refused, not silently dropped
    await settle()
    assert await sv.call(sink, "count") == 2

    class Strict(Sink):
        mailbox_overflow = sv.Overflow.RAISE

    strict = await nursery.start(Strict.start, [])
    sv.send(strict, 1)
    sv.send(strict, 2)
    with pytest.raises(sv.MailboxFull):
        sv.send(strict, 3)

    class Waiting(Sink):
        mailbox_overflow = sv.Overflow.WAIT

    waiting = await nursery.start(Waiting.start, [])
    for n in range(5):
        await sv.send_wait(waiting, n)  # waits for room instead of dropping
    assert await sv.call(waiting, "count") == 5
    for pid in (sink, strict, waiting):
        await sv.stop(pid)


def _slow_restart_tree(name) -> sv.Supervisor:
    """A server under *name* whose restart takes 1 s (a backoff without jitter)."""
    backoff = sv.Backoff(initial=1, maximum=1, jitter=0)
    return sv.Supervisor([sv.ChildSpec("w", Worker.start, args=(Control(),), name=name, backoff=backoff)], intensity=9)


@pytest.mark.parametrize("via", [False, True])
async def test_a_call_with_restart_wait_rides_through_a_restart(autojump_clock, via) -> None:
    sessions = sv.Registry()
    name = sessions.via("w") if via else "w"
    async with sv.open_supervisor(_slow_restart_tree(name)):
        sv.kill(_pid(name), Boom("crash"))
        await settle()
        with pytest.raises(sv.NoProc):
            await sv.call(name, "ping")  # OTP's default: no process under the name, fail at once
        started = trio.current_time()
        with pytest.raises(sv.NoProc):
            await sv.call(name, "ping", restart_wait=0.5)  # bounded
        assert trio.current_time() - started == pytest.approx(0.5)
        assert await sv.call(name, "ping", restart_wait=2) == "pong"
        assert trio.current_time() - started == pytest.approx(1)  # woken when the replacement registered


def _pid(name) -> sv.Pid:
    pid = sv.whereis(name) if isinstance(name, str) else name.whereis()
    assert pid is not None
    return pid


async def test_restart_wait_never_replays_a_request_that_was_delivered(autojump_clock) -> None:
    async with sv.open_supervisor(_slow_restart_tree("w")):
        first = sv.whereis("w")
        started = trio.current_time()
        with pytest.raises(sv.ProcessExited) as raised:
            await sv.call("w", "crash", restart_wait=5)  # delivered, then the server died: maybe handled
        assert raised.value.pid == first and trio.current_time() == started  # at once, not after the restart
        await trio.sleep(2)
        assert sv.whereis("w") not in (None, first)
        assert await sv.call("w", "ping") == "pong"  # the replacement never saw "crash"


async def test_restart_wait_is_woken_by_registration_not_by_polling(nursery, mock_clock) -> None:
    results = []

    async def caller() -> None:
        results.append(await sv.call("late", "ping", timeout=10, restart_wait=5))

    nursery.start_soon(caller)
    await settle()
    # the only timer pending is the waiter's own bound: nothing wakes it to poll
    assert trio.lowlevel.current_statistics().seconds_to_next_deadline == pytest.approx(5)
    mock_clock.jump(3)
    pid = await nursery.start(Worker.start, Control())
    sv.register("late", pid)
    await settle()
    assert results == ["pong"]
    assert not sv_node().name_waiters  # nothing left behind
    await sv.stop(pid)


async def test_restart_wait_counts_toward_the_call_timeout(nursery, autojump_clock) -> None:
    started = trio.current_time()
    with pytest.raises(sv.NoProc):  # NoProc: the request was never sent
        await sv.call("nobody", "ping", timeout=1, restart_wait=5)
    assert trio.current_time() - started == pytest.approx(1)

    async def register_later() -> None:
        await trio.sleep(1.5)
        sv.register("slow", await nursery.start(Worker.start, Control()))

    nursery.start_soon(register_later)
    started = trio.current_time()
    with pytest.raises(sv.CallTimeout) as raised:
        await sv.call("slow", ("sleep", 10), timeout=2, restart_wait=5)
    assert trio.current_time() - started == pytest.approx(2)
    assert raised.value.timeout == 2
    await sv.stop("slow")
    assert not sv_node().name_waiters


async def test_wait_for_name(nursery, autojump_clock) -> None:
    sessions = sv.Registry()
    with pytest.raises(sv.NoProc):
        await sv.wait_for_name("x", timeout=1)
    with pytest.raises(TypeError, match="registered name or a via name"):
        await sv.wait_for_name(sv.Pid(1))

    async def later() -> None:
        await trio.sleep(1)
        sessions.register("s1", pid=await nursery.start(Worker.start, Control()))

    nursery.start_soon(later)
    pid = await sv.wait_for_name(sessions.via("s1"))
    assert sessions.whereis("s1") == pid
    assert await sv.wait_for_name(sessions.via("s1"), timeout=0) == pid  # held already
    await sv.stop(pid)


def sv_node():
    from supervision._process import node

    return node()
