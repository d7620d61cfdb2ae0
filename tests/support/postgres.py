"""A throwaway PostgreSQL server for the test session, and a fresh database per test.

The server is Debian's binaries (the highest ``/usr/lib/postgresql/*/bin``) run on a data
dir and a Unix socket in a temporary directory, as the ``postgres`` user when the tests
run as root (PostgreSQL refuses root). ``fsync`` is off (only an OS crash could lose
data), ``synchronous_commit`` stays on: a crashed server keeps every acknowledged commit,
which the restart tests check. No TCP listener; the port only names the socket.

Without the binaries or psycopg the PostgreSQL runs skip, saying why; under CI
(``CI=true``) they fail instead, since CI must really run them.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import attrs
import pytest

from beamclaw_base import Secret, StoreConfig

#: The environment variable a test's PostgreSQL DSN is in (set for that test only).
DSN_VARIABLE = "BEAMCLAW_DATABASE_URL"

#: How a server is stopped: ``fast`` rolls back open transactions and closes cleanly
#: (SIGINT); ``immediate`` quits at once, like a crash, and recovers at the next start (SIGQUIT).
StopMode = Literal["fast", "immediate"]

_SIGNALS = {"fast": signal.SIGINT, "immediate": signal.SIGQUIT}
_databases = itertools.count(1)


def binaries() -> Path | None:
    """The newest installed PostgreSQL's ``bin`` directory, or None."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, default=None)


def _missing() -> str | None:
    """Why no server can run here, or None."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e .)"
    if binaries() is None:
        return "no PostgreSQL binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root, and there is no postgres user to run the server as"
    return None


def require_postgres() -> None:
    """Skip the calling test (fail it under CI) when PostgreSQL cannot run here."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL tests must run under CI: {reason}")
        pytest.skip(reason)


def _as_owner(argv: list[str]) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@attrs.define
class PostgresServer:
    """One running server: its directories, port and postmaster pid."""

    bin: Path
    base: Path
    port: int = 0
    pid: int | None = None

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    def dsn(self, database: str = "postgres") -> str:
        """The connection string of *database* on this server (no password: trust auth)."""
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={database}"

    @classmethod
    def create(cls) -> PostgresServer:
        """A new cluster in a temporary directory, started."""
        bin_dir = binaries()
        assert bin_dir is not None
        server = cls(bin_dir, Path(tempfile.mkdtemp(prefix="bc-pg-")))
        server.socket_dir.mkdir()
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            for path in (server.base, server.socket_dir):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        done = _as_owner(
            [str(bin_dir / "initdb"), "-D", str(server.data), "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]
        )  # fmt: skip
        if done.returncode != 0:
            server.remove()
            raise RuntimeError(f"initdb failed: {done.stderr}")
        for _ in range(5):  # a port taken meanwhile: another one
            server.port = _free_port()
            if server.start():
                return server
        log = (server.base / "log").read_text(errors="replace")
        server.remove()
        raise RuntimeError(f"PostgreSQL did not start:\n{log}")

    def start(self) -> bool:
        """Start the server on its data dir and port (after `stop`); False if the port was
        taken (anything else that fails raises)."""
        options = (
            f"-c listen_addresses='' -p {self.port} -c unix_socket_directories={self.socket_dir} "
            "-c fsync=off -c full_page_writes=off -c synchronous_commit=on -c max_connections=300"
        )
        log = self.base / "log"
        done = _as_owner(
            [str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(log), "-w", "-t", "60", "start"]
        )
        if done.returncode != 0:
            if "could not bind" in log.read_text(errors="replace"):
                return False
            raise RuntimeError(f"pg_ctl start failed: {done.stdout}{done.stderr}")
        self.pid = int((self.data / "postmaster.pid").read_text().split("\n")[0])
        return True

    def stop(self, mode: StopMode = "fast") -> None:
        """Stop the server (``immediate``: like a crash) and wait until it has gone."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, _SIGNALS[mode])
            while True:
                os.kill(self.pid, 0)
                time.sleep(0.02)
        except ProcessLookupError:
            pass
        self.pid = None

    def restart(self, mode: StopMode = "fast") -> None:
        """Stop (*mode*) and start again on the same data dir and port."""
        self.stop(mode)
        if not self.start():
            raise RuntimeError(f"PostgreSQL could not bind its port {self.port} again")

    def remove(self) -> None:
        """Stop the server (fast) and delete its directory."""
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def admin(self, statement: str) -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE) as the superuser."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as connection:
            connection.execute(statement)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's server (started at first use, removed at the end, or at exit)."""
    require_postgres()
    server = PostgresServer.create()
    atexit.register(server.remove)
    yield server
    server.remove()
    atexit.unregister(server.remove)


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """The DSN of a database of this test's own, dropped after it."""
    name = f"test_{os.getpid()}_{next(_databases)}"
    postgres_server.admin(f"CREATE DATABASE {name}")
    yield postgres_server.dsn(name)
    if postgres_server.pid is None:  # a test left it stopped
        postgres_server.start()
    postgres_server.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_store_config(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> StoreConfig:
    """A `StoreConfig` on this test's database, its DSN in `DSN_VARIABLE` for this test."""
    monkeypatch.setenv(DSN_VARIABLE, postgres_dsn)
    return StoreConfig(backend="postgres", dsn=Secret(DSN_VARIABLE))
