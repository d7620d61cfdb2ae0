"""The public surface: every exported name exists, is public, and is documented."""

from __future__ import annotations

import inspect

import supervision as sv


def test_every_name_in_all_exists_and_nothing_private_is_exported() -> None:
    for name in sv.__all__:
        assert hasattr(sv, name), name
        assert not name.startswith("_"), name
    assert len(set(sv.__all__)) == len(sv.__all__)


def test_every_public_name_is_in_all() -> None:
    public = {n for n in vars(sv) if not n.startswith("_")} - {"annotations"}
    assert public <= set(sv.__all__), public - set(sv.__all__)


def test_public_classes_and_functions_have_docstrings() -> None:
    missing = [
        name
        for name in sv.__all__
        if (inspect.isclass(obj := getattr(sv, name)) or inspect.isfunction(obj)) and not inspect.getdoc(obj)
    ]
    assert missing == []


def test_implementation_modules_are_private() -> None:
    import pkgutil

    modules = [m.name for m in pkgutil.iter_modules(sv.__path__)]
    assert all(m.startswith("_") or m == "pg" for m in modules), modules
