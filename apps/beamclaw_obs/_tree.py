"""The obs app's tree: the manager, then the log and metrics backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import supervision as sv

from ._log_backend import LogBackend
from ._manager import Manager
from ._metrics_backend import MetricsBackend


def supervision_tree(table: dict[str, Any], data_dir: Path) -> sv.Supervisor:
    """Config keys: ``log_file`` (bool, default true: ``logs/beamclaw.log`` in the data
    dir, rotated at 10 MB, five kept) and ``log_level`` (for that file, default INFO)."""
    unknown = set(table) - {"enabled", "log_file", "log_level"}
    if unknown:
        raise ValueError(f"[obs]: unknown key {sorted(unknown)[0]!r} (known: enabled, log_file, log_level)")
    log_file = data_dir / "logs" / "beamclaw.log" if table.get("log_file", True) else None
    level = str(table.get("log_level", "INFO"))
    return sv.Supervisor(
        [
            sv.ChildSpec("manager", Manager.start),
            sv.ChildSpec("log", LogBackend.start, args=(log_file, level)),
            sv.ChildSpec("metrics", MetricsBackend.start),
        ],
        name="beamclaw_obs",
        # Telemetry is fire-and-forget: a backend that keeps crashing is restarted,
        # never escalated (which would restart the app for nothing it can fix).
        intensity=20,
        period=10.0,
    )
