"""Shutdown: brutal kill, grace period, infinity; reverse order; significant children."""

from __future__ import annotations

import trio

import supervision as sv

from .conftest import Control, child_pid, settle, watching, worker


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
