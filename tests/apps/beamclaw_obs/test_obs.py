"""The obs app: emit never blocks or raises, events are scrubbed, fanned out, logged and counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from loguru import logger

import beamclaw_obs as obs
import supervision as sv
from beamclaw_obs._manager import Manager


class Collect(obs.Backend):
    """A backend that keeps what it gets, for the test to read."""

    def setup(self, sink: list[obs.ObsEvent]) -> list[obs.ObsEvent]:
        return sink

    def handle_event(self, event: obs.ObsEvent, sink: list[obs.ObsEvent]) -> None:
        sink.append(event)


def _tree(tmp_path: Path, sink: list[obs.ObsEvent]) -> sv.Supervisor:
    tree = obs.supervision_tree({"log_level": "DEBUG"}, tmp_path)
    return sv.Supervisor([*tree.children, sv.ChildSpec("collect", Collect.start, args=(sink,))], name="obs")


async def test_emit_without_a_manager_drops_and_counts() -> None:
    before = obs.dropped_events()
    obs.emit("turn_complete", session_id="s")  # no manager running in this node
    assert obs.dropped_events() == before + 1


def test_emit_outside_trio_does_not_raise() -> None:
    before = obs.dropped_events()
    obs.emit("session_start")
    assert obs.dropped_events() == before + 1


class Picky(Collect):
    """A backend that wants one kind of event."""

    def wants(self, event: str) -> bool:
        return event == "wanted"


async def test_an_event_goes_to_the_backends_that_want_it_and_nobody_wanting_it_drops_nothing() -> None:
    picky: list[obs.ObsEvent] = []
    tree = sv.Supervisor([sv.ChildSpec("manager", Manager.start), sv.ChildSpec("picky", Picky.start, args=(picky,))])
    async with sv.open_supervisor(tree):
        before = obs.dropped_events()
        obs.emit("unwanted", n=1)
        obs.emit("wanted", n=2)
        await trio.testing.wait_all_tasks_blocked()
        assert [(e.name, e.data) for e in picky] == [("wanted", {"n": 2})]
        assert obs.dropped_events() == before  # not wanted is not dropped


async def test_events_reach_every_backend_scrubbed(tmp_path: Path) -> None:
    sink: list[obs.ObsEvent] = []
    async with sv.open_supervisor(_tree(tmp_path, sink)):
        obs.emit("tool_call_result", tool="curl", result="token=abcd1234 and sk-Zq8vT3xLmN4pR7sK2wY9aB6c")
        await trio.testing.wait_all_tasks_blocked()
        (event,) = [e for e in sink if e.name == "tool_call_result"]
        assert event.data == {"tool": "curl", "result": "token=[REDACTED] and [REDACTED]"}
    lines = [json.loads(line) for line in (tmp_path / "logs" / "beamclaw.log").read_text().splitlines()]
    logged = [line["text"] for line in lines if "tool_call_result" in line["text"]]
    assert logged and "abcd1234" not in logged[0] and "[REDACTED]" in logged[0]


async def test_a_crash_becomes_an_event_with_its_traceback(tmp_path: Path) -> None:
    sink: list[obs.ObsEvent] = []

    async def doomed(task_status: Any) -> None:
        task_status.started()
        await trio.sleep(1)
        raise RuntimeError("boom with password=hunter22")

    tree = _tree(tmp_path, sink)
    tree = sv.Supervisor([*tree.children, sv.ChildSpec("doomed", doomed, restart=sv.TEMPORARY)], name="obs")
    async with sv.open_supervisor(tree):
        await trio.sleep(1.5)
        await trio.testing.wait_all_tasks_blocked()
        text = await obs.metrics_text()
    (exited,) = [e for e in sink if e.name == "child_exited" and e.data["child_id"] == "doomed"]
    assert exited.data["crashed"] is True
    assert "RuntimeError" in exited.data["traceback"] and "hunter22" not in exited.data["traceback"]
    assert "beamclaw_crashes_total 1.0" in text


async def test_a_child_overrunning_its_shutdown_is_reported(tmp_path: Path) -> None:
    """A child that shields its clean-up cannot be cut short; the overrun is logged."""
    sink: list[obs.ObsEvent] = []

    async def stubborn(task_status: Any) -> None:
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(1.5)

    tree = _tree(tmp_path, sink)
    tree = sv.Supervisor([*tree.children, sv.ChildSpec("stubborn", stubborn, shutdown=0.1)], name="obs")
    async with sv.open_supervisor(tree) as sup:
        await sv.terminate_child(sup, "stubborn")
        await trio.testing.wait_all_tasks_blocked()
    (overrun, *_) = [e for e in sink if e.name == "shutdown_overrun"]
    assert overrun.data["child_id"] == "stubborn" and overrun.data["overrun_seconds"] >= 1.0
    lines = [json.loads(line) for line in (tmp_path / "logs" / "beamclaw.log").read_text().splitlines()]
    levels = {
        line["record"]["level"]["name"] for line in lines if line["record"]["extra"].get("event") == "shutdown_overrun"
    }
    assert levels == {"WARNING"}


async def test_metrics_count_turns_tools_and_latency(tmp_path: Path) -> None:
    async with sv.open_supervisor(_tree(tmp_path, [])):
        obs.emit("turn_complete", outcome="ok")
        obs.emit("llm_response", model="m", duration_ms=120, prompt_tokens=10, completion_tokens=5)
        obs.emit("tool_call_result", tool="bash", duration_ms=3, is_error=True)
        await trio.testing.wait_all_tasks_blocked()
        text = await obs.metrics_text()
    assert 'beamclaw_turns_total{outcome="ok"} 1.0' in text
    assert 'beamclaw_llm_tokens_total{kind="prompt"} 10.0' in text
    assert 'beamclaw_tool_errors_total{tool="bash"} 1.0' in text
    assert 'beamclaw_llm_latency_seconds_bucket{le="0.25",model="m"} 1.0' in text
    assert "beamclaw_obs_dropped_events_total" in text


async def test_a_full_backend_drops_instead_of_blocking(tmp_path: Path) -> None:
    sink: list[obs.ObsEvent] = []
    async with sv.open_supervisor(_tree(tmp_path, sink)):
        before = obs.dropped_events()
        for i in range(25_000):  # more than the manager's and the backends' mailboxes hold
            obs.emit("llm_request", n=i)
        assert obs.dropped_events() > before
        await trio.testing.wait_all_tasks_blocked()
        assert 0 < len([e for e in sink if e.name == "llm_request"]) < 25_000


def _crash_holding(marker: str) -> None:
    held = marker  # a local, as a credential read from the environment would be
    raise ValueError(f"a crash holding {len(held)} characters")


async def test_a_logged_traceback_never_shows_local_variables(tmp_path: Path) -> None:
    marker = "local-variable-marker-" + "8f1e2d"
    async with sv.open_supervisor(_tree(tmp_path, [])):
        try:
            _crash_holding(marker)
        except ValueError:
            logger.opt(exception=True).error("the crash, logged with its traceback")
        await trio.testing.wait_all_tasks_blocked()
    text = (tmp_path / "logs" / "beamclaw.log").read_text()
    assert "the crash, logged with its traceback" in text and "_crash_holding" in text  # the traceback is there
    assert "ValueError: a crash holding 28 characters" in text
    assert marker not in text  # but not the values of its variables (loguru's diagnose)


# Built from pieces: a traceback prints the source line of each raise, and a secret
# written there literally would be in the log whatever the scrubber does.
_CHAIN_SECRETS = (
    "Pa55-" + "inner-w0rd",
    "ghp_" + "Zq8vT3xLmN4pR7sK2wY9aB6cD1eF0gH5iJ7k",
    "hunter2-" + "in-a-note",
    "Kq81" + "Zx09Lm77",
)


async def test_a_logged_exception_chain_is_scrubbed_whole(tmp_path: Path) -> None:
    inner_pw, token, note_pw, file_key = _CHAIN_SECRETS
    async with sv.open_supervisor(_tree(tmp_path, [])):
        try:
            try:
                raise ValueError(f"connect postgres://app:{inner_pw}@db/x")
            except ValueError as inner:
                outer = RuntimeError(f"retry failed, token={token}")
                outer.add_note(f"password: {note_pw}")
                raise ExceptionGroup("several", [outer, OSError(2, "missing", f"/tmp/api_key={file_key}")]) from inner
        except ExceptionGroup:
            logger.opt(exception=True).error("the crash")
        await trio.testing.wait_all_tasks_blocked()
    text = (tmp_path / "logs" / "beamclaw.log").read_text()
    assert "the crash" in text and "retry failed" in text
    assert [secret for secret in _CHAIN_SECRETS if secret in text] == []


def test_the_first_record_scrubbed_may_be_the_one_that_loads_the_rules() -> None:
    """Loading the rules logs nothing: a record that triggers the load must not load them again.

    In a fresh interpreter, so the rules are not cached yet; it used to recurse until
    the stack ran out, record after record, and the daemon took minutes to start.
    """
    code = (
        "from loguru import logger\n"
        "from beamclaw_obs._detector import default_rules\n"
        "import beamclaw_obs as obs\n"
        "obs.install_scrubbing_patcher()\n"
        "default_rules.cache_clear()\n"
        "logger.remove()\n"
        "logger.add(sys.stdout, format='{message}')\n"
        "logger.info('key sk-ant-api03-Zq8vT3xLmN4pR7sK2wY9aB6cZq8vT3xLmN4pR7sK2wY9aB6c')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == ["key [REDACTED]"]
    assert "RecursionError" not in done.stderr


async def test_with_no_loguru_sink_events_still_reach_the_other_backends(tmp_path: Path) -> None:
    """A TUI running its own daemon removes loguru's sinks; with ``log_file = false`` none is left."""
    sink: list[obs.ObsEvent] = []
    tree = obs.supervision_tree({"log_file": False}, tmp_path)
    tree = sv.Supervisor([*tree.children, sv.ChildSpec("collect", Collect.start, args=(sink,))], name="obs")
    logger.remove()
    try:
        async with sv.open_supervisor(tree):
            obs.emit("turn_complete", outcome="ok")
            await trio.testing.wait_all_tasks_blocked()
            assert [e.name for e in sink if e.name == "turn_complete"] == ["turn_complete"]
    finally:
        logger.add(sys.stderr, level="DEBUG", diagnose=False, backtrace=True)


class Unsure(Collect):
    """A backend whose `wants` fails."""

    def wants(self, event: str) -> bool:
        raise RuntimeError("no idea")


async def test_a_backend_whose_wants_fails_gets_every_event() -> None:
    unsure: list[obs.ObsEvent] = []
    tree = sv.Supervisor([sv.ChildSpec("manager", Manager.start), sv.ChildSpec("unsure", Unsure.start, args=(unsure,))])
    async with sv.open_supervisor(tree):
        obs.emit("anything", n=1)
        await trio.testing.wait_all_tasks_blocked()
        assert [e.data for e in unsure if e.name == "anything"] == [{"n": 1}]
