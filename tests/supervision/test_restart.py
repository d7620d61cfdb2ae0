"""Restart types x exit reasons, intensity, escalation and failing restarts (OTP's cases)."""

from __future__ import annotations

import pytest
import trio

import supervision as sv

from .conftest import Boom, Control, child_pid, counts, crash, settle, watching, worker


async def _exit_child(pid: sv.Pid, how: str) -> None:
    if how == "normal":
        await sv.call(pid, "stop")
    elif how == "shutdown":
        await sv.stop(pid)
    else:
        sv.kill(pid, Boom("abnormal"))
    await settle()


# (restart type, how the child exits) -> restarted?, each row an OTP case (a temporary
# child's spec is dropped: do_not_save_child_specs_for_temporary_children).
def _row(restart: sv.Restart, how: str, restarted: bool) -> object:
    cases = [f"supervisor_SUITE:{restart.name.lower()}_{how}"]
    if restart is sv.TEMPORARY:
        cases.append("supervisor_SUITE:do_not_save_child_specs_for_temporary_children")
    return pytest.param(restart, how, restarted, marks=pytest.mark.otp(*cases), id=f"{restart.name.lower()}-{how}")


MATRIX = [
    _row(sv.PERMANENT, "normal", True),
    _row(sv.PERMANENT, "shutdown", True),
    _row(sv.PERMANENT, "abnormal", True),
    _row(sv.TRANSIENT, "normal", False),
    _row(sv.TRANSIENT, "shutdown", False),
    _row(sv.TRANSIENT, "abnormal", True),
    _row(sv.TEMPORARY, "normal", False),
    _row(sv.TEMPORARY, "shutdown", False),
    _row(sv.TEMPORARY, "abnormal", False),
]


@pytest.mark.parametrize(("restart", "how", "restarted"), MATRIX)
async def test_restart_type_by_exit_reason(harness, restart, how, restarted) -> None:
    sup = await harness.start(sv.Supervisor([], intensity=2, period=3600))
    first = await sv.start_child(sup, worker("child1", restart=restart))
    await _exit_child(first, how)
    children = sv.which_children(sup)
    if restarted:
        [info] = children
        assert info.pid is not None and info.pid != first
        assert counts(sup) == [1, 1, 0, 1]
    elif restart is sv.TEMPORARY:
        assert children == []  # the spec of a temporary child is dropped
        assert counts(sup) == [0, 0, 0, 0]
    else:
        assert [(i.id, i.pid, i.state) for i in children] == [("child1", None, sv.ChildState.STOPPED)]
        assert counts(sup) == [1, 0, 0, 1]


@pytest.mark.otp("supervisor_SUITE:one_for_one")
async def test_one_for_one_restarts_only_the_failed_child_then_gives_up(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("child1"), worker("child2")], intensity=2, period=3600))
    pid1, pid2 = child_pid(sup, "child1"), child_pid(sup, "child2")
    with watching(sup) as downs:
        await crash(pid1)
        assert child_pid(sup, "child2") == pid2
        assert child_pid(sup, "child1") not in (None, pid1)
        assert counts(sup) == [2, 2, 0, 2]
        await crash(pid2)
        await crash(child_pid(sup, "child1"))  # the third restart within the period
        reason = await downs.reason(sup)
    assert isinstance(reason, sv.MaxIntensity)
    assert isinstance(harness.exits[sup], sv.MaxIntensity)


@pytest.mark.otp("supervisor_SUITE:multiple_restarts")
async def test_intensity_window_slides(harness, autojump_clock) -> None:
    """OTP's multiple_restarts: 1 restart per second, crashes 2.1 s apart, never gives up."""
    sup = await harness.start(sv.Supervisor([worker("child1", shutdown=0)], intensity=1, period=1))
    for _ in range(4):
        await crash(child_pid(sup, "child1"))
        await trio.sleep(2.1)
    assert sv.is_alive(sup)
    await sv.terminate_child(sup, "child1")
    await sv.delete_child(sup, "child1")
    assert sv.which_children(sup) == []


