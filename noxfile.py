"""Developer sessions: ``nox -s tests``, ``lint``, ``typecheck``, ``docs``, ``bench``."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (pytest, Trio mode)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, and the app dependency contracts."""
    session.install("-e", ".[test]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy, strict on every package."""
    session.install("-e", ".[test]")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, built as CI builds it (warnings are errors)."""
    session.install("-e", ".[test]")
    session.run("mkdocs", "build", "--strict", "--site-dir", str(session.create_tmp()) + "/site")


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks; figures go to stdout and bench/results/ (conversation_bench, 10 minutes, apart)."""
    session.install("-e", ".[test]")  # the turn benchmark serves the scripted model with hypercorn
    session.run("python", "-m", "bench.supervision_bench", *session.posargs)
    session.run("python", "-m", "bench.turn_bench", *session.posargs)
    session.run("python", "-m", "bench.gateway_bench", *session.posargs)
    session.run("python", "-m", "bench.perf_bench", *session.posargs)
