"""Processes: messages, selective receive, monitors, names, key registry, process groups."""

from __future__ import annotations

import pytest
import trio

import supervision as sv

from .conftest import Boom, settle, watching


async def _echo(*, task_status) -> None:
    """A plain process: answers ("echo", pid, x) with x."""
    task_status.started()
    while True:
        message = await sv.receive()
        if message == "quit":
            return
        if message == "crash":
            raise Boom("echo crashed")
        _, sender, value = message
        sv.send(sender, value)


async def _spawn(nursery, fn, *args, name=None) -> sv.Pid:
    """An unsupervised process, as a one-child supervisor would start it."""
    spec = sv.Supervisor([sv.ChildSpec("p", fn, args=args, restart=sv.TEMPORARY, name=name)])
    sup = await nursery.start(sv.start_supervisor, spec)
    return sv.which_children(sup)[0].pid


async def test_send_receive_and_selective_receive(nursery) -> None:
    echo = await _spawn(nursery, _echo)
    with sv.as_process() as me:
        for value in ("a", "b", "c"):
            sv.send(echo, ("echo", me, value))
        assert await sv.receive(match=lambda m: m == "c") == "c"
        assert await sv.receive() == "a"  # the skipped ones stay, in order
        assert await sv.receive() == "b"
        with pytest.raises(sv.ReceiveTimeout):
            await sv.receive(timeout=0.01)


async def test_receive_outside_a_process_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="outside a process"):
        await sv.receive()
    with pytest.raises(RuntimeError, match="outside a process"):
        sv.self()


async def test_monitor_delivers_down_with_the_reason(nursery) -> None:
    echo = await _spawn(nursery, _echo)
    other = await _spawn(nursery, _echo)
    with watching(echo, other) as downs:
        sv.send(echo, "crash")
        reason = await downs.reason(echo)
        assert isinstance(reason, Boom)
        sv.send(other, "quit")
        assert await downs.reason(other) == sv.NORMAL


async def test_monitor_of_a_dead_process_delivers_noproc_at_once(nursery) -> None:
    echo = await _spawn(nursery, _echo)
    sv.send(echo, "quit")
    await settle()
    with sv.as_process():
        ref = sv.monitor(echo)
        down = await sv.receive(timeout=0)
        assert down == sv.Down(ref, echo, sv.NOPROC)


async def test_demonitor_with_flush_drops_a_queued_down(nursery) -> None:
    echo = await _spawn(nursery, _echo)
    with sv.as_process():
        ref = sv.monitor(echo)
        sv.send(echo, "quit")
        await settle()
        sv.demonitor(ref, flush=True)
        with pytest.raises(sv.ReceiveTimeout):
            await sv.receive(timeout=0)


async def test_names_are_freed_when_the_process_exits(nursery) -> None:
    echo = await _spawn(nursery, _echo, name="echo")
    assert sv.whereis("echo") == echo
    assert "echo" in sv.registered()
    with pytest.raises(sv.AlreadyRegistered):
        sv.register("echo", await _spawn(nursery, _echo))
    with pytest.raises(sv.AlreadyRegistered, match="already registered as 'echo'"):
        sv.register("another", echo)
    sv.send("echo", "quit")
    await settle()
    assert sv.whereis("echo") is None
    with pytest.raises(sv.NoProc):
        sv.send("echo", "anything")


async def test_register_and_send_work_from_any_task(nursery) -> None:
    echo = await _spawn(nursery, _echo)
    sv.register("named", echo)  # this test task is not a process
    sv.unregister("named")
    assert sv.whereis("named") is None
    with pytest.raises(sv.NoProc):
        sv.unregister("named")


@pytest.mark.otp("gen_server_SUITE:stop1")
async def test_stop_returns_once_the_process_has_exited(nursery) -> None:
    echo = await _spawn(nursery, _echo)
    await sv.stop(echo)
    assert not sv.is_alive(echo)
    with pytest.raises(sv.NoProc):
        await sv.stop(echo)


