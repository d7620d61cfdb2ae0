"""What every benchmark's command line shares: ``--quick``, and where its figures go."""

from __future__ import annotations

import argparse
import json
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
