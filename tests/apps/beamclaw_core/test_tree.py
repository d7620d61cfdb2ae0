"""The supervision tree of a running session is the one the design gives."""

from __future__ import annotations

from typing import Any

import beamclaw_core as core
import supervision as sv
from tests.support.model_server import Reply

from .conftest import RunCore


def _shape(node: dict[str, Any]) -> Any:
    shape = (node["id"], node["kind"], node.get("strategy"), node["restart"])
    children = node.get("children")
    return (shape, [_shape(c) for c in children]) if children is not None else shape


async def test_the_live_tree_of_a_session(run_core: RunCore) -> None:
    async with run_core(Reply("hi")) as r:
        session = await r.open()
        await core.send_message(session, "hello", core.CollectingChannel())
        tree = sv.inspect_tree(r.supervisor)
    (core_node,) = [c for c in tree["children"] if c["id"] == "core"]
    assert _shape(core_node) == (
        ("core", "supervisor", "rest_for_one", "permanent"),
        [
            ("store", "gen_server", None, "permanent"),
            ("http", "gen_server", None, "permanent"),
            (
                ("sessions_sup", "supervisor", "dynamic", "permanent"),
                [
                    (
                        (session.id, "supervisor", "rest_for_one", "transient"),
                        [("session", "gen_server", None, "permanent"), ("loop", "state_machine", None, "transient")],
                    )
                ],
            ),
            ("sessions", "gen_server", None, "permanent"),
            ("sleeper", "process", None, "permanent"),
            ("skills", "gen_server", None, "permanent"),
            ("skills_watcher", "process", None, "permanent"),
            ("tools", "process", None, "permanent"),
            ("cleaner", "process", None, "permanent"),
            ("maintenance", "process", None, "permanent"),
        ],
    )
