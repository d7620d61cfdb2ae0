"""Scrubbing a stream: text goes out as soon as nothing that comes later can make it part of a secret.

Scrubbing the whole reply again at every chunk is quadratic (a 30 KB reply streamed in
80-character chunks took 21 s). `StreamScrubber` scans only a bounded window: the
text not yet let out plus a little of what was, and lets out all of it but a tail.
"""

from __future__ import annotations

from typing import Final, final

from ._held_secrets import longest_form
from ._rules import compile_re2
from ._scrubber import find_spans, valid_unicode
from ._spans import REDACTED, Span, redact

#: Already-emitted text kept before the pending text, as the rules' left context (a
#: word boundary, a backslash before an escape letter, the line an allowlist looks at).
_CONTEXT: Final = 512
#: The pending text grows by at least this much between two scans.
_STEP: Final = 128
#: How far back a cut moves to the start of a token (a run without white space).
_TOKEN_REACH: Final = 1024
#: What a token that outgrew the hold may still be made of (the rest of it is dropped).
_TOKEN_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~"
#: What the body of a private key block is made of (base64, headers, line breaks).
_PEM_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=:,- \t\r\n"
_PEM_END: Final = compile_re2(r"(?i)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
#: Kept of a key body being dropped, in case an END line is split between chunks.
_PEM_END_REACH: Final = 128


@final
class StreamScrubber:
    """Scrub a text that arrives in pieces, letting out what is safe as it comes.

    ::

        scrubber = StreamScrubber()
        for chunk in stream:
            show(scrubber.feed(chunk))  # may be "" while a possible secret is held back
        show(scrubber.flush())  # the rest, at the end of the stream

    `feed` returns the text that is now safe to emit (scrubbed), `flush` everything
    still held, scrubbed; after `flush` the scrubber is empty and may take a new stream.
    The concatenation of the returned strings is the scrubbed stream. Not thread-safe:
    one scrubber per stream.

    What is held back: the last *hold* characters (more if a held secret has a longer
    encoded form), and before them the rest of a token (a run without white space, up
    to 1,024 characters) and any text a rule's regex matches or may still match, such as
    a private key block whose END line has not come yet. Output comes in steps of at
    least 128 characters.

    Cost: each scan looks at the held text only (with 512 characters of what was let
    out before it as context), and scans are spaced so that the held text grows by a
    quarter, at least 128 characters, between two of them: N characters in any chunking
    cost O(N) scanning in windows of O(hold) characters (O(max_hold) while a possible
    secret is held), not O(N²).

    Guarantee (what the tests check, with random texts, planted credentials of every
    format, JSON-escaped or not, and random chunkings): no planted secret comes out,
    and the result equals ``scrub(whole_text)`` as long as no held stretch exceeds
    *max_hold*. Why: the text is only ever cut where no match of any rule crosses, and
    each window is scanned from the cut on with the text before it as context, so it
    finds what the whole text's scan finds there. Where that could fail is a rule
    whose match reaches further than a window (gitleaks' greedy curl-auth-user, which
    is why we replace it with a lazy copy) or that depends on a keyword far away; then
    each part is scrubbed as ``scrub`` would scrub it alone.

    Past *max_hold* (a private key or a token longer than that, still going), the held
    text is let out scrubbed, and the match that kept it is redacted to its end: for a
    token, up to the first character that cannot be in a token; for a private key
    block, up to its END line or the first character that cannot be in a key body.
    That may take more than ``scrub`` would (``"sk-" * 400_000`` goes whole, where
    ``scrub`` finds too little entropy in it), never less.

    Args:
        hold: characters always held back at the end (the longest match that a rule
            can still complete by more text); at least 64.
        max_hold: the most held back before text is let out anyway; at least 4 * hold.
    """

    def __init__(self, *, hold: int = 256, max_hold: int = 65_536) -> None:
        if hold < 64:
            raise ValueError(f"hold must be at least 64 characters, not {hold}")
        if max_hold < 4 * hold:
            raise ValueError(f"max_hold must be at least 4 * hold ({4 * hold}), not {max_hold}")
        self._hold = hold
        self._max_hold = max_hold
        self._reset()

    def _reset(self) -> None:
        self._text = ""  # the context (already emitted) followed by the pending text
        self._context = 0
        self._chunks: list[str] = []  # pending text not yet joined to _text
        self._size = 0  # len(_text) + the length of _chunks
        self._next_scan = 0  # scan when this much text is pending
        self._dropping: str | None = None  # "token" or "pem": the rest of an over-long match goes

    def feed(self, chunk: str) -> str:
        """Take the next piece of the stream; return the text now safe to emit (maybe "")."""
        if not isinstance(chunk, str):
            raise TypeError(f"chunk must be a str, not {type(chunk).__name__}")
        if not chunk:
            return ""
        chunk = valid_unicode(chunk)
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size - self._context < self._next_scan:
            return ""
        self._join()
        if self._dropping is not None:
            self._drop_rest(final=False)
            if self._dropping is not None:
                return ""
        return self._advance(final=False)

    def flush(self) -> str:
        """End the stream: return everything still held, scrubbed, and start afresh."""
        self._join()
        if self._dropping is not None:
            self._drop_rest(final=True)
        out = self._advance(final=True)
        self._reset()
        return out

    def _join(self) -> None:
        if self._chunks:
            self._text += "".join(self._chunks)
            self._chunks.clear()

    def _keep(self, text: str, cut: int) -> None:
        """Keep *text* from *cut* on as pending, with what precedes it as context."""
        start = max(0, cut - _CONTEXT)
        self._text, self._context, self._size = text[start:], cut - start, len(text) - start
        pending = len(text) - cut
        self._next_scan = pending + max(_STEP, pending // 4)

    def _advance(self, *, final: bool) -> str:
        text, context = self._text, self._context
        hold = max(self._hold, longest_form() + 16)
        if not final and len(text) - context <= hold:
            self._next_scan = hold + _STEP
            return ""
        spans, matches = find_spans(text, context)
        if final:
            return redact(text, spans, context)
        cut = self._cut(text, context, hold, matches)
        if cut > context:
            out = redact(text, spans, context, cut)
            self._keep(text, cut)
            return out
        if len(text) - context > self._max_hold:
            return self._let_out(text, context, hold, spans, matches)
        self._keep(text, context)
        return ""

    @staticmethod
    def _cut(text: str, context: int, hold: int, matches: list[Span]) -> int:
        """Where to cut: before the tail, the token it ends in, and any match across it."""
        cut = len(text) - hold
        if cut <= context:
            return context
        if not text[cut - 1].isspace() and not text[cut].isspace():
            low = max(context, cut - _TOKEN_REACH)
            blank = max(text.rfind(c, low, cut) for c in " \n\t\r")
            if blank >= 0:
                cut = blank + 1
            elif low == context:
                return context  # the token began in text already let out: wait for its end
        for start, end in sorted(matches, reverse=True):
            if start < cut < end:
                cut = start
        return max(cut, context)

    def _let_out(self, text: str, context: int, hold: int, spans: list[Span], matches: list[Span]) -> str:
        """Held more than max_hold: let it out anyway, redacting what may still be a secret."""
        cut = len(text) - hold
        across = [(start, end) for start, end in matches if start < cut < end]
        if not across:  # only a very long token: cut inside it
            out = redact(text, spans, context, cut)
            self._keep(text, cut)
            return out
        start = max(context, min(s for s, _ in across))
        end = max(e for _, e in across)
        out = redact(text, spans, context, start) + REDACTED
        if "PRIVATE KEY" in text[start : start + 200].upper():
            self._dropping = "pem"
        elif end == len(text):
            self._dropping = "token"
        self._text, self._context, self._size = text[end:], 0, len(text) - end
        self._next_scan = 0
        return out

    def _drop_rest(self, *, final: bool) -> None:
        """Drop the continuation of the over-long match that `_let_out` redacted."""
        pending = self._text[self._context :]
        if self._dropping == "token":
            rest = pending.lstrip(_TOKEN_CHARS)
            if rest:
                self._dropping = None
        else:
            body = len(pending) - len(pending.lstrip(_PEM_CHARS))
            end = _PEM_END.search(pending)
            if end is not None and end.start() <= body:
                rest, self._dropping = pending[end.end() :], None
            elif body < len(pending) or final:
                rest, self._dropping = pending[body:], None
            else:
                rest = pending[-_PEM_END_REACH:]
        self._text, self._context, self._size = rest, 0, len(rest)
        self._next_scan = 0 if self._dropping is None else _PEM_END_REACH + _STEP
