"""Talking to the running daemon over its control socket (blocking: the CLI is a script)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import beamclaw


class NoDaemon(Exception):
    """No daemon answers on the control socket; the message says how to start one."""


def socket_path() -> Path:
    return beamclaw.data_dir() / beamclaw.CONTROL_SOCKET


def request(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Send one request; yield each JSON line of the answer, the last with ``done``."""
    path = socket_path()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        raise NoDaemon(
            f"no BeamClaw daemon is running (nothing answers at {path}); start one with `python -m beamclaw run`"
        ) from None
    with sock, sock.makefile("rwb") as stream:
        stream.write(json.dumps(payload).encode() + b"\n")
        stream.flush()
        for line in stream:
            message: dict[str, Any] = json.loads(line)
            yield message
            if message.get("done"):
                return
    raise NoDaemon("the daemon closed the connection before answering")
