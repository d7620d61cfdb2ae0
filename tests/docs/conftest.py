"""The docs site's hooks, imported from docs/hooks/ (a folder of mkdocs hooks, not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_hook(name: str) -> ModuleType:
    """The module of ``docs/hooks/<name>.py``, as mkdocs loads it."""
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