async def test_two_restarts_inside_the_window_exceed_intensity_one(harness, autojump_clock) -> None:
    sup = await harness.start(sv.Supervisor([worker("child1")], intensity=1, period=5))
    await crash(child_pid(sup, "child1"))
    await trio.sleep(4.9)
    with watching(sup) as downs:
        await crash(child_pid(sup, "child1"))
        assert isinstance(await downs.reason(sup), sv.MaxIntensity)


async def test_intensity_zero_gives_up_at_the_first_crash(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("child1")], intensity=0))
    with watching(sup) as downs:
        await crash(child_pid(sup, "child1"))
        assert isinstance(await downs.reason(sup), sv.MaxIntensity)


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param(strategy, marks=pytest.mark.otp(f"supervisor_SUITE:{strategy.name.lower()}_escalation"))
        for strategy in (sv.ONE_FOR_ONE, sv.ONE_FOR_ALL, sv.REST_FOR_ONE)
    ],
)
async def test_escalation_failing_restarts_are_retried_and_counted(harness, strategy) -> None:
    """OTP's *_escalation: a child that cannot restart makes the supervisor give up."""
    flaky = Control()
    sup = await harness.start(
        sv.Supervisor([worker("child1", flaky), worker("child2")], strategy=strategy, intensity=4)
    )
    pid2 = child_pid(sup, "child2")
    flaky.start = "error"
    with watching(sup, pid2) as downs:
        await crash(child_pid(sup, "child1"))
        assert isinstance(await downs.reason(sup), sv.MaxIntensity)
        assert await downs.reason(pid2) == sv.SHUTDOWN
    assert flaky.starts == 1 + 4  # the first start, then every attempt until the fifth restart


@pytest.mark.otp("supervisor_SUITE:hanging_restart_loop")
async def test_failing_restart_shows_restarting_until_it_succeeds(harness) -> None:
    """OTP's hanging_restart_loop, with a start that recovers after two refusals."""
    flaky = Control()
    events: list[sv.SupervisorEvent] = []
    sv.subscribe(events.append)
    sup = await harness.start(sv.Supervisor([worker("child1", flaky)], intensity=10, period=3600))
    flaky.start = "error"

    seen_restarting = []
    sv.kill(child_pid(sup, "child1"), Boom("crash"))
    for _ in range(50):
        await trio.sleep(0)
        [info] = sv.which_children(sup)
        seen_restarting.append(info.state)
        if flaky.starts >= 3:
            flaky.start = "ok"
    await settle()
    assert sv.ChildState.RESTARTING in seen_restarting
    [info] = sv.which_children(sup)
    assert info.state is sv.ChildState.RUNNING
    failed = [e for e in events if e.kind is sv.EventKind.START_FAILED]
    assert len(failed) >= 2 and all(isinstance(e.reason, Boom) for e in failed)


@pytest.mark.otp("supervisor_SUITE:one_for_all")
async def test_one_for_all_restarts_every_child_in_order(harness) -> None:
    log = Control()
    sup = await harness.start(
        sv.Supervisor(
            [worker(t, Control(log=log.log)) for t in ("c1", "c2", "c3")], strategy=sv.ONE_FOR_ALL, intensity=2
        )
    )
    before = [i.pid for i in sv.which_children(sup)]
    log.log.clear()
    await crash(before[1])
    after = [i.pid for i in sv.which_children(sup)]
    assert not set(before) & set(after) and None not in after
    # the others stop in reverse order, then all start in order
    assert [(e[0], e[1]) for e in log.log] == [
        ("terminate", "c3"),
        ("terminate", "c1"),
        ("started", "c1"),
        ("started", "c2"),
        ("started", "c3"),
    ]


