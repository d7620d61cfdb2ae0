"""The daemon imports what its apps use at start, and the rest on first use: the MCP SDK
(by the first MCP server, or the first request to ``/mcp``), the local embedding model and
numpy (by the first vector), PyYAML (by the first SKILL.md) and jsonschema (by the first
tool call) are not imported by building the daemon's tree; httpx's own command-line tool
(rich, pygments) never is."""

from __future__ import annotations

import json
import subprocess
import sys

_PROGRAM = """
import importlib, json, sys
import beamclaw._root
from beamclaw._apps import APPS
for name in APPS:
    importlib.import_module(f"beamclaw_{name}")
print(json.dumps(sorted(sys.modules)))
"""


def test_the_daemon_imports_neither_the_mcp_sdk_nor_the_embedding_model() -> None:
    done = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, check=True, timeout=60)
    imported = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert "beamclaw_mcp" in imported and "beamclaw_gateway" in imported  # the apps are there
    unused = {"mcp", "mcp_types", "pydantic", "wordllama", "numpy", "yaml", "jsonschema", "docker", "selenium"}
    unused |= {"rich", "pygments"}  # what httpx's command-line tool imports
    assert imported & unused == set()