async def test_stop_with_a_timeout_kills_a_process_that_does_not_finish(nursery, autojump_clock) -> None:
    from .conftest import Control, Worker

    control = Control(hang_on_terminate=True)
    pid = await nursery.start(Worker.start, control, "w")
    with watching(pid) as downs:
        started = trio.current_time()
        await sv.stop(pid, timeout=3)
        assert trio.current_time() - started == 3
        assert await downs.reason(pid) == sv.KILLED
    assert control.log[-1] == ("terminate", "w", sv.SHUTDOWN)  # it was asked first


async def test_unique_registry_and_via_names(nursery) -> None:
    sessions = sv.Registry(sv.UNIQUE, name="sessions")
    echo = await _spawn(nursery, _echo, name=sessions.via("s1"))
    assert sessions.whereis("s1") == echo
    with pytest.raises(sv.AlreadyRegistered):
        sessions.register("s1", pid=await _spawn(nursery, _echo))
    with sv.as_process() as me:
        sv.send(sessions.via("s1"), ("echo", me, "via"))
        assert await sv.receive() == "via"
    sv.send(echo, "quit")
    await settle()
    assert sessions.whereis("s1") is None and len(sessions) == 0
    with pytest.raises(sv.NoProc):
        sv.send(sessions.via("s1"), "x")


async def test_duplicate_registry_keeps_values_in_order(nursery) -> None:
    topics = sv.Registry(sv.DUPLICATE)
    a, b = await _spawn(nursery, _echo), await _spawn(nursery, _echo)
    topics.register("news", "first", pid=a)
    topics.register("news", "second", pid=b)
    assert topics.lookup("news") == [(a, "first"), (b, "second")]
    assert topics.keys_of(a) == ["news"]
    topics.unregister("news", pid=a)
    assert topics.lookup("news") == [(b, "second")]
    sv.send(b, "quit")
    await settle()
    assert topics.lookup("news") == []


async def test_process_groups_are_left_on_exit(nursery) -> None:
    a, b = await _spawn(nursery, _echo), await _spawn(nursery, _echo)
    sv.pg.join("backends", a)
    sv.pg.join("backends", b)
    sv.pg.join("other", a)
    assert sv.pg.members("backends") == [a, b]
    assert sv.pg.leave("backends", b) is True
    assert sv.pg.leave("backends", b) is False
    sv.send(a, "quit")
    await settle()
    assert sv.pg.members("backends") == [] and sv.pg.members("other") == []
    assert sv.pg.which_groups() == []


async def test_kill_with_a_reason_is_a_crash_for_the_supervisor(nursery) -> None:
    sup = await nursery.start(
        sv.start_supervisor, sv.Supervisor([sv.ChildSpec("e", _echo, restart=sv.TRANSIENT)], intensity=3)
    )
    first = sv.which_children(sup)[0].pid
    sv.kill(first, Boom("operator"))
    await settle()
    assert sv.which_children(sup)[0].pid not in (None, first)  # transient, crashed: restarted
    await sv.stop(sup)


def test_each_trio_run_has_its_own_process_table() -> None:
    async def main() -> sv.Pid:
        with sv.as_process() as pid:
            return pid

    first = trio.run(main)
    assert trio.run(main) == first  # fresh counters, nothing left over


async def test_a_plain_process_sets_its_own_mailbox_policy(nursery) -> None:
    async def sink(*, task_status) -> None:
        sv.set_mailbox(capacity=1, overflow=sv.Overflow.DROP)
        task_status.started()
        await trio.sleep_forever()

    sup = await nursery.start(sv.start_supervisor, sv.Supervisor([sv.ChildSpec("sink", sink)]))
    pid = sv.which_children(sup)[0].pid
    sv.send(pid, 1)
    sv.send(pid, 2)  # dropped, as the process chose
    [child] = sv.inspect_tree(sup)["children"]
    assert child["mailbox"] == 1
    with pytest.raises(RuntimeError, match="outside a process"):
        sv.set_mailbox(capacity=1)
    await sv.stop(sup)

    async def bad(*, task_status) -> None:
        sv.set_mailbox(capacity=0)

    with pytest.raises(sv.StartError) as raised:
        async with sv.open_supervisor(sv.Supervisor([sv.ChildSpec("bad", bad)])):
            pass
    assert "mailbox capacity must be at least 1, got 0" in str(raised.value.__cause__)
