"""What every benchmark shares: ``--quick``, where its figures go, and a timer."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def quick_flag(doc: str | None) -> bool:
    """Parse the command line (only ``--quick``: fewer iterations, a smoke run)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    return bool(parser.parse_args().quick)


def save(name: str, result: dict[str, Any]) -> None:
    """Write *result* to ``bench/results/NAME.json``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2))


def best_time(function: Callable[[], object], budget: float = 0.5) -> float:
    """Seconds per call: the best of as many calls as fit in *budget* (at least 1)."""
    best = float("inf")
    spent = 0.0
    while spent < budget or best == float("inf"):
        started = time.perf_counter()
        function()
        elapsed = time.perf_counter() - started
        best, spent = min(best, elapsed), spent + elapsed
    return best
