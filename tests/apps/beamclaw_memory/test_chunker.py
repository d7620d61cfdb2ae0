"""The chunker: paragraphs packed whole, sizes and overlaps in tokens, exact line ranges."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beamclaw_memory import Chunk, chunk_text, tokens


def _line_tokens(chunk: Chunk) -> int:
    return sum(tokens(line) for line in chunk.text.split("\n"))


def _check_ranges(text: str, chunks: list[Chunk]) -> None:
    """Each line of a chunk is (a part of) an input line, in order, within the chunk's range;
    the first comes from its first line and the last from its last."""
    lines = text.splitlines()
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        pieces = chunk.text.split("\n")
        assert pieces[0] in lines[chunk.start_line - 1], chunk
        assert pieces[-1] in lines[chunk.end_line - 1], chunk
        number = chunk.start_line
        for piece in pieces:
            while piece not in lines[number - 1]:
                number += 1
                assert number <= chunk.end_line, (piece, chunk)


def test_blank_text_has_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text("  \n\n\t \n   ") == []


@pytest.mark.parametrize(("size", "overlap"), [(16, 16), (16, 20), (16, -1)])
def test_overlap_must_be_below_the_size(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("some text", size, overlap)


def test_short_paragraphs_are_packed_into_one_chunk_as_the_file_has_them() -> None:
    text = "# Title\nalpha beta\n\ngamma delta\n## Sub\nepsilon\n\n"
    assert chunk_text(text, 400, 80) == [Chunk(1, 6, "# Title\nalpha beta\n\ngamma delta\n## Sub\nepsilon")]


def test_a_heading_alone_stays_with_the_section_it_heads() -> None:
    text = "# Memory\n\nThe backup key is in the drawer.\n\n## Travel\n\nAda flies to Lisbon on Friday.\n"
    assert chunk_text(text, 16, 0) == [
        Chunk(1, 3, "# Memory\n\nThe backup key is in the drawer."),
        Chunk(5, 7, "## Travel\n\nAda flies to Lisbon on Friday."),
    ]


def test_lines_are_numbered_as_an_editor_numbers_them() -> None:
    text = "one\x0ctwo\u2028still one line\r\nline two\rline three"
    chunk = chunk_text(text, 400, 0)
    assert [(c.start_line, c.end_line) for c in chunk] == [(1, 3)]
    assert chunk[0].text.split("\n")[1:] == ["line two", "line three"]


def test_a_paragraph_that_does_not_fit_starts_a_new_chunk_whole() -> None:
    first = [f"first paragraph line {i} xxxxxxxxxxxxxxxxx" for i in range(3)]  # 10 tokens each
    second = [f"second paragraph line {i} xxxxxxxxxxxxxxxx" for i in range(3)]
    text = "\n".join(first) + "\n\n" + "\n".join(second)
    chunks = chunk_text(text, 40, 0)
    assert chunks == [Chunk(1, 3, "\n".join(first)), Chunk(5, 7, "\n".join(second))]


def test_a_heading_starts_a_new_paragraph() -> None:
    body = [f"body line number {i} xxxxxxxxxxxxxxxxxxx" for i in range(3)]  # 10 tokens each
    text = "\n".join(body) + "\n## Next\n" + "\n".join(body)
    chunks = chunk_text(text, 40, 0)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (4, 7)]
    assert chunks[1].text.startswith("## Next\n")


def test_size_and_overlap_are_in_tokens_and_line_ranges_are_exact() -> None:
    lines = [f"line {i:02d} " + "x" * 30 for i in range(1, 13)]  # 40 characters: 10 tokens each
    text = "\n".join(lines)
    chunks = chunk_text(text, 30, 10)
    # Three lines (30 tokens) a chunk; each next chunk starts with the last line (10 tokens) of the one before.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (3, 5), (5, 7), (7, 9), (9, 11), (11, 12)]
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    assert [(c.start_line, c.end_line) for c in chunk_text(text, 30, 0)] == [(1, 3), (4, 6), (7, 9), (10, 12)]
    assert [(c.start_line, c.end_line) for c in chunk_text(text, 30, 20)] == [
        (1, 3), (2, 4), (3, 5), (4, 6), (5, 7), (6, 8), (7, 9), (8, 10), (9, 11), (10, 12),
    ]  # fmt: skip


def test_line_numbers_count_blank_lines_and_crlf() -> None:
    text = "\r\n\r\nfirst fact\r\n\r\n\r\nsecond fact\r\n"
    assert chunk_text(text, 16, 0) == [Chunk(3, 6, "first fact\n\n\nsecond fact")]
    assert chunk_text("\n\n\nonly\n", 16, 0) == [Chunk(4, 4, "only")]


def test_a_long_line_is_split_between_words() -> None:
    words = [f"word{i:03d}" for i in range(100)]
    text = "first\n" + " ".join(words) + "\nlast"
    chunks = chunk_text(text, 20, 5)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 3
    assert all(_line_tokens(c) <= 20 for c in chunks)
    seen = [w for c in chunks for line in c.text.split("\n") for w in line.split()]
    assert [w for w in seen if w.startswith("word")] == words  # every word, whole, once (pieces > overlap)
    middle = [c for c in chunks if c.start_line == c.end_line == 2]
    assert len(middle) >= 3
    _check_ranges(text, chunks)


def test_a_giant_unbroken_token_is_cut_to_the_chunk_size() -> None:
    blob = "Z" * 1000
    text = f"before\n{blob}\nafter"
    chunks = chunk_text(text, 16, 0)
    assert all(_line_tokens(c) <= 16 for c in chunks)
    assert "".join(line for c in chunks for line in c.text.split("\n") if line.startswith("Z")) == blob
    assert chunks[0] == Chunk(1, 1, "before")
    assert chunks[-1].end_line == 3 and chunks[-1].text.endswith("after")
    assert all(c.start_line == 2 for c in chunks[1:])
    _check_ranges(text, chunks)


def test_words_around_a_giant_token_stay_whole() -> None:
    text = "alpha beta " + "Q" * 200 + " gamma delta"
    chunks = chunk_text(text, 16, 0)
    flat = [line for c in chunks for line in c.text.split("\n")]
    assert flat[0] == "alpha beta"
    assert flat[-1].endswith("gamma delta")
    assert "".join(flat).replace("alpha beta", "").replace(" gamma delta", "") == "Q" * 200


_LINE = st.one_of(
    st.just(""),
    st.just("# heading"),
    st.text(alphabet="abc xyz\t", min_size=1, max_size=40),
    st.lists(st.text(alphabet="klmnop", min_size=1, max_size=12), min_size=1, max_size=40).map(" ".join),
    st.integers(min_value=60, max_value=400).map(lambda n: "W" * n),
)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, max_size=40), size=st.integers(16, 60), overlap_part=st.floats(0, 0.9))
def test_every_line_of_the_input_is_in_a_chunk_that_covers_it(lines: list[str], size: int, overlap_part: float) -> None:
    overlap = int(size * overlap_part)
    text = "\n".join(lines)
    chunks = chunk_text(text, size, overlap)
    _check_ranges(text, chunks)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        covering = [c for c in chunks if c.start_line <= number <= c.end_line]
        assert covering, (number, line)
        for word in line.split():
            if len(word) <= size * 4:
                assert any(word in c.text for c in covering), (number, word)
    for chunk in chunks:
        assert _line_tokens(chunk) <= size
    for before, after in itertools.pairwise(chunks):
        assert after.start_line >= before.start_line
        assert after.end_line >= before.end_line
