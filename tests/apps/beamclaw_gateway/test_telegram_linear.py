"""The Telegram formatter in linear time, with the output it had under Python's `re`.

Its patterns used to backtrack: a line of spaces after a table row, or a run of
``*a `` or ``[`` in a model's reply, took seconds to minutes. They now run under RE2 or
are scanners of their own. Two kinds of test: the old patterns, kept here as the
reference, give the same result as the new code on short adversarial strings (where
backtracking costs nothing); and long adversarial strings (up to 1 MB) give the
output they must. No test measures time: a regression shows as a test that never ends.
"""

from __future__ import annotations

import re
import sys

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamclaw_gateway import _telegram_format as fmt
from beamclaw_gateway import _telegram_html as tg_html
from beamclaw_gateway import _telegram_split as tg_split
from beamclaw_gateway._telegram_html import balanced, tokens, visible_text
from beamclaw_gateway._unicode_classes import SPACE, is_word
from tests.support.telegram_html import telegram_html_errors, visible

# --- the reference: the patterns as they were under `re` ---------------------------------

_OLD_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)(?:^```[ \t]*$|\Z)", re.S | re.M)
_OLD_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_OLD_TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]+\|?\s*$")
_OLD_TOKEN = re.compile(
    r"<(?P<close>/)?(?P<name>[A-Za-z][A-Za-z0-9-]*)(?P<attrs>(?:\s[^<>]*)?)>"
    r"|&(?P<entity>#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,7}|[A-Za-z][A-Za-z0-9]*);"
    r"|(?P<text>[^<>&]+)"
    r"|(?P<stray>[<>&])"
)
_OLD_ATTR = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s\"'>]+))?\s*")
_OLD_EMPTY_PAIR = re.compile(r"<([a-z][a-z0-9-]*)(?:\s[^<>]*)?></\1>")


def _old_emphasis(text: str) -> str:
    text = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: f"<b>{m.group(1) or m.group(2)}</b>", text)
    text = re.sub(
        r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?!\w)|(?<![\w_])_(?!\s)(.+?)(?<!\s)_(?!\w)",
        lambda m: f"<i>{m.group(1) or m.group(2)}</i>",
        text,
    )
    return re.sub(r"~~(.+?)~~", r"<s>\1</s>", text)


def _old_inline(text: str) -> str:
    import html

    kept: list[str] = []

    def keep(fragment: str) -> str:
        kept.append(fragment)
        return f"\x00{len(kept) - 1}\x00"

    text = re.sub(r"`([^`\n]+)`", lambda m: keep(f"<code>{html.escape(m.group(1), quote=False)}</code>"), text)
    text = html.escape(text, quote=False)
    text = re.sub(
        r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)",
        lambda m: keep(f'<a href="{m.group(2).replace(chr(34), "%22")}">{_old_emphasis(m.group(1))}</a>'),
        text,
    )
    text = _old_emphasis(text)
    while "\x00" in text:
        text = re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)
    return text


def _old_block(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _OLD_TABLE_ROW.match(line) and i + 1 < len(lines) and _OLD_TABLE_RULE.match(lines[i + 1]):
            j = i
            while j < len(lines) and (_OLD_TABLE_ROW.match(lines[j]) or _OLD_TABLE_RULE.match(lines[j])):
                j += 1
            out.append(fmt._table(lines[i:j]))  # its own pattern is checked in test_the_table_patterns
            i = j
            continue
        if re.match(r"^>\s?", line):
            j = i
            while j < len(lines) and re.match(r"^>\s?", lines[j]):
                j += 1
            quoted = "\n".join(_old_inline(re.sub(r"^>\s?", "", q)) for q in lines[i:j])
            out.append(f"<blockquote>{quoted}</blockquote>")
            i = j
            continue
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        bullet = re.match(r"^(\s*)[-*+]\s+(.*)$", line)
        if heading:
            out.append(f"<b>{_old_inline(heading.group(1))}</b>")
        elif bullet:
            out.append(f"{bullet.group(1)}• {_old_inline(bullet.group(2))}")
        else:
            out.append(_old_inline(line))
        i += 1
    return "\n".join(out)


def _old_code_block(info: str, code: str) -> str:
    import html

    language = info.strip().split()[0] if info.strip() else ""
    body = html.escape(code.rstrip("\n"), quote=False)
    if re.fullmatch(r"[\w+#.-]+", language):
        return f'<pre><code class="language-{language}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def _old_to_html(markdown: str) -> str:
    markdown = markdown.replace("\x00", "")
    parts = []
    position = 0
    for fence in _OLD_FENCE.finditer(markdown):
        parts.append(_old_block(markdown[position : fence.start()]))
        parts.append(_old_code_block(fence.group(1), fence.group(2)))
        position = fence.end()
    parts.append(_old_block(markdown[position:]))
    return balanced("".join(parts).strip())


def _old_tokens(text: str) -> list[tuple[object, ...]]:
    out = []
    for match in _OLD_TOKEN.finditer(text):
        raw = match.group(0)
        if match.group("name") is not None:
            kind = "close" if match.group("close") else "open"
            found, complete = _old_attributes(match.group("attrs") or "")
            malformed = not complete or (kind == "close" and bool(found))
            out.append((kind, raw, match.group("name").lower(), found, "", malformed))
        elif match.group("entity") is not None:
            char = tg_html._entity(match.group("entity"))
            out.append(("entity", raw, "", (), char, False) if char is not None else ("stray", raw, "", (), raw, False))
        elif match.group("text") is not None:
            out.append(("text", raw, "", (), raw, False))
        else:
            out.append(("stray", raw, "", (), raw, False))
    return out


def _old_attributes(raw: str) -> tuple[tuple[tuple[str, str | None], ...], bool]:
    import html

    found: list[tuple[str, str | None]] = []
    position = 0
    while position < len(raw):
        match = _OLD_ATTR.match(raw, position)
        if match is None or match.end() == position:
            return tuple(found), False
        value = match.group(2)
        if value is not None and value[:1] in {'"', "'"}:
            value = value[1:-1]
        found.append((match.group(1).lower(), html.unescape(value) if value is not None else None))
        position = match.end()
    return tuple(found), True


# --- the same results as the reference, on short adversarial strings --------------------

_SPACES = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
_markup = st.sampled_from(
    ["*", "**", "_", "__", "~~", "`", "```", "[", "]", "(", ")", "](", "](https://x.test/", "<", ">", "&",
     "&lt;", "&#1;", "&#x1F600;", "&amp", "|", "-", ":", "#", "> ", "- ", "\n", " ", "\t", "\xa0", "\u2003",
     "a", "é", "東", "1", "/", "=", '"', "'", "<b>", "</b>", "<a href='x'>", "<pre>", "python"]
)  # fmt: skip
_adversarial = st.lists(_markup, max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(markdown=_adversarial)
def test_markdown_gives_what_the_old_patterns_gave(markdown: str) -> None:
    assert fmt.to_html(markdown) == _old_to_html(markdown)


@settings(max_examples=600, deadline=None)
@given(text=_adversarial)
def test_emphasis_is_what_the_old_patterns_made(text: str) -> None:
    assert fmt._emphasis(text) == _old_emphasis(text)


@settings(max_examples=600, deadline=None)
@given(text=st.one_of(_adversarial, st.text(alphabet="<>&/#;xX1aB -=\"'\n\t\xa0é", max_size=30)))
def test_tokens_are_what_the_old_pattern_found(text: str) -> None:
    assert [attrs.astuple(t) for t in tokens(text)] == _old_tokens(text)


@settings(max_examples=500, deadline=None)
@given(line=st.text(alphabet=" \t\xa0\u3000|:-ab", max_size=30))
def test_the_table_patterns(line: str) -> None:
    assert bool(fmt._TABLE_ROW.fullmatch(line)) == bool(_OLD_TABLE_ROW.match(line))
    assert bool(fmt._TABLE_RULE.fullmatch(line)) == bool(_OLD_TABLE_RULE.match(line))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html=st.lists(st.sampled_from(["<b>", "</b>", "<i>", "</i>", "<B>", "</B>", "x", "&lt;"]), max_size=16))
def test_empty_pairs_are_dropped_as_the_old_pattern_dropped_them(html: list[str]) -> None:
    atoms = tg_split._atoms("".join(html))
    new = tg_split._piece((), atoms, ())
    old = "".join(a.raw for a in atoms)
    while (shorter := _OLD_EMPTY_PAIR.sub("", old)) != old:
        old = shorter
    assert new == old


def test_the_unicode_classes_are_pythons() -> None:
    import re2

    space = re2.compile(f"[{SPACE}]")
    encodable = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)
    assert space.findall(encodable) == list(_SPACES)
    assert all(is_word(ch) == bool(re.fullmatch(r"\w", ch)) for ch in map(chr, range(0x3100)))


def test_a_lone_surrogate_is_replaced_not_a_crash() -> None:
    # JSON's "\\ud800" decodes to a lone surrogate, which RE2 (UTF-8) cannot take.
    assert (
        fmt.to_html("**a\ud800** [x](https://h.test/\udfff)") == '<b>a\ufffd</b> <a href="https://h.test/\ufffd">x</a>'
    )
    assert tg_html._attributes(" href='\ud800'") == ((("href", "\ufffd"),), True)


# --- long adversarial strings: the output they must give -------------------------------

MB = 1_000_000


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("*a " * (MB // 3), ("*a " * (MB // 3)).strip()),  # no closing * after a non-space
        ("_a " * (MB // 3), ("_a " * (MB // 3)).strip()),
        ("[" * MB, "[" * MB),
        ("](" * (MB // 2), "](" * (MB // 2)),
        ("[a](" * (MB // 4), "[a](" * (MB // 4)),
        ("[a](http://x " * (MB // 13), ("[a](http://x " * (MB // 13)).strip()),
        ("`" * MB, "`" * MB),
        ("```" * (MB // 3), "`" * (MB // 3 * 3)),
        ("|a|\n" + " " * MB + "x", "|a|\n" + " " * MB + "x"),  # a table row, then no rule
        ("|a|\n|" + " " * MB, "<pre>a</pre>"),  # a row, then a rule of a megabyte of spaces
        ("#" * MB + " x", "#" * MB + " x"),
        ("x\n" + " " * MB + "- x", "x\n" + " " * MB + "• x"),
        ("```sh\n" + "x" * MB, '<pre><code class="language-sh">' + "x" * MB + "</code></pre>"),
        ("eyJ-" * (MB // 4), "eyJ-" * (MB // 4)),
        ("a" * MB + "*", "a" * MB + "*"),
        # telegramify-markdown's spoiler pattern took 175 s on 40 KB of this.
        ("||a" + "\n" * MB + "b||", "||a" + "\n" * MB + "b||"),
        ("a\n" * (MB // 2), ("a\n" * (MB // 2)).strip()),  # half a million lines
    ],
    ids=lambda value: repr(value[:12]) if isinstance(value, str) else "",
)
def test_a_megabyte_of_markup(markdown: str, html: str) -> None:
    assert fmt.to_html(markdown) == html


@pytest.mark.parametrize(
    "unit",
    ["**a _b** c_", "*a*", "_a_", "**x**", "~~s~~", "`c`", "[l](https://x.test/__a__)", "<b>", "&amp;", "a__b__c"],
)
def test_long_runs_of_nested_markup_repeat_the_markup_of_one(unit: str) -> None:
    """Units apart by spaces are each the unit's HTML; the pieces valid, nothing lost."""
    count = 30_000 // len(unit)
    assert fmt.to_html(" ".join([unit] * count)) == " ".join([fmt.to_html(unit)] * count)
    _assert_valid_and_whole(" ".join([unit] * (8_000 // len(unit))))


_run = st.tuples(_markup, st.integers(1, 2000)).map(lambda pair: pair[0] * pair[1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(runs=st.lists(_run, min_size=1, max_size=6))
def test_long_runs_give_valid_pieces_and_lose_nothing(runs: list[str]) -> None:
    _assert_valid_and_whole("".join(runs))


def _assert_valid_and_whole(markdown: str) -> None:
    html = fmt.to_html(markdown)
    pieces = fmt.chunks(markdown)
    for piece in pieces:
        assert telegram_html_errors(piece) == [], piece[:200]
        assert visible_text(piece) == visible(piece)
    whole = re.sub(r"\s", "", visible(html))
    assert "".join(re.sub(r"\s", "", visible(p)) for p in pieces) == whole
