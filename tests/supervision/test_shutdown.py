"""Shutdown: brutal kill, grace period, infinity; reverse order; significant children."""

from __future__ import annotations

import pytest
import trio

import supervision as sv

from .conftest import Control, child_pid, crash, settle, watching, worker


@pytest.mark.otp("supervisor_SUITE:sup_stop_timeout")
async def test_shutdown_timeout_lets_terminate_run_and_kills_a_hanging_child(harness, autojump_clock) -> None:
    """OTP's sup_stop_timeout: the clean child exits `shutdown`, the stuck one is `killed`."""
    clean, stuck = Control(), Control(hang_on_terminate=True)
    sup = await harness.start(sv.Supervisor([worker("child1", clean, shutdown=1), worker("child2", stuck, shutdown=1)]))
    pid1, pid2 = child_pid(sup, "child1"), child_pid(sup, "child2")
    with watching(pid1, pid2) as downs:
        started = trio.current_time()
        await sv.stop(sup)
        assert trio.current_time() - started >= 1  # child2 got its whole grace period
        assert await downs.reason(pid1) == sv.SHUTDOWN
        assert await downs.reason(pid2) == sv.KILLED
    assert ("terminate", "child1", sv.SHUTDOWN) in clean.log
    assert ("terminate", "child2", sv.SHUTDOWN) in stuck.log  # it started, but never finished


@pytest.mark.otp("supervisor_SUITE:sup_stop_brutal_kill")
async def test_shutdown_brutal_kill_skips_terminate(harness) -> None:
    """OTP's sup_stop_brutal_kill."""
    gentle, brutal = Control(), Control()
    sup = await harness.start(
        sv.Supervisor([worker("child1", gentle, shutdown=1), worker("child2", brutal, shutdown=0)])
    )
    pid1, pid2 = child_pid(sup, "child1"), child_pid(sup, "child2")
    with watching(pid1, pid2) as downs:
        await sv.stop(sup)
        assert await downs.reason(pid1) == sv.SHUTDOWN
        assert await downs.reason(pid2) == sv.KILLED
    assert not any(entry[0] == "terminate" for entry in brutal.log)


@pytest.mark.otp("supervisor_SUITE:sup_stop_infinity")
async def test_shutdown_infinity_waits_for_a_slow_terminate(harness, autojump_clock) -> None:
    """OTP's sup_stop_infinity: no timeout, for a supervisor child and for a worker."""

    class Slow(sv.GenServer):
        async def terminate(self, reason, state) -> None:
            await trio.sleep(1000)

    inner = sv.Supervisor([sv.ChildSpec("slow_inner", Slow.start, shutdown=None)])
    sup = await harness.start(
        sv.Supervisor([inner.child_spec("child1"), sv.ChildSpec("child2", Slow.start, shutdown=None)])
    )
    pid1, pid2 = child_pid(sup, "child1"), child_pid(sup, "child2")
    with watching(pid1, pid2) as downs:
        started = trio.current_time()
        await sv.stop(sup)
        assert trio.current_time() - started >= 2000
        assert await downs.reason(pid1) == sv.SHUTDOWN
        assert await downs.reason(pid2) == sv.SHUTDOWN


async def test_children_stop_in_reverse_start_order_through_nested_supervisors(harness) -> None:
    log: list = []
    inner = sv.Supervisor([worker("b1", Control(log=log)), worker("b2", Control(log=log))])
    sup = await harness.start(
        sv.Supervisor([worker("a", Control(log=log)), inner.child_spec("b"), worker("c", Control(log=log))])
    )
    log.clear()
    await sv.stop(sup)
    assert [entry[1] for entry in log] == ["c", "b2", "b1", "a"]
    assert harness.exits[sup] == sv.SHUTDOWN


async def test_plain_function_child_is_cancelled_on_shutdown(harness) -> None:
    cleaned: list[str] = []

    async def loop(*, task_status) -> None:
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            cleaned.append("finally ran")

    sup = await harness.start(sv.Supervisor([sv.ChildSpec("loop", loop)]))
    pid = child_pid(sup, "loop")
    with watching(pid) as downs:
        await sv.stop(sup)
        assert await downs.reason(pid) == sv.SHUTDOWN
    assert cleaned == ["finally ran"]


