"""The supervision page's OTP conformance table, generated from the tests themselves.

Every test of ``tests/supervision/`` that ports a case of OTP's ``supervisor_SUITE`` or
``gen_server_SUITE`` carries ``@pytest.mark.otp("<suite>:<case>")`` (on the test or on one
of its parameters), and ``tests/supervision/otp_suites.py`` lists every case of both
suites, with the reason for each one not ported. The table is built from those two at
build time, so it is as true as the tests (``test_otp_cases.py`` keeps them in step).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Final

#: The line of docs/supervision.md that the generated table replaces.
MARKER: Final = "<!-- otp-cases -->"

_ROOT: Final = str(Path(__file__).resolve().parents[2])


def _tests_module(name: str) -> Any:
    """A module of the tests package, beside docs/ (mkdocs puts only the hooks' folder on the path)."""
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
    return importlib.import_module(f"tests.supervision.{name}")


def ported_cases() -> dict[str, list[str]]:
    """Case (``suite:case``) -> the tests (``file::test``) that port it, read from their
    markers as ``test_otp_cases.py`` reads them (markers on parameters included)."""
    ported: dict[str, list[str]] = _tests_module("test_otp_cases")._ported()
    return ported


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    suites = _tests_module("otp_suites")
    ported = ported_cases()
    rows = []
    for suite in sorted(suites.SUITES):
        for case in sorted(suites.SUITES[suite]):
            key = f"{suite}:{case}"
            if key in ported:
                where = "<br>".join(f"`{test}`" for test in sorted(set(ported[key])))
            else:
                where = "not ported: " + _cell(suites.NOT_PORTED.get(key, "(no reason given)"))
            rows.append(f"| `{suite}` | `{case}` | {where} |")
    done = sum(1 for suite, cases in suites.SUITES.items() for case in cases if f"{suite}:{case}" in ported)
    total = sum(len(cases) for cases in suites.SUITES.values())
    head = [f"{done} of {total} cases ported.", "", "| suite | case | test, or why not |", "|---|---|---|"]
    return "\n".join(head + rows) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs' hook: the page holding `MARKER` gets the table in its place."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
