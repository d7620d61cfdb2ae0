"""The model's Markdown as Telegram HTML, in messages of at most 4,096 characters.

Telegram's HTML knows <b>, <i>, <s>, <code>, <pre>, <a> and <blockquote>, and nothing
else: headings become bold lines, lists keep their bullets, quoted lines one
blockquote, a fenced block <pre> (with its language, when it names one), and tables
aligned plain text inside <pre> (CJK and emoji counted as two columns, as a monospace
font shows them). Everything else is escaped. The tags come out properly nested even
when the Markdown's emphasis crosses (see `balanced`), and `chunks` cuts the result
into messages that are each valid on their own (see `split_html`).

Why not telegramify-markdown (plain text and entities, measured in
bench/telegram_format_bench.py): it is 12-70x faster on ordinary replies (pulldown-cmark
in Rust; 30 ms against 0.5-0.8 s for 40 KB), but through its public API it loses on what
a model may write. Its spoiler pattern backtracks: ``||a``, 40,000 line breaks, ``b||``
(40 KB) took 175 s there and 0.1 s here (formatted and split), and formatting runs on
the event loop. HTML-looking text is dropped (``<script>x</script>`` becomes nothing,
``a <b> c`` loses its ``<b>``), a lone surrogate raises, and its splitter cuts only at
line breaks (a mid-word hard cut otherwise) in time proportional to messages times
entities. Working round all that means its private parser steps and walker, and a
splitter of our own: not less code, nor safer.
"""

from __future__ import annotations

import bisect
import html
import unicodedata
from typing import Final

import attrs
import re2

from ._telegram_html import LIMIT, balanced
from ._telegram_split import split_html
from ._unicode_classes import SPACE, is_word, without_surrogates

__all__ = ["LIMIT", "chunks", "to_html", "width"]

# Every pattern here runs under RE2 (linear time, whatever the model wrote); ``SPACE``
# keeps ``\s`` Unicode, as it was under `re`. The emphasis rules need look-arounds,
# which RE2 has not, so `_emphasis` is a scanner of its own.

# A fence without its closing line (a reply cut short) runs to the end of the text.
_FENCE: Final = re2.compile(r"(?ms)^```([^\n`]*)\n(.*?)(?:^```[ \t]*$|\z)")
_TABLE_ROW: Final = re2.compile(rf"[{SPACE}]*\|.*\|[{SPACE}]*")
_TABLE_RULE: Final = re2.compile(rf"[{SPACE}]*\|?[{SPACE}:|-]+\|?[{SPACE}]*")
_HEADING: Final = re2.compile(rf"#{{1,6}}[{SPACE}]+(.*)")
_BULLET: Final = re2.compile(rf"([{SPACE}]*)[-*+][{SPACE}]+(.*)")
_CODE_SPAN: Final = re2.compile(r"`([^`\n]+)`")
_LINK: Final = re2.compile(rf"\[([^\]\n]+)\]\((https?://[^){SPACE}]+)\)")
# What inline Markdown and escaping act on: a line with none of these is its own HTML.
_MARKUP: Final = frozenset("`[*_~<>&")


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
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in lines
        if not _TABLE_RULE.fullmatch(line)
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


@attrs.frozen
class _Emphasis:
    """One kind of emphasis marker and the tag it becomes.

    A doubled marker (``**``, ``__``, ``~~``) closes at the next one with at least one
    character between. A single one (``*``, ``_``) is *flanking*, as in CommonMark: it
    opens only where no word character (nor the same marker) comes before it and no
    space after, and closes only where no space comes before and no word character
    after, so ``snake_case_name`` and ``2*3*4`` stay as they are.
    """

    marker: str
    tag: str

    @property
    def flanking(self) -> bool:
        return len(self.marker) == 1

    def opens(self, text: str, index: int) -> bool:
        if not text.startswith(self.marker, index):
            return False
        if not self.flanking:
            return True
        before = text[index - 1] if index else ""
        after = text[index + 1] if index + 1 < len(text) else ""
        return not (before and (is_word(before) or before == self.marker)) and bool(after) and not after.isspace()

    def closers(self, text: str) -> list[int]:
        """Every index where this marker may close (whichever opening it closes), in order."""
        found = []
        index = text.find(self.marker)
        while index != -1:
            if not self.flanking:
                found.append(index)
            elif index and not text[index - 1].isspace():
                after = text[index + 1] if index + 1 < len(text) else ""
                if not (after and is_word(after)):
                    found.append(index)
            index = text.find(self.marker, index + 1)
        return found


_BOLD: Final = (_Emphasis("**", "b"), _Emphasis("__", "b"))
_ITALIC: Final = (_Emphasis("*", "i"), _Emphasis("_", "i"))
_STRIKE: Final = (_Emphasis("~~", "s"),)