@pytest.mark.otp("supervisor_SUITE:rest_for_one")
async def test_rest_for_one_restarts_the_failed_child_and_those_after_it(harness) -> None:
    log = Control()
    sup = await harness.start(
        sv.Supervisor(
            [worker(t, Control(log=log.log)) for t in ("c1", "c2", "c3")], strategy=sv.REST_FOR_ONE, intensity=2
        )
    )
    pid1, pid2, pid3 = (i.pid for i in sv.which_children(sup))
    log.log.clear()
    await crash(pid2)
    new1, new2, new3 = (i.pid for i in sv.which_children(sup))
    assert new1 == pid1 and new2 not in (None, pid2) and new3 not in (None, pid3)
    assert [(e[0], e[1]) for e in log.log] == [("terminate", "c3"), ("started", "c2"), ("started", "c3")]


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param(
            strategy, marks=pytest.mark.otp(f"supervisor_SUITE:{strategy.name.lower()}_other_child_fails_restart")
        )
        for strategy in (sv.ONE_FOR_ALL, sv.REST_FOR_ONE)
    ],
)
async def test_other_child_fails_restart_then_the_group_is_restarted_again(harness, strategy) -> None:
    """OTP's *_other_child_fails_restart: child2 refuses once; child1 is stopped and both come back."""
    log: list = []
    c1, c2 = Control(log=log), Control(log=log)
    sup = await harness.start(sv.Supervisor([worker("c1", c1), worker("c2", c2)], strategy=strategy, intensity=3))
    c2.start = "error"
    first_c1 = child_pid(sup, "c1")
    sv.kill(first_c1 if strategy is sv.ONE_FOR_ALL else child_pid(sup, "c2"), Boom("die"))
    for _ in range(20):
        await trio.sleep(0)
        if c2.starts >= 2:
            c2.start = "ok"
    await settle()
    infos = sv.which_children(sup)
    assert all(i.state is sv.ChildState.RUNNING for i in infos)
    assert sv.is_alive(sup)


@pytest.mark.otp("supervisor_SUITE:temporary_bystander")
@pytest.mark.parametrize("strategy", [sv.ONE_FOR_ALL, sv.REST_FOR_ONE])
async def test_temporary_bystander_is_not_restarted(harness, strategy) -> None:
    sup = await harness.start(
        sv.Supervisor(
            [worker("child1", shutdown=0.1), worker("child2", restart=sv.TEMPORARY, shutdown=0.1)],
            strategy=strategy,
            intensity=2,
            period=300,
        )
    )
    await sv.call(child_pid(sup, "child1"), "stop")  # a normal exit of a permanent child
    await settle()
    assert sv.is_alive(sup)
    assert [i.id for i in sv.which_children(sup)] == ["child1"]


async def test_restart_backoff_delays_restarts_with_growing_jittered_delays(harness, mock_clock) -> None:
    backoff = sv.Backoff(initial=1.0, maximum=8.0, factor=2.0, jitter=0.25, reset_after=100)
    sup = await harness.start(sv.Supervisor([worker("child1", backoff=backoff)], intensity=100, period=1))
    delays = []
    for _ in range(5):
        await crash(child_pid(sup, "child1"))
        crashed_at = trio.current_time()
        [info] = sv.which_children(sup)
        assert info.state is sv.ChildState.RESTARTING
        while child_pid(sup, "child1") is None:
            mock_clock.jump(0.01)
            await settle()
        delays.append(trio.current_time() - crashed_at)
    for step, delay in enumerate(delays):
        base = min(8.0, 2.0**step)
        assert base * 0.75 - 0.02 <= delay <= base * 1.25 + 0.02, (step, delay)
    assert delays[3] > delays[0] * 4  # the delays grow


def test_backoff_delay_is_capped_and_jittered() -> None:
    import random

    backoff = sv.Backoff(initial=0.5, maximum=4.0, jitter=0.1)
    rng = random.Random(7)
    samples = [backoff.delay(10, rng) for _ in range(200)]
    assert all(3.6 <= s <= 4.4 for s in samples)
    assert len({round(s, 6) for s in samples}) > 100  # jitter spreads them
    with pytest.raises(ValueError):
        sv.Backoff(initial=0)


def _states(sup: sv.Pid) -> dict:
    return {i.id: i.state for i in sv.which_children(sup)}


