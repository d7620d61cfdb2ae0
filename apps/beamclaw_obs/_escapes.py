"""A view of a text with its escape sequences blanked out, for finding secrets in JSON.

A key inside JSON-escaped text (a tool call's arguments, a stored message) sits right
after ``\\n`` or ``\\"``: the letter of the escape is glued to it and the rules' word
boundaries fail (``"a\\nsk-ant-api03-…"``). In this view every escape (``\\n``,
``\\t``, ``\\r``, ``\\"``, ``\\\\``, ``\\/``, ``\\b``, ``\\f``, ``\\uXXXX``, at any
depth of escaping) becomes as many spaces as it had characters, so a span found in
the view is the same span of the original text.
"""

from __future__ import annotations

from typing import Final

from ._rules import compile_re2

_UNICODE_ESCAPE: Final = compile_re2(r"\\u[0-9A-Fa-f]{4}")
_LETTERS: Final = 'ntr"/bf'


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