@pytest.mark.otp("supervisor_SUITE:significant_transient")
async def test_auto_shutdown_any_significant(harness) -> None:
    sup = await harness.start(
        sv.Supervisor(
            [worker("main", restart=sv.TRANSIENT, significant=True), worker("helper")],
            auto_shutdown=sv.ANY_SIGNIFICANT,
        )
    )
    helper = child_pid(sup, "helper")
    with watching(sup, helper) as downs:
        await sv.call(child_pid(sup, "main"), "stop")
        assert await downs.reason(sup) == sv.SHUTDOWN
        assert await downs.reason(helper) == sv.SHUTDOWN
    assert harness.exits[sup] == sv.SHUTDOWN


async def test_auto_shutdown_all_significant_waits_for_the_last_one(harness) -> None:
    sup = await harness.start(
        sv.Supervisor(
            [
                worker("s1", restart=sv.TEMPORARY, significant=True),
                worker("s2", restart=sv.TRANSIENT, significant=True),
                worker("other"),
            ],
            auto_shutdown=sv.ALL_SIGNIFICANT,
        )
    )
    await sv.call(child_pid(sup, "s1"), "stop")
    await settle()
    assert sv.is_alive(sup)
    with watching(sup) as downs:
        await sv.call(child_pid(sup, "s2"), "stop")
        assert await downs.reason(sup) == sv.SHUTDOWN


@pytest.mark.otp("supervisor_SUITE:significant_transient")
async def test_a_crashing_significant_transient_child_is_restarted_not_shut_down(harness) -> None:
    sup = await harness.start(
        sv.Supervisor([worker("main", restart=sv.TRANSIENT, significant=True)], auto_shutdown=sv.ANY_SIGNIFICANT)
    )
    first = child_pid(sup, "main")
    sv.kill(first, RuntimeError("crash"))
    await settle()
    assert sv.is_alive(sup)
    assert child_pid(sup, "main") not in (None, first)


async def test_terminating_a_significant_child_by_hand_does_not_shut_down(harness) -> None:
    sup = await harness.start(
        sv.Supervisor([worker("main", restart=sv.TRANSIENT, significant=True)], auto_shutdown=sv.ANY_SIGNIFICANT)
    )
    await sv.terminate_child(sup, "main")
    await settle()
    assert sv.is_alive(sup)


class HangingStart(sv.GenServer):
    """A server whose init never finishes while its control says "hang"."""

    async def init(self, control: Control) -> Control:
        control.starts += 1
        if control.start == "hang":
            await trio.sleep_forever()
        return control


def hanging(id: str, control: Control, **kwargs) -> sv.ChildSpec:  # noqa: A002
    return sv.ChildSpec(id, HangingStart.start, args=(control,), shutdown=3, **kwargs)


async def _stop_bounded(dest) -> float:
    """Stop *dest*; fail (instead of hanging the test) if that takes too long."""
    started = trio.current_time()
    with trio.fail_after(1000):
        await sv.stop(dest)
    return trio.current_time() - started


async def test_stopping_a_supervisor_whose_initial_start_hangs(nursery, autojump_clock) -> None:
    first = Control()
    tree = sv.Supervisor([worker("a", first), hanging("stuck", Control(start="hang")), worker("c")], name="top")
    failures: list[BaseException] = []

    async def start() -> None:
        try:
            await sv.start_supervisor(tree)
        except RuntimeError as exc:
            failures.append(exc)

    nursery.start_soon(start)
    await settle()
    assert await _stop_bounded("top") == pytest.approx(3)  # the stuck child's shutdown time
    await settle()
    assert [str(exc) for exc in failures] == ["supervisor exited with reason shutdown before it started"]
    assert first.log[-1] == ("terminate", "a", sv.SHUTDOWN)  # the started child was stopped
    assert sv.whereis("top") is None


