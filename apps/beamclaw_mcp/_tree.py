"""The MCP app's tree.

    beamclaw_mcp (one_for_one)
    ├── servers   (dynamic): one supervisor per enabled server, temporary: a server
    │   └── <name> (one_for_one, max_restarts in restart_period_seconds)
    │       └── connection (transient, restarted with backoff): the server's process
    └── registry  (permanent): starts the servers, keeps their status

A server's supervisor that gives up ends alone (it is temporary): the registry marks
the server ``failed`` and the app, the other servers and the rest of the daemon go on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import supervision as sv

from ._config import parse_mcp_config
from ._registry import SERVERS, McpRegistry


def supervision_tree(table: dict[str, Any], data_dir: Path) -> sv.Supervisor:
    config = parse_mcp_config(table)  # a bad table stops the daemon at start, naming the key
    return sv.Supervisor(
        [
            sv.DynamicSupervisor(intensity=100, period=10.0, name=SERVERS).child_spec("servers"),
            sv.ChildSpec("registry", McpRegistry.start, args=(config,)),
        ],
        strategy=sv.ONE_FOR_ONE,
        intensity=10,
        period=10.0,
        name="beamclaw_mcp",
    )
