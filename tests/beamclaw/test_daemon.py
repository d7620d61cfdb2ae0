"""`python -m beamclaw run`: starts the app tree, stops it in reverse on a signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import beamclaw

APP_ORDER = ["obs", "memory", "tools", "sandbox", "mcp", "core", "scheduler", "a2a", "gateway", "control"]


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
    with pytest.raises(ValueError, match="app 'memory' needs obs"):
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
    ],
)  # fmt: skip
def test_a_bad_app_table_is_a_clear_error(tmp_path: Path, table: str, message: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(table)
    daemon = _daemon(tmp_path, "--config", str(bad))
    _, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 2 and message in err
