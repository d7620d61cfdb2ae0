"""Who the CLI speaks as: the ``--agent`` and ``--user`` options of the commands that chat,
and the user id they come to."""

from __future__ import annotations

import argparse
import os

import beamclaw_core as core


def add_identity_options(
    parser: argparse.ArgumentParser, user_default: str = "$BEAMCLAW_USER as it is, else local:$USER"
) -> None:
    """``--agent`` and ``--user``: a command that chats speaks as this user to this agent."""
    parser.add_argument("--agent", default="default", help="the agent (default: default)")
    parser.add_argument("--user", default=None, help=f"the user id (default: {user_default})")


def user_id(args: argparse.Namespace) -> str:
    """``--user``, else ``BEAMCLAW_USER`` as it is (the one user of a single-user deployment,
    whom the daemon's paired Telegram users speak as too: one conversation on every
    channel), else ``local:$USER``. A bad ``BEAMCLAW_USER`` is an `InvalidUserId` naming it."""
    if getattr(args, "user", None):
        return str(args.user)
    return core.canonical_user() or "local:" + (os.environ.get("USER") or "user")
