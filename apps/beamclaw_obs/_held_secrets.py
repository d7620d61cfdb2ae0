"""Secrets the daemon itself holds, redacted wherever they show up, also encoded.

A key read from the environment (`register_secret`) may have no recognisable shape,
and a tool may print it base64- or hex-encoded (``env | base64``, an HTTP Basic
header, ``xxd``). Each value is redacted as itself, JSON-escaped, in lower and upper
case hex, and in standard and URL-safe base64 at each of the three alignments it can
have inside a longer base64 run: for an alignment, the base64 characters that depend
on the value's bytes alone, so the value is found whatever comes before or after it.

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
from typing import Any, Final

import re2

from ._rules import compile_re2

#: Values shorter than this are not held: redacting them would mangle ordinary words
#: without protecting anything worth a key.
MIN_LENGTH: Final = 8

_BASE64_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")
#: A base64 form leaves up to two characters on each side that mix the value's bits
#: with its neighbours', and padding after it; they go too.
_BASE64_EDGE: Final = 2
_GROUP_CHARS: Final = 12_000

Span = tuple[int, int]

_lock = threading.Lock()
_values: set[str] = set()
_literal_forms: set[str] = set()
_encoded_forms: set[str] = set()
_longest = 0
#: (alternations, base64 forms), rebuilt on first use after a value was added: a
#: daemon registers its secrets one by one at start, and compiles them once.
_compiled: tuple[tuple[Any, ...], frozenset[str]] | None = ((), frozenset())


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
    literal = {value, json.dumps(value, ensure_ascii=False)[1:-1], raw.hex(), raw.hex().upper()}
    return literal, _base64_forms_of(raw)


def _alternations(forms: list[str]) -> tuple[Any, ...]:
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

    Values shorter than `MIN_LENGTH` characters are ignored. Thread-safe and cheap:
    the matcher is rebuilt once, when next used.
    """
    global _longest, _compiled
    if len(value) < MIN_LENGTH:
        return
    with _lock:
        if value in _values:
            return
        _values.add(value)
        literal, encoded = forms_of(value)
        _literal_forms.update(literal)
        _encoded_forms.update(encoded)
        _longest = max(_longest, *map(len, literal | encoded))
        _compiled = None


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
            spans.append((start, end))
    return spans
