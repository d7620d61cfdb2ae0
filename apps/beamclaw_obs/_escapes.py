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

from array import array
from typing import Final

from ._rules import compile_re2

_UNICODE_ESCAPE: Final = compile_re2(r"\\u[0-9A-Fa-f]{4}")
_LETTERS: Final = 'ntr"/bf'
#: Characters a terminal or a browser shows as nothing: dropped from the decoded view.
_INVISIBLE: Final = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_ESCAPE: Final = compile_re2(
    r'\\(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|["\\\\/bfnrt])|%[0-9A-Fa-f]{2}|&#(?:[0-9]{1,7}|[xX][0-9A-Fa-f]{1,6});'
    f"|[{_INVISIBLE}]|[\uff01-\uff5e]"
)
_DECODED: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
#: What might be in a decoded view at all (most texts have none of it).
_TRIGGERS: Final = ("\\", "%", "&#")


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


def _decoded(found: str) -> str:
    """What one match of `_ESCAPE` stands for; a surrogate (half of a pair, or alone) as ``?``:
    RE2 reads UTF-8, which cannot hold one, and no key has one."""
    if found in _INVISIBLE:
        return ""
    if found[0] == "\\" and found[1] not in "ux":
        return _DECODED[found[1]]
    if found[0] == "&":
        code = int(found[3:-1], 16) if found[2] in "xX" else int(found[2:-1])
    elif found[0] in "\\%":
        code = int(found[-4:] if found[1] == "u" else found[-2:], 16)
    else:  # a full-width form of an ASCII character
        code = ord(found) - 0xFEE0
    return "?" if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)


def decoded_view(text: str) -> tuple[str, array[int]] | None:
    """*text* with one level of escapes and disguises undone (see the module), and for each
    of its characters (and one past the last) the offset in *text* where it begins; None
    if *text* has none.

    A span ``(a, b)`` of the view is ``(origin[a], origin[b])`` of *text*. One RE2 pass,
    linear in the text.
    """
    if text.isascii() and not any(trigger in text for trigger in _TRIGGERS):
        return None
    pieces: list[str] = []
    origin: array[int] = array("q")
    position = 0
    for found in _ESCAPE.finditer(text):
        start, end = found.span()
        pieces.append(text[position:start])
        origin.extend(range(position, start))
        decoded = _decoded(found.group())
        pieces.append(decoded)
        origin.extend([start] * len(decoded))
        position = end
    if position == 0:
        return None
    pieces.append(text[position:])
    origin.extend(range(position, len(text) + 1))
    return "".join(pieces), origin
