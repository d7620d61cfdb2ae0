"""The scrubber: credentials out of every text before it is stored, logged or sent on.

What is a credential is data: gitleaks' rule set and a few rules of ours for chat text
(`_rules`, ``rules/*.toml``), run as gitleaks runs them (`_detector`), plus every value
the daemon holds as a secret, in any encoding (`_held_secrets`). Only the secret part
of a match is replaced (``password=[REDACTED]``, ``https://user:[REDACTED]@host``),
so the text stays readable.

A text that holds a backslash is scanned three times: as it is, with its escape
sequences blanked out, and with them decoded (`_escapes`), so a key inside JSON-escaped
text, or written with escapes (``\\u0073k-or-…``), is found too; the union of what the
views find is redacted in the original.

Every pattern is RE2: the time to scrub a text is linear in its length, whatever it
holds. A stream is scrubbed piece by piece with `StreamScrubber`.

The same short texts come back again and again (an event's session id, a turn's text on
its way to the history, the log and the memory), so `scrub` remembers what the last
`_MEMO_ENTRIES` texts of up to `_MEMO_CHARS` characters became, and forgets it all when
a value is registered to be held. It keeps each text's digest, never the text: what it
keeps is scrubbed, so a credential does not stay in memory through it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any, Final

import trio

from ._detector import Span, default_rules, scan
from ._escapes import decoded_view, unescaped_view
from ._held_secrets import MIN_LENGTH, held_secrets_generation, held_spans, register_secret
from ._spans import REDACTED, merge, redact, to_token_end

__all__ = [
    "OFF_LOOP_CHARS",
    "REDACTED",
    "find_spans",
    "held_secrets_generation",
    "register_secret",
    "scrub",
    "scrub_async",
    "scrub_data",
    "valid_unicode",
]

#: What a decoded view keeps before *start*, as context for the rules (a keyword, a boundary).
_DECODED_CONTEXT: Final = 64
#: Longer texts are scrubbed in a worker thread by `scrub_async` (RE2 lets the event loop
#: run meanwhile: a 3 MB text takes about half a second to scrub).
OFF_LOOP_CHARS: Final = 65_536
#: Shorter texts are left as they are: no credential worth a rule fits in them, and
#: held values are at least this long.
_SHORTEST: Final = MIN_LENGTH
#: Texts scrubbed lately (see the module): how many, and how long each may be.
_MEMO_ENTRIES: Final = 1024
_MEMO_CHARS: Final = 1024
#: A text's `_digest` -> what it became.
_memo: dict[bytes, str] = {}
_memo_lock = threading.Lock()
#: The held values' generation `_memo` was filled under.
_memo_held = 0


def find_spans(text: str, start: int = 0) -> tuple[list[Span], list[Span]]:
    """(merged spans to redact, every span a rule matched or a held value occupies) in *text*.

    Only what begins at *start* or later is found; the text before it is context. A
    text with a lone surrogate (``"\\ud800"`` in JSON gives one; UTF-8, and so RE2,
    cannot hold it) is read with each such character as ``?``: same positions, no error.
    """
    try:
        return _find_spans(text, start)
    except UnicodeEncodeError:
        return _find_spans(text.encode("utf-8", "replace").decode("utf-8"), start)


def _find_spans(text: str, start: int) -> tuple[list[Span], list[Span]]:
    rules = default_rules()
    found = scan(text, rules, start)
    secrets, matches = list(found.secrets), list(found.matches)
    held = held_spans(text, start)
    if "\\" in text:
        escaped = scan(unescaped_view(text), rules, start)
        secrets += escaped.secrets
        matches += escaped.matches
    decoded = decoded_view(text, max(0, start - _DECODED_CONTEXT))
    if decoded is not None:
        view, origin = decoded
        begin = origin.to_view(start)
        inside = scan(view, rules, begin)
        secrets += [(origin[a], origin[b]) for a, b in inside.secrets]
        matches += [(origin[a], origin[b]) for a, b in inside.matches]
        held += [(origin[a], origin[b]) for a, b in held_spans(view, begin)]
    secrets = [to_token_end(text, span) for span in secrets]
    return merge(secrets + held), matches + secrets + held


def valid_unicode(text: str) -> str:
    """*text* with each lone surrogate (which UTF-8 cannot hold) as ``?``: what every sink can write."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def scrub(text: str) -> str:
    """Return *text* with every credential replaced by ``[REDACTED]`` (and any lone surrogate by
    ``?``, so that what comes out can be stored and logged)."""
    text = valid_unicode(text)
    if len(text) < _SHORTEST:
        return text
    if len(text) > _MEMO_CHARS:
        return _scrubbed(text)
    held = held_secrets_generation()
    digest = _digest(text)
    done = _memo.get(digest) if held == _memo_held else None
    if done is not None:
        return done
    done = _scrubbed(text)
    _remember(digest, done, held)
    return done


def _digest(text: str) -> bytes:
    """What `_memo` knows *text* by: 128 bits of BLAKE2b, so no two texts share one (about
    a microsecond for a short text, against some ten to scrub it)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _scrubbed(text: str) -> str:
    spans, _ = find_spans(text)
    return redact(text, spans) if spans else text


def _remember(digest: bytes, scrubbed: str, held: int) -> None:
    """Remember what the text of *digest* became, scrubbed under generation *held* of the
    held values (forgotten if one came meanwhile: it may be in the text)."""
    global _memo_held
    with _memo_lock:
        if held != held_secrets_generation():
            return
        if held != _memo_held:
            _memo.clear()
            _memo_held = held
        if len(_memo) >= _MEMO_ENTRIES:
            del _memo[next(iter(_memo))]  # the oldest
        _memo[digest] = scrubbed


def scrub_data(value: Any) -> Any:
    """`scrub` every string inside *value* (dicts, lists and tuples, keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {scrub_data(k): scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_data(v) for v in value)
    return value


async def scrub_async(text: str) -> str:
    """`scrub`, in a worker thread when *text* is long, so that no text freezes the event loop."""
    if len(text) < OFF_LOOP_CHARS:
        return scrub(text)
    return await trio.to_thread.run_sync(scrub, text)
