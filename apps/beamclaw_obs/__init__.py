"""Telemetry fan-out: events to log and metrics backends, never blocking the emitter.

``emit(name, **data)`` casts to the manager, which scrubs the payload and fans it
out to every process in the backends group (the loguru log backend, the Prometheus
metrics backend, and any `Backend` a test or another app starts). The scrubber
(`scrub`, `scrub_data`, `register_secret`, and `StreamScrubber` for text that arrives
in pieces) lives here, at the bottom of the app graph, so every app can apply it.
"""

from ._backend import Backend
from ._emit import dropped_events, emit
from ._event import ObsEvent
from ._log_backend import install_scrubbing_patcher
from ._metrics_backend import metrics_text
from ._scrubber import (
    OFF_LOOP_CHARS,
    REDACTED,
    held_secrets_generation,
    register_secret,
    scrub,
    scrub_async,
    scrub_data,
    valid_unicode,
)
from ._stream_scrubber import StreamScrubber
from ._tree import supervision_tree

__all__ = [
    "OFF_LOOP_CHARS",
    "REDACTED",
    "Backend",
    "ObsEvent",
    "StreamScrubber",
    "dropped_events",
    "emit",
    "held_secrets_generation",
    "install_scrubbing_patcher",
    "metrics_text",
    "register_secret",
    "scrub",
    "scrub_async",
    "scrub_data",
    "supervision_tree",
    "valid_unicode",
]
