"""The CLI is a thin client: a command imports what it needs, not the daemon's apps.

Checked in a fresh interpreter, from its ``sys.modules`` after the command ran: `--help`
and `status` (with no daemon: the same imports, up to the answer) must not import the
apps, the web framework, the MCP SDK, numpy, the terminal UI's prompt_toolkit, nor Trio
and httpx (`status` asks with the standard library's HTTP client). A ``None`` entry in
``sys.modules`` is a module made unimportable (``httpx._main``, see ``beamclaw``), not one
imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Packages only the daemon (or a command that needs an app) imports.
_HEAVY = frozenset(
    {
        "beamclaw_core", "beamclaw_gateway", "beamclaw_control", "beamclaw_memory", "beamclaw_mcp",
        "beamclaw_sandbox", "beamclaw_scheduler", "supervision", "mcp", "quart", "hypercorn", "numpy",
        "tantivy", "prompt_toolkit", "loguru", "docker", "trio", "anyio", "httpcore", "httpx",
    }
)  # fmt: skip

_PROGRAM = """
import json, sys
from beamclaw_cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)))
"""


def _imported(tmp_path: Path, *argv: str) -> set[str]:
    env = {**os.environ, "BEAMCLAW_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, *argv], capture_output=True, text=True, env=env, check=True, timeout=60
    )
    return {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}


@pytest.mark.parametrize("argv", [["--help"], ["status"], ["help", "agent"]])
def test_a_command_that_needs_no_app_imports_none(tmp_path: Path, argv: list[str]) -> None:
    assert _imported(tmp_path, *argv) & _HEAVY == set()


def test_importing_the_release_imports_no_app(tmp_path: Path) -> None:
    program = (
        "import json, sys, beamclaw; beamclaw.data_dir(); "
        "print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)))"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)
    assert {name.split(".")[0] for name in json.loads(done.stdout)} & _HEAVY == set()
