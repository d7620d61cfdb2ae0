"""Views of a text with its escape sequences undone, for finding secrets in JSON.

A key inside JSON-escaped text (a tool call's arguments, a stored message) sits right
after ``\\n`` or ``\\"``: the letter of the escape is glued to it and the rules' word
boundaries fail (``"a\\nsk-ant-api03-…"``). In `unescaped_view` every escape (``\\n``,
``\\t``, ``\\r``, ``\\"``, ``\\\\``, ``\\/``, ``\\b``, ``\\f``, ``\\uXXXX``, at any
depth of escaping) becomes as many spaces as it had characters, so a span found in
the view is the same span of the original text.

A key can also be written with escapes inside it (``\\u0073k-or-…``, ``AKIA…\\/…``),
or disguised so that a reader (a browser, a terminal, a URL decoder) still sees it
whole: ``sk-or%2Dv1…``, ``&#115;k-…``, ``\\x73k-…``, a soft hyphen or a zero-width
space inside it, full-width letters. Blanking breaks such a key apart; `decoded_view`
undoes one level of each (JSON and ``\\x`` escapes, ``%XX`` in either case, HTML
numeric entities, invisible characters dropped, full-width ASCII folded) and says where
each of its characters came from, so a span found in it maps back to the original text.
"""

from __future__ import annotations

import bisect
import re
from typing import Final

import attrs

#: Python's ``re`` (see `_ESCAPE` for why that is safe here): a fixed-length pattern.
_UNICODE_ESCAPE: Final = re.compile(r"\\u[0-9A-Fa-f]{4}")
_LETTERS: Final = 'ntr"/bf'
#: Characters a terminal or a browser shows as nothing: dropped from the decoded view.
_INVISIBLE: Final = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
#: Python's ``re``, not RE2, for once: every alternative has a bounded length, so the
#: work at each position is bounded and a pass is linear, and ``re`` hands out a match
#: some ten times faster than RE2's binding (a text of escapes is all matches).
_ESCAPE: Final = re.compile(
    r'\\(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|["\\\\/bfnrt])|%[0-9A-Fa-f]{2}|&#(?:[0-9]{1,7}|[xX][0-9A-Fa-f]{1,6});'
    f"|[{_INVISIBLE}]+"
)
#: Full-width forms of ASCII to ASCII: one character for one, so positions do not move.
_FULL_WIDTH: Final = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_DECODED: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
#: What makes a decoded view worth building: escapes that `unescaped_view` cannot see
#: through (it blanks ``\\n`` or ``\\"`` as well as decoding would, for the rules' sake).
_TRIGGERS: Final = ("\\u", "\\x", "\\/", "%", "&#")
#: The other disguises a decoded view undoes: invisible characters and full-width ASCII.
#: A text with neither these nor a trigger reads the same decoded, so none is built for it.
_DISGUISES: Final = re.compile(f"[{_INVISIBLE}\uff01-\uff5e]")


def unescaped_view(text: str) -> str:
    """*text* with each escape sequence replaced by spaces, length kept.

    The escape letter after a run of backslashes is blanked whatever the run's length,
    so text escaped twice (JSON inside a JSON string) is covered too. Only ``str``
    methods and one RE2 pass: linear in the text.
    """
    if "\\" not in text:
        return text
    if "\\u" in text:
        text = _UNICODE_ESCAPE.sub("      ", text)
    for letter in _LETTERS:
        text = text.replace("\\" + letter, "  ")
    return text.replace("\\", " ")


def _decoded(found: str) -> str:
    """What one match of `_ESCAPE` stands for; a surrogate (half of a pair, or alone) as ``?``:
    RE2 reads UTF-8, which cannot hold one, and no key has one."""
    if found[0] in _INVISIBLE:
        return ""
    if found[0] == "\\" and found[1] not in "ux":
        return _DECODED[found[1]]
    if found[0] == "&":
        code = int(found[3:-1], 16) if found[2] in "xX" else int(found[2:-1])
    else:  # \\uXXXX, \\xXX or %XX
        code = int(found[-4:] if found[1] == "u" else found[-2:], 16)
    return "?" if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)


@attrs.frozen
class Origins:
    """Where the characters of a decoded view come from in the text, kept per escape.

    A text of escapes is all escapes, so nothing per character is built: a position is
    mapped (either way) by a binary search among the escapes, and only the few spans
    that matched ever are.
    """

    view_starts: list[int]  # where each escape's replacement begins in the view
    view_ends: list[int]
    text_starts: list[int]  # where each escape begins in the text
    text_ends: list[int]
    skip: int = 0

    def __getitem__(self, position: int) -> int:
        """The offset in the text of the view's character at *position* (or one past the last)."""
        i = bisect.bisect_right(self.view_starts, position) - 1
        if i < 0:
            return position + self.skip
        if position < self.view_ends[i]:
            return self.text_starts[i] + self.skip
        return self.text_ends[i] + position - self.view_ends[i] + self.skip

    def to_view(self, offset: int) -> int:
        """The position in the view of the text's character at *offset* (an escape's start if inside one)."""
        offset -= self.skip
        if offset <= 0:
            return 0
        i = bisect.bisect_right(self.text_starts, offset) - 1
        if i < 0:
            return offset
        if offset < self.text_ends[i]:
            return self.view_starts[i]
        return self.view_ends[i] + offset - self.text_ends[i]


def decoded_view(text: str, skip: int = 0) -> tuple[str, Origins] | None:
    """*text* from offset *skip* on, with one level of escapes and disguises undone (see the
    module), and where its characters come from; None if there is nothing to undo.

    A span ``(a, b)`` of the view is ``(origins[a], origins[b])`` of *text*. One pass,
    linear in the text.
    """
    part = text[skip:] if skip else text
    ascii_only = part.isascii()
    if not any(trigger in part for trigger in _TRIGGERS) and (ascii_only or _DISGUISES.search(part) is None):
        return None
    folded = part if ascii_only else part.translate(_FULL_WIDTH)
    changed = folded != part
    view_starts: list[int] = []
    view_ends: list[int] = []
    text_starts: list[int] = []
    text_ends: list[int] = []
    shift = 0  # view position minus text position, so far

    def replace(found: re.Match[str]) -> str:
        nonlocal shift
        start, end = found.span()
        decoded = _decoded(found.group())
        view_starts.append(start + shift)
        shift += len(decoded) - (end - start)
        view_ends.append(end + shift)
        text_starts.append(start)
        text_ends.append(end)
        return decoded

    view = _ESCAPE.sub(replace, folded)
    if not text_starts and not changed:
        return None
    return view, Origins(view_starts, view_ends, text_starts, text_ends, skip)
