"""Telegram HTML cut into messages of at most 4,096 visible characters, each valid alone.

The Bot API parses every message on its own, so a ``<pre>`` opened in one message and
closed in the next is refused (and the plain-text fallback used to repeat words). The
cut goes where a reader expects a break: between paragraphs, else between lines, else
between the lines of a code block, else at a space, and only as a last resort between
two characters, and never so early that a message is left nearly empty. A cut inside
an entity (a long code block, a long link) closes the tags open at that point and
opens them again, attributes and all, at the start of the next message. A character
entity such as ``&lt;`` is one unit here, so it is never cut in half. Lengths are
counted as Telegram counts them: visible text only, in UTF-16 code units.
"""

from __future__ import annotations

import html

import attrs

from ._telegram_html import LIMIT, Token, tokens, visible_text

# Cut priorities: a blank line, a line break outside any tag, a line inside a tag
# (a code block's), a space; 0 is a cut between any two characters.
_PARAGRAPH, _LINE, _INNER_LINE, _SPACE = 4, 3, 2, 1


@attrs.frozen
class _Atom:
    raw: str
    width: int = 0
    char: str = ""
    tag: Token | None = None


@attrs.frozen
class _Cut:
    index: int  # the next message starts at this atom (after any separator is skipped)
    used: int  # visible width before it, in this message
    priority: int
    stack: tuple[Token, ...]  # the tags open there


def _atoms(text: str) -> list[_Atom]:
    atoms: list[_Atom] = []
    for token in tokens(text):
        if token.kind in {"open", "close"}:
            atoms.append(_Atom(token.raw, tag=token))
        elif token.kind == "entity":
            atoms.append(_Atom(token.raw, token.width, token.text))
        else:  # text, or a stray < > & (escaped on the way out)
            atoms.extend(_Atom(html.escape(ch, quote=False), 2 if ord(ch) > 0xFFFF else 1, ch) for ch in token.text)
    return atoms


def _priority(atoms: list[_Atom], index: int, depth: int) -> int:
    char = atoms[index].char
    if char == "\n":
        if depth:
            return _INNER_LINE
        following = atoms[index + 1].char if index + 1 < len(atoms) else ""
        return _PARAGRAPH if following == "\n" else _LINE
    return _SPACE if char == " " else 0


def _best(cuts: list[_Cut], limit: int) -> _Cut | None:
    """The cut with the highest priority that leaves the message at least a quarter full."""
    for priority in (_PARAGRAPH, _LINE, _INNER_LINE, _SPACE):
        fitting = [c for c in cuts if c.priority == priority and c.used > limit // 4]
        if fitting:
            return fitting[-1]
    return None


def _piece(stack: tuple[Token, ...], body: list[_Atom], closing: tuple[Token, ...]) -> str:
    """The tags open before, the atoms, and closing tags for *closing*, without empty pairs.

    A cut right after an opening tag leaves an empty pair (``<b></b>``, or nested
    ones): each is dropped, in one pass with a stack (once tokenized, nothing here is
    a pattern: RE2 has no back-references, and `re` would go over the text again for
    each level of nesting).
    """
    parts: list[tuple[str, Token | None]] = [(t.raw, t) for t in stack]
    parts += [(a.raw, a.tag) for a in body]
    parts += [(f"</{t.name}>", None) for t in reversed(closing)]
    kept: list[tuple[str, Token | None]] = []
    for raw, tag in parts:
        if kept and raw.startswith("</") and _opens_empty(kept[-1], raw):
            kept.pop()
        else:
            kept.append((raw, tag))
    return "".join(raw for raw, _ in kept)


def _opens_empty(previous: tuple[str, Token | None], closing: str) -> bool:
    """Whether *previous* is an opening tag (written in lower case) that *closing* closes."""
    raw, tag = previous
    if tag is None or tag.kind != "open":
        return False
    return raw[1 : 1 + len(tag.name)] == tag.name and closing == f"</{tag.name}>"


def split_html(text: str, limit: int = LIMIT) -> list[str]:
    """Valid Telegram HTML *text* in pieces, each valid alone and at most *limit* long."""
    atoms = _atoms(text)
    pieces: list[str] = []
    stack: list[Token] = []
    start = 0
    while start < len(atoms):
        opened = tuple(stack)
        cuts: list[_Cut] = []
        used, index = 0, start
        while index < len(atoms):
            atom = atoms[index]
            if atom.tag is not None:
                if atom.tag.kind == "open":
                    stack.append(atom.tag)
                elif stack:
                    stack.pop()
                index += 1
                continue
            if used + atom.width > limit:
                break
            priority = _priority(atoms, index, len(stack))
            if priority and used:
                cuts.append(_Cut(index, used, priority, tuple(stack)))
            used += atom.width
            index += 1
        if index >= len(atoms):
            pieces.append(_piece(opened, atoms[start:], ()))
            break
        cut = _best(cuts, limit) or _Cut(index, used, 0, tuple(stack))
        pieces.append(_piece(opened, atoms[start : cut.index], cut.stack))
        stack = list(cut.stack)
        start = cut.index
        in_code = any(t.name in {"pre", "code"} for t in stack)
        if cut.priority and not (in_code and atoms[start].char == " "):
            start += 1  # the line break (or space, outside code) the cut replaces
        while not stack and start < len(atoms) and atoms[start].char in {" ", "\n"}:
            start += 1  # at the top level, a message starts with text (Telegram trims it anyway)
    return [p for p in pieces if visible_text(p).strip()]
