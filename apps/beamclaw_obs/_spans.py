"""Spans of a text to redact: merging them, widening them, replacing them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

REDACTED: Final = "[REDACTED]"

#: Characters a token is made of. A rule without an end condition (``glpat-[\w-]{20}``)
#: matches only the first characters of a longer token; the rest is part of the key.
_TOKEN_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_TOKEN_REACH: Final = 256

Span = tuple[int, int]


def to_token_end(text: str, span: Span) -> Span:
    """*span* extended over the token characters right after it (at most `_TOKEN_REACH`)."""
    start, end = span
    after = text[end : end + _TOKEN_REACH]
    return start, end + len(after) - len(after.lstrip(_TOKEN_CHARS))


def merge(spans: Iterable[Span]) -> list[Span]:
    """Sorted, with overlapping spans joined; touching spans stay apart, empty ones go.

    Touching spans are not joined so that scrubbing a text in pieces cut between them
    (a stream) gives the very same text as scrubbing it whole.
    """
    merged: list[Span] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if merged and start < merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def redact(text: str, spans: list[Span], start: int = 0, end: int | None = None) -> str:
    """``text[start:end]`` with each of the merged *spans* (clipped to it) replaced by `REDACTED`."""
    end = len(text) if end is None else end
    pieces: list[str] = []
    position = start
    for span in spans:
        span_start, span_end = max(span[0], start), min(span[1], end)
        if span_end <= span_start:
            continue
        pieces += (text[position:span_start], REDACTED)
        position = span_end
    pieces.append(text[position:end])
    return "".join(pieces)
