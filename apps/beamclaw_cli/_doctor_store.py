"""`beamclaw doctor`'s checks of the store and the cluster.

With ``[store] backend = "postgres"``: the DSN's variable set, the server answering,
no schema in the database newer than this BeamClaw knows (a node refuses to start
against one), and ``synchronous_commit`` on (off, a server crash loses commits BeamClaw
acknowledged). With ``[cluster] enabled``: the secret's variable set, and this node's
advertised URL answering from here. The DSN holds the password: what is said names the
server, database and user only, and an error's text is cleared of the password.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import httpx
import trio

import beamclaw
import beamclaw_a2a as a2a
import beamclaw_cluster as cluster
import beamclaw_core as core
import beamclaw_gateway as gateway
import beamclaw_memory as memory
import beamclaw_obs as obs
import beamclaw_scheduler as scheduler
from beamclaw_base import StoreConfig

from ._doctor_check import Check

#: How long the server and the advertised URL may take to answer.
_PROBE_SECONDS: Final = 5

#: The version of each schema this BeamClaw knows.
_KNOWN: Final = {s.component: s.version for s in (core.SCHEMA, scheduler.SCHEMA, a2a.SCHEMA, gateway.SCHEMA,
                                                  memory.SCHEMA, cluster.SCHEMA)}  # fmt: skip


def _server(dsn: str) -> str:
    """Which server and database *dsn* names, without its password."""
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(dsn)
    host, port = params.get("host") or "localhost", params.get("port") or "5432"
    return f"PostgreSQL at {host}:{port} (database {params.get('dbname') or '?'}, user {params.get('user') or '?'})"


def _cleared(text: str, dsn: str) -> str:
    """*text* (a driver's error, on one line) without *dsn*'s password."""
    from psycopg.conninfo import conninfo_to_dict

    password = str(conninfo_to_dict(dsn).get("password") or "")  # parsed already by `_server`
    text = text.replace(dsn, "<the DSN>")
    return " ".join(obs.scrub(text.replace(password, "***") if password else text).split())


def _probe(dsn: str, namespace: str) -> tuple[dict[str, int], str]:
    """The schema versions in *namespace* ({} before the first start) and ``synchronous_commit`` (blocks)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, connect_timeout=_PROBE_SECONDS, autocommit=True) as connection:
        (synchronous,) = connection.execute("SHOW synchronous_commit").fetchone() or ("on",)
        (table,) = connection.execute("SELECT to_regclass(%s)", (f"{namespace}.schema_versions",)).fetchone() or (None,)
        versions: dict[str, int] = {}
        if table is not None:
            query = sql.SQL("SELECT component, version FROM {}.schema_versions").format(sql.Identifier(namespace))
            versions = {str(c): int(v) for c, v in connection.execute(query).fetchall()}
    return versions, str(synchronous)


def _versions(versions: dict[str, int], namespace: str) -> list[Check]:
    if not versions:
        return [Check("ok", f"no BeamClaw tables in schema {namespace!r} yet: the first start creates them")]
    newer = [f"{c} {v} (this BeamClaw knows {_KNOWN[c]})" for c, v in sorted(versions.items()) if v > _KNOWN.get(c, v)]
    unknown = sorted(c for c in versions if c not in _KNOWN)
    checks = []
    if newer:
        checks.append(Check("fail", f"the database has newer schemas than this BeamClaw's: {', '.join(newer)}",
                            "upgrade BeamClaw on this node (every node runs the same release)"))  # fmt: skip
    if unknown:
        checks.append(Check("warn", f"the database has schemas this BeamClaw does not know: {', '.join(unknown)}",
                            "a newer BeamClaw wrote them: upgrade this node"))  # fmt: skip
    if not checks:
        shown = ", ".join(f"{c} {v}" for c, v in sorted(versions.items()))
        checks.append(Check("ok", f"schema versions {shown}: none newer than this BeamClaw's"))
    return checks


async def store_checks(config: dict[str, Any], path: Path) -> list[Check]:
    """The PostgreSQL store, when the configuration uses one (nothing for SQLite)."""
    try:
        store: StoreConfig = beamclaw.store_config(config)
    except (beamclaw.ConfigError, ValueError):
        return []  # said by the configuration's check
    if store.backend != "postgres" or store.dsn is None:
        return []
    variable = store.dsn.env
    dsn = store.dsn.get_optional()
    if dsn is None:
        return [Check("fail", f'[store] backend = "postgres", but {variable} (its DSN) is not set',
                      f"export {variable}=postgresql://USER@HOST:5432/DATABASE")]  # fmt: skip
    try:
        import psycopg

        where = _server(dsn)
    except ImportError:
        return [Check("fail", "psycopg (the PostgreSQL driver) is not installed", "pip install 'beamclaw[postgres]'")]
    except psycopg.ProgrammingError:  # its message quotes the DSN's text, which may be the password's
        return [Check("fail", f"{variable} cannot be read as a PostgreSQL DSN",
                      f"fix {variable}: postgresql://USER@HOST:5432/DATABASE")]  # fmt: skip
    try:
        versions, synchronous = await trio.to_thread.run_sync(_probe, dsn, store.namespace)
    except psycopg.Error as exc:
        return [Check("fail", f"{where} does not answer: {_cleared(str(exc), dsn)}",
                      f"start the server, or fix the DSN in {variable} ([store] in {path})")]  # fmt: skip
    checks = [Check("ok", f"{where} answers"), *_versions(versions, store.namespace)]
    if synchronous == "off":
        checks.append(Check("warn", "the server has synchronous_commit = off: a server crash can lose the last "
                            "commits BeamClaw was told were kept",
                            "ALTER SYSTEM SET synchronous_commit = on; SELECT pg_reload_conf();"))  # fmt: skip
    else:
        checks.append(Check("ok", f"synchronous_commit = {synchronous}: a commit is durable when acknowledged"))
    return checks


async def cluster_checks(config: dict[str, Any], path: Path, running: bool) -> list[Check]:
    """The cluster's secret and this node's advertised URL, when ``[cluster] enabled``."""
    try:
        settings = cluster.parse_cluster_config(config.get("cluster", {}))
    except (beamclaw.ConfigError, ValueError):
        return []  # said by the configuration's check
    if not settings.enabled or settings.secret is None:
        return []
    checks = []
    variable = settings.secret.env
    if settings.secret.get_optional() is None:
        checks.append(Check("fail", f"cluster: the secret's variable {variable} is not set",
                            f"export {variable}=... (the same long random value on every node)"))  # fmt: skip
    url = settings.advertise_url.rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=_PROBE_SECONDS, trust_env=False) as client:
            answer = await client.get(f"{url}/health")
        checks.append(Check("ok", f"cluster: this node's advertise_url {url} answers (HTTP {answer.status_code})"))
    except httpx.HTTPError as exc:
        checks.append(Check("fail" if running else "warn",
                            f"cluster: this node's advertise_url {url} does not answer from here ({type(exc).__name__})"
                            + ("" if running else ": no daemon runs here now"),
                            f"the other nodes reach this one there: fix cluster.advertise_url in {path}, "
                            "or the network between them"))  # fmt: skip
    return checks
