"""Python's ``\\s`` and ``\\w``, for RE2 patterns and hand-written scanners.

The Telegram formatter's patterns run under RE2, which takes linear time on any input
(Python's `re` backtracks, and some of those patterns took quadratic or cubic time on
a line of spaces or a run of ``*``). RE2 reads ``\\s`` and ``\\w`` as ASCII only;
these keep every match what it was under `re`, where both are Unicode.
"""

from __future__ import annotations

from typing import Final

#: The characters of Python's ``\s`` (exactly those for which `str.isspace` is true),
#: as the inside of an RE2 character class.
SPACE: Final = r"\t\n\x0b\f\r\x1c-\x20\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"


def is_word(char: str) -> bool:
    """Whether *char* is in Python's ``\\w`` (a letter, a digit of any script, or ``_``)."""
    return char.isalnum() or char == "_"


_SURROGATES: Final = dict.fromkeys(range(0xD800, 0xE000), "\ufffd")


def without_surrogates(text: str) -> str:
    """*text* with each lone surrogate (JSON's ``"\\ud800"`` decodes to one) replaced by U+FFFD.

    RE2 works on UTF-8, which cannot hold them: the wrapper raises UnicodeEncodeError.
    """
    return text if text.isascii() else text.translate(_SURROGATES)
