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
from collections import deque
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


def split_lines(text: str) -> list[str]:
    """*text*'s lines as an editor (and ``sed -n``) numbers them: only newlines end a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _is_heading(line: str) -> bool:
    return line.lstrip().startswith("#")


def _paragraphs(text: str, size: int) -> list[list[_Piece]]:
    """Blocks between blank lines; a heading starts a block, and a heading alone (the
    usual ``## Travel``, blank line, text) stays with the block after it."""
    paragraphs: list[list[_Piece]] = []
    current: list[_Piece] = []
    headings_only = False
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            if current and not headings_only:
                paragraphs.append(current)
                current = []
            continue
        if _is_heading(line) and current and not headings_only:
            paragraphs.append(current)
            current = []
        headings_only = (not current or headings_only) and _is_heading(line)
        current.extend(_pieces(number, line, size))
    if current:
        paragraphs.append(current)
    return paragraphs


def _joined(pieces: list[_Piece]) -> str:
    """The pieces' text with the blank lines between them put back: a chunk's text is
    its lines as the file has them."""
    lines: list[str] = []
    for previous, piece in zip([None, *pieces], pieces, strict=False):
        if previous is not None and piece.line > previous.line + 1:
            lines.extend([""] * (piece.line - previous.line - 1))
        lines.append(piece.text)
    return "\n".join(lines)


def chunk_text(text: str, size: int = 400, overlap: int = 80) -> list[Chunk]:
    """The chunks of *text* (see the module); none for blank text.

    Linear in the text: a model can write a file of a million one-letter lines, and this
    runs on every change of it.
    """
    if not 0 <= overlap < size:
        raise ValueError(f"the overlap ({overlap}) must be less than the chunk size ({size})")
    chunks: list[Chunk] = []
    current: deque[_Piece] = deque()
    held = 0  # tokens in `current`
    fresh = 0  # pieces of `current` not carried over from the chunk before

    def emit() -> None:
        nonlocal current, held, fresh
        chunks.append(Chunk(current[0].line, current[-1].line, _joined(list(current))))
        carried: deque[_Piece] = deque()
        kept = 0
        for piece in reversed(list(current)[1:]):  # never all of it: the next chunk must add something
            if kept + piece.tokens > overlap:
                break
            carried.appendleft(piece)
            kept += piece.tokens
        current, held, fresh = carried, kept, 0

    for paragraph in _paragraphs(text, size):
        if fresh and held + sum(p.tokens for p in paragraph) > size:
            emit()
        for piece in paragraph:
            if fresh and held + piece.tokens > size:
                emit()
            while current and held + piece.tokens > size:
                held -= current.popleft().tokens  # the carried lines give way to a piece that needs the room
            current.append(piece)
            held += piece.tokens
            fresh += 1
    if fresh:
        emit()
    return chunks


def windows(text: str, size: int) -> list[str]:
    """*text* cut into pieces of about *size* tokens without overlap (lines kept whole where
    they fit): what gets a vector each, so one line that answers is not averaged away."""
    return [chunk.text for chunk in chunk_text(text, size, 0)] or [text]
