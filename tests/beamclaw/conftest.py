"""Fixtures of the tests that run the real daemon."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .daemon import STARTED


@pytest.fixture(autouse=True)
def _no_daemon_outlives_its_test() -> Iterator[None]:
    yield
    while STARTED:
        process = STARTED.pop()
        if process.returncode is None and process.poll() is None:
            process.kill()
