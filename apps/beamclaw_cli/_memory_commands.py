"""`beamclaw memory search | reindex | status`: the agents' long-term memory in the running daemon."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final

from ._api_client import call
from ._help import Commands, Help, add_group
from ._terminal_safe import as_text, console

#: The most hits one search returns (the daemon checks it too).
MAX_LIMIT: Final = 50

_HELP: Final = Help(
    "search, reindex and inspect the agents' long-term memory",
    "What each agent remembers: its MEMORY.md, daily logs (memory/YYYY-MM-DD.md), the other "
    "indexed workspace files and its past conversations, searched by keywords and by meaning. "
    "Edits to the files are picked up by themselves. Without an action, show the status.",
    ['beamclaw memory search "where is the backup key"', "beamclaw memory status"],
)

if TYPE_CHECKING:
    from rich.console import Console

_ACTIONS: Final = {
    "search": Help("the passages of an agent's memory best matching a query", "Search an agent's memory as its "
                   "memory_search tool does: each hit with its file, line range, score and text. Without --user "
                   "only the agent's files are searched; conversations are searched only for the user named with "
                   "--user (that user's own, never another's).",
                   ['beamclaw memory search "backup schedule"', 'beamclaw memory search --agent ops "disk alerts"',
                    'beamclaw memory search --agent ops --limit 3 "disk alerts last week"']),
    "reindex": Help("index an agent's files again from scratch", "Drop an agent's index of its workspace files and "
                    "build it again from the files (conversations are kept); its vectors are made again behind it.",
                    ["beamclaw memory reindex", "beamclaw memory reindex --agent ops"]),
    "status": Help("each agent's memory: documents, chunks, vectors", "For every agent: the documents and chunks "
                   "indexed, how many chunks have a vector yet, the embedding model, and the embedder's last error.",
                   ["beamclaw memory status"]),
}  # fmt: skip


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"the limit is from 1 to {MAX_LIMIT}, not {value}")
    return value


def add_parser(commands: Commands) -> None:
    actions = add_group(commands, "memory", _HELP, _ACTIONS)
    search = actions["search"]
    search.add_argument("--agent", default=None, help="the agent (default: the configured default agent)")
    search.add_argument(
        "--user", default=None, help="also search this user's conversations with the agent (default: files only)"
    )
    search.add_argument("--limit", type=_limit, default=None, help=f"hits at most, 1 to {MAX_LIMIT} (default: "
                        "[memory.search] default_limit)")  # fmt: skip
    search.add_argument("query", help="what to look for (words, or a question)")
    actions["reindex"].add_argument("--agent", default=None, help="the agent (default: the configured default agent)")


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _print_hits(out: Console, answer: dict[str, Any], query: str) -> None:
    if answer["note"]:
        out.print(as_text(f"note: {answer['note']}"), soft_wrap=True)
    if not answer["hits"]:
        where = f"the files of agent {answer['agent']}"
        where += f" or {answer['user']}'s conversations" if answer["user"] else " (add --user to search conversations)"
        out.print(as_text(f"no memory matched {query!r} in {where}"), soft_wrap=True)
        return
    for number, hit in enumerate(answer["hits"], start=1):
        out.print(
            as_text(
                f"{number}. {hit['path']} lines {hit['start_line']}-{hit['end_line']} "
                f"(score {hit['score']:.2f}, {hit['kind']})"
            ),
            soft_wrap=True,  # a long line of the file stays one line (for grep), the terminal wraps it
        )
        out.print(as_text("   " + hit["text"].rstrip("\n").replace("\n", "\n   ")), soft_wrap=True)


def _status_table(out: Console, agents: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("AGENT", "DOCUMENTS", "CHUNKS", "EMBEDDED", "VECTOR MODEL", "EMBEDDER ERROR"):
        table.add_column(column, no_wrap=column != "EMBEDDER ERROR", overflow="fold")
    for item in agents:
        table.add_row(
            as_text(item["agent"]), str(item["documents"]), str(item["chunks"]), str(item["embedded"]),
            as_text(item["vector_model"] or "-"), as_text(item["embed_error"] or "-"),
        )  # fmt: skip
    out.print(table)


async def run(args: argparse.Namespace) -> int:
    out = console()
    match args.action or "status":
        case "search":
            found = {"q": args.query, "agent": args.agent, "user": args.user, "limit": args.limit}
            answer = await call("GET", "/v1/memory/search", params={k: v for k, v in found.items() if v is not None})
            _print_hits(out, answer, args.query)
            return 0
        case "reindex":
            status = (await call("POST", "/v1/memory/reindex", json={"agent": args.agent}))["status"]
            out.print(
                as_text(
                    f"reindexed agent {status['agent']}: {_count(status['documents'], 'document')}, "
                    f"{_count(status['chunks'], 'chunk')} ({status['embedded']} with a vector so far)"
                )
            )
            return 0
        case "status":
            _status_table(out, (await call("GET", "/v1/memory/status"))["agents"])
            return 0
    raise AssertionError(f"unknown action {args.action}")  # pragma: no cover - argparse allows only these


def run_command(args: argparse.Namespace) -> int:
    import trio

    return trio.run(run, args)
