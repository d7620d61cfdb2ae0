"""Formatting and splitting a reply for Telegram: ours against telegramify-markdown.

    python -m bench.telegram_format_bench [--quick]

replies
    Seconds to turn a model's Markdown into the messages that carry it, for a few
    representative replies (a short answer; a 3 KB one with headings, a list, a table
    and a code block; a 12 KB one that is mostly a code block; 40 KB of mixed prose).
    Ours: `chunks` (Telegram HTML, cut at paragraphs, lines or spaces). The library's:
    ``convert`` (plain text and entities; ``latex_escape`` off, as we would run it) and
    ``split_entities`` (cut at line breaks) to 4,096 UTF-16 units.

hostile
    The same on model output built to be slow: ``||a`` then line breaks then ``b||``
    (the library's spoiler pattern backtracks: its time grows with the cube of the
    line breaks, so it runs at 2,000 and 8,000 only, 2,000 with ``--quick``), and 64 KB
    of ``[``, ``*a `` and nested ``>``.

Figures are printed, and written to bench/results/telegram_format.json.
"""

from __future__ import annotations

from typing import Any

from telegramify_markdown import RenderConfig, convert, split_entities

from beamclaw_gateway._telegram_format import LIMIT, chunks

from ._cli import best_time, quick_flag, save

_KB = 1024
_CONFIG = RenderConfig.isolated()


def _ours(markdown: str) -> int:
    return len(chunks(markdown))


def _library(markdown: str) -> int:
    text, entities = convert(markdown, latex_escape=False, config=_CONFIG)
    return len(split_entities(text, entities, LIMIT))


_SHORT = """Sure! Here is what **changed**:

- `parse()` now returns a *list*, not a generator
- the [docs](https://example.org/docs?a=1&b=2) say why
- `x < y && y > z` is ~~wrong~~ fixed
"""

_TABLE = """| name | city | score |
|------|:----:|------:|
| Ada | London | 10 |
| 東京 | Tokyo | 7 |
| Grace | New York | 9 |
"""


def _code(lines: int) -> str:
    step = "    if items[{0}] < limit and flags & {0}:  # step {0}\n        total += {0}"
    body = "\n".join(step.format(i) for i in range(lines))
    return f"```python\ndef run(items, limit, flags):\n    total = 0\n{body}\n    return total\n```"


def _replies() -> dict[str, str]:
    chat = f"# Summary\n\n{_SHORT}\n## Figures\n\n{_TABLE}\n{_code(12)}\n\n> Note: _all_ of this is **tested**.\n"
    prose = (
        "The scheduler keeps its jobs in SQLite; a job that fails is retried with **backoff**, "
        "and its *last* error is shown in `beamclaw jobs`. See [the guide](https://example.org/g).\n\n"
    )
    return {
        "short": _SHORT,
        "chat_3KB": (chat * 3)[: 3 * _KB],
        "code_12KB": "Here is the whole function:\n\n" + _code(110) + "\n\nThat is **all**.",
        "mixed_40KB": ((prose * 8 + "- one\n- two\n\n" + _code(8) + "\n\n") * 20)[: 40 * _KB],
    }


def _hostile(quick: bool) -> dict[str, str]:
    spoilers = {f"spoiler_{n}_newlines": "||a" + "\n" * n + "b||" for n in ((2000,) if quick else (2000, 8000))}
    return spoilers | {"[ x 64KB": "[" * 64 * _KB, "*a x 64KB": "*a " * (64 * _KB // 3), "> x 64KB": ">" * 64 * _KB}


def _compare(cases: dict[str, str], budget: float) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, markdown in cases.items():
        ours = best_time(lambda markdown=markdown: _ours(markdown), budget)  # type: ignore[misc]
        library = best_time(lambda markdown=markdown: _library(markdown), budget)  # type: ignore[misc]
        result[name] = {
            "chars": len(markdown),
            "messages_ours": _ours(markdown),
            "messages_library": _library(markdown),
            "ours_ms": round(ours * 1000, 2),
            "library_ms": round(library * 1000, 2),
            "ours_vs_library_time": round(ours / library, 2),
        }
    return result


def main() -> None:
    quick = quick_flag(__doc__)
    result = {
        "replies": _compare(_replies(), budget=0.2 if quick else 1.0),
        "hostile": _compare(_hostile(quick), budget=0.0),
    }
    for section in ("replies", "hostile"):
        print(f"== {section}")
        for name, row in result[section].items():
            print(f"  {name:22} " + "  ".join(f"{k}={v}" for k, v in row.items()))
    save("telegram_format", result)


if __name__ == "__main__":
    main()
