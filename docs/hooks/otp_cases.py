"""The supervision page's index of ported OTP cases, generated from the tests themselves.

Every test of ``tests/supervision/`` that ports a case of OTP's ``supervisor_SUITE`` (or
another OTP suite) names it in its docstring ("OTP's sup_stop_infinity: ..."). Listing
those tests at build time keeps the index true as tests are added or renamed.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Final

#: The line of docs/supervision.md that the generated index replaces.
MARKER: Final = "<!-- otp-cases -->"

_TESTS: Final = Path(__file__).resolve().parents[2] / "tests" / "supervision"


def ported_cases(folder: Path = _TESTS) -> list[tuple[str, str, str]]:
    """(file, test, first line of its docstring) of every test whose docstring mentions OTP."""
    found = []
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node) or ""
                if "OTP" in doc:
                    found.append((path.name, node.name, " ".join(doc.split("\n\n")[0].split())))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    rows = ["| test | what it pins |", "|---|---|"]
    rows += [f"| `{file}::{test}` | {_cell(doc)} |" for file, test, doc in ported_cases()]
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs' hook: the page holding `MARKER` gets the index in its place."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
