"""Chaos: seeded random kills in a nested tree of mixed strategies, in virtual time.

After every burst of kills the tree must come back whole: each supervisor's children
all running, with fresh pids, nothing left restarting, and no process in the table
that the tree does not account for. The victims are chosen by their place in the
tree, never by pid or timing, so a seed always gives the same run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import trio

import supervision as sv
from supervision._process import node

from .conftest import Boom, Control, Harness, Worker, settle, worker

SESSIONS = 3
STEPS = 40


async def _idle(*, task_status: Any) -> None:
    """A plain function child."""
    task_status.started()
    await trio.sleep_forever()


def _tree(registry: sv.Registry) -> sv.Supervisor:
    many: dict[str, Any] = {"intensity": 10_000, "period": 1}
    backoff = sv.Backoff(initial=0.5, maximum=2, jitter=0)
    inner = sv.Supervisor([worker("n1"), sv.ChildSpec("n2", _idle)], **many)
    all_group = sv.Supervisor(
        [worker("a1"), sv.ChildSpec("a2", _idle), worker("a3", backoff=backoff)], strategy=sv.ONE_FOR_ALL, **many
    )
    rest_group = sv.Supervisor(
        [worker("r1", name=registry.via("r1")), inner.child_spec("inner"), worker("r3", name="r3")],
        strategy=sv.REST_FOR_ONE,
        **many,
    )
    sessions = sv.DynamicSupervisor(sv.ChildSpec("session", Worker.start, args=(Control(),)), **many)
    return sv.Supervisor(
        [
            worker("config", name="config", backoff=backoff),
            all_group.child_spec("all"),
            rest_group.child_spec("rest"),
            sessions.child_spec("sessions"),
        ],
        **many,
    )


def _walk(sup: sv.Pid, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], sv.ChildInfo]]:
    """Every child under *sup*, depth first, named by its place in the tree."""
    for index, info in enumerate(sv.which_children(sup)):
        place = (*path, f"{info.id}#{index}")
        yield place, info
        if info.type is sv.SUPERVISOR and info.pid is not None:
            yield from _walk(info.pid, place)


async def _top_up_sessions(root: sv.Pid) -> None:
    """Dynamic children die with their supervisor: start new ones, to keep the shape."""
    sessions = next(info.pid for info in sv.which_children(root) if info.id == "sessions")
    assert sessions is not None
    for _ in range(SESSIONS - sv.count_children(sessions).specs):
        await sv.start_child(sessions, ())


def _check_recovered(root: sv.Pid, killed: set[sv.Pid]) -> None:
    children = list(_walk(root))
    assert len(children) == 4 + 3 + 3 + 2 + SESSIONS  # the whole shape is back
    for place, info in children:
        assert info.state is sv.ChildState.RUNNING, place
        assert info.pid is not None and sv.is_alive(info.pid), place
        assert info.pid not in killed, place  # a fresh process, not a survivor
    in_tree = {root} | {info.pid for _, info in children}
    assert set(node().procs) == in_tree  # nothing leaked, nothing unaccounted for
    assert all(sv.is_alive(sv.whereis(name)) for name in sv.registered())
    assert not node().name_waiters


async def _chaos(harness: Harness, seed: int) -> list[list[tuple[str, ...]]]:
    """Run STEPS bursts of 1-3 kills; return the places killed, burst by burst."""
    rng = random.Random(seed)
    root = await harness.start(_tree(sv.Registry()))
    killed: set[sv.Pid] = set()
    history = []
    for _ in range(STEPS):
        await _top_up_sessions(root)
        _check_recovered(root, killed)
        targets = [(place, info.pid) for place, info in _walk(root)]
        burst = rng.sample(targets, rng.randint(1, 3))
        for _place, pid in burst:
            assert pid is not None
            if sv.is_alive(pid):  # not already gone with a supervisor killed before it
                sv.kill(pid, rng.choice([sv.KILLED, Boom("chaos")]))
                killed.add(pid)
        history.append(sorted(place for place, _ in burst))
        await settle()
        await trio.sleep(10)  # longer than any backoff delay
        await settle()
    await _top_up_sessions(root)
    _check_recovered(root, killed)
    await sv.stop(root)
    assert harness.exits[root] == sv.SHUTDOWN  # it never gave up
    assert not node().procs and not node().names
    return history


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_kills_in_a_nested_tree_always_recover(harness, autojump_clock, seed) -> None:
    first = await _chaos(harness, seed)
    assert await _chaos(harness, seed) == first  # deterministic: the same seed kills the same places
    places = {place for burst in first for place in burst}
    assert any(len(place) == 1 for place in places) and any(len(place) == 3 for place in places)
