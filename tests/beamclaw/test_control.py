"""The daemon's management API over its owner-only socket: every request there is the owner
(an admin), so these are the routes' own behaviour; tests/apps/beamclaw_control has the roles."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

import trio

from tests.support.model_server import scripted_model
from tests.support.sse_client import Event, read_events

from .daemon import api, api_client, cli, environment, start_daemon, write_config


def _restart_of(child: str) -> Callable[[Event], bool]:
    return lambda event: event[0] == "supervision" and event[1]["kind"] == "restart" and event[1]["child_id"] == child


async def _events(
    home: Path, path: str, until: Callable[[Event], bool], found: list[Event] | None = None
) -> list[Event]:
    """The events of the stream at *path* on the socket up to the first one *until* accepts."""
    status, events = await read_events(
        await trio.open_unix_socket(str(home / "control.sock")), path, until, found=found
    )
    assert status == 200
    return events


async def test_the_owner_inspects_kills_and_watches_the_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        try:
            shown = (await api(home, "GET", "/v1/config")).json()
            assert (
                shown["path"] == str(tmp_path / "config.toml") and shown["config"]["core"]["autonomy_level"] == "full"
            )
            assert (await api(home, "GET", "/v1/env-names")).json() == {"names": []}
            names = {row["name"]: row for row in (await api(home, "GET", "/v1/names")).json()["names"]}
            assert "beamclaw.host" in names and names["beamclaw.host"]["kind"] == "gen_server"
            by_name = (await api(home, "GET", "/v1/processes/beamclaw.host")).json()
            by_path = (await api(home, "GET", "/v1/processes/control/host")).json()
            by_pid = (await api(home, "GET", f"/v1/processes/{by_name['pid']}")).json()
            assert by_name["pid"] == by_path["pid"] == by_pid["pid"] == names["beamclaw.host"]["pid"]

            async with trio.open_nursery() as nursery:
                seen: list[Event] = []

                nursery.start_soon(_events, home, "/v1/supervision/events", _restart_of("sighup"), seen)
                with trio.fail_after(60):
                    while not seen:  # until subscribed ("ready")
                        await trio.sleep(0.05)
                killed = (await api(home, "POST", "/v1/supervision/kill", {"path": "control/sighup"})).json()
                assert killed["path"] == "control/sighup" and killed["pid"].startswith("<0.")
            assert seen[0] == ("ready", {})
            ((_, crash),) = [event for event in seen if event[1].get("kind") == "crash"]
            assert crash["supervisor"] == "control" and crash["child_id"] == "sighup" and crash["pid"] == killed["pid"]
            assert crash["reason"] == "KilledOnPurpose: killed on purpose with `beamclaw kill control/sighup`"
            assert seen[-1][1]["supervisor"] == "control" and seen[-1][1]["restarts"] == 1

            status = (await api(home, "GET", "/v1/status")).json()
            assert status["pid"] == daemon.pid and {"core", "gateway", "control"} <= {a["id"] for a in status["apps"]}
            sent = (await api(home, "POST", "/v1/names/beamclaw.host/send", {"message": {"hello": 1}})).json()
            assert sent == {"name": "beamclaw.host", "queued": True}
            sent_line = "the remote console sent {'hello': 1} to beamclaw.host"
            logged = await _events(home, "/v1/logs?lines=1000", lambda event: sent_line in event[1]["message"])
            messages = [data["message"] for name, data in logged if name == "log"]
            assert sent_line in messages[-1] and all(name == "log" for name, _ in logged)
            assert all(set(data) >= {"time", "level", "message"} for _, data in logged)

            checks = (await api(home, "GET", "/v1/doctor")).json()["checks"]
            model_check = next(check for check in checks if check["name"] == "model")
            assert model_check["ok"] and "scripted-model" in model_check["detail"]
            reloaded = (await api(home, "POST", "/v1/reload", {})).json()
            assert reloaded["config_path"] == str(tmp_path / "config.toml") and reloaded["restarted"] == []
            assert (await api(home, "POST", "/v1/stop")).json() == {"stopping": True}
            assert await daemon.wait() == 0
        finally:
            if daemon.returncode is None:
                daemon.send_signal(signal.SIGTERM)
                await daemon.wait()
    assert not (home / "control.sock").exists()


async def test_bad_requests_get_clear_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        daemon = await start_daemon(write_config(tmp_path, model), home)
        try:
            for method, path, body, status, message in [
                (
                    "POST",
                    "/v1/supervision/kill",
                    {"path": "core/sessions_sup/"},
                    400,
                    "ends with '/': name one process",
                ),
                ("POST", "/v1/supervision/kill", {"path": "core/nope"}, 400, "core/nope matches no child"),
                ("POST", "/v1/supervision/kill", {"path": "zz"}, 404, "zz names no app"),
                ("POST", "/v1/supervision/kill", {}, 400, '"path" must be a non-empty string'),
                ("GET", "/v1/processes/<0.999999.0>", None, 404, "no live process <0.999999.0>"),
                ("POST", "/v1/names/nobody/send", {"message": 1}, 404, "no process is registered as 'nobody'"),
                ("POST", "/v1/names/beamclaw.host/send", {}, 400, '"message" is missing'),
                ("GET", "/v1/logs?lines=many", None, 400, '"lines" must be a whole number from 0 to 10000'),
                ("POST", "/v1/reload", {"env": {"KEY": 1}}, 400, '"env" must be an object of strings'),
                (
                    "GET",
                    f"/v1/users/local:{'a' * 1000}/deliveries",
                    None,
                    400,
                    "a user id must be printable and at most",
                ),
            ]:
                with trio.fail_after(60):  # a stream that opened would never end
                    answer = await api(home, method, path, body)
                assert answer.status_code == status, (path, answer.text)
                assert message in answer.json()["error"]["message"], (path, answer.text)
            async with api_client(home) as client:
                broken = await client.post("/v1/supervision/kill", content=b"{not json")
            assert broken.status_code == 400 and "JSON" in broken.json()["error"]["message"]
            config = tmp_path / "config.toml"
            config.write_text(config.read_text() + "[core.agentic_loop]\nmax_tool_iterations = -1\n")
            refused = await api(home, "POST", "/v1/reload", {})
            assert refused.status_code == 409 and refused.json()["error"]["message"].startswith("reload refused: ")
        finally:
            daemon.send_signal(signal.SIGTERM)
            assert await daemon.wait() == 0


async def test_the_cli_says_when_no_daemon_runs(tmp_path: Path) -> None:
    result = await cli(tmp_path / "empty", "status")
    assert result.returncode == 3
    assert "no BeamClaw daemon is running" in result.stderr.decode()


async def test_a_second_daemon_refuses_to_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        config = write_config(tmp_path, model)
        first = await start_daemon(config, home)
        second = await trio.run_process(
            [sys.executable, "-m", "beamclaw", "run", "--config", str(config)],
            env=environment(home),
            capture_stderr=True,
            check=False,
        )
        assert second.returncode == 1
        message = second.stderr.decode()
        # Refused before anything started (not at the gateway's port or the socket).
        assert message == (
            f"beamclaw: another BeamClaw daemon (pid {first.pid}) is running on the data dir {home}; stop it first "
            "(`beamclaw stop`), or give this one its own BEAMCLAW_HOME\n"
        )
        assert (await cli(home, "status")).returncode == 0  # the first one still serves
        first.send_signal(signal.SIGTERM)
        assert await first.wait() == 0