async def test_stopping_a_supervisor_while_start_child_hangs(harness, nursery, autojump_clock) -> None:
    sup = await harness.start(sv.Supervisor([worker("a")]))
    refused: list[sv.StartError] = []

    async def add() -> None:
        with pytest.raises(sv.StartError) as raised:
            await sv.start_child(sup, hanging("stuck", Control(start="hang")))
        refused.append(raised.value)

    nursery.start_soon(add)
    await settle()
    assert await _stop_bounded(sup) == pytest.approx(3)
    await settle()
    assert harness.exits[sup] == sv.SHUTDOWN
    assert [e.reason for e in refused] == [sv.KILLED]  # it ignored the shutdown request, then was killed


async def test_stopping_a_supervisor_while_a_restart_hangs(harness, autojump_clock) -> None:
    flaky = Control()
    sup = await harness.start(sv.Supervisor([worker("a"), hanging("b", flaky)], intensity=5))
    flaky.start = "hang"
    await crash(child_pid(sup, "b"))
    assert flaky.starts == 2
    assert await _stop_bounded(sup) == pytest.approx(3)
    assert harness.exits[sup] == sv.SHUTDOWN


async def test_stopping_a_tree_while_a_nested_supervisor_starts_a_hanging_child(
    harness, nursery, autojump_clock
) -> None:
    """The stop goes down through a supervisor whose own start is the one hanging."""
    sup = await harness.start(sv.Supervisor([worker("a")]))
    nested = sv.Supervisor([worker("x"), hanging("stuck", Control(start="hang"))])

    async def add() -> None:
        with pytest.raises(sv.StartError):
            await sv.start_child(sup, nested.child_spec("nested"))  # shutdown None: waits for the nested one

    nursery.start_soon(add)
    await settle()
    assert await _stop_bounded(sup) == pytest.approx(3)
    assert harness.exits[sup] == sv.SHUTDOWN


async def test_a_plain_function_whose_start_hangs_is_cancelled_at_once(harness, nursery, autojump_clock) -> None:
    async def stuck(*, task_status) -> None:
        await trio.sleep_forever()

    sup = await harness.start(sv.Supervisor([]))
    nursery.start_soon(_start_child_expecting_error, sup, sv.ChildSpec("stuck", stuck, shutdown=3))
    await settle()
    assert await _stop_bounded(sup) == 0


async def _start_child_expecting_error(sup: sv.Pid, spec: sv.ChildSpec) -> None:
    with pytest.raises(sv.StartError):
        await sv.start_child(sup, spec)


async def _shielded(seconds: float, *, task_status) -> None:
    """A child whose clean-up shields itself from cancellation for *seconds*."""
    task_status.started()
    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            await trio.sleep(seconds)


@pytest.mark.parametrize("shutdown", [0, 2])
async def test_a_shielded_clean_up_outlasts_its_shutdown_and_is_reported(harness, autojump_clock, shutdown) -> None:
    """Beyond what a kill can do in Trio: terminate_child waits for the shield, even a
    brutal kill, and SHUTDOWN_OVERRUN events say so while it waits."""
    events: list[sv.SupervisorEvent] = []
    sv.subscribe(events.append)
    sup = await harness.start(sv.Supervisor([sv.ChildSpec("stubborn", _shielded, args=(30,), shutdown=shutdown)]))
    pid = child_pid(sup, "stubborn")
    started = trio.current_time()
    await sv.terminate_child(sup, "stubborn")
    assert trio.current_time() - started == pytest.approx(30)
    overruns = [e for e in events if e.kind is sv.EventKind.SHUTDOWN_OVERRUN]
    assert [(e.child_id, e.pid, e.supervisor) for e in overruns] == [("stubborn", pid, sup)] * len(overruns)
    # reported 1 s after the kill (at 0 s or 2 s), then at doubling intervals until the shield ends at 30 s
    assert [e.overrun for e in overruns] == pytest.approx([1, 3, 7, 15])
    assert events[-1].kind is sv.EventKind.CHILD_EXITED


async def test_a_child_that_exits_when_killed_is_no_overrun(harness, autojump_clock) -> None:
    events: list[sv.SupervisorEvent] = []
    sv.subscribe(events.append)
    sup = await harness.start(sv.Supervisor([worker("w", Control(hang_on_terminate=True), shutdown=1)]))
    await sv.terminate_child(sup, "w")
    await trio.sleep(100)
    assert sv.EventKind.SHUTDOWN_OVERRUN not in [e.kind for e in events]
