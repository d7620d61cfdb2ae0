"""Every command's help: a one-line summary, a description, and examples to copy.

``beamclaw COMMAND --help`` and ``beamclaw help COMMAND`` print them; a test checks
that no command or action goes without.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TypeAlias

import attrs

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_command(
    commands: Commands, name: str, summary: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A command (or an action of one) with its *summary* in the list, and its *description*
    and *examples* in its own help."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    return commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


@attrs.frozen
class Help:
    """A command's or an action's help: the line in the list, its description, its examples."""

    summary: str
    description: str
    examples: Sequence[str]


def add_group(
    commands: Commands,
    name: str,
    text: Help,
    actions: Mapping[str, Help],
) -> dict[str, argparse.ArgumentParser]:
    """A command made of actions (``agent create``...); the parser of each action, for its
    arguments. With no action given, the command does its first (``skills`` lists)."""
    parser = add_command(commands, name, text.summary, text.description, text.examples)
    subparsers = parser.add_subparsers(dest="action", metavar="ACTION")
    return {
        action: add_command(subparsers, action, what.summary, what.description, what.examples)
        for action, what in actions.items()
    }
