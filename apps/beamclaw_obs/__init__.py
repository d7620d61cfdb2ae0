"""Telemetry fan-out: events to log and metrics backends, never blocking the emitter.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
