"""The model's Markdown as Telegram HTML, in messages of at most 4,096 characters.

Telegram's HTML knows <b>, <i>, <s>, <code>, <pre>, <a> and <blockquote>, and nothing
else: headings become bold lines, lists keep their bullets, quoted lines one
blockquote, a fenced block <pre> (with its language, when it names one), and tables
aligned plain text inside <pre> (CJK and emoji counted as two columns, as a monospace
font shows them). Everything else is escaped. The tags come out properly nested even
when the Markdown's emphasis crosses (see `balanced`), and `chunks` cuts the result
into messages that are each valid on their own (see `split_html`).
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Final

from ._telegram_html import LIMIT, balanced
from ._telegram_split import split_html

__all__ = ["LIMIT", "chunks", "to_html", "width"]

# A fence without its closing line (a reply cut short) runs to the end of the text.
_FENCE: Final = re.compile(r"^```([^\n`]*)\n(.*?)(?:^```[ \t]*$|\Z)", re.S | re.M)
_LANGUAGE: Final = re.compile(r"[\w+#.-]+")
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


def _emphasis(text: str) -> str:
    """Bold, italic and strike-through on already escaped text."""
    text = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: f"<b>{m.group(1) or m.group(2)}</b>", text)
    text = re.sub(
        r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?!\w)|(?<![\w_])_(?!\s)(.+?)(?<!\s)_(?!\w)",
        lambda m: f"<i>{m.group(1) or m.group(2)}</i>",
        text,
    )
    return re.sub(r"~~(.+?)~~", r"<s>\1</s>", text)


def _inline(text: str) -> str:
    """Escape, then turn inline Markdown (code, links, bold, italic, strike) into tags.

    Code spans and links are set aside first, so emphasis never lands inside code or a
    link's address (``https://x/__init__.py`` stays an address).
    """
    kept: list[str] = []

    def keep(fragment: str) -> str:
        kept.append(fragment)
        return f"\x00{len(kept) - 1}\x00"

    text = re.sub(r"`([^`\n]+)`", lambda m: keep(f"<code>{html.escape(m.group(1), quote=False)}</code>"), text)
    text = html.escape(text, quote=False)
    # The text is escaped already, so the URL is too (only a quote would break the attribute).
    text = re.sub(
        r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)",
        lambda m: keep(f'<a href="{m.group(2).replace(chr(34), "%22")}">{_emphasis(m.group(1))}</a>'),
        text,
    )
    text = _emphasis(text)
    while "\x00" in text:  # a link's label may hold a code span: restore until none is left
        text = re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)
    return text


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
        if re.match(r"^>\s?", line):
            j = i
            while j < len(lines) and re.match(r"^>\s?", lines[j]):
                j += 1
            quoted = "\n".join(_inline(re.sub(r"^>\s?", "", q)) for q in lines[i:j])
            out.append(f"<blockquote>{quoted}</blockquote>")
            i = j
            continue
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        bullet = re.match(r"^(\s*)[-*+]\s+(.*)$", line)
        if heading:
            out.append(f"<b>{_inline(heading.group(1))}</b>")
        elif bullet:
            out.append(f"{bullet.group(1)}• {_inline(bullet.group(2))}")
        else:
            out.append(_inline(line))
        i += 1
    return "\n".join(out)


def _code_block(info: str, code: str) -> str:
    language = info.strip().split()[0] if info.strip() else ""
    body = html.escape(code.rstrip("\n"), quote=False)
    if _LANGUAGE.fullmatch(language):
        return f'<pre><code class="language-{language}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def to_html(markdown: str) -> str:
    """Telegram HTML for *markdown*, its tags properly nested."""
    markdown = markdown.replace("\x00", "")  # the placeholder character of `_inline`
    parts = []
    position = 0
    for fence in _FENCE.finditer(markdown):
        parts.append(_block(markdown[position : fence.start()]))
        parts.append(_code_block(fence.group(1), fence.group(2)))
        position = fence.end()
    parts.append(_block(markdown[position:]))
    return balanced("".join(parts).strip())


def chunks(markdown: str, limit: int = LIMIT) -> list[str]:
    """*markdown* as the Telegram HTML messages that carry it: each valid alone, none over *limit*."""
    return split_html(to_html(markdown), limit)
