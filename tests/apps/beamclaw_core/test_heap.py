"""Giving the heap back never fails the sleeper: without /proc the trim still runs, and
only what it gave back is unknown."""

from __future__ import annotations

import ctypes

import pytest

from beamclaw_core import _heap


async def test_without_proc_the_heap_is_trimmed_and_what_it_gave_back_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trims: list[int] = []
    monkeypatch.setattr(_heap, "_TRIM", trims.append)
    monkeypatch.setattr(_heap, "_STATM", "/nonexistent/statm")
    assert _heap.resident_kib() is None
    assert await _heap.trim_heap() is None
    assert trims == [0]


def test_the_trim_is_declared_with_its_size_t_pad() -> None:
    # Undeclared, ctypes would pass the pad as a C int, not the size_t malloc_trim reads.
    if _heap._TRIM is None:
        pytest.skip("the C library has no malloc_trim")
    assert _heap._TRIM.argtypes == [ctypes.c_size_t]  # type: ignore[attr-defined]
