"""The model's Markdown as Telegram HTML, in messages of at most 4,096 characters.

Telegram's HTML knows <b>, <i>, <s>, <code>, <pre>, <a> and <blockquote>, and nothing
else: headings become bold lines, lists keep their bullets, and tables become
aligned plain text inside <pre> (CJK and emoji counted as two columns, as a
monospace font shows them). Everything else is escaped.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Final

LIMIT: Final = 4096
_FENCE: Final = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_TABLE_ROW: Final = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE: Final = re.compile(r"^\s*\|?[\s:|-]+\|?\s*$")


def width(text: str) -> int:
    """Columns *text* takes in a monospace font: wide (CJK) and emoji characters count two."""
    total = 0
    for ch in text:
        if unicodedata.combining(ch) or ch in "\u200d\ufe0f":
            continue
        wide = unicodedata.east_asian_width(ch) in {"W", "F"} or ord(ch) >= 0x1F300
        total += 2 if wide else 1
    return total


def _table(lines: list[str]) -> str:
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines if not _TABLE_RULE.match(line)
    ]
    columns = max(len(r) for r in rows)
    rows = [r + [""] * (columns - len(r)) for r in rows]
    widths = [max(width(r[c]) for r in rows) for c in range(columns)]
    out = []
    for i, row in enumerate(rows):
        out.append("  ".join(cell + " " * (widths[c] - width(cell)) for c, cell in enumerate(row)).rstrip())
        if i == 0 and len(rows) > 1:
            out.append("  ".join("-" * w for w in widths))
    return "<pre>" + html.escape("\n".join(out), quote=False) + "</pre>"


def _inline(text: str) -> str:
    """Escape, then turn inline Markdown (code, links, bold, italic, strike) into tags."""
    codes: list[str] = []

    def keep_code(m: re.Match[str]) -> str:
        codes.append(f"<code>{html.escape(m.group(1), quote=False)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    text = re.sub(r"`([^`\n]+)`", keep_code, text)
    text = html.escape(text, quote=False)
    # The text is escaped already, so the URL is too (only a quote would break the attribute).
    text = re.sub(
        r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)",
        lambda m: f'<a href="{m.group(2).replace(chr(34), "%22")}">{m.group(1)}</a>',
        text,
    )
    text = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: f"<b>{m.group(1) or m.group(2)}</b>", text)
    text = re.sub(
        r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?!\w)|(?<![\w_])_(?!\s)(.+?)(?<!\s)_(?!\w)",
        lambda m: f"<i>{m.group(1) or m.group(2)}</i>",
        text,
    )
    text = re.sub(r"~~(.+?)~~", r"<s>\1</s>", text)
    return re.sub(r"\x00(\d+)\x00", lambda m: codes[int(m.group(1))], text)


def _block(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_ROW.match(line) and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            j = i
            while j < len(lines) and (_TABLE_ROW.match(lines[j]) or _TABLE_RULE.match(lines[j])):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
            continue
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        bullet = re.match(r"^(\s*)[-*+]\s+(.*)$", line)
        quote = re.match(r"^>\s?(.*)$", line)
        if heading:
            out.append(f"<b>{_inline(heading.group(1))}</b>")
        elif bullet:
            out.append(f"{bullet.group(1)}• {_inline(bullet.group(2))}")
        elif quote:
            out.append(f"<blockquote>{_inline(quote.group(1))}</blockquote>")
        else:
            out.append(_inline(line))
        i += 1
    return "\n".join(out)


def to_html(markdown: str) -> str:
    """Telegram HTML for *markdown*."""
    parts = []
    position = 0
    for fence in _FENCE.finditer(markdown):
        parts.append(_block(markdown[position : fence.start()]))
        parts.append("<pre>" + html.escape(fence.group(1).rstrip("\n"), quote=False) + "</pre>")
        position = fence.end()
    parts.append(_block(markdown[position:]))
    return "".join(parts).strip()


def split(text: str, limit: int = LIMIT) -> list[str]:
    """*text* in pieces of at most *limit* characters: cut at a paragraph, else a line, else a space."""
    pieces = []
    while len(text) > limit:
        window = text[:limit]
        for separator in ("\n\n", "\n", " "):
            cut = window.rfind(separator)
            if cut > limit // 4:
                break
        else:
            cut = limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text.strip():
        pieces.append(text.rstrip())
    return pieces
