"""Views of a text with its escape sequences undone, for finding secrets in JSON.

A key inside JSON-escaped text (a tool call's arguments, a stored message) sits right
after ``\\n`` or ``\\"``: the letter of the escape is glued to it and the rules' word
boundaries fail (``"a\\nsk-ant-api03-…"``). In `unescaped_view` every escape (``\\n``,
``\\t``, ``\\r``, ``\\"``, ``\\\\``, ``\\/``, ``\\b``, ``\\f``, ``\\uXXXX``, at any
depth of escaping) becomes as many spaces as it had characters, so a span found in
the view is the same span of the original text.

A key can also be written with escapes inside it (``\\u0073k-or-…``, ``AKIA…\\/…``),
which blanking breaks apart: `decoded_view` decodes one level of JSON escapes and
says where each of its characters came from, so a span found in it maps back to the
original text.
"""

from __future__ import annotations

from array import array
from typing import Final

from ._rules import compile_re2

_UNICODE_ESCAPE: Final = compile_re2(r"\\u[0-9A-Fa-f]{4}")
_LETTERS: Final = 'ntr"/bf'
_ESCAPE: Final = compile_re2(r'\\(?:u[0-9A-Fa-f]{4}|["\\\\/bfnrt])')
_DECODED: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _six_spaces(_: object) -> str:
    return "      "


def unescaped_view(text: str) -> str:
    """*text* with each escape sequence replaced by spaces, length kept.

    The escape letter after a run of backslashes is blanked whatever the run's length,
    so text escaped twice (JSON inside a JSON string) is covered too. Only ``str``
    methods and one RE2 pass: linear in the text.
    """
    if "\\" not in text:
        return text
    if "\\u" in text:
        text = _UNICODE_ESCAPE.sub(_six_spaces, text)
    for letter in _LETTERS:
        text = text.replace("\\" + letter, "  ")
    return text.replace("\\", " ")


def _decoded(escape: str) -> str:
    """One escape's character; a surrogate (half of a pair, or alone) as ``?``: RE2 reads UTF-8,
    which cannot hold one, and no key has one."""
    if escape[1] != "u":
        return _DECODED[escape[1]]
    code = int(escape[2:], 16)
    return "?" if 0xD800 <= code <= 0xDFFF else chr(code)


def decoded_view(text: str) -> tuple[str, array[int]] | None:
    """*text* with one level of JSON escapes decoded, and for each of its characters (and
    one past the last) the offset in *text* where it begins; None if *text* has none.

    A span ``(a, b)`` of the view is ``(origin[a], origin[b])`` of *text*. One RE2 pass,
    linear in the text.
    """
    if "\\" not in text:
        return None
    pieces: list[str] = []
    origin: array[int] = array("q")
    position = 0
    for found in _ESCAPE.finditer(text):
        start, end = found.span()
        pieces.append(text[position:start])
        origin.extend(range(position, start))
        escape = found.group()
        pieces.append(_decoded(escape))
        origin.append(start)
        position = end
    if position == 0:
        return None
    pieces.append(text[position:])
    origin.extend(range(position, len(text) + 1))
    return "".join(pieces), origin
