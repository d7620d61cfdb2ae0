"""`beamclaw remote_console`: an operator's console attached to the running daemon.

As Erlang's remote shell is for a release: look at the live processes (the tree, the
registered names, one process's state and queued messages) and send a message to a
name, without stopping anything. It speaks to the daemon's socket, which only the
data dir's owner can reach, so it gives nobody a power they did not have.

In a terminal it is a prompt_toolkit prompt (line editing, history, Tab completes
commands); with stdin from a pipe, it reads one command a line, so a script
(or a test) can drive it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Iterator
from typing import Any, Final
from urllib.parse import quote

import trio
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import WordCompleter

from ._api_client import ApiError, NoDaemon, call
from ._listing import Column, print_table
from ._terminal_safe import console
from ._tree_view import render

_HELP: Final = """\
commands:
  ps                 every process: path, pid, registered name, kind, state, restarts, mailbox
  tree               the supervision tree, drawn
  names              the registered names, their pid and mailbox length
  info TARGET        one process: its state and the messages queued in its mailbox
                     (TARGET: a pid such as <0.12.0>, a registered name, or a path as in `ps`)
  send NAME MESSAGE  send MESSAGE to the process registered as NAME (JSON if it parses, else text)
  help               this list
  quit               leave (Ctrl-D too); the daemon goes on"""


def _flatten(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for child in node.get("children") or []:
        here = f"{path}/{child['id']}" if path else str(child["id"])
        yield here, child
        yield from _flatten(child, here)


async def _ps(words: list[str]) -> None:
    tree = await call("GET", "/v1/supervision/tree")
    print_table(
        [Column("PATH", whole=True), Column("PID", whole=True), Column("NAME", whole=True), Column("KIND"),
         Column("STATE"), Column("RESTARTS", right=True), Column("MAILBOX", right=True)],
        [(path, node.get("pid") or "-", node.get("name") or "-", node["kind"], node.get("state", ""),
          node.get("restarts", 0), node.get("mailbox", 0)) for path, node in _flatten(tree)],
    )  # fmt: skip


async def _tree(words: list[str]) -> None:
    console().print(render(await call("GET", "/v1/supervision/tree")))


async def _names(words: list[str]) -> None:
    names = (await call("GET", "/v1/names"))["names"]
    print_table(
        [Column("NAME", whole=True), Column("PID", whole=True), Column("KIND"), Column("MAILBOX", right=True)],
        [(n["name"], n["pid"], n["kind"], n["mailbox"]) for n in names],
    )


async def _info(words: list[str]) -> None:
    if len(words) != 1:
        raise _Usage("info TARGET (a pid such as <0.12.0>, a registered name, or a path as in `ps`)")
    info = await call("GET", f"/v1/processes/{quote(words[0], safe='/')}")
    capacity = "unbounded" if info["capacity"] is None else f"at most {info['capacity']:g}"
    print(f"pid       {info['pid']}")
    print(f"name      {info['name'] or '-'}")
    print(f"kind      {info['kind']}")
    print(f"uptime    {info['uptime']:.1f} s")
    print(f"mailbox   {info['mailbox']} queued ({capacity}; {info['dropped']} dropped)")
    for message in info["messages"]:
        print(f"  {message}")
    if info["mailbox"] > len(info["messages"]):
        print(f"  ... and {info['mailbox'] - len(info['messages'])} more")


async def _send(words: list[str]) -> None:
    if len(words) < 2:
        raise _Usage("send NAME MESSAGE")
    text = " ".join(words[1:])
    try:
        message: Any = json.loads(text)
    except ValueError:
        message = text
    answer = await call("POST", f"/v1/names/{quote(words[0], safe='')}/send", json={"message": message})
    print(f"sent to {answer['name']}" if answer["queued"] else f"{answer['name']} dropped it (its mailbox is full)")


class _Usage(Exception):
    """A command written wrong; the message is how to write it."""


_COMMANDS: Final[dict[str, Callable[[list[str]], Any]]] = {
    "ps": _ps,
    "tree": _tree,
    "names": _names,
    "info": _info,
    "send": _send,
}


def _run_line(line: str) -> bool:
    """Run one command line; whether to go on."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        print(f"! {exc}")
        return True
    if not words:
        return True
    command, rest = words[0].lower(), words[1:]
    if command in {"quit", "exit", "q"}:
        return False
    if command in {"help", "?"}:
        print(_HELP)
        return True
    if command not in _COMMANDS:
        print(f"! unknown command {command!r}: `help` lists them")
        return True
    try:
        trio.run(_COMMANDS[command], rest)
    except _Usage as exc:
        print(f"! usage: {exc}")
    except ApiError as exc:
        print(f"! {exc}")
    return True


def _lines() -> Iterator[str]:
    """The operator's lines: a prompt in a terminal, else stdin's lines (a script)."""
    if not sys.stdin.isatty():
        yield from sys.stdin
        return
    session: PromptSession[str] = PromptSession(
        completer=WordCompleter([*_COMMANDS, "help", "quit"], sentence=True), complete_while_typing=False
    )
    while True:
        try:
            yield session.prompt("beamclaw> ")
        except KeyboardInterrupt:
            continue  # Ctrl-C clears the line, as in a shell
        except EOFError:
            return


def remote_console(args: argparse.Namespace) -> int:
    status = trio.run(call, "GET", "/v1/status")  # no daemon: NoDaemon, told in one line by the caller
    print(f"attached to BeamClaw {status['version']}, pid {status['pid']} (`help` lists the commands, `quit` leaves)")
    for line in _lines():
        try:
            if not _run_line(line):
                break
        except NoDaemon as exc:
            print(f"! {exc}")
            return 3
    return 0
