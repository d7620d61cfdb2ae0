"""The control API: child_adm, count/which_children, dynamic children (OTP's cases)."""

from __future__ import annotations

import pytest
import trio

import supervision as sv

from .conftest import Boom, Control, Worker, child_pid, counts, crash, settle, watching, worker


@pytest.mark.otp("supervisor_SUITE:child_adm")
async def test_child_adm(harness) -> None:
    """OTP's child_adm: every refusal has its own error."""
    sup = await harness.start(sv.Supervisor([worker("child1")]))
    pid1 = child_pid(sup, "child1")
    with pytest.raises(sv.AlreadyStarted) as started:
        await sv.start_child(sup, worker("child1"))
    assert started.value.pid == pid1
    with pytest.raises(sv.ChildRunning):
        await sv.delete_child(sup, "child1")
    with pytest.raises(sv.ChildRunning):
        await sv.restart_child(sup, "child1")
    with pytest.raises(sv.ChildNotFound):
        await sv.terminate_child(sup, "nonexistent")

    await sv.terminate_child(sup, "child1")
    assert counts(sup) == [1, 0, 0, 1]
    with pytest.raises(sv.AlreadyPresent):
        await sv.start_child(sup, worker("child1"))
    new = await sv.restart_child(sup, "child1")
    assert new not in (None, pid1) and sv.is_alive(new)
    await sv.terminate_child(sup, new)  # by pid, too
    await sv.delete_child(sup, "child1")
    assert counts(sup) == [0, 0, 0, 0]
    with pytest.raises(sv.ChildNotFound):
        await sv.restart_child(sup, "child1")
    with pytest.raises(sv.ChildNotFound):
        await sv.delete_child(sup, "child1")


async def test_restart_child_and_delete_child_refuse_a_restarting_child(harness, mock_clock) -> None:
    sup = await harness.start(sv.Supervisor([worker("c", backoff=sv.Backoff(initial=10, maximum=10))], intensity=5))
    await crash(child_pid(sup, "c"))
    with pytest.raises(sv.ChildRestarting):
        await sv.restart_child(sup, "c")
    with pytest.raises(sv.ChildRestarting):
        await sv.delete_child(sup, "c")
    await sv.terminate_child(sup, "c")  # cancels the pending restart
    mock_clock.jump(20)
    await settle()
    assert [(i.pid, i.state) for i in sv.which_children(sup)] == [(None, sv.ChildState.STOPPED)]


@pytest.mark.otp("supervisor_SUITE:count_children", "supervisor_SUITE:count_children_supervisor")
async def test_count_children_counts_supervisors_and_workers(harness) -> None:
    """OTP's count_children."""
    inner = sv.Supervisor([worker("w")])
    sup = await harness.start(sv.Supervisor([worker("a"), inner.child_spec("s"), worker("b")]))
    assert counts(sup) == [3, 3, 1, 2]
    assert [(i.id, i.type) for i in sv.which_children(sup)] == [
        ("a", sv.WORKER),
        ("s", sv.SUPERVISOR),
        ("b", sv.WORKER),
    ]
    await sv.terminate_child(sup, "a")
    assert counts(sup) == [3, 2, 1, 2]


async def test_which_children_of_something_else_is_an_error(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("a")]))
    with pytest.raises(TypeError, match="not a supervisor"):
        sv.which_children(child_pid(sup, "a"))
    with pytest.raises(sv.NoProc):
        sv.which_children("no such name")


@pytest.mark.otp("supervisor_SUITE:simple_one_for_one", "supervisor_SUITE:simple_one_for_one_extra")
async def test_dynamic_children_get_extra_args_and_restart(harness) -> None:
    """OTP's simple_one_for_one and simple_one_for_one_extra."""
    log: list = []
    sup = await harness.start(sv.DynamicSupervisor(worker("child", Control(log=log)), intensity=2))
    # the template's args are (control, "child"): extra args are appended.
    pid1 = await sv.start_child(sup, ())
    pid2 = await sv.start_child(sup, [])
    assert counts(sup) == [2, 2, 0, 2]
    await crash(pid1)
    pids = [i.pid for i in sv.which_children(sup)]
    assert pid2 in pids and pid1 not in pids and len(pids) == 2
    with watching(sup) as downs:
        await crash(pid2)
        await crash(next(p for p in (i.pid for i in sv.which_children(sup)) if p is not None))
        assert isinstance(await downs.reason(sup), sv.MaxIntensity)


async def test_dynamic_template_args_then_extra_args() -> None:
    seen: list = []

    async def child(*args, task_status) -> None:
        seen.append(args)
        task_status.started()
        await trio.sleep_forever()

    async with sv.open_supervisor(sv.DynamicSupervisor(sv.ChildSpec("c", child, args=("base",)))) as sup:
        await sv.start_child(sup, ("x", 1))
        await sv.start_child(sup, "y")
    assert seen == [("base", "x", 1), ("base", "y")]


async def test_dynamic_without_template_takes_full_specs_and_max_children(harness) -> None:
    sup = await harness.start(sv.DynamicSupervisor(max_children=2))
    a = await sv.start_child(sup, worker("a"))
    await sv.start_child(sup, worker("b"))
    with pytest.raises(sv.MaxChildren):
        await sv.start_child(sup, worker("c"))
    with pytest.raises(TypeError, match="needs a ChildSpec"):
        await sv.start_child(sup, ("args",))
    await sv.terminate_child(sup, a)
    assert counts(sup) == [1, 1, 0, 1]  # a terminated dynamic child is dropped
    await sv.start_child(sup, worker("c"))
    with pytest.raises(sv.NotSupported):
        await sv.restart_child(sup, "a")
    with pytest.raises(sv.NotSupported):
        await sv.delete_child(sup, "a")
    with pytest.raises(TypeError, match="by pid"):
        await sv.terminate_child(sup, "a")


