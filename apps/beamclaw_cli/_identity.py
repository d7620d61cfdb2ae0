"""Who the CLI speaks as: the ``--agent`` and ``--user`` options of the commands that chat,
and the user id they come to."""

from __future__ import annotations

import argparse
import os


class InvalidUser(ValueError):
    """``--user`` or ``BEAMCLAW_USER`` is not a user id; the message (core's) says why.

    The CLI's own error, so that catching it does not import the core app."""


def add_identity_options(
    parser: argparse.ArgumentParser, user_default: str = "$BEAMCLAW_USER as it is, else local:$USER"
) -> None:
    """``--agent`` and ``--user``: a command that chats speaks as this user to this agent."""
    parser.add_argument("--agent", default="default", help="the agent (default: default)")
    parser.add_argument("--user", default=None, help=f"the user id (default: {user_default})")


def user_id(args: argparse.Namespace) -> str:
    """``--user``, else ``BEAMCLAW_USER`` as it is (the one user of a single-user deployment,
    whom the daemon's paired Telegram users speak as too: one conversation on every
    channel), else ``local:$USER``. A bad ``BEAMCLAW_USER`` is an `InvalidUser` naming it."""
    import beamclaw_core as core

    if getattr(args, "user", None):
        return str(args.user)
    try:
        return core.canonical_user() or "local:" + (os.environ.get("USER") or "user")
    except core.InvalidUserId as exc:
        raise InvalidUser(str(exc)) from None
