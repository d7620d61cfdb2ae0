"""The scrubber: credentials out of every text before it is stored, logged or sent on.

What is a credential is data: gitleaks' rule set and a few rules of ours for chat text
(`_rules`, ``rules/*.toml``), run as gitleaks runs them (`_detector`), plus every value
the daemon holds as a secret, in any encoding (`_held_secrets`). Only the secret part
of a match is replaced (``password=[REDACTED]``, ``https://user:[REDACTED]@host``),
so the text stays readable.

Each text is scanned twice when it holds a backslash: as it is, and with its escape
sequences blanked out (`_escapes`), so a key inside JSON-escaped text is found too;
the union of what both views find is redacted in the original.

Every pattern is RE2: the time to scrub a text is linear in its length, whatever it
holds. A stream is scrubbed piece by piece with `StreamScrubber`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._detector import Span, default_rules, scan
from ._escapes import unescaped_view
from ._held_secrets import MIN_LENGTH, held_spans, register_secret
from ._spans import REDACTED, merge, redact, to_token_end

__all__ = ["REDACTED", "find_spans", "register_secret", "scrub", "scrub_data"]

#: Shorter texts are left as they are: no credential worth a rule fits in them, and
#: held values are at least this long.
_SHORTEST: Final = MIN_LENGTH


def find_spans(text: str, start: int = 0) -> tuple[list[Span], list[Span]]:
    """(merged spans to redact, every span a rule matched or a held value occupies) in *text*.

    Only what begins at *start* or later is found; the text before it is context.
    """
    rules = default_rules()
    found = scan(text, rules, start)
    secrets, matches = list(found.secrets), list(found.matches)
    if "\\" in text:
        escaped = scan(unescaped_view(text), rules, start)
        secrets += escaped.secrets
        matches += escaped.matches
    secrets = [to_token_end(text, span) for span in secrets]
    held = held_spans(text, start)
    return merge(secrets + held), matches + secrets + held


def scrub(text: str) -> str:
    """Return *text* with every credential replaced by ``[REDACTED]``."""
    if len(text) < _SHORTEST:
        return text
    spans, _ = find_spans(text)
    return redact(text, spans) if spans else text


def scrub_data(value: Any) -> Any:
    """`scrub` every string inside *value* (dicts, lists and tuples, keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {scrub_data(k): scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_data(v) for v in value)
    return value
