"""Applications: dependency order, reverse stop, bad graphs; `sv.run` as a whole program."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import supervision as sv

from .conftest import Control, worker


def _app(name: str, log: list, *deps: str) -> sv.Application:
    return sv.Application(name, sv.Supervisor([worker(name, Control(log=log))]), depends_on=deps)


async def test_applications_start_in_dependency_order_and_stop_in_reverse() -> None:
    log: list = []
    apps = [
        _app("gateway", log, "core"),
        _app("core", log, "tools", "obs"),
        _app("tools", log, "obs"),
        _app("obs", log),
    ]
    async with sv.open_supervisor(sv.application_tree(apps)) as root:
        assert [i.id for i in sv.which_children(root)] == ["obs", "tools", "core", "gateway"]
    assert [(e[0], e[1]) for e in log] == [
        ("started", "obs"),
        ("started", "tools"),
        ("started", "core"),
        ("started", "gateway"),
        ("terminate", "gateway"),
        ("terminate", "core"),
        ("terminate", "tools"),
        ("terminate", "obs"),
    ]


async def test_a_restarted_application_restarts_the_ones_started_after_it() -> None:
    log: list = []
    apps = [_app("obs", log), _app("core", log, "obs"), _app("gateway", log, "core")]
    async with sv.open_supervisor(sv.application_tree(apps, intensity=3)) as root:
        core = sv.which_children(root)[1].pid
        log.clear()
        await sv.stop(core, reason=RuntimeError("core tree crashed"))
        await __import__("trio").testing.wait_all_tasks_blocked()
        assert [(e[0], e[1]) for e in log] == [
            ("terminate", "core"),
            ("terminate", "gateway"),
            ("started", "core"),
            ("started", "gateway"),
        ]


def test_bad_application_graphs_are_refused_with_the_names() -> None:
    log: list = []
    with pytest.raises(ValueError, match="'core' depends on unknown application 'obs'"):
        sv.start_order([_app("core", log, "obs")])
    with pytest.raises(ValueError, match="cycle: a -> b -> a"):
        sv.start_order([_app("a", log, "b"), _app("b", log, "a")])
    with pytest.raises(ValueError, match="duplicate application 'a'"):
        sv.start_order([_app("a", log), _app("a", log)])


def test_run_stops_the_tree_gracefully_on_sigterm(tmp_path) -> None:
    script = tmp_path / "tree.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import supervision as sv

            class Service(sv.GenServer):
                def init(self, name):
                    print("started", name, flush=True)
                    return name

                def terminate(self, reason, name):
                    print("stopped", name, reason, flush=True)

            tree = sv.Supervisor([sv.ChildSpec(n, Service.start, args=(n,)) for n in ("first", "second")])
            print("exit", sv.run(tree), flush=True)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    assert proc.stdout is not None
    assert proc.stdout.readline().split() == ["started", "first"]
    assert proc.stdout.readline().split() == ["started", "second"]
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert out.split("\n")[:3] == ["stopped second shutdown", "stopped first shutdown", "exit shutdown"]
    assert proc.returncode == 0


def test_run_raises_the_crash_of_a_tree_that_gives_up() -> None:
    async def crasher(*, task_status) -> None:
        task_status.started()
        raise RuntimeError("always")

    with pytest.raises(sv.MaxIntensity):
        sv.run(sv.Supervisor([sv.ChildSpec("c", crasher)], intensity=2), signals=())
    with pytest.raises(sv.StartError):
        sv.run(
            sv.Supervisor(
                [sv.ChildSpec("c", worker("x", Control(start="error")).start, args=(Control(start="error"),))]
            ),
            signals=(),
        )
