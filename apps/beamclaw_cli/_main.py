"""``beamclaw`` commands. Each command is one small function; `main` dispatches."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from loguru import logger

import beamclaw


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beamclaw",
        description="A fault-tolerant, security-conscious AI agent gateway and MCP host.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="start the daemon and serve until Ctrl-C")
    run.add_argument("--config", metavar="PATH", help="configuration file (default: the project's config.toml)")
    commands.add_parser("version", help="print the version")
    commands.add_parser("help", help="show this help")
    return parser


def _run(args: argparse.Namespace) -> int:
    logger.remove()
    logger.add(sys.stderr, level=os.environ.get("BEAMCLAW_LOG_LEVEL", "INFO"))
    try:
        config = beamclaw.load_config(args.config)
        beamclaw.run_daemon(config)
    except (beamclaw.ConfigError, ValueError) as exc:
        print(f"beamclaw: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "version":
        print(f"beamclaw {beamclaw.__version__}")
        return 0
    parser.print_help()
    return 0 if args.command == "help" else 2
