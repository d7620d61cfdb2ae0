"""StateMachine: transitions, enter calls, state and event timeouts, postponed events."""

from __future__ import annotations

import trio

import supervision as sv

from .conftest import settle, watching


class Door(sv.StateMachine):
    """gen_statem's classic code lock, with enter calls and a state timeout."""

    state_enter = True

    def init(self, code: str):
        return "locked", {"code": code, "entered": [], "log": []}

    def handle_event(self, event, state, data):
        data["log"].append((state, event.type, event.content))
        match (event.type, state):
            case (sv.ENTER, _):
                return sv.KeepState()
            case (sv.CALL, _) if event.content == "state":
                sv.reply(event.caller, state)
                return sv.KeepState()
            case (sv.CAST, "locked"):
                if event.content == data["code"]:
                    return sv.NextState("open", data, sv.StateTimeout(10, "lock"))
                return sv.KeepState()
            case (sv.STATE_TIMEOUT, "open"):
                return sv.NextState("locked", data)
            case (sv.CAST, "open"):
                return sv.KeepState(data, sv.Postpone())  # typed while open: retried once locked
        return sv.KeepState()


async def test_transitions_enter_calls_and_state_timeout(nursery, autojump_clock) -> None:
    door = await nursery.start(Door.start, "1234")
    sv.cast(door, "0000")
    assert await sv.call(door, "state") == "locked"
    sv.cast(door, "1234")
    assert await sv.call(door, "state") == "open"
    await trio.sleep(9)
    assert await sv.call(door, "state") == "open"
    await trio.sleep(2)
    assert await sv.call(door, "state") == "locked"
    await sv.stop(door)


async def test_a_state_change_cancels_the_state_timeout(nursery, autojump_clock) -> None:
    class Toggle(sv.StateMachine):
        def init(self):
            return "a", 0

        def handle_event(self, event, state, data):
            if event.type is sv.CALL:
                sv.reply(event.caller, (state, data))
                return sv.KeepState()
            if event.type is sv.STATE_TIMEOUT:
                return sv.KeepState(data + 1)
            if event.content == "arm":
                return sv.KeepState(data, sv.StateTimeout(5, None))
            return sv.NextState("b" if state == "a" else "a", data)

    pid = await nursery.start(Toggle.start)
    sv.cast(pid, "arm")
    sv.cast(pid, "flip")
    await trio.sleep(10)
    assert await sv.call(pid, "q") == ("b", 0)
    sv.cast(pid, "arm")
    await trio.sleep(10)
    assert await sv.call(pid, "q") == ("b", 1)
    await sv.stop(pid)


async def test_postponed_events_are_retried_in_order_after_a_state_change(nursery) -> None:
    class Gate(sv.StateMachine):
        def init(self):
            return "closed", []

        def handle_event(self, event, state, data):
            if event.type is sv.CALL:
                sv.reply(event.caller, list(data))
                return sv.KeepState()
            if event.content == "open":
                return sv.NextState("open", data)
            if state == "closed":
                return sv.KeepState(data, sv.Postpone())
            return sv.KeepState([*data, event.content])

    pid = await nursery.start(Gate.start)
    for n in (1, 2, 3):
        sv.cast(pid, n)
    assert await sv.call(pid, "q") == []
    sv.cast(pid, "open")
    sv.cast(pid, 4)
    assert await sv.call(pid, "q") == [1, 2, 3, 4]
    await sv.stop(pid)


async def test_event_timeout_is_cancelled_by_any_event_and_next_event_runs_first(nursery, autojump_clock) -> None:
    class Idle(sv.StateMachine):
        def init(self):
            return "s", [], sv.EventTimeout(5, "idle")

        def handle_event(self, event, state, data):
            if event.type is sv.CALL:
                sv.reply(event.caller, list(data))
                return sv.KeepState(data, sv.EventTimeout(5, "idle"))
            if event.type is sv.CAST:
                return sv.KeepState([*data, "cast"], [sv.NextEvent("inserted"), sv.EventTimeout(5, "idle")])
            return sv.KeepState([*data, event.content], sv.EventTimeout(5, "idle") if event.type is sv.INTERNAL else [])

    pid = await nursery.start(Idle.start)
    await trio.sleep(3)
    sv.cast(pid, "x")
    await trio.sleep(3)
    assert await sv.call(pid, "q") == ["cast", "inserted"]  # the cast reset the timeout
    await trio.sleep(6)
    assert await sv.call(pid, "q") == ["cast", "inserted", "idle"]
    await sv.stop(pid)


async def test_stop_runs_terminate_and_a_bad_return_is_a_clear_crash(nursery) -> None:
    stopped = []

    class Machine(sv.StateMachine):
        def init(self):
            return "s", None

        def handle_event(self, event, state, data):
            if event.content == "bad":
                return None
            return sv.Stop(sv.NORMAL, "final", reply="done")

        def terminate(self, reason, state, data):
            stopped.append((reason, state, data))

    pid = await nursery.start(Machine.start)
    with watching(pid) as downs:
        assert await sv.call(pid, "quit") == "done"
        assert await downs.reason(pid) == sv.NORMAL
    assert stopped == [(sv.NORMAL, "s", "final")]

    async def guarded(*, task_status) -> None:
        try:
            await Machine.start(task_status=task_status)
        except TypeError as exc:
            stopped.append(str(exc))

    async with trio.open_nursery() as inner:
        pid = await inner.start(guarded)
        sv.cast(pid, "bad")
    assert "expected sv.NextState, sv.KeepState or sv.Stop" in stopped[-1]


async def test_an_enter_call_may_not_change_state(nursery) -> None:
    class Bad(sv.StateMachine):
        state_enter = True

        def init(self):
            return "a", None

        def handle_event(self, event, state, data):
            return sv.NextState("b", data)

    crashes = []

    async def guarded(*, task_status) -> None:
        try:
            await Bad.start(task_status=task_status)
        except TypeError as exc:
            crashes.append(str(exc))

    # As in gen_statem, the first enter call runs once start has returned.
    pid = await nursery.start(guarded)
    await settle()
    assert not sv.is_alive(pid)
    assert crashes == ["Bad: an enter call may not change the state ('a' -> 'b')"]
