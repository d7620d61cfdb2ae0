"""Print an HTML file as readable text: title, text, and numbered links (stdlib only)."""

from __future__ import annotations

import sys
from html.parser import HTMLParser

SKIP = {"script", "style", "noscript", "svg", "nav", "footer", "head"}
BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "pre"}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.links: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIP:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if tag in BLOCK:
            self.parts.append("\n")
        href = dict(attrs).get("href")
        if tag == "a" and href and not href.startswith(("#", "javascript:")):
            self.links.append(href)
            self.parts.append(f"[{len(self.links)}]")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False
        if tag in BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def main(path: str) -> None:
    with open(path, encoding="utf-8", errors="replace") as f:
        parser = _Text()
        parser.feed(f.read())
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    text = "\n".join(line for line in lines if line)
    print(f"# {parser.title.strip()}\n" if parser.title.strip() else "", end="")
    print(text)
    if parser.links:
        print("\n## Links")
        for i, href in enumerate(parser.links, 1):
            print(f"[{i}] {href}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: html_to_text.py FILE.html")
    main(sys.argv[1])