@pytest.mark.otp("supervisor_SUITE:simple_one_for_one_shutdown", "supervisor_SUITE:sup_stop_timeout_dynamic")
async def test_dynamic_supervisor_stops_children_all_at_once(harness, autojump_clock) -> None:
    """OTP's simple_one_for_one_shutdown: the slowest child bounds the stop, not the sum."""

    class Slow(sv.GenServer):
        async def terminate(self, reason, seconds) -> None:
            await trio.sleep(seconds)

    sup = await harness.start(sv.DynamicSupervisor(sv.ChildSpec("c", Slow.start, shutdown=2)))
    for seconds in (1, 1, 5):
        await sv.start_child(sup, seconds)
    started = trio.current_time()
    await sv.stop(sup)
    elapsed = trio.current_time() - started
    assert 2 <= elapsed < 3  # two finish in 1 s, the third is killed at 2 s


@pytest.mark.otp("supervisor_SUITE:simple_one_for_one_scale_many_temporary_children")
async def test_dynamic_scale_many_temporary_children(harness) -> None:
    """OTP's simple_one_for_one_scale_many_temporary_children."""
    sup = await harness.start(sv.DynamicSupervisor(worker("c", restart=sv.TEMPORARY)))
    pids = [await sv.start_child(sup, ()) for _ in range(2000)]
    assert counts(sup) == [2000, 2000, 0, 2000]
    for pid in pids[:1000]:
        await sv.call(pid, "stop")
    await settle()
    assert counts(sup) == [1000, 1000, 0, 1000]
    await sv.stop(sup)
    assert not any(sv.is_alive(p) for p in pids)


@pytest.mark.otp("supervisor_SUITE:sup_start_child_returns_error_simple")
async def test_dynamic_start_failure_raises_start_error_and_keeps_nothing(harness) -> None:
    sup = await harness.start(sv.DynamicSupervisor(worker("c", Control(start="error"))))
    with pytest.raises(sv.StartError):
        await sv.start_child(sup, ())
    assert counts(sup) == [0, 0, 0, 0]
    assert sv.is_alive(sup)


@pytest.mark.otp("supervisor_SUITE:child_adm_simple")
async def test_dynamic_terminate_child_of_a_dead_pid_is_ok_of_a_stranger_not_found(harness, nursery) -> None:
    """OTP's child_adm_simple: terminating a pid that has exited returns ok; a live pid
    that is not a child is not_found (and is left alone)."""
    sup = await harness.start(sv.DynamicSupervisor(worker("child"), intensity=2))
    pid1 = await sv.start_child(sup, ())
    pid2 = await sv.start_child(sup, ())
    await sv.terminate_child(sup, pid1)
    assert not sv.is_alive(pid1) and counts(sup) == [1, 1, 0, 1]
    assert await sv.terminate_child(sup, pid1) is None  # gone already: ok
    assert [i.pid for i in sv.which_children(sup)] == [pid2]
    stranger = await nursery.start(Worker.start, Control())
    with pytest.raises(sv.ChildNotFound):
        await sv.terminate_child(sup, stranger)
    assert sv.is_alive(stranger)
    await sv.stop(stranger)


@pytest.mark.otp("supervisor_SUITE:hanging_restart_loop_simple", "supervisor_SUITE:count_restarting_children")
async def test_dynamic_child_in_a_failing_restart_loop_is_terminated_by_its_old_pid(harness) -> None:
    """OTP's hanging_restart_loop_simple: the loop ends and the child is removed."""
    flaky = Control()
    sup = await harness.start(sv.DynamicSupervisor(worker("child", flaky), intensity=1000, period=3600))
    pid = await sv.start_child(sup, ())
    flaky.start = "error"
    sv.kill(pid, Boom("crash"))
    for _ in range(100):  # let the restart fail a few times
        if flaky.starts >= 4:
            break
        await trio.sleep(0)
    assert flaky.starts >= 4
    assert [(i.pid, i.state) for i in sv.which_children(sup)] == [(None, sv.ChildState.RESTARTING)]
    assert counts(sup) == [1, 0, 0, 1]
    with pytest.raises(sv.NotSupported):
        await sv.restart_child(sup, "child")
    await sv.terminate_child(sup, pid)  # by the pid of the process that crashed
    assert sv.which_children(sup) == []
    attempts = flaky.starts
    await settle()
    assert flaky.starts == attempts  # the restart loop has ended
    assert sv.is_alive(sup)

    # and a stop during such a loop ends it too
    flaky.start = "ok"
    pid = await sv.start_child(sup, ())
    flaky.start = "error"
    with watching(sup) as downs:
        sv.kill(pid, Boom("crash"))
        await trio.sleep(0)
        await sv.stop(sup)
        assert await downs.reason(sup) == sv.SHUTDOWN


async def test_dynamic_child_whose_restart_is_ignored_is_removed(harness) -> None:
    """As supervisor.erl does (supervisor_SUITE has no case of its own for it): a dynamic
    child whose restart returns ignore is removed."""
    control = Control()
    sup = await harness.start(sv.DynamicSupervisor(worker("child", control), intensity=2))
    pid = await sv.start_child(sup, ())
    control.start = "ignore"
    await crash(pid)
    assert sv.which_children(sup) == []
    assert counts(sup) == [0, 0, 0, 0]
    assert sv.is_alive(sup)
