"""Each app's public surface: its ``__all__`` names exist and are all it shows; modules are private."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

import beamclaw

APPS = ["beamclaw_base", *(f"beamclaw_{name}" for name in beamclaw.APPS)]


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("name", APPS)
def test_all_names_exist_and_every_public_name_is_listed(name: str) -> None:
    module = _module(name)
    exported: list[str] = module.__all__
    assert len(set(exported)) == len(exported)
    assert all(hasattr(module, n) and not n.startswith("_") for n in exported)
    public = {n for n in vars(module) if not n.startswith("_")} - {"annotations"}
    public -= {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert public <= set(exported), public - set(exported)


@pytest.mark.parametrize("name", APPS)
def test_implementation_modules_are_private(name: str) -> None:
    modules = [m.name for m in pkgutil.iter_modules(_module(name).__path__)]
    assert all(m.startswith("_") for m in modules), modules
