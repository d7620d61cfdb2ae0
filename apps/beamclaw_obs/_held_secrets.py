"""Secrets the daemon itself holds, redacted wherever they show up, also encoded.

A key read from the environment (`register_secret`) may have no recognisable shape,
and a tool may print it base64- or hex-encoded (``env | base64``, an HTTP Basic
header, ``xxd``). Each value is redacted as itself, JSON-escaped (up to three times
over), percent-encoded (as a URL would carry it, and every byte as ``%XX``), in lower
and upper case hex, and in standard and URL-safe base64 at each of the three
alignments it can have inside a longer base64 run: for an alignment, the base64
characters that depend on the value's bytes alone, so the value is found whatever
comes before or after it.

A value cut short still gives it away (31 characters of a 32-character token): any
`WINDOW` characters in a row of a value longer than that are redacted too, as are
their hex digits, so what can come out of a held value unredacted is less than
`WINDOW` characters at a time (base64 of a part of a value is not looked for).

The forms are matched as RE2 alternations of literals, one linear pass each. One
alternation holds at most `_GROUP_CHARS` characters of forms: past about 20,000, RE2's
lazily built DFA outgrows its memory budget and RE2 falls back to its NFA, some fifty
times slower (a megabyte took 2 s against 35 ms with 165 values held). A ``str.find``
loop per form is as fast for a handful of values and slower from about twenty
(``bench/scrub_bench.py`` measures both).
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from typing import Any, Final

import re2

from ._rules import compile_re2

#: Values shorter than this are not held: redacting them would mangle ordinary words
#: without protecting anything worth a key.
MIN_LENGTH: Final = 8
#: Any run of this many characters of a held value is redacted (see the module's docstring).
WINDOW: Final = 16
#: A value (or a window of one) with fewer different characters is not a secret worth
#: redacting: ``"x" * 32`` would take every run of x's out of ordinary text.
_MIN_DISTINCT: Final = 5

_BASE64_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")
#: A base64 form leaves up to two characters on each side that mix the value's bits
#: with its neighbours', and padding after it; they go too.
_BASE64_EDGE: Final = 2
_GROUP_CHARS: Final = 12_000
#: A value is redacted JSON-escaped up to this many times (JSON inside JSON, and again: a
#: tool call's arguments in a stored message), whatever else the text holds. The decoded
#: view, built only for a text with a ``\u``, ``%``... in it, undoes one level more.
#: A value with none of ``"``, ``\`` or a control character has no such form of its own.
_ESCAPE_DEPTH: Final = 3

Span = tuple[int, int]

_lock = threading.Lock()
_values: set[str] = set()
_literal_forms: set[str] = set()
_encoded_forms: set[str] = set()
#: A window of a held value (or of its hex) -> (the whole form, where the window starts in it).
_windows: dict[str, list[tuple[str, int]]] = {}
_longest = 0
#: (alternations, base64 forms), rebuilt on first use after a value was added: a
#: daemon registers its secrets one by one at start, and compiles them once.
_compiled: tuple[tuple[Any, ...], frozenset[str]] | None = ((), frozenset())
#: Counts registrations, each once its matcher is dropped (see `held_secrets_generation`).
_generation = 0


def _base64_forms_of(raw: bytes) -> set[str]:
    forms = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw)
        # Characters fully inside the value's bits: from ceil(8*offset/6) to floor(8*(offset+len)/6).
        core = encoded[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6].decode("ascii")
        forms |= {core, core.replace("+", "-").replace("/", "_")}
    return forms


def forms_of(value: str) -> tuple[set[str], set[str]]:
    """(literal forms, base64 forms) under which *value* is redacted."""
    raw = value.encode("utf-8", "surrogatepass")
    every_byte = "".join(f"%{byte:02X}" for byte in raw)
    literal = {
        raw.hex(), raw.hex().upper(),
        urllib.parse.quote(value, safe=""), urllib.parse.quote(value), every_byte, every_byte.lower(),
    }  # fmt: skip
    escaped = value
    for _ in range(_ESCAPE_DEPTH + 1):
        literal.add(escaped)
        escaped = json.dumps(escaped, ensure_ascii=False)[1:-1]
    literal |= set(_windows_of(value))
    return literal, _base64_forms_of(raw)


def _windows_of(value: str) -> dict[str, tuple[str, int]]:
    """Each run of `WINDOW` characters of *value*, and of its hex forms (as many bytes' digits):
    the window -> (the whole form it is part of, where it starts in it)."""
    windows: dict[str, tuple[str, int]] = {}
    if not value.isascii():  # a hex window would not line up with the characters
        forms = [(value, 1)]
    else:
        forms = [(value, 1), (value.encode().hex(), 2), (value.encode().hex().upper(), 2)]
    for form, width in forms:
        size = WINDOW * width
        for start in range(len(form) - size, -1, -width):
            window = form[start : start + size]
            if len(set(window)) >= _MIN_DISTINCT:
                windows[window] = (form, start)
    return windows


def _alternations(forms: list[str]) -> tuple[Any, ...]:
    if not forms:  # an empty alternation would match the empty string at every position
        return ()
    groups: list[list[str]] = [[]]
    size = 0
    for form in forms:
        if size > _GROUP_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(form)
        size += len(form)
    return tuple(compile_re2("|".join(re2.escape(form) for form in group)) for group in groups)


def register_secret(value: str) -> None:
    """Redact *value* from now on, wherever and however encoded it appears.

    Values shorter than `MIN_LENGTH` characters, or made of fewer than five different
    characters, are ignored. Thread-safe and cheap: the matcher is rebuilt once, when
    next used.
    """
    global _longest, _compiled, _generation
    if len(value) < MIN_LENGTH or len(set(value)) < _MIN_DISTINCT:
        return
    with _lock:
        if value in _values:
            return
        _values.add(value)
        literal, encoded = forms_of(value)
        for window, (form, offset) in _windows_of(value).items():
            _windows.setdefault(window, []).append((form, offset))
        _literal_forms.update(literal)
        _encoded_forms.update(encoded)
        _longest = max(_longest, *map(len, literal | encoded))
        _compiled = None
        _generation += 1  # last: a scrub that reads the new generation uses a matcher with the value


def _matcher() -> tuple[tuple[Any, ...], frozenset[str]]:
    global _compiled
    compiled = _compiled
    if compiled is None:
        with _lock:
            if _compiled is None:
                forms = sorted(_literal_forms | _encoded_forms, key=len, reverse=True)  # the longest wins a tie
                _compiled = (_alternations(forms), frozenset(_encoded_forms - _literal_forms))
            compiled = _compiled
    return compiled


def held_secrets_generation() -> int:
    """A number that grows whenever a value is registered, so what was scrubbed before is
    known to need scrubbing again. Read it before scrubbing and keep the result under it:
    it grows only once the new value's matcher is in place, so a scrub racing a
    registration (in another thread) is kept under the older number, never the newer."""
    return _generation


def longest_form() -> int:
    """The length of the longest form of a held value (0 if none): a stream holds back this much."""
    return _longest


def _widen(text: str, start: int, end: int) -> Span:
    for _ in range(_BASE64_EDGE):
        if start > 0 and text[start - 1] in _BASE64_CHARS:
            start -= 1
    for _ in range(_BASE64_EDGE):
        if end < len(text) and text[end] in _BASE64_CHARS:
            end += 1
    while end < len(text) and text[end] == "=":
        end += 1
    return start, end


def held_spans(text: str, begin: int = 0) -> list[Span]:
    """Where a held value (in any of its forms) occurs in *text*, from *begin* on.

    Spans of different alternations may overlap; the caller merges them.
    """
    patterns, base64_forms = _matcher()
    spans = []
    for pattern in patterns:
        for found in pattern.finditer(text, begin):
            start, end = found.span()
            if text[start:end] in base64_forms:
                start, end = _widen(text, start, end)
            elif text[start:end] in _windows:
                start, end = _longest_run(text, start, end)
            spans.append((start, end))
    return spans


def _longest_run(text: str, start: int, end: int) -> Span:
    """The span of *text* around a matched window that is part of one held value, as long as it goes.

    Matches do not overlap, so a cut-short value (``key[1:]``) would be redacted one
    window at a time, leaving a tail shorter than a window; this takes the whole run.
    """
    best = (start, end)
    for value, offset in _windows[text[start:end]]:
        left, right, at = start, end, offset
        while left > 0 and at > 0 and text[left - 1] == value[at - 1]:
            left, at = left - 1, at - 1
        at = offset + (end - start)
        while right < len(text) and at < len(value) and text[right] == value[at]:
            right, at = right + 1, at + 1
        best = (min(best[0], left), max(best[1], right))
    return best
