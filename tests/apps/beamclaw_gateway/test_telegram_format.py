"""Markdown to Telegram HTML, tables as aligned text, and splitting at 4,096 characters."""

from __future__ import annotations

import pytest

from beamclaw_gateway._telegram_format import split, to_html, width


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
        ("> quoted", "<blockquote>quoted</blockquote>"),
        ("```python\nif a < b:\n    pass\n```", "<pre>if a &lt; b:\n    pass</pre>"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ],
)
def test_markdown_to_html(markdown: str, html: str) -> None:
    assert to_html(markdown) == html


def test_tables_become_aligned_text_with_wide_characters_counted_twice() -> None:
    table = "| name | city |\n|---|:---:|\n| Ada | 東京 |\n| 🙂 | Oslo |"
    assert to_html(table) == "<pre>name  city\n----  ----\nAda   東京\n🙂    Oslo</pre>"
    assert (width("東京"), width("🙂"), width("é"), width("abc")) == (4, 2, 1, 3)


def test_split_prefers_paragraphs_then_lines_then_spaces() -> None:
    paragraphs = ("p" * 3000 + "\n\n") * 2
    assert [len(piece) for piece in split(paragraphs)] == [3000, 3000]
    lines = ("l" * 1000 + "\n") * 6
    assert all(len(piece) <= 4096 and piece.endswith("l") for piece in split(lines))
    words = "word " * 2000
    pieces = split(words)
    assert all(len(p) <= 4096 for p in pieces) and " ".join(pieces).split() == words.split()
    assert split("x" * 5000) == ["x" * 4096, "x" * 904]  # no separator at all: a hard cut
