"""What every test shares: a clean slate of the secrets the scrubber holds.

A daemon registers each secret it resolves (`beamclaw_obs.register_secret`) for the
rest of its process's life; in the test process, one test's token would redact text in
every later test (a window of ``web-token-0123456789abcdef`` redacts the hex digits in
ordinary code). Each test starts from, and leaves, the set it found.

Property tests are deterministic under CI (``CI=true`` selects the ``ci`` Hypothesis
profile, ``derandomize=True``): a submission's CI must not fail on an unlucky seed. A
failure found locally by a random seed is pinned with ``@example`` before it is fixed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from beamclaw_obs import _held_secrets

#: Fixtures every test may take: `store_config` (one run per store backend), the
#: PostgreSQL server behind its postgres runs, and `browser` (headless Chromium).
pytest_plugins = ("tests.support.stores", "tests.support.postgres", "tests.support.browser")

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() == "true":
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _umask_of_this_test_only() -> Iterator[None]:
    """The daemon's start and the CLI's writing commands set the process umask to 077 (so
    everything they write is owner-only); run in-process, they must not set it for later tests."""
    umask = os.umask(0o022)
    os.umask(umask)
    yield
    os.umask(umask)


@pytest.fixture(autouse=True)
def _held_secrets_of_this_test_only() -> Iterator[None]:
    with _held_secrets._lock:
        saved = (
            set(_held_secrets._values), set(_held_secrets._literal_forms), set(_held_secrets._encoded_forms),
            {window: list(forms) for window, forms in _held_secrets._windows.items()}, _held_secrets._longest,
        )  # fmt: skip
    yield
    with _held_secrets._lock:
        values, literal, encoded, windows, longest = saved
        for target, source in ((_held_secrets._values, values), (_held_secrets._literal_forms, literal),
                               (_held_secrets._encoded_forms, encoded), (_held_secrets._windows, windows)):  # fmt: skip
            target.clear()
            target.update(source)  # type: ignore[attr-defined]
        _held_secrets._longest = longest
        _held_secrets._compiled = None
        _held_secrets._generation += 1  # what was scrubbed with this test's values is forgotten
