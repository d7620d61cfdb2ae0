"""What every list command prints: a table for people, or ``--json`` for programs.

A table never cuts an id or a name, in a terminal or into a pipe: a program that reads
``beamclaw scheduler list | awk '{print $1}'`` must get ids the other commands accept.
Into a pipe, `console` makes the table as wide as its widest row; in a terminal, the
id and name columns keep their full width and only the free-text columns wrap.

``--json`` prints what the command knows as one JSON document, the strings exactly as
stored: JSON escapes every control character (and, with ``ensure_ascii``, every
non-ASCII one), so it is as safe to print as the table is.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ._terminal_safe import as_text, console

if TYPE_CHECKING:
    pass


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print it as JSON, for a program to read")


def wants_json(args: argparse.Namespace) -> bool:
    """Whether ``--json`` was given (an action left out, ``beamclaw skills``, has no such option)."""
    return bool(getattr(args, "json", False))


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=True))


@attrs.frozen
class Column:
    """A table's column; a *whole* one (an id, a name) is never narrowed or cut, the others wrap."""

    title: str
    whole: bool = False
    right: bool = False


def print_table(columns: Sequence[Column], rows: Iterable[Sequence[object]]) -> None:
    """A table of *rows* (each cell printed as text, never read as markup) with a header."""
    from rich.table import Table

    cells = [[as_text(cell) for cell in row] for row in rows]
    table = Table(box=None, pad_edge=False, header_style="bold")
    for index, column in enumerate(columns):
        widest = max([len(column.title), *(row[index].cell_len for row in cells)])
        table.add_column(
            column.title,
            justify="right" if column.right else "left",
            no_wrap=column.whole,
            min_width=widest if column.whole else None,
            overflow="fold",
        )
    for row in cells:
        table.add_row(*row)
    console().print(table)
