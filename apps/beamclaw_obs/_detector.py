"""Find secrets in a text with a `RuleSet`, the way gitleaks' ``detectRule`` does.

`scan` returns two lists of spans: the secrets to redact, and every span any rule's
regex matched, kept or not. The stream scrubber needs the second: a match that was
dropped (too little entropy so far, say) may become a secret once more text arrives,
so a stream must never be cut through one.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Final, final

import attrs

from ._rules import Allowlist, Rule, RuleSet, load_rules

#: The rule files shipped in ``beamclaw_obs/rules``, in the order they are read.
RULE_FILES: Final = ("gitleaks.toml", "beamclaw.toml")

#: How far around a match the "line" of a line-target allowlist reaches, each way.
#: gitleaks takes the whole line; a bound keeps the work per finding constant on a
#: megabyte without a newline.
_LINE_REACH: Final = 512

Span = tuple[int, int]


@final
@attrs.frozen
class Scan:
    """What one pass of the rules found: secrets to redact, and every regex match."""

    secrets: list[Span]
    matches: list[Span]


@cache
def default_rules() -> RuleSet:
    """The packaged rule files, compiled once.

    It logs nothing: loguru's patcher scrubs every record with these rules, so a log
    call made while they load would load them again, without end. The log backend
    names the rules that could not be used once they are loaded.
    """
    package = resources.files("beamclaw_obs").joinpath("rules")
    return load_rules(package.joinpath(name).read_text(encoding="utf-8") for name in RULE_FILES)


def shannon_entropy(secret: str) -> float:
    """gitleaks' entropy: frequencies of characters, over the length in UTF-8 bytes."""
    if not secret:
        return 0.0
    size = len(secret.encode("utf-8", "surrogatepass"))
    return -sum(n / size * math.log2(n / size) for n in Counter(secret).values())


def _secret_span(rule: Rule, match: str) -> Span:
    """Where in *match* the secret is (gitleaks' choice).

    gitleaks runs the regex again on the match alone and takes ``secretGroup``, else
    the first capture group that caught something, else the whole match.
    """
    if rule.regex.groups == 0:
        return 0, len(match)
    again = rule.regex.search(match)
    if again is None:
        return 0, len(match)
    if rule.secret_group:
        start, end = again.span(rule.secret_group)
        return (start, end) if start >= 0 else (0, 0)
    for group in range(1, rule.regex.groups + 1):
        start, end = again.span(group)
        if end > start >= 0:
            return start, end
    return 0, len(match)


def _allowlists(rules: RuleSet, rule: Rule) -> tuple[Allowlist, ...]:
    return (*(rules.allowlists if rule.global_allowlists else ()), *rule.allowlists)


@lru_cache(maxsize=4096)
def _judge(rules: RuleSet, rule: Rule, match: str) -> Span | None:
    """The secret's place in *match*, or None if entropy or an allowlist drops it.

    Allowlists that look at the line are left to the caller: all else depends on the
    match alone, so a stream, which sees each match in several windows, judges it once.
    """
    start, end = _secret_span(rule, match)
    secret = match[start:end]
    if not secret:
        return None
    if rule.entropy and shannon_entropy(secret) <= rule.entropy:
        return None
    if any(a.target != "line" and a.allows(secret, match, "") for a in _allowlists(rules, rule)):
        return None
    return start, end


def _line(text: str, start: int, end: int) -> str:
    lo = max(0, start - _LINE_REACH)
    hi = min(len(text), end + _LINE_REACH)
    first = text.rfind("\n", lo, start) + 1 or lo
    last = text.find("\n", end, hi)
    return text[first : hi if last < 0 else last]


def _allowed_on_line(rules: RuleSet, rule: Rule, text: str, match: Span, secret: Span) -> bool:
    line = ""
    for allowlist in _allowlists(rules, rule):
        if allowlist.target == "line":
            line = line or _line(text, *match)
            if allowlist.allows(text[secret[0] : secret[1]], text[match[0] : match[1]], line):
                return True
    return False


def subject(text: str) -> tuple[Any, Any]:
    """(what to run RE2 on, its lower-cased form) for *text*."""
    # RE2 works on UTF-8 bytes. An ASCII text is encoded once for all rules and byte
    # offsets are character offsets; otherwise each regex call encodes and maps back.
    if text.isascii():
        data = text.encode("ascii")
        return data, data.lower()
    return text, text.lower()


def scan(text: str, rules: RuleSet, begin: int = 0) -> Scan:
    """Run every rule whose keywords are in *text*; see `Scan`.

    Only matches that begin at *begin* or later are found; the text before it is
    context (for a word boundary, say), as when the text is a window of a stream.
    """
    data, lowered = subject(text)
    secrets: list[Span] = []
    matches: list[Span] = []
    for rule in rules.candidates(lowered):
        for found in rule.regex.finditer(data, begin):
            start, end = found.span()
            if end == start:
                continue
            matches.append((start, end))
            # gitleaks trims newlines off the match before it looks at the secret.
            while start < end and text[start] == "\n":
                start += 1
            while end > start and text[end - 1] == "\n":
                end -= 1
            judged = _judge(rules, rule, text[start:end])
            if judged is None:
                continue
            secret = (start + judged[0], start + judged[1])
            if rule.line_allowlists and _allowed_on_line(rules, rule, text, (start, end), secret):
                continue
            secrets.append(secret)
    return Scan(secrets, matches)
