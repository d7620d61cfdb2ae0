"""The metrics backend: prometheus_client counters and histograms fed by events.

Each backend has its own `CollectorRegistry`, so two daemons (or two tests) in one
process never share counters; the gateway serves `metrics_text()` at /metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, final

import attrs
import prometheus_client as prom
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

import supervision as sv

from ._backend import Backend
from ._emit import dropped_events
from ._event import ObsEvent

METRICS: Final = "beamclaw_obs.metrics"
#: The events `MetricsBackend.handle_event` counts.
_COUNTED: Final = frozenset({"turn_complete", "llm_response", "tool_call_result", "child_restarted", "child_exited"})
_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class _DroppedCollector(Collector):
    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(
            "beamclaw_obs_dropped_events", "Telemetry events dropped (no manager or a full mailbox)", dropped_events()
        )


@final
@attrs.define
class _Metrics:
    registry: prom.CollectorRegistry
    turns: prom.Counter
    llm_latency: prom.Histogram
    llm_tokens: prom.Counter
    tool_latency: prom.Histogram
    tool_errors: prom.Counter
    restarts: prom.Counter
    crashes: prom.Counter

    @classmethod
    def create(cls) -> _Metrics:
        registry = prom.CollectorRegistry()
        registry.register(_DroppedCollector())
        return cls(
            registry=registry,
            turns=prom.Counter("beamclaw_turns", "Agent turns finished", ["outcome"], registry=registry),
            llm_latency=prom.Histogram(
                "beamclaw_llm_latency_seconds",
                "Model call latency",
                ["model"],
                buckets=_LATENCY_BUCKETS,
                registry=registry,
            ),
            llm_tokens=prom.Counter("beamclaw_llm_tokens", "Model tokens used", ["kind"], registry=registry),
            tool_latency=prom.Histogram(
                "beamclaw_tool_latency_seconds",
                "Tool execution latency",
                ["tool"],
                buckets=_LATENCY_BUCKETS,
                registry=registry,
            ),
            tool_errors=prom.Counter(
                "beamclaw_tool_errors", "Tool calls that ended in an error", ["tool"], registry=registry
            ),
            restarts=prom.Counter("beamclaw_restarts", "Children restarted by their supervisor", registry=registry),
            crashes=prom.Counter("beamclaw_crashes", "Children that exited abnormally", registry=registry),
        )


@attrs.frozen
class MetricsText(sv.Request[str]):
    """The metrics in Prometheus' text exposition format."""


class MetricsBackend(Backend):
    def setup(self) -> _Metrics:
        sv.register(METRICS)
        return _Metrics.create()

    def wants(self, event: str) -> bool:
        return event in _COUNTED

    def handle_event(self, event: ObsEvent, m: _Metrics) -> None:
        data = event.data
        match event.name:
            case "turn_complete":
                m.turns.labels(outcome=str(data.get("outcome", "ok"))).inc()
            case "llm_response":
                m.llm_latency.labels(model=str(data.get("model", ""))).observe(float(data.get("duration_ms", 0)) / 1000)
                m.llm_tokens.labels(kind="prompt").inc(int(data.get("prompt_tokens") or 0))
                m.llm_tokens.labels(kind="completion").inc(int(data.get("completion_tokens") or 0))
            case "tool_call_result":
                tool = str(data.get("tool", ""))
                m.tool_latency.labels(tool=tool).observe(float(data.get("duration_ms", 0)) / 1000)
                if data.get("is_error"):
                    m.tool_errors.labels(tool=tool).inc()
            case "child_restarted":
                m.restarts.inc()
            case "child_exited" if data.get("crashed"):
                m.crashes.inc()
            case _:
                pass

    def handle_call(self, request: MetricsText, caller: sv.Caller, m: _Metrics) -> sv.Reply:
        match request:
            case MetricsText():
                return sv.Reply(prom.generate_latest(m.registry).decode(), m)
        raise ValueError(f"unknown metrics request {request!r}")


async def metrics_text() -> str:
    """The Prometheus text exposition of the running metrics backend."""
    return await sv.call(METRICS, MetricsText())
