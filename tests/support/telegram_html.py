"""An independent judge of Telegram HTML: what the Bot API's ``parse_mode=HTML`` accepts.

Built on the standard library's HTML parser, not on the channel's own tokenizer, so a
mistake there cannot hide itself here. The rules, from the Bot API's "Formatting
options": only the tags b/strong, i/em, u/ins, s/strike/del, span class="tg-spoiler",
tg-spoiler, a href, code, pre (holding text or one code class="language-…"),
blockquote (optionally expandable); ``<``, ``>`` and ``&`` escaped outside tags, and
only the named entities &lt; &gt; &amp; &quot; (numeric ones are fine); every tag
closed, in order; nothing inside code, pre not inside another entity, no blockquote in
a blockquote and no link in a link; 1-4,096 characters (UTF-16 units) of visible text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_INLINE = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler"}
_ATTRIBUTES = {"a": {"href"}, "span": {"class"}, "code": {"class"}, "blockquote": {"expandable"}}
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
# The parser below takes "&amp " as an entity; Telegram wants the semicolon.
_BARE_AMPERSAND = re.compile(r"&(?!(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);)")


class _Judge(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.errors: list[str] = []
        self.stack: list[str] = []
        self.pre: list[str] = []  # per open <pre>: "", "text" or "code"
        self.shown: list[str] = []

    def _visible(self, text: str) -> None:
        self.shown.append(text)
        if self.stack and self.stack[-1] == "pre" and text:
            if self.pre[-1] == "code":
                self.errors.append("text beside the <code> of a <pre>")
            self.pre[-1] = "text"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = dict(attrs)
        if tag not in _INLINE | {"span", "a", "code", "pre", "blockquote"}:
            self.errors.append(f"tag <{tag}> is not supported")
        elif set(given) - _ATTRIBUTES.get(tag, set()) or len(given) != len(attrs):
            self.errors.append(f"<{tag}> with attributes {sorted(given)}")
        elif tag == "span" and given.get("class") != "tg-spoiler":
            self.errors.append("a <span> that is not a spoiler")
        elif tag == "a" and not given.get("href"):
            self.errors.append("<a> without href")
        elif (
            tag == "code"
            and "class" in given
            and not (self.stack[-1:] == ["pre"] and (given["class"] or "").startswith("language-"))
        ):
            self.errors.append(f"<code class={given['class']!r}> outside a <pre>")
        if self.stack and self.stack[-1] == "code":
            self.errors.append(f"<{tag}> inside <code>")
        if self.stack and self.stack[-1] == "pre":
            if tag != "code" or self.pre[-1]:
                self.errors.append(f"<{tag}> inside <pre> (only one <code> may be)")
            self.pre[-1] = "code"
        if tag == "pre" and self.stack:
            self.errors.append(f"<pre> inside <{self.stack[-1]}>")
        if tag == "blockquote" and "blockquote" in self.stack:
            self.errors.append("nested <blockquote>")
        if tag == "a" and "a" in self.stack:
            self.errors.append("nested <a>")
        self.stack.append(tag)
        if tag == "pre":
            self.pre.append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.errors.append(f"self-closing <{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()
        if tag == "pre":
            self.pre.pop()

    def handle_data(self, data: str) -> None:
        for ch in "<>&":
            if ch in data:
                self.errors.append(f"unescaped {ch!r}")
        self._visible(data)

    def handle_entityref(self, name: str) -> None:
        if name not in _NAMED:
            self.errors.append(f"unsupported entity &{name};")
        self._visible(_NAMED.get(name, ""))

    def handle_charref(self, name: str) -> None:
        try:
            code = int(name[1:], 16) if name[:1] in {"x", "X"} else int(name)
            self._visible(chr(code))
        except (ValueError, OverflowError):
            self.errors.append(f"bad character reference &#{name};")

    def handle_comment(self, data: str) -> None:
        self.errors.append("a comment")

    def handle_decl(self, decl: str) -> None:
        self.errors.append("a declaration")

    def handle_pi(self, data: str) -> None:
        self.errors.append("a processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.errors.append("an unknown declaration")


def _judge(text: str) -> _Judge:
    judge = _Judge()
    judge.feed(text)
    judge.close()
    judge.errors.extend(f"<{tag}> never closed" for tag in judge.stack)
    if _BARE_AMPERSAND.search(text) and "unescaped '&'" not in judge.errors:
        judge.errors.append("unescaped '&'")
    return judge


def visible(text: str) -> str:
    """The text a reader sees (and Telegram counts): tags dropped, entities decoded."""
    return "".join(_judge(text).shown)


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def telegram_html_errors(text: str, limit: int = 4096) -> list[str]:
    """Why the Bot API would refuse *text* as a ``parse_mode=HTML`` message; [] if it would not."""
    judge = _judge(text)
    shown = "".join(judge.shown)
    if not shown.strip():
        judge.errors.append("empty after parsing")
    if utf16(shown) > limit:
        judge.errors.append(f"{utf16(shown)} characters after parsing (over {limit})")
    return judge.errors
