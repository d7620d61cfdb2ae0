"""What a subscription to an A2A task that then completes sends, whoever carries it."""

from __future__ import annotations

from typing import Any


def assert_subscription_completed(events: list[dict[str, Any]], task_id: str, rid: Any) -> None:
    """*events* answer request *rid*: the task first, its reply as an artifact, completed last."""
    assert all(e["id"] == rid for e in events)
    assert events[0]["result"]["task"]["id"] == task_id
    assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in e["result"] for e in events)
