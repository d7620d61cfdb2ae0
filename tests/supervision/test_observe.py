"""Supervisor events and the live tree as plain data."""

from __future__ import annotations

import json

import pytest
import trio

import supervision as sv

from .conftest import Boom, Control, Worker, child_pid, crash, settle, worker


async def test_events_report_start_exit_with_traceback_and_restart(harness) -> None:
    events: list[sv.SupervisorEvent] = []
    subscription = sv.subscribe(events.append)
    sup = await harness.start(sv.Supervisor([worker("child1")], name="top", intensity=1))
    first = child_pid(sup, "child1")
    await crash(first, Boom("kaboom"))
    kinds = [(e.kind, e.child_id) for e in events]
    assert kinds == [
        (sv.EventKind.CHILD_STARTED, "child1"),
        (sv.EventKind.CHILD_EXITED, "child1"),
        (sv.EventKind.CHILD_STARTED, "child1"),
        (sv.EventKind.CHILD_RESTARTED, "child1"),
    ]
    exited = events[1]
    assert exited.pid == first and exited.supervisor == sup and exited.supervisor_name == "top"
    assert isinstance(exited.reason, Boom)
    assert "Boom: kaboom" in exited.traceback
    sv.unsubscribe(subscription)
    await crash(child_pid(sup, "child1"))
    assert len(events) == 4  # nothing after unsubscribe


async def test_intensity_exceeded_is_reported(harness) -> None:
    events: list[sv.SupervisorEvent] = []
    sv.subscribe(events.append)
    sup = await harness.start(sv.Supervisor([worker("child1")], intensity=0))
    await crash(child_pid(sup, "child1"))
    assert [e.kind for e in events] == [
        sv.EventKind.CHILD_STARTED,
        sv.EventKind.CHILD_EXITED,
        sv.EventKind.INTENSITY_EXCEEDED,
    ]
    assert isinstance(harness.exits[sup], sv.MaxIntensity)


async def test_a_failing_subscriber_never_breaks_the_supervisor(harness, capsys) -> None:
    def broken(event) -> None:
        raise ValueError("subscriber bug")

    sv.subscribe(broken)
    sup = await harness.start(sv.Supervisor([worker("child1")]))
    await crash(child_pid(sup, "child1"))
    assert sv.which_children(sup)[0].state is sv.ChildState.RUNNING
    err = capsys.readouterr().err
    assert "Exception ignored in supervision event subscriber" in err and "ValueError: subscriber bug" in err


async def test_a_pid_subscriber_gets_events_as_messages_and_drops_when_full(harness) -> None:
    with sv.as_process(capacity=1) as me:
        sv.subscribe(me)
        sup = await harness.start(sv.Supervisor([worker("a"), worker("b")]))
        event = await sv.receive(timeout=0)
        assert event.kind is sv.EventKind.CHILD_STARTED and event.child_id == "a"
        await sv.stop(sup)  # more events than room: dropped, never blocking the supervisor
    assert harness.exits[sup] == sv.SHUTDOWN


async def test_inspect_tree_is_plain_json_data_of_the_live_tree(harness, autojump_clock) -> None:
    inner = sv.DynamicSupervisor(worker("session"), name="sessions")
    sup = await harness.start(sv.Supervisor([worker("config"), inner.child_spec("sessions")], name="root", intensity=5))
    await sv.start_child("sessions", ())
    await trio.sleep(3)
    await crash(child_pid(sup, "config"))
    sv.send(child_pid(sup, "config"), "unhandled info")  # queued, not yet handled
    tree = sv.inspect_tree(sup)
    json.dumps(tree)  # plain data all the way down
    assert tree["id"] == "root" and tree["kind"] == "supervisor" and tree["strategy"] == "one_for_one"
    assert tree["restarts"] == 1
    config, sessions = tree["children"]
    assert (config["id"], config["kind"], config["restart"], config["state"], config["restarts"]) == (
        "config",
        "gen_server",
        "permanent",
        "running",
        1,
    )
    assert config["mailbox"] == 1
    assert config["uptime"] < 1  # restarted just now
    assert sessions["kind"] == "supervisor" and sessions["strategy"] == "dynamic" and sessions["name"] == "sessions"
    [session] = sessions["children"]
    assert session["uptime"] >= 3 and session["pid"].startswith("<0.")
    await settle()


async def test_a_childs_label_is_in_the_tree_and_survives_its_restart(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("a1b2c3", label="ada talking to ops"), worker("plain")]))
    await crash(child_pid(sup, "a1b2c3"))
    labelled, plain = sv.inspect_tree(sup)["children"]
    assert (labelled["label"], labelled["restarts"]) == ("ada talking to ops", 1) and "label" not in plain
    with pytest.raises(TypeError):
        sv.ChildSpec("x", Worker.start, label=42)  # type: ignore[arg-type]


async def test_inspect_tree_shows_a_stopped_child(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("a", Control())]))
    await sv.terminate_child(sup, "a")
    [a] = sv.inspect_tree(sup)["children"]
    assert (a["pid"], a["state"]) == (None, "stopped")


async def test_process_info_shows_the_queued_messages_without_taking_them(harness) -> None:
    sup = await harness.start(sv.Supervisor([worker("config")], name="root"))
    pid = child_pid(sup, "config")
    for message in ("first", {"second": 2}, "x" * 1000):
        sv.send(pid, message)  # queued: the worker handles them at its next checkpoint
    info = sv.process_info(pid, messages=2)
    json.dumps(info)
    assert (info["pid"], info["kind"], info["mailbox"], info["dropped"]) == (repr(pid), "gen_server", 3, 0)
    assert info["messages"] == ["'first'", "{'second': 2}"]
    assert len(sv.process_info(pid)["messages"][2]) == 300  # a long one is cut
    assert sv.process_info(pid)["mailbox"] == 3  # looking took nothing
    assert sv.process_info("root")["name"] == "root" and "children" not in sv.process_info("root")
    with pytest.raises(sv.NoProc):
        sv.process_info("nobody")
    await settle()
