"""The ported OTP cases are named, the names are real, and none is forgotten.

Every `otp` marker names a case of a suite in `otp_suites.SUITES`; a test whose
docstring says it is "OTP's" case carries that case's marker; and every case of the
suites is ported by a test or listed in `otp_suites.NOT_PORTED` with the reason, not
both: together, the conformance table the docs show.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import FunctionType

import pytest

from .otp_suites import NOT_PORTED, SUITES

_HERE = Path(__file__).parent


def _tests() -> Iterator[tuple[str, FunctionType]]:
    for path in sorted(_HERE.glob("test_*.py")):
        module = importlib.import_module(f"{__package__}.{path.stem}")
        for name, value in vars(module).items():
            if name.startswith("test_") and isinstance(value, FunctionType):
                yield f"{path.name}::{name}", value


def _cases(test: FunctionType) -> list[str]:
    """The cases a test's `otp` markers name, on the test itself or on its parameters."""
    cases: list[str] = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "otp":
            cases += mark.args
        elif mark.name == "parametrize":
            for value in mark.args[1]:
                for inner in getattr(value, "marks", ()):
                    if inner.name == "otp":
                        cases += inner.args
    return cases


def _ported() -> dict[str, list[str]]:
    """Case -> the tests that port it."""
    ported: dict[str, list[str]] = {}
    for where, test in _tests():
        for case in _cases(test):
            ported.setdefault(case, []).append(where)
    return ported


def _all_cases() -> set[str]:
    return {f"{suite}:{case}" for suite, cases in SUITES.items() for case in cases}


def test_every_marker_names_a_real_case() -> None:
    unknown = {case: tests for case, tests in _ported().items() if case not in _all_cases()}
    assert unknown == {}


def test_a_test_that_says_it_is_otps_case_carries_its_marker() -> None:
    known = {case.split(":", 1)[1] for case in _all_cases()}
    missing = []
    for where, test in _tests():
        said = re.findall(r"OTP's (\w+)", test.__doc__ or "")
        named = {case.split(":", 1)[1] for case in _cases(test)}
        if said and not named:
            missing.append(where)
        missing += [f"{where}: {word}" for word in said if word in known and word not in named]
    assert missing == []


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_case_is_ported_or_said_why_not(suite: str) -> None:
    ported = _ported()
    cases = {f"{suite}:{case}" for case in SUITES[suite]}
    assert sorted(cases - ported.keys() - NOT_PORTED.keys()) == []
    assert sorted(cases & ported.keys() & NOT_PORTED.keys()) == []
    assert all(NOT_PORTED[case] for case in cases & NOT_PORTED.keys())


def test_not_ported_lists_only_real_cases() -> None:
    assert sorted(NOT_PORTED.keys() - _all_cases()) == []
