"""Every command's help: a one-line summary, a description, and examples to copy.

``beamclaw COMMAND --help`` and ``beamclaw help COMMAND`` print them; a test checks
that no command or action goes without.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TypeAlias

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


def add_actions(parser: argparse.ArgumentParser) -> Commands:
    """The actions of a command; with none given, the command does its first (``skills`` lists)."""
    return parser.add_subparsers(dest="action", metavar="ACTION")
