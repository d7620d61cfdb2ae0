"""Markdown to Telegram HTML, tables as aligned text, and messages that are each valid alone.

Every piece is judged by `telegram_html_errors` (tests/support), which shares no code
with the channel; the property test runs it over random Markdown with long code blocks,
lists, links, quotes and emphasis.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamclaw_gateway._telegram_format import chunks, to_html, width
from beamclaw_gateway._telegram_html import problems, visible_text
from beamclaw_gateway._telegram_split import split_html
from tests.support.telegram_html import telegram_html_errors, utf16, visible


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
        ("*it* and _it_ but snake_case_name and 2*3*4", "<i>it</i> and <i>it</i> but snake_case_name and 2*3*4"),
        ("~~gone~~", "<s>gone</s>"),
        ("`a < b` & c", "<code>a &lt; b</code> &amp; c"),
        ("[site](https://x.test/?a=1&b=2)", '<a href="https://x.test/?a=1&amp;b=2">site</a>'),
        ("# Title\n## Sub", "<b>Title</b>\n<b>Sub</b>"),
        ("- one\n* two\n  - nested", "• one\n• two\n  • nested"),
        ("> quoted\n> twice", "<blockquote>quoted\ntwice</blockquote>"),
        ("```python\nif a < b:\n  pass\n```", '<pre><code class="language-python">if a &lt; b:\n  pass</code></pre>'),
        ("```\nplain\n```", "<pre>plain</pre>"),
        ("```sh\nno closing fence", '<pre><code class="language-sh">no closing fence</code></pre>'),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        # Emphasis that crosses is closed and reopened, never left crossing.
        ("**a _b** c_", "<b>a <i>b</i></b><i> c</i>"),
        # Nothing lands inside a link's address or a code span.
        ("[x](https://h.test/__init__.py) `__x__`", '<a href="https://h.test/__init__.py">x</a> <code>__x__</code>'),
    ],
)
def test_markdown_to_html(markdown: str, html: str) -> None:
    assert to_html(markdown) == html
    assert telegram_html_errors(html) == []


def test_tables_become_aligned_text_with_wide_characters_counted_twice() -> None:
    table = "| name | city |\n|---|:---:|\n| Ada | 東京 |\n| 🙂 | Oslo |"
    assert to_html(table) == "<pre>name  city\n----  ----\nAda   東京\n🙂    Oslo</pre>"
    assert (width("東京"), width("🙂"), width("é"), width("abc")) == (4, 2, 1, 3)


def _words(pieces: list[str]) -> list[str]:
    return " ".join(visible(p) for p in pieces).split()


def test_split_prefers_paragraphs_then_lines_then_spaces() -> None:
    paragraphs = ("p" * 3000 + "\n\n") * 2
    assert [len(piece) for piece in chunks(paragraphs)] == [3000, 3000]
    lines = ("l" * 1000 + "\n") * 6
    assert all(len(piece) <= 4096 and piece.endswith("l") for piece in chunks(lines))
    words = "word " * 2000
    pieces = chunks(words)
    assert all(len(p) <= 4096 for p in pieces) and _words(pieces) == words.split()
    assert chunks("x" * 5000) == ["x" * 4096, "x" * 904]  # no separator at all: a hard cut


def test_a_long_code_block_is_closed_and_reopened_at_each_cut() -> None:
    code = "\n".join(f"if a[{i}] < b and c & d:  # line {i}" for i in range(300))
    markdown = f"Here is the code:\n\n```python\n{code}\n```\n\nThat's **all**."
    pieces = chunks(markdown)
    assert len(pieces) == 3
    for piece in pieces:
        assert telegram_html_errors(piece) == [] and problems(piece) == []
        assert piece.count('<pre><code class="language-python">') == 1 and piece.count("</code></pre>") == 1
    # Cut between lines of the code, each line whole, nothing repeated or lost.
    shown = [visible(p) for p in pieces]
    assert "\n".join(shown).replace("\n\n", "\n").split("\n")[1:-1] == code.split("\n")
    assert shown[-1].endswith("That's all.")


def test_counted_after_parsing_and_entities_never_cut() -> None:
    text = "&lt;" * 5000  # 20,000 characters of HTML, 5,000 visible
    pieces = split_html(text)
    assert [len(visible(p)) for p in pieces] == [4096, 904]
    assert all(re.fullmatch(r"(&lt;)+", p) for p in pieces)
    # Astral characters count twice, as Telegram counts (UTF-16).
    emoji = split_html("🙂" * 3000)
    assert [utf16(visible(p)) for p in emoji] == [4096, 1904]


def test_a_cut_inside_a_link_keeps_the_link_on_both_sides() -> None:
    html = '<a href="https://x.test/?a=1&amp;b=2">' + "y" * 50 + "</a>"
    first, second = split_html(html, limit=30)
    assert first == '<a href="https://x.test/?a=1&amp;b=2">' + "y" * 30 + "</a>"
    assert second == '<a href="https://x.test/?a=1&amp;b=2">' + "y" * 20 + "</a>"


@pytest.mark.parametrize(
    "html",
    ["<b>x", "<b><i>x</b></i>", "a < b", "a & b", "<pre>t<code>x</code></pre>", "<code><b>x</b></code>",
     "<pre><code class='python'>x</code></pre>", "<p>x</p>", '<span class="red">x</span>', "<a>x</a>",
     "<blockquote><blockquote>x</blockquote></blockquote>", "<b> </b>", "&nbsp;x", "x" * 4097],
)  # fmt: skip
def test_the_channels_own_check_refuses_what_telegram_refuses(html: str) -> None:
    assert problems(html) and telegram_html_errors(html)


# --- the property: random Markdown, every piece valid, nothing lost or repeated ---------

_word = st.text(alphabet="abcxyz<>&\"'é東🙂", min_size=1, max_size=8)
_marked = st.one_of(
    _word,
    _word.map(lambda w: f"**{w}**"),
    _word.map(lambda w: f"_{w}_"),
    _word.map(lambda w: f"*{w}"),  # unbalanced markers stay text
    _word.map(lambda w: f"~~{w}~~"),
    _word.map(lambda w: f"`{w}`"),
    st.tuples(_word, _word).map(lambda p: f"[{p[0]}](https://x.test/{p[1].replace(' ', '')}?a=1&b=__2__)"),
    st.sampled_from(["**", "__", "_", "~~", "`", "[", "](", "\x00"]),
)
_line = st.lists(_marked, min_size=1, max_size=12).map(" ".join)
_code_line = st.text(alphabet="ab <>&\t{}();=東🙂", max_size=60)
_block = st.one_of(
    _line,
    st.lists(_line, min_size=1, max_size=5).map(lambda ls: "\n".join(f"- {x}" for x in ls)),
    st.lists(_line, min_size=1, max_size=3).map(lambda ls: "\n".join(f"> {x}" for x in ls)),
    _line.map(lambda x: f"## {x}"),
    st.tuples(st.sampled_from(["", "python", "c++", "bad lang"]), st.lists(_code_line, max_size=400)).map(
        lambda t: f"```{t[0]}\n" + "\n".join(t[1]) + "\n```"
    ),
    st.text(alphabet="x", min_size=1, max_size=3000),  # a long run with nowhere to cut
)
_markdown = st.lists(_block, min_size=1, max_size=8).map("\n\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown=_markdown, limit=st.sampled_from([40, 200, 1000, 4096]))
def test_every_piece_is_valid_telegram_html_and_nothing_is_lost_or_repeated(markdown: str, limit: int) -> None:
    html = to_html(markdown)
    pieces = chunks(markdown, limit)
    for piece in pieces:
        assert telegram_html_errors(piece, limit) == [], piece
        assert problems(piece, limit) == []
        assert visible_text(piece) == visible(piece)  # the plain-text fallback, as Telegram reads it
    whole = re.sub(r"\s", "", visible(html))
    assert "".join(re.sub(r"\s", "", visible(p)) for p in pieces) == whole
