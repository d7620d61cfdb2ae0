"""Text into overlapping chunks, each with the lines it came from.

Paragraphs (blocks between blank lines, and a Markdown heading starts a new one) are
packed whole into a chunk while they fit ``size`` tokens; a longer paragraph is cut
between lines, and a longer line between words. Each new chunk starts with the last
lines of the one before it, up to ``overlap`` tokens, so a fact cut at a boundary is
still whole in one of them. Tokens are estimated at four characters, as everywhere in
BeamClaw.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import attrs

_WORDS: Final = re.compile(r"\S+\s*")


@attrs.frozen
class Chunk:
    #: First and last line (1-based, inclusive) of the text this chunk comes from.
    start_line: int
    end_line: int
    text: str


@attrs.frozen
class _Piece:
    line: int
    text: str

    @property
    def tokens(self) -> int:
        return tokens(self.text)


def tokens(text: str) -> int:
    """Tokens in *text*, estimated at four characters each (at least one for any text)."""
    return max(1, len(text) // 4) if text else 0


def _pieces(line_no: int, line: str, size: int) -> Iterator[_Piece]:
    """The line, or word-bounded parts of it when it alone is over *size* tokens."""
    if tokens(line) <= size:
        yield _Piece(line_no, line)
        return
    part = ""
    for match in _WORDS.finditer(line):
        word = match.group()
        while tokens(word) > size:  # one "word" longer than a chunk (a base64 blob)
            if part:
                yield _Piece(line_no, part.rstrip())
                part = ""
            yield _Piece(line_no, word[: size * 4])
            word = word[size * 4 :]
        if part and tokens(part + word) > size:
            yield _Piece(line_no, part.rstrip())
            part = ""
        part += word
    if part.strip():
        yield _Piece(line_no, part.rstrip())


def _paragraphs(text: str, size: int) -> list[list[_Piece]]:
    paragraphs: list[list[_Piece]] = []
    current: list[_Piece] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            if current:
                paragraphs.append(current)
            current = []
            if not line.strip():
                continue
        current.extend(_pieces(number, line, size))
    if current:
        paragraphs.append(current)
    return paragraphs


def chunk_text(text: str, size: int = 400, overlap: int = 80) -> list[Chunk]:
    """The chunks of *text* (see the module); none for blank text."""
    if not 0 <= overlap < size:
        raise ValueError(f"the overlap ({overlap}) must be less than the chunk size ({size})")
    chunks: list[Chunk] = []
    current: list[_Piece] = []
    fresh = 0  # pieces of `current` not carried over from the chunk before

    def emit() -> None:
        nonlocal current, fresh
        chunks.append(Chunk(current[0].line, current[-1].line, "\n".join(p.text for p in current)))
        carried: list[_Piece] = []
        for piece in reversed(current[1:]):  # never all of it: the next chunk must add something
            if sum(p.tokens for p in carried) + piece.tokens > overlap:
                break
            carried.insert(0, piece)
        current, fresh = carried, 0

    for paragraph in _paragraphs(text, size):
        if fresh and sum(p.tokens for p in current + paragraph) > size:
            emit()
        for piece in paragraph:
            if fresh and sum(p.tokens for p in current) + piece.tokens > size:
                emit()
            while current and sum(p.tokens for p in current) + piece.tokens > size:
                current.pop(0)  # the carried lines give way to a piece that needs the room
            current.append(piece)
            fresh += 1
    if fresh:
        emit()
    return chunks
