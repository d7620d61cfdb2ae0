"""Text from outside (a model's reply, a user id, an MCP server's stderr) made safe to print.

A terminal obeys the control characters in what it prints: ``ESC ] 0 ;`` retitles the
window, ``ESC ] 52 ;`` writes the clipboard, ``ESC [ 2 J`` clears the screen, a carriage
return overwrites the line just shown (an approval question rewritten under the user's
eyes). rich passes them through, so every string the daemon sends goes through `visible`
before it is printed: each C0 and C1 control other than newline and tab, and DEL, is
shown as its escape (``\\x1b``), never obeyed; a carriage return is dropped (a CRLF
line end stays one line end). Unicode's bidirectional overrides are written out too:
they make a command read differently on screen from what it is.

rich reads markup and emoji codes in every str it prints (a table's cells too), so
what comes from outside goes to rich as `as_text`, and to `print` through `visible`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


_CONTROLS: Final[dict[int, str | None]] = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code not in (0x09, 0x0A)},
    **{code: f"\\u{code:04x}" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
    0x0D: None,
}


def visible(text: str) -> str:
    """*text* with its control characters (newline and tab apart) written out, not obeyed."""
    return text.translate(_CONTROLS)


def as_text(value: object, style: str = "") -> Text:
    """*value* for rich to print as it is: a `Text`, so neither its markup (``[/]``,
    ``[link=...]``) nor its emoji codes (``:smile:``) are read, with its controls made
    `visible`. A str handed to rich is read as markup: ``[/]`` alone makes it raise."""
    from rich.text import Text

    return Text(visible(str(value)), style=style)


def console() -> Console:
    """rich's console for what the daemon answers; into a pipe or a file, lines are never
    wrapped (a reply, a job's message, a table's row: one line each, as sent, for grep)."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, width=100_000, soft_wrap=True)
