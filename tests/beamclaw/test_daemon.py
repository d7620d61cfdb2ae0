"""`python -m beamclaw run`: starts the app tree, stops it in reverse on a signal."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import beamclaw

APP_ORDER = ["obs", "cluster", "tools", "memory", "sandbox", "mcp", "core", "scheduler", "a2a", "gateway", "control"]


def _daemon(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "BEAMCLAW_HOME": str(tmp_path / "home"), "BEAMCLAW_LOG_LEVEL": "DEBUG"}
    return subprocess.Popen(
        [sys.executable, "-m", "beamclaw", "run", *args], stderr=subprocess.PIPE, text=True, env=env
    )


def _app(line: str) -> str:
    return line.split('child_id="')[1].split('"', maxsplit=1)[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_run_starts_the_apps_in_order_and_stops_them_in_reverse(tmp_path: Path, sig: int) -> None:
    daemon = _daemon(tmp_path)
    assert daemon.stderr is not None
    lines = []
    for line in daemon.stderr:
        lines.append(line)
        if 'child_started supervisor="beamclaw" child_id="control"' in line:
            break
    daemon.send_signal(sig)
    _, rest = daemon.communicate(timeout=30)
    lines += rest.splitlines()
    assert daemon.returncode == 0
    started = [_app(line) for line in lines if 'child_started supervisor="beamclaw" ' in line]
    stopped = [_app(line) for line in lines if 'child_exited supervisor="beamclaw" ' in line]
    assert started == APP_ORDER
    # obs logs the others' exits; its own comes after its log backend has stopped.
    assert stopped == APP_ORDER[:0:-1]
    assert any("BeamClaw stopped (shutdown)" in line for line in lines)
    home = tmp_path / "home"
    assert home.is_dir() and (home.stat().st_mode & 0o777) == 0o700


def test_bad_config_is_a_clear_error_naming_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[core]\ndefault_provider = \n")
    daemon = _daemon(tmp_path, "--config", str(bad))
    _, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 2
    assert f"{bad}: invalid TOML" in err and "line 2" in err

    bad.write_text("[nonsense]\n")
    daemon = _daemon(tmp_path, "--config", str(bad))
    _, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 2 and "unknown table [nonsense]" in err


def test_disabling_an_app_another_needs_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[obs]\nenabled = false\n")
    with pytest.raises(ValueError, match="app 'cluster' needs obs"):
        beamclaw.build_tree(beamclaw.load_config(config), tmp_path)
    config.write_text("[gateway]\nenabled = false\n[a2a]\nenabled = false\n")
    tree = beamclaw.build_tree(beamclaw.load_config(config), tmp_path)
    assert [spec.id for spec in tree.children] == [*APP_ORDER[:-3], "control"]


def test_the_shipped_config_loads(tmp_path: Path) -> None:
    config = beamclaw.load_config()
    assert config["core"]["providers"]["openrouter"]["api_key"] == {"env": "OPENROUTER_API_KEY"}
    assert [s.id for s in beamclaw.build_tree(config, tmp_path).children] == APP_ORDER


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[core]\nautonomy_level = "wild"\n', "unknown autonomy level 'wild'"),
        ('[tools.bash]\ntimeout_seconds = "x"\n', "tools.bash.timeout_seconds: expected a number, got 'x'"),
        ('[core.providers.openrouter]\nbase_url = "x"\nmodel = "m"\napi_key = "sk-literal"\n',
         'core.providers.openrouter.api_key: a secret must be written { env = "VARIABLE" }'),
        ("[obs]\nlog_fiel = true\n", "[obs]: unknown key 'log_fiel'"),
        ('[core.agentic_loop]\nmemory_flush = "sometimes"\n', "memory_flush must be one of private, daily_log, off"),
        ('[memory.embedding]\nprovider = "magic"\n', "memory.embedding.provider must be one of local, openai, none"),
        ("[memory.search]\nchunk_size = 100\nchunk_overlap = 100\n", "chunk_overlap from 0 to below it"),
        ('[memory.search]\nworkspace_files = ["../../etc/passwd"]\n', "must be a path inside the workspace"),
        ('[memory.embedding]\napi_key = "sk-literal"\n', "memory.embedding.api_key: a secret must be written"),
    ],
)  # fmt: skip
def test_a_bad_app_table_is_a_clear_error(tmp_path: Path, table: str, message: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(table)
    daemon = _daemon(tmp_path, "--config", str(bad))
    _, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 2 and message in err


def _exits(tmp_path: Path, *args: str, home: Path | None = None, script: str | None = None) -> tuple[int, str]:
    """Run ``beamclaw ARGS`` (or *script*, a Python program) to its end at the default log level."""
    env = {**os.environ, "BEAMCLAW_HOME": str(home or tmp_path / "home")}
    env.pop("BEAMCLAW_LOG_LEVEL", None)
    command = [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "beamclaw", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=60, check=False, stdin=subprocess.DEVNULL
    )
    return done.returncode, done.stderr


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return str(path)


def test_a_port_in_use_is_one_line_naming_the_address_and_the_key(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _exits(tmp_path, "run", "--config", _config(tmp_path, f"[gateway.http]\nport = {port}\n"))
    assert code == 1 and "Traceback" not in err and "sub-exception" not in err
    assert err.splitlines()[-1] == (
        f"beamclaw: could not start gateway/http: cannot listen on 127.0.0.1:{port}: address already in use "
        "(by another BeamClaw daemon or another program); stop it, or set a free port in gateway.http.port "
        f"(traceback in {tmp_path / 'home' / 'logs' / 'beamclaw.log'})"
    )
    logged = (tmp_path / "home" / "logs" / "beamclaw.log").read_text()
    assert "daemon_failed" in logged and "Traceback" in logged and "Address already in use" in logged


def test_a_port_in_use_under_the_tui_is_one_line_too(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _exits(tmp_path, "tui", "--config", _config(tmp_path, f"[gateway.http]\nport = {port}\n"))
    assert code == 1 and "Traceback" not in err
    assert err == (
        f"beamclaw: could not start gateway/http: cannot listen on 127.0.0.1:{port}: address already in use "
        "(by another BeamClaw daemon or another program); stop it, or set a free port in gateway.http.port\n"
    )


@pytest.mark.parametrize("port", ["70000", "-1", "0", '"abc"'])
def test_a_port_out_of_range_is_a_config_error(tmp_path: Path, port: str) -> None:
    code, err = _exits(tmp_path, "run", "--config", _config(tmp_path, f"[gateway.http]\nport = {port}\n"))
    assert code == 2 and "Traceback" not in err
    assert err.startswith("beamclaw: gateway.http.port") and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", [["run"], ["status"], ["agent", "list"], ["pair"], ["tui"]])
def test_a_data_dir_that_cannot_be_one_is_one_line(tmp_path: Path, command: list[str]) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("")
    fix = "point BEAMCLAW_HOME at a directory you can write"
    code, err = _exits(tmp_path, *command, home=a_file)
    assert (code, err) == (2, f"beamclaw: the data dir {a_file} (BEAMCLAW_HOME) is not a directory; {fix}\n")
    code, err = _exits(tmp_path, *command, home=a_file / "below")
    assert (code, err) == (
        2,
        f"beamclaw: the data dir {a_file / 'below'} (BEAMCLAW_HOME) cannot be created: {a_file} is not a "
        f"directory; {fix}\n",
    )


# Every app but obs is one whose child crashes right after each start: each app's
# supervisor gives up, the root restarts the app (after a short backoff), and past
# the root's intensity the root gives up too.
_GIVING_UP = """
import sys, trio
import supervision as sv
import beamclaw._apps as apps
from beamclaw_cli import main