@pytest.mark.parametrize(("strategy", "slow"), [(sv.ONE_FOR_ALL, "c1"), (sv.REST_FOR_ONE, "c3")])
async def test_a_group_being_terminated_for_a_restart_shows_restarting(harness, mock_clock, strategy, slow) -> None:
    """The crashed child and the siblings stopped with it are restarting, not stopped,
    while the group goes down (here one sibling takes its 10 s to stop)."""
    specs = [worker(t, Control(hang_on_terminate=t == slow), shutdown=10) for t in ("c1", "c2", "c3")]
    sup = await harness.start(sv.Supervisor(specs, strategy=strategy, intensity=5))
    await crash(child_pid(sup, "c2"))
    restarting = sv.ChildState.RESTARTING
    if strategy is sv.ONE_FOR_ALL:  # c3 is stopped, c1 is stopping
        expected = {"c1": restarting, "c2": restarting, "c3": restarting}
    else:  # c3 is stopping, c1 runs on
        expected = {"c1": sv.ChildState.RUNNING, "c2": restarting, "c3": restarting}
    assert _states(sup) == expected
    assert [c["state"] for c in sv.inspect_tree(sup)["children"]] == [s.value for s in expected.values()]
    mock_clock.jump(10)
    await settle()
    assert set(_states(sup).values()) == {sv.ChildState.RUNNING}


async def test_a_child_shows_restarting_while_its_replacement_initialises(harness, mock_clock) -> None:
    class SlowRestart(sv.GenServer):
        async def init(self, control: Control) -> Control:
            control.starts += 1
            if control.starts > 1:
                await trio.sleep(5)
            return control

    sup = await harness.start(sv.Supervisor([sv.ChildSpec("c", SlowRestart.start, args=(Control(),))], intensity=5))
    await crash(child_pid(sup, "c"))
    assert _states(sup) == {"c": sv.ChildState.RESTARTING}
    mock_clock.jump(5)
    await settle()
    assert _states(sup) == {"c": sv.ChildState.RUNNING}


async def test_a_crashed_child_is_restarting_from_the_crash_on(harness, mock_clock) -> None:
    """What a subscriber sees when the crash is reported, with and without a backoff."""
    seen = []

    def on_event(event: sv.SupervisorEvent) -> None:
        if event.kind is sv.EventKind.CHILD_EXITED:
            seen.append((event.child_id, _states(event.supervisor)[event.child_id]))

    sv.subscribe(on_event)
    sup = await harness.start(
        sv.Supervisor([worker("plain"), worker("delayed", backoff=sv.Backoff(initial=1, maximum=1))], intensity=5)
    )
    await crash(child_pid(sup, "plain"))
    await crash(child_pid(sup, "delayed"))
    assert seen == [("plain", sv.ChildState.RESTARTING), ("delayed", sv.ChildState.RESTARTING)]
    mock_clock.jump(2)
    await settle()
    assert set(_states(sup).values()) == {sv.ChildState.RUNNING}


async def test_a_failing_restart_with_backoff_is_retried_after_growing_delays(harness, autojump_clock) -> None:
    """Without a backoff OTP retries at once (see the escalation cases); with one, each
    retry waits for the next delay and still counts toward intensity."""
    failed_at: list[float] = []
    sv.subscribe(lambda e: failed_at.append(trio.current_time()) if e.kind is sv.EventKind.START_FAILED else None)
    flaky = Control()
    backoff = sv.Backoff(initial=1, maximum=8, factor=2, jitter=0)
    sup = await harness.start(sv.Supervisor([worker("c", flaky, backoff=backoff)], intensity=4, period=3600))
    flaky.start = "error"
    with watching(sup) as downs:
        crashed_at = trio.current_time()
        sv.kill(child_pid(sup, "c"), Boom("crash"))
        assert isinstance(await downs.reason(sup), sv.MaxIntensity)
        gave_up_at = trio.current_time()
    # restarted 1 s after the crash; retried 2, 4 and 8 s after each failure
    assert [t - crashed_at for t in failed_at] == pytest.approx([1, 3, 7, 15])
    assert gave_up_at - crashed_at == pytest.approx(23)  # the fifth restart, after 8 s more, is one too many
    assert flaky.starts == 1 + 4
