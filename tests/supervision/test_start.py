"""Supervisor start: OTP's sup_start group, child spec defaults and bad specs."""

from __future__ import annotations

import pytest
import trio

import supervision as sv

from .conftest import Boom, Control, Worker, counts, settle, worker


@pytest.mark.otp("supervisor_SUITE:sup_start_normal")
async def test_sup_start_normal_and_graceful_stop() -> None:
    async with sv.open_supervisor(sv.Supervisor([], intensity=2, period=3600)) as sup:
        assert sv.is_alive(sup)
        assert sv.which_children(sup) == []
    assert not sv.is_alive(sup)


@pytest.mark.otp("supervisor_SUITE:sup_start_ignore_child")
async def test_sup_start_ignore_child(harness) -> None:
    sup = await harness.start(sv.Supervisor([], intensity=2, period=3600))
    assert await sv.start_child(sup, worker("child1", Control(start="ignore"))) is None
    pid2 = await sv.start_child(sup, worker("child2"))
    children = {i.id: i.pid for i in sv.which_children(sup)}
    assert children == {"child1": None, "child2": pid2}
    assert counts(sup) == [2, 1, 0, 2]


@pytest.mark.otp(
    "supervisor_SUITE:sup_start_ignore_temporary_child", "supervisor_SUITE:sup_start_ignore_temporary_child_start_child"
)
async def test_sup_start_ignore_temporary_child_is_not_saved(harness) -> None:
    sup = await harness.start(
        sv.Supervisor(
            [
                worker("child1", Control(start="ignore"), restart=sv.TEMPORARY),
                worker("child2", restart=sv.TEMPORARY),
            ]
        )
    )
    assert [i.id for i in sv.which_children(sup)] == ["child2"]
    assert counts(sup) == [1, 1, 0, 1]
    assert await sv.start_child(sup, worker("child3", Control(start="ignore"), restart=sv.TEMPORARY)) is None
    assert counts(sup) == [1, 1, 0, 1]


@pytest.mark.otp("supervisor_SUITE:sup_start_ignore_permanent_child_start_child_simple")
async def test_sup_start_ignore_child_of_dynamic_supervisor_is_not_saved(harness) -> None:
    ignoring = Control(start="ignore")
    sup = await harness.start(sv.DynamicSupervisor(worker("child", ignoring, restart=sv.PERMANENT)))
    assert await sv.start_child(sup, ()) is None
    ignoring.start = "ok"
    pid = await sv.start_child(sup, ())
    assert [i.pid for i in sv.which_children(sup)] == [pid]
    assert counts(sup) == [1, 1, 0, 1]
    await sv.stop(sup)
    assert harness.exits[sup] == sv.SHUTDOWN


async def test_start_failure_stops_started_children_in_reverse_and_raises_start_error() -> None:
    control = Control()
    tree = sv.Supervisor(
        [worker("a", control), worker("b", control), worker("bad", Control(start="error")), worker("c", control)]
    )
    with pytest.raises(sv.StartError) as raised:
        async with sv.open_supervisor(tree):
            pytest.fail("the supervisor must not start")
    assert raised.value.child_id == "bad"
    assert isinstance(raised.value.__cause__, Boom)
    started = [tag for event, tag, *_ in control.log if event == "started"]
    assert started == ["a", "b"]
    assert control.log[2:] == [("terminate", "b", sv.SHUTDOWN), ("terminate", "a", sv.SHUTDOWN)]


async def test_start_function_that_returns_without_reporting_fails_the_start() -> None:
    async def lazy(*, task_status) -> None:
        return None

    with pytest.raises(sv.StartError, match=r"without calling task_status\.started"):
        async with sv.open_supervisor(sv.Supervisor([sv.ChildSpec("lazy", lazy)])):
            pass


async def test_children_start_in_order_and_each_after_the_previous_init() -> None:
    order: list[str] = []

    async def child(tag: str, *, task_status) -> None:
        order.append(f"init {tag}")
        await trio.sleep(0)  # a slow init: the next child must still wait for it
        order.append(f"ready {tag}")
        task_status.started()
        await trio.sleep_forever()

    tree = sv.Supervisor([sv.ChildSpec(t, child, args=(t,)) for t in "abc"])
    async with sv.open_supervisor(tree):
        assert order == ["init a", "ready a", "init b", "ready b", "init c", "ready c"]


@pytest.mark.otp("supervisor_SUITE:sup_start_map")
async def test_get_childspec_has_otp_defaults(harness) -> None:
    sup = await harness.start(
        sv.Supervisor(
            [
                worker("child1"),
                worker("child2", shutdown=0),
                sv.Supervisor([]).child_spec("child3"),
            ]
        )
    )
    one = await sv.get_childspec(sup, "child1")
    assert (one.restart, one.shutdown, one.type) == (sv.PERMANENT, 5.0, sv.WORKER)
    two = await sv.get_childspec(sup, "child2")
    assert two.shutdown == 0
    three = await sv.get_childspec(sup, "child3")
    assert (three.restart, three.shutdown, three.type) == (sv.PERMANENT, None, sv.SUPERVISOR)
    with pytest.raises(sv.ChildNotFound):
        await sv.get_childspec(sup, "child4")


@pytest.mark.otp(
    "supervisor_SUITE:sup_start_map_faulty_specs", "supervisor_SUITE:child_specs", "supervisor_SUITE:child_specs_map"
)
def test_bad_child_specs_are_refused_at_once() -> None:
    def not_async(*, task_status) -> None: ...

    with pytest.raises(TypeError, match="must be an async function"):
        sv.ChildSpec("x", not_async)
    with pytest.raises(ValueError, match="significant child must be transient or temporary"):
        sv.ChildSpec("x", Worker.start, significant=True)
    with pytest.raises(ValueError, match="shutdown"):
        sv.ChildSpec("x", Worker.start, shutdown=-1)
    with pytest.raises(TypeError):
        sv.ChildSpec("x", Worker.start, restart="permanent")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hashable"):
        sv.ChildSpec(["x"], Worker.start)


@pytest.mark.otp("supervisor_SUITE:sup_flags")
def test_bad_supervisor_flags_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="duplicate child id 'a'"):
        sv.Supervisor([worker("a"), worker("a")])
    with pytest.raises(ValueError, match="auto_shutdown is NEVER"):
        sv.Supervisor([worker("a", restart=sv.TRANSIENT, significant=True)])
    with pytest.raises(ValueError, match="intensity"):
        sv.Supervisor([], intensity=-1)
    with pytest.raises(ValueError, match="period"):
        sv.Supervisor([], period=0)
    with pytest.raises(TypeError, match="auto_shutdown"):
        sv.DynamicSupervisor(auto_shutdown=sv.ANY_SIGNIFICANT)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="cannot be significant"):
        sv.DynamicSupervisor(worker("a", restart=sv.TEMPORARY, significant=True))
    with pytest.raises(TypeError, match="ChildSpec"):
        sv.Supervisor(["not a spec"])  # type: ignore[list-item]


@pytest.mark.otp("supervisor_SUITE:sup_start_child_returns_error")
async def test_a_name_held_by_another_process_fails_the_child_start(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("a", name="taken")]))
    with pytest.raises(sv.StartError) as raised:
        await sv.start_child(sup, worker("b", name="taken"))
    assert isinstance(raised.value.reason, sv.AlreadyRegistered)
    await settle()
    assert [i.id for i in sv.which_children(sup)] == ["a"]