async def heartbeat(task_status=trio.TASK_STATUS_IGNORED):
    secret = "marker-" + "of-a-local-variable"
    task_status.started()
    await trio.sleep(0)
    raise RuntimeError("the disk is full" + " " * (len(secret) - len(secret)))

real = apps.app_tree
def crashing(name, config, home):
    if name == "obs":
        return real(name, config, home)
    return sv.Supervisor([sv.ChildSpec("heartbeat", heartbeat)], name=f"beamclaw_{name}", intensity=1)
apps.app_tree = crashing
raise SystemExit(main(sys.argv[1:]))
"""


def test_a_root_supervisor_that_gives_up_exits_1_with_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, f"[gateway.http]\nport = {_free_port()}\n")
    code, err = _exits(tmp_path, "run", "--config", config, script=_GIVING_UP)
    log_file = tmp_path / "home" / "logs" / "beamclaw.log"
    assert code == 1, err
    assert "Traceback" not in err and "marker-of-a-local-variable" not in err
    root = beamclaw.build_tree({}, tmp_path)
    expected = (
        rf"beamclaw: the root supervisor gave up \(more than {root.intensity} restart\(s\) in {root.period:g} s\); "
        rf"the last to fail: ({'|'.join(APP_ORDER[1:-1])})/heartbeat: RuntimeError: the disk is full "
        rf"\(traceback in {re.escape(str(log_file))}\)"
    )
    assert re.fullmatch(expected, err.splitlines()[-1]), err.splitlines()[-1]
    logged = log_file.read_text()
    assert "Traceback" in logged and "RuntimeError: the disk is full" in logged and "daemon_failed" in logged
    assert "marker-of-a-local-variable" not in logged


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
