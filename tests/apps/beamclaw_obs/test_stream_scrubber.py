"""StreamScrubber: any chunking of any text gives what scrub gives the whole, and no planted secret."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamclaw_obs import REDACTED, StreamScrubber, register_secret, scrub
from tests.support.credentials import Credential, bare_corpus, credential_corpus, variant

_CORPUS = [c for seed in (0, 1) for c in (*credential_corpus(seed), *bare_corpus(seed))]
_WORDS = [
    "the",
    "key",
    "token",
    "password",
    "api",
    "secret:",
    "Bearer",
    "Basic",
    "https://example.test/a?b=c",
    "-----BEGIN",
    "PRIVATE",
    "KEY-----",
    "eyJhbGciOi",
    "sk-",
    "AKIA",
    "é",
    "数据",
    "x=1;",
    '"quoted"',
    "\\n",
    "\\\\",
    "{",
    "}",
]
_SEPARATORS = [" ", " ", "\n", ", ", ". ", '", "', "\\n", "\t"]


def _stream(text: str, sizes: list[int], **options: int) -> str:
    scrubber = StreamScrubber(**options)
    out, position, turn = [], 0, 0
    while position < len(text):
        size = sizes[turn % len(sizes)]
        out.append(scrubber.feed(text[position : position + size]))
        position, turn = position + size, turn + 1
    out.append(scrubber.flush())
    return "".join(out)


@st.composite
def _texts(draw: st.DrawFn) -> tuple[str, list[Credential]]:
    """Prose-like soup with credentials (some JSON-escaped) planted in it."""
    parts: list[str] = []
    planted: list[Credential] = []
    for _ in range(draw(st.integers(1, 60))):
        if draw(st.integers(0, 9)) == 0:
            credential = draw(st.sampled_from(_CORPUS))
            if draw(st.booleans()):
                credential = variant(credential, "json")
            planted.append(credential)
            parts.append(credential.text)
        else:
            parts.append(draw(st.sampled_from(_WORDS)))
        parts.append(draw(st.sampled_from(_SEPARATORS)))
    return "".join(parts), planted


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts(), st.lists(st.integers(1, 300), min_size=1, max_size=8))
def test_any_chunking_gives_what_scrub_gives_the_whole(
    planted_text: tuple[str, list[Credential]], sizes: list[int]
) -> None:
    text, planted = planted_text
    out = _stream(text, sizes)
    assert out == scrub(text)
    for credential in planted:
        assert credential.secret not in out, credential.name


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=3000), st.lists(st.integers(1, 200), min_size=1, max_size=5))
def test_any_text_streams_as_it_scrubs(text: str, sizes: list[int]) -> None:
    assert _stream(text, sizes) == scrub(text)


def test_a_held_secret_split_across_chunks_in_any_encoding() -> None:
    value = "daemon-held-Kq81-value"
    register_secret(value)
    raw = value.encode()
    texts = [f"a {value} b", f"hex {raw.hex()} .", f"b64 {base64.b64encode(b'user:' + raw).decode()} ."]
    for text in texts:
        for size in (1, 2, 7, 80):
            out = _stream("words before " * 40 + text + " words after" * 40, [size])
            assert REDACTED in out and value not in out and raw.hex() not in out


def test_a_private_key_is_held_until_its_end_and_goes_whole() -> None:
    body = base64.b64encode(bytes(range(256)) * 40).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----"
    text = "here it is:\n" + key + "\nand that is all, " * 30
    scrubber = StreamScrubber()
    seen = ""
    for i in range(0, len(text), 80):
        seen += scrubber.feed(text[i : i + 80])
        assert not any(line in seen for line in lines[:-1])  # nothing of the key gets out early
    seen += scrubber.flush()
    assert seen == scrub(text) == "here it is:\n" + REDACTED + "\nand that is all, " * 30


@pytest.mark.parametrize("terminated", [True, False])
def test_a_key_longer_than_max_hold_goes_and_the_rest_comes_back(terminated: bool) -> None:
    body = base64.b64encode(bytes(range(256)) * 200).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    key = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + ("\n-----END PRIVATE KEY-----" if terminated else "")
    text = "start " + key + "\n\n'Thanks!' she said, and went on."
    out = _stream(text, [80], hold=256, max_hold=4096)
    assert not any(line in out for line in lines)
    assert out.startswith("start " + REDACTED) and out.endswith("'Thanks!' she said, and went on.")


@pytest.mark.parametrize("unit", ["eyJ-", "a", "sk-", "\\n", "password=", "é", "The answer is 42. ", "AKIA"])
def test_a_megabyte_of_hostile_text_in_small_chunks(unit: str) -> None:
    text = unit * (1_000_000 // len(unit))
    out = _stream(text, [80])
    if unit == "sk-":  # one 1 MB "token" held past max_hold: let out redacted, never in the clear
        assert out == REDACTED
    else:
        assert out == scrub(text)


def test_a_thirty_kilobyte_reply_in_eighty_character_chunks() -> None:
    reply = "".join(f"Step {i}: run the tests, then check the logs for token use.\n" for i in range(500))
    planted = credential_corpus(3)[0]
    text = reply[:15_000] + planted.text + reply[15_000:]
    out = _stream(text, [80])
    assert out == scrub(text) and planted.secret not in out


def test_json_escaped_stream_of_a_tool_call() -> None:
    for credential in credential_corpus(4)[:20]:
        escaped = variant(credential, "tool-call")
        out = _stream(escaped.text, [13])
        assert escaped.secret not in out and out == scrub(escaped.text)


def test_flush_starts_afresh_and_bad_arguments_are_refused() -> None:
    scrubber = StreamScrubber()
    assert scrubber.feed("password: hunter2secret") == ""
    assert scrubber.flush() == "password: " + REDACTED
    assert scrubber.feed("plain") + scrubber.flush() == "plain"
    with pytest.raises(TypeError, match="chunk"):
        scrubber.feed(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hold"):
        StreamScrubber(hold=10)
    with pytest.raises(ValueError, match="max_hold"):
        StreamScrubber(hold=256, max_hold=300)


def test_output_comes_before_the_end_of_the_stream() -> None:
    scrubber = StreamScrubber()
    early = "".join(scrubber.feed("plain words go out soon. ") for _ in range(200))
    assert len(early) > 5000 - 2000  # all but the tail held (longer when long values are held)
    assert early + scrubber.flush() == "plain words go out soon. " * 200


def test_json_in_the_corpus_variant_is_valid() -> None:
    escaped = variant(credential_corpus(0)[0], "tool-call")
    json.loads(escaped.text)