def _emphasize(line: str, kinds: tuple[_Emphasis, ...]) -> str:
    r"""One left-to-right pass that wraps each marked span of *kinds* in its tag.

    What ``re.sub`` did with ``\*\*(.+?)\*\*|__(.+?)__`` (or the flanking italic
    rules), in time linear in the line: at each marker that may open, the earliest
    closing marker at least one character on (found by bisection in the closers listed
    once); the span's inside is not looked at again in this pass.
    """
    closers = {kind: kind.closers(line) for kind in kinds}
    starts = sorted({index for kind in kinds for index in _finds(line, kind)})
    out: list[str] = []
    done = 0  # everything before this index is in `out` or inside a span
    for index in starts:
        if index < done:
            continue
        for kind in kinds:
            if not kind.opens(line, index):
                continue
            ends = closers[kind]
            at = bisect.bisect_left(ends, index + len(kind.marker) + 1)
            if at == len(ends):
                continue
            end = ends[at]
            inside = line[index + len(kind.marker) : end]
            out.append(f"{line[done:index]}<{kind.tag}>{inside}</{kind.tag}>")
            done = end + len(kind.marker)
            break
    out.append(line[done:])
    return "".join(out)


def _finds(text: str, kind: _Emphasis) -> list[int]:
    """Every index where *kind*'s marker starts (overlapping: ``***`` has ``**`` at 0 and 1)."""
    found = []
    index = text.find(kind.marker)
    while index != -1:
        found.append(index)
        index = text.find(kind.marker, index + 1)
    return found


def _emphasis(text: str) -> str:
    """Bold, italic and strike-through on already escaped text (a span never crosses a line)."""
    lines = text.split("\n")
    for kinds in (_BOLD, _ITALIC, _STRIKE):
        lines = [_emphasize(line, kinds) for line in lines]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """Escape, then turn inline Markdown (code, links, bold, italic, strike) into tags.

    Code spans and links are set aside first, so emphasis never lands inside code or a
    link's address (``https://x/__init__.py`` stays an address). Most lines of a reply
    have no `_MARKUP` at all, and are returned as they are at once.
    """
    if _MARKUP.isdisjoint(text):
        return text
    kept: list[str] = []

    def keep(fragment: str) -> str:
        kept.append(fragment)
        return f"\x00{len(kept) - 1}\x00"

    text = _CODE_SPAN.sub(lambda m: keep(f"<code>{html.escape(m.group(1), quote=False)}</code>"), text)
    text = html.escape(text, quote=False)
    # The text is escaped already, so the URL is too (only a quote would break the attribute).
    text = _LINK.sub(
        lambda m: keep(f'<a href="{m.group(2).replace(chr(34), "%22")}">{_emphasis(m.group(1))}</a>'),
        text,
    )
    text = _emphasis(text)
    while "\x00" in text:  # a link's label may hold a code span: restore until none is left
        # The text has no NUL but the placeholders' (`to_html` drops them), so every
        # odd piece between NULs is a placeholder's number.
        pieces = text.split("\x00")
        pieces[1::2] = [kept[int(number)] for number in pieces[1::2]]
        text = "".join(pieces)
    return text


def _unquoted(line: str) -> str:
    """A quoted line without its ``>`` and the one space (if any) after it."""
    rest = line[1:]
    return rest[1:] if rest[:1].isspace() else rest


def _block(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "|" in line and _TABLE_ROW.fullmatch(line) and i + 1 < len(lines) and _TABLE_RULE.fullmatch(lines[i + 1]):
            j = i
            while j < len(lines) and (_TABLE_ROW.fullmatch(lines[j]) or _TABLE_RULE.fullmatch(lines[j])):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
            continue
        if line.startswith(">"):
            j = i
            while j < len(lines) and lines[j].startswith(">"):
                j += 1
            quoted = "\n".join(_inline(_unquoted(q)) for q in lines[i:j])
            out.append(f"<blockquote>{quoted}</blockquote>")
            i = j
            continue
        # Each pattern only where it may match: RE2's call costs more than the test.
        heading = _HEADING.fullmatch(line) if line.startswith("#") else None
        bullet = _BULLET.fullmatch(line) if line.lstrip()[:1] in {"-", "*", "+"} else None
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
    if language and all(is_word(char) or char in "+#.-" for char in language):
        return f'<pre><code class="language-{language}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def to_html(markdown: str) -> str:
    """Telegram HTML for *markdown*, its tags properly nested."""
    markdown = markdown.replace("\x00", "")  # the placeholder character of `_inline`
    markdown = without_surrogates(markdown)  # Telegram could not take them either
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
