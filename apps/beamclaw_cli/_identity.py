"""Who the CLI speaks as: the ``--agent`` and ``--user`` options of the commands that chat,
and the user id they come to."""

from __future__ import annotations

import argparse
import os


def add_identity_options(parser: argparse.ArgumentParser) -> None:
    """``--agent`` and ``--user``: a command that chats speaks as this user to this agent."""
    parser.add_argument("--agent", default="default", help="the agent (default: default)")
    parser.add_argument("--user", default=None, help="the user id (default: local:$BEAMCLAW_USER or local:$USER)")


def user_id(args: argparse.Namespace) -> str:
    """``local:<BEAMCLAW_USER or USER>``: the same user on every channel continues one conversation."""
    if getattr(args, "user", None):
        return str(args.user)
    return "local:" + (os.environ.get("BEAMCLAW_USER") or os.environ.get("USER") or "user")
