"""The PII tokenizer: what it finds, what it leaves alone, and that every text round-trips."""

from __future__ import annotations

import random
import string

import pytest

from beamclaw_sandbox import PiiTokenizer
from beamclaw_sandbox._pii import iban_valid, luhn_valid

SEED = 10


def test_each_kind_is_replaced_by_a_token_and_restored() -> None:
    pii = PiiTokenizer()
    text = (
        "Write to ada@example.com or call +44 20 7946 0958 / (415) 555-2671. "
        "Card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00, key sk-abcdefghijklmnopqrstuvwx."
    )
    out = pii.tokenize(text)
    for value in ("ada@example.com", "+44 20 7946 0958", "(415) 555-2671", "4111 1111 1111 1111",
                  "DE89 3704 0044 0532 0130 00", "sk-abcdefghijklmnopqrstuvwx"):  # fmt: skip
        assert value not in out
    for kind in ("EMAIL", "PHONE", "CARD", "IBAN", "KEY"):
        assert f"PII_{kind}_" in out
    assert pii.restore(out) == text
    assert len(pii) == 6


def test_the_same_value_gets_the_same_token_every_time() -> None:
    pii = PiiTokenizer()
    first = pii.tokenize("from ada@example.com")
    second = pii.tokenize("ada@example.com wrote again; bob@example.org too")
    token = first.split()[-1]
    assert second.startswith(token + " wrote again")
    assert second.count("PII_EMAIL_") == 2 and len(pii) == 2


def test_code_and_numbers_that_are_not_pii_are_left_alone() -> None:
    pii = PiiTokenizer()
    text = (
        "ts = 1700000000000  # ms timestamp\nn = 1234567890\nip = '192.168.100.200'\n"
        "date = '2024-01-15'\nversion = '1.2.3'\ncard_like = 4111111111111112\n"  # fails Luhn
        "iban_like = 'DE89370400440532013001'\nuser@host:~$ ls\n"  # bad checksum; not an address
    )
    assert pii.tokenize(text) == text
    assert len(pii) == 0


def test_luhn_and_iban_checksums() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert luhn_valid("378282246310005")
    assert iban_valid("GB82WEST12345698765432") and iban_valid("DE89370400440532013000")
    assert not iban_valid("GB82WEST12345698765433")
    assert not iban_valid("DE8937040044053201300")  # one character short for Germany


def test_only_the_configured_kinds_are_tokenized() -> None:
    pii = PiiTokenizer(["email"])
    text = "ada@example.com +44 20 7946 0958"
    assert pii.tokenize(text).endswith(" +44 20 7946 0958")
    with pytest.raises(ValueError, match="unknown PII kind"):
        PiiTokenizer(["email", "passport"])


def test_tokens_of_another_tokenizer_and_look_alikes_are_not_restored() -> None:
    one, other = PiiTokenizer(), PiiTokenizer()
    token = one.tokenize("ada@example.com")
    other.tokenize("bob@example.org")
    assert other.restore(token) == token
    assert one.restore("PII_EMAIL_1 and PII_EMAIL_zzzzzz_1") == "PII_EMAIL_1 and PII_EMAIL_zzzzzz_1"


def test_data_is_walked_keys_included() -> None:
    pii = PiiTokenizer()
    data = {"to": ["ada@example.com"], "ada@example.com": {"n": 1, "iban": "GB82WEST12345698765432"}}
    tokenized = pii.tokenize_data(data)
    assert "ada@example.com" not in repr(tokenized) and "GB82WEST" not in repr(tokenized)
    assert pii.restore_data(tokenized) == data


# --- property style: random texts built from random valid values and filler ----------------


def _card(rng: random.Random) -> str:
    prefix = rng.choice(["4", "51", "55", "37", "6011"])
    length = 15 if prefix == "37" else 16
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    check = next(d for d in string.digits if luhn_valid(body + d))
    digits = body + check
    if rng.random() < 0.5:
        return digits
    sep = rng.choice([" ", "-"])
    return sep.join(digits[i : i + 4] for i in range(0, len(digits), 4))


def _iban(rng: random.Random) -> str:
    country, length = rng.choice([("DE", 22), ("GB", 22), ("FR", 27), ("NL", 18), ("ES", 24)])
    alphabet = string.digits + (string.ascii_uppercase if country in ("GB", "NL") else "")
    bban = "".join(rng.choice(alphabet) for _ in range(length - 4))
    rearranged = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in rearranged)) % 97
    iban = f"{country}{check:02d}{bban}"
    assert iban_valid(iban)
    if rng.random() < 0.5:
        return iban
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))


def _email(rng: random.Random) -> str:
    local = "".join(rng.choice(string.ascii_lowercase + string.digits + "._+") for _ in range(rng.randint(1, 12)))
    local = rng.choice(string.ascii_lowercase) + local.strip("._+")
    domain = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 10)))
    return f"{local}@{domain}.{rng.choice(['com', 'org', 'de', 'co.uk', 'io'])}"


def _phone(rng: random.Random) -> str:
    digits = lambda n: "".join(rng.choice(string.digits) for _ in range(n))  # noqa: E731
    return rng.choice([
        f"+{rng.randint(1, 99)} {digits(3)} {digits(3)} {digits(4)}",
        f"({digits(3)}) {digits(3)}-{digits(4)}",
        f"+{rng.randint(1, 9)}{digits(10)}",
    ])  # fmt: skip


def _key(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits
    body = "".join(rng.choice(alphabet) for _ in range(rng.randint(20, 40)))
    return rng.choice(["sk-", "sk-ant-", "ghp_", "xoxb-"]) + body


_FILLER = ["the", "total", "is", "x = 42", "print(result)", "for row in rows:", "ok.", "and", "2024-01-15", "3.14"]
_MAKERS = {"card_number": _card, "iban": _iban, "email": _email, "phone": _phone, "api_key": _key}


@pytest.mark.parametrize("case", range(500))
def test_random_texts_round_trip_and_hide_every_value(case: int) -> None:
    rng = random.Random(SEED * 1000 + case)
    pii = PiiTokenizer()
    words, values = [], []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.4:
            value = _MAKERS[rng.choice(list(_MAKERS))](rng)
            values.append(value)
            words.append(value)
        else:
            words.append(rng.choice(_FILLER))
    text = rng.choice([" ", "\n", ", "]).join(words)
    tokenized = pii.tokenize(text)
    replay = f"(seed {SEED * 1000 + case}: {text!r})"
    assert pii.restore(tokenized) == text, replay
    for value in values:
        assert value not in tokenized, replay
    assert pii.tokenize(tokenized) == tokenized, replay  # tokens are never tokenized again
    assert pii.tokenize(text) == tokenized, replay  # stable


@pytest.mark.parametrize(
    "text",
    [
        "1-" * 400_000,
        "12 " * 300_000,
        "+1 " * 300_000,
        "(12) " * 200_000,
        "a@" + "xx." * 300_000 + "1",
        "a@b." * 250_000,
        "DE89 " * 200_000,
        "1" * 1_000_000 + "x",
        ("1" * 20 + "x") * 50_000,
    ],
)
def test_megabyte_runs_of_near_misses_are_read_in_one_pass(text: str) -> None:
    """The shapes closest to a backtracking blow-up of the tokenizer's patterns, a
    megabyte each: each is read (a quadratic pattern would not finish) and round-trips."""
    tokenizer = PiiTokenizer()
    assert tokenizer.restore(tokenizer.tokenize(text)) == text
