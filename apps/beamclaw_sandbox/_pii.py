"""The PII tokenizer: personal data replaced by stable tokens wherever it crosses the sandbox boundary.

What the model writes into a script, what a tool returns to a script and what a script
prints back to the model is tokenized: an email, a phone number, a card number (Luhn
valid, with a card network's leading digit), an IBAN (its mod-97 checksum valid) or an
API key becomes ``PII_EMAIL_<nonce>_1`` and so on. The same value always gets the same
token from one tokenizer, so a script can still compare, group and pass values along;
when a script hands a token to a real tool through the bridge, the tool gets the value
back (`restore`). Neither the model nor the container ever holds the value itself.

Patterns are chosen to leave code alone: a phone number needs a leading ``+`` or
separators (a bare 10-digit run is a timestamp as often as a phone), a card number
needs the Luhn check and a network's first digit (a 13-digit millisecond timestamp
starts with 1), an IBAN needs its checksum.

They run on script and model text, so each must be linear in it. They stay on Python's
``re`` because they need look-behinds, which RE2 lacks; each look-around is one
character wide, no quantifier nests over an overlapping class and every loop moves on
past what it looked at, so none backtracks more than a bounded amount per position
(`tests/apps/beamclaw_sandbox/test_pii.py` feeds the closest shapes a megabyte each).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

#: The kinds in the order they are applied: the longest, most specific shapes first, so
#: a card number inside an API key or the digits of an IBAN are never taken for a phone.
KINDS: Final = ("api_key", "email", "iban", "card_number", "phone")

_TOKEN_NAMES: Final = {"api_key": "KEY", "email": "EMAIL", "iban": "IBAN", "card_number": "CARD", "phone": "PHONE"}

_API_KEY: Final = re.compile(
    r"\b(?:sk-ant-[A-Za-z0-9_\-]{16,}|sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|gsk_[A-Za-z0-9]{16,}|xox[abposr]-[A-Za-z0-9\-]{8,}|(?:AKIA|ASIA)[0-9A-Z]{16}\b|AIza[0-9A-Za-z_\-]{35}"
    r"|glpat-[A-Za-z0-9_\-]{20,}|\d{8,10}:AA[A-Za-z0-9_\-]{33})"
)
_EMAIL: Final = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b"
)
# Runs of digit groups joined by single spaces or dashes; card numbers are looked for inside.
_DIGIT_RUN: Final = re.compile(r"(?<![\w.+-])\d+(?:[ -]\d+)*(?![\w-])")
_DIGITS: Final = re.compile(r"\d+")
_PHONE: Final = re.compile(
    r"(?<![\w+.-])(?:\+\d{7,15}|(?:\+\d{1,3}[ -]?)?(?:\(\d{1,4}\)[ -]?)?\d{2,5}(?:[ -]\d{2,5}){0,5})(?![\w-])"
)
_IBAN_START: Final = re.compile(r"\b[A-Z]{2}\d{2}")

#: IBAN lengths by country (the SWIFT registry); other countries are tried at every length.
_IBAN_LENGTHS: Final = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19,
    "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def luhn_valid(digits: str) -> bool:
    """Whether the digit string passes the Luhn check (card numbers' last digit)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    """Whether *iban* (no spaces) has a valid ISO 13616 mod-97 checksum and its country's length."""
    if not 15 <= len(iban) <= 34 or not iban.isalnum() or not iban[:2].isalpha() or not iban[2:4].isdigit():
        return False
    expected = _IBAN_LENGTHS.get(iban[:2])
    if expected is not None and len(iban) != expected:
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _card(digits: str) -> bool:
    # A card network's leading digit (2 and 5 Mastercard, 3 Amex/Diners/JCB, 4 Visa, 6 Discover/UnionPay).
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


def _card_spans(text: str) -> Iterable[tuple[int, int]]:
    """Where card numbers are: within each run of digit groups, the longest stretch of
    whole groups that is a card number, left to right (a date or a phone number before
    it in the same run does not hide it)."""
    for run in _DIGIT_RUN.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in _DIGITS.finditer(run.group(0))][:64]
        first = 0
        while first < len(groups):
            for last in range(len(groups) - 1, first - 1, -1):
                digits = "".join(text[a:b] for a, b in groups[first : last + 1])
                if _card(digits):
                    yield groups[first][0], groups[last][1]
                    first = last
                    break
            first += 1


def _phone(text: str) -> bool:
    digits = sum(c.isdigit() for c in text)
    separated = sum(c in " -" for c in text) >= 2 or "(" in text
    return 9 <= digits <= 15 and (text.startswith("+") or separated)


_GROUP_END: Final = re.compile(r"\d(?=[ -]|$)")


def _phone_spans(text: str) -> Iterable[tuple[int, int]]:
    """Where phone numbers are. A candidate may run on into a date or another number
    (``(415) 555-2671 2024-01-15``): the shortest run of whole groups with ten digits
    that is a phone number is taken, else the longest that is one."""
    position = 0
    while match := _PHONE.search(text, position):
        candidate = match.group(0)
        ends = [m.end() for m in _GROUP_END.finditer(candidate)]
        valid = [end for end in ends if _phone(candidate[:end])]
        if valid:
            ten = [end for end in valid if sum(c.isdigit() for c in candidate[:end]) >= 10]
            end = match.start() + (ten[0] if ten else valid[-1])
            yield match.start(), end
            position = end
        else:
            position = match.end()


def _iban_spans(text: str) -> Iterable[tuple[int, int]]:
    """Where IBANs are, compact (``DE89370400440532013000``) or printed in groups of four."""
    position = 0
    while match := _IBAN_START.search(text, position):
        start = match.start()
        wanted = _IBAN_LENGTHS.get(text[start : start + 2])
        chars: list[str] = []
        ends: list[int] = []  # the text index just after each character taken
        index = start
        while index < len(text) and len(chars) < 34:
            char = text[index]
            if char.isdigit() or char.isupper():
                chars.append(char)
                ends.append(index + 1)
                index += 1
            elif char == " " and index + 1 < len(text) and (text[index + 1].isdigit() or text[index + 1].isupper()):
                index += 1
            else:
                break
        lengths = [wanted] if wanted is not None else range(min(len(chars), 34), 14, -1)
        for length in lengths:
            if length > len(chars):
                continue
            end = ends[length - 1]
            if end < len(text) and text[end].isalnum():
                continue  # not at a word boundary: part of something longer
            if iban_valid("".join(chars[:length])):
                yield start, end
                position = end
                break
        else:
            position = match.end()


@final
class PiiTokenizer:
    """Values to stable tokens and back, for one sandbox's lifetime (and across its restarts).

    Args:
        patterns: the kinds to find, a subset of `KINDS` (``[sandbox.pii] patterns``).

    Tokens carry a random nonce per tokenizer, so text that merely looks like a token,
    or a token of another sandbox, is never restored to a value it does not stand for.
    """

    def __init__(self, patterns: Iterable[str] = KINDS) -> None:
        kinds = set(patterns)
        unknown = kinds - set(KINDS)
        if unknown:
            raise ValueError(f"patterns: unknown PII kind(s) {sorted(unknown)}; expected some of {list(KINDS)}")
        self.kinds: tuple[str, ...] = tuple(k for k in KINDS if k in kinds)
        self._nonce = secrets.token_hex(3)
        self._tokens: dict[str, str] = {}
        self._values: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._token_pattern = re.compile(rf"\bPII_(?:{'|'.join(_TOKEN_NAMES.values())})_{self._nonce}_\d+\b")

    def __len__(self) -> int:
        return len(self._tokens)

    def token_for(self, kind: str, value: str) -> str:
        """The token of *value* (found as *kind*), the same one every time."""
        token = self._tokens.get(value)
        if token is None:
            count = self._counts.get(kind, 0) + 1
            self._counts[kind] = count
            token = f"PII_{_TOKEN_NAMES[kind]}_{self._nonce}_{count}"
            self._tokens[value] = token
            self._values[token] = value
        return token

    def tokenize(self, text: str) -> str:
        """*text* with every value of the enabled kinds replaced by its token."""
        for kind in self.kinds:
            text = _FINDERS[kind](self, text)
        return text

    def restore(self, text: str) -> str:
        """*text* with every token of this tokenizer replaced by its value again."""
        if not self._values:
            return text
        return self._token_pattern.sub(lambda m: self._values.get(m.group(0), m.group(0)), text)

    def tokenize_data(self, value: Any) -> Any:
        """`tokenize` every string inside *value* (JSON-like data: dicts, lists, keys too)."""
        return _walk(value, self.tokenize)

    def restore_data(self, value: Any) -> Any:
        """`restore` every string inside *value*."""
        return _walk(value, self.restore)

    # --- finders: each replaces its kind's values in the text ----------------------------

    def _regex(self, kind: str, pattern: re.Pattern[str], check: Callable[[str], bool], text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            found = match.group(0)
            return self.token_for(kind, found) if check(found) else found

        return pattern.sub(replace, text)

    def _api_keys(self, text: str) -> str:
        return self._regex("api_key", _API_KEY, lambda _: True, text)

    def _emails(self, text: str) -> str:
        return self._regex("email", _EMAIL, lambda _: True, text)

    def _cards(self, text: str) -> str:
        return self._spans("card_number", _card_spans(text), text)

    def _phones(self, text: str) -> str:
        return self._spans("phone", _phone_spans(text), text)

    def _ibans(self, text: str) -> str:
        return self._spans("iban", _iban_spans(text), text)

    def _spans(self, kind: str, spans: Iterable[tuple[int, int]], text: str) -> str:
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], self.token_for(kind, text[start:end])]
            last = end
        return "".join(pieces) + text[last:]


_FINDERS: Final[dict[str, Callable[[PiiTokenizer, str], str]]] = {
    "api_key": PiiTokenizer._api_keys,
    "email": PiiTokenizer._emails,
    "iban": PiiTokenizer._ibans,
    "card_number": PiiTokenizer._cards,
    "phone": PiiTokenizer._phones,
}


def _walk(value: Any, transform: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return transform(value)
    if isinstance(value, Mapping):
        return {_walk(k, transform): _walk(v, transform) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, transform) for v in value]
    return value
